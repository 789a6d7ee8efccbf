"""The PII scrub of whole documents, in pieces (issue 44 §3).

``hipocampo.scrub_pii`` is linear in its input, but one call per 20 MB document left the CLI
silent for a minute. Documents are cut at paragraph breaks (a blank line, which no pattern of the
scrubber crosses: a number, an e-mail or an RG may span one line break, never two) into pieces of
about ``SEGMENT_CHARS`` characters, the pieces of all documents are scrubbed in calls of at most
``CALL_CHARS`` characters, and each call reports progress. Joined, the pieces' results are what
one call over the whole text gives (tests/test_ingest_scrub.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..models import ScrubResult

if TYPE_CHECKING:
    from ..client import Hipocampo

__all__ = ["CALL_CHARS", "SEGMENT_CHARS", "ScrubProgress", "scrub_texts", "segments"]

SEGMENT_CHARS = 262_144
"""Characters per piece (about 256 KB of text)."""
CALL_CHARS = 4_194_304
"""Characters per ``scrub_pii`` call (several pieces; about 4 MB)."""

ScrubProgress = Callable[[int, int], None]
"""Called after each call with (characters scrubbed so far, characters in all)."""


def segments(text: str, size: int = SEGMENT_CHARS) -> list[str]:
    """``text`` cut after blank lines into pieces of about ``size`` (>= 1) characters (longer when
    a paragraph is); ``"".join(segments(t)) == t``."""
    out: list[str] = []
    start = 0
    while len(text) - start > size:
        cut = text.rfind("\n\n", start, start + size)
        if cut <= start:
            cut = text.find("\n\n", start + size)
            if cut < 0:
                break
        out.append(text[start : cut + 2])
        start = cut + 2
    out.append(text[start:])
    return out


def scrub_texts(
    client: Hipocampo,
    texts: Sequence[str],
    on_progress: ScrubProgress | None = None,
    *,
    size: int = SEGMENT_CHARS,
    per_call: int = CALL_CHARS,
) -> list[ScrubResult]:
    """One :class:`ScrubResult` per text, as ``client.scrub_pii(texts)`` gives them, computed in
    pieces of about ``size`` characters, at most ``per_call`` characters per round trip.

    Raises:
        HipocampoError: as ``Hipocampo.scrub_pii``.
    """
    pieces = [(i, piece) for i, text in enumerate(texts) for piece in segments(text, size)]
    total = sum(len(p) for _, p in pieces)
    parts: list[list[str]] = [[] for _ in texts]
    counts: list[Counter[str]] = [Counter() for _ in texts]
    done = 0
    batch: list[tuple[int, str]] = []
    batch_chars = 0

    def flush() -> None:
        nonlocal done, batch_chars
        for (i, _), result in zip(batch, client.scrub_pii([p for _, p in batch]), strict=True):
            parts[i].append(result.text)
            counts[i].update(result.counts)
        done += batch_chars
        batch.clear()
        batch_chars = 0
        if on_progress:
            on_progress(done, total)

    for i, piece in pieces:
        if batch and batch_chars + len(piece) > per_call:
            flush()
        batch.append((i, piece))
        batch_chars += len(piece)
    if batch:
        flush()
    return [ScrubResult(text="".join(parts[i]), counts=dict(counts[i])) for i in range(len(texts))]
