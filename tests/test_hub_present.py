"""What the hub shows of a document's source (issue 45 §6): never the server's absolute path."""

from __future__ import annotations

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
