"""What the hub shows of a document's source (issue 45 §6): never the server's absolute path."""

from __future__ import annotations

from typing import Any

import pytest

from hipocampo.hub.present import shown_uri


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("file:///srv/import/condominio/regimento.pdf", "regimento.pdf"),
        ("file:///srv/import/faq.jsonl#q12", "faq.jsonl#q12"),
        ("upload:ata de março.docx", "ata de março.docx"),
        ("upload:faq.jsonl#3", "faq.jsonl#3"),
        ("https://exemplo.com/regras.html", "https://exemplo.com/regras.html"),
        ("", ""),
        (None, ""),
    ],
)
def test_a_source_is_shown_by_its_name(uri: str | None, shown: str) -> None:
    assert shown_uri(uri) == shown


def test_one_day_is_a_narrow_bar_on_an_axis() -> None:
    from hipocampo.hub.present import AXIS_PX, bar_chart

    (bar,) = bar_chart([("2026-11-28", 12.0)]).bars
    assert bar.width <= 48 and bar.x >= AXIS_PX and bar.height == 140  # the top of the axis: 12
    many = bar_chart([(f"d{i}", float(i)) for i in range(1, 31)])
    assert all(b.x >= AXIS_PX for b in many.bars) and many.top == 30


def test_an_axis_label_fits_under_its_bar() -> None:
    """Issue 58 §2: labels were cut off ("tentativa de desvi"); a day is MM-DD, a long label is
    cut to its bar's room with an ellipsis, a short one whole."""
    from hipocampo.hub.present import LABEL_CHAR_PX, bar_chart

    labels = ["tentativa de desviar o assistente", "evidência fraca", "2026-11-29"]
    chart = bar_chart([(label, 1.0) for label in labels])
    room = (chart.width - 56) / len(labels) / LABEL_CHAR_PX
    assert [b.short for b in chart.bars][1:] == ["evidência fraca", "11-29"]
    assert chart.bars[0].short.endswith("…") and len(chart.bars[0].short) <= room
    assert chart.bars[0].short[:-1] == labels[0][: len(chart.bars[0].short) - 1].rstrip()


def test_the_kb_language_choice_is_the_schemas(db: Any) -> None:
    """The hub's new-knowledge-base form offers every text-search language the schema allows (issue
    59 §2), each named in both of the hub's languages."""
    import re

    from hipocampo.constraints import TEXT_SEARCH_LANGUAGES as KB_LANGUAGES
    from hipocampo.hub.i18n import text

    check = db.execute(
        "select pg_get_constraintdef(oid) as d from pg_constraint where conname = 'knowledge_bases_language_check'"
    ).fetchone()["d"]
    assert sorted(KB_LANGUAGES) == sorted(re.findall(r"'(\w+)'::text", check))
    for lang in ("pt-BR", "en"):
        assert all(text(lang).get(f"kbl_{x}") for x in KB_LANGUAGES)
