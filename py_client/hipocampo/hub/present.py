"""What the hub's pages compute for display: matched query terms in an excerpt, and bar charts
as SVG geometry. Pure functions; the templates escape every text they print."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Bar", "Chart", "bar_chart", "highlight"]

_WORD = re.compile(r"\w+", re.UNICODE)
# Words of 4+ letters match on their first 5 letters without accents, a crude stem that
# treats "reservas"/"reserva" and "condomínio"/"condominio" alike (display only; the lexical leg
# itself uses the knowledge base's text-search configuration).
_STEM = 5
_MIN_LEN = 4


def _fold(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def shown_uri(uri: str | None) -> str:
    """A document's source URI as the hub shows it to tenant users (issue 45 §6): a local file
    (``file:///srv/import/regimento.pdf#p3``) by its name and fragment (``regimento.pdf#p3``),
    never the server's absolute path; an upload (``upload:ata.docx``) by its uploaded name; any
    other URI (https, fuzz://) as it is."""
    if not uri:
        return ""
    if uri.startswith("file:"):
        path, sep, fragment = uri.partition("#")
        name = path.rstrip("/").rsplit("/", 1)[-1]
        return name + (sep + fragment if sep else "")
    return uri.removeprefix("upload:")


def highlight(content: str, query: str) -> list[tuple[str, bool]]:
    """``content`` cut into (text, matched) pieces: a piece is matched when its word shares its
    accent-folded first 5 letters with a query word of 4+ letters."""
    stems = {_fold(w)[:_STEM] for w in _WORD.findall(query) if len(w) >= _MIN_LEN}
    pieces: list[tuple[str, bool]] = []
    at = 0
    for m in _WORD.finditer(content):
        if len(m.group()) >= _MIN_LEN and _fold(m.group())[:_STEM] in stems:
            if m.start() > at:
                pieces.append((content[at : m.start()], False))
            pieces.append((m.group(), True))
            at = m.end()
    if at < len(content):
        pieces.append((content[at:], False))
    return pieces


@dataclass(frozen=True)
class Bar:
    """One bar: its label, value, and geometry in the chart's coordinates (px)."""

    label: str
    value: float
    x: float
    y: float
    width: float
    height: float
    short: str = ""  # the label under the bar, within its slot: a day as MM-DD, a long label cut with "…"


# The room left of the bars for the y axis and its top value's label (px).
AXIS_PX = 56


@dataclass(frozen=True)
class Chart:
    """A bar chart: its bars, size (px) and the largest value (the axis' top)."""

    bars: list[Bar]
    width: int
    height: int
    top: float


def bar_chart(points: Sequence[tuple[str, float]], width: int = 640, height: int = 160) -> Chart:
    """Vertical bars for (label, value) points, scaled to the largest value (the y axis' top,
    which the page labels). A bar is at most 48 px wide, so one day is a bar with its date on an
    axis, not a block filling the chart (issue 45 §6)."""
    top = max((v for _, v in points), default=0.0) or 1.0
    n = max(len(points), 1)
    slot = (width - AXIS_PX) / n
    bar = min(slot * 0.8, 48.0)
    bars = []
    room = max(int(slot / LABEL_CHAR_PX), 4)  # characters that fit under one bar
    for i, (label, value) in enumerate(points):
        h = (height - 20) * (value / top)
        short = label[-5:] if _is_day(label) else (label if len(label) <= room else label[: room - 1].rstrip() + "…")
        bars.append(Bar(label, value, AXIS_PX + i * slot + (slot - bar) / 2, height - 20 - h, bar, h, short))
    return Chart(bars, width, height, top)


# The width of one character of an axis label, in the chart's units (hub.css: .chart .label is 20 px).
LABEL_CHAR_PX = 11.0


def _is_day(label: str) -> bool:
    """An ISO date (YYYY-MM-DD), shown by its month and day."""
    return len(label) == 10 and label[4] == "-" and label[7] == "-" and label[:4].isdigit()
