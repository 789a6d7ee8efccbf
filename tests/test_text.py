"""plain_text: what excerpts and answers show a person (issue 19 §1.9: markdown '#' marks inside
excerpts and answers). Answers and their excerpts use the SQL one (hipocampo.plain_text, shared with
the Deno ask function); the CLI's and the MCP server's search hits the Python one. Both are held to
the same cases and to each other on every markdown file of the repository."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from hipocampo.text import plain_text

pytestmark = pytest.mark.any_model

CASES = [
    ("# Regimento ## Capítulo II - Das multas Art. 11º", "Regimento Capítulo II - Das multas Art. 11º"),
    ("## Capítulo I\nArt. 1º", "Capítulo I\nArt. 1º"),
    ("**multa** de __10%__", "multa de 10%"),
    ("*ênfase* e _itálico_", "ênfase e itálico"),
    ("ver [o site](https://exemplo.com.br/x) e ![planta](p.png)", "ver o site e planta"),
    ("use `hipocampo ask`", "use hipocampo ask"),
    ("> citação\n- item um\n* item dois", "citação\n• item um\n• item dois"),
    # What is not markdown stays: snake_case, a number sign, arithmetic, e-mail-like text.
    ("prefs.short_answers e user_name", "prefs.short_answers e user_name"),
    ("apartamento #3, C# e 2*3*4", "apartamento #3, C# e 2*3*4"),
    ("**a** e **b**, __c__ e *ã*", "a e b, c e ã"),
    # Emphasis may span a line break of its paragraph.
    ("**418 MB, and still\n  418 after**", "418 MB, and still\n  418 after"),
]


@pytest.mark.parametrize(("marked", "plain"), CASES)
def test_markdown_marks_go_and_the_words_stay(marked: str, plain: str) -> None:
    assert plain_text(marked) == plain


def test_the_sql_plain_text_is_the_python_one(db: psycopg.Connection[dict[str, Any]]) -> None:
    texts = [marked for marked, _ in CASES]
    for path in sorted(Path(__file__).resolve().parents[1].glob("**/*.md")):
        if ".venv" not in path.parts and "node_modules" not in path.parts:
            texts += path.read_text("utf-8").split("\n\n")
    got = db.execute("select array(select hipocampo.plain_text(t) from unnest(%s::text[]) as t) as out", (texts,))
    row = got.fetchone()
    assert row is not None
    assert [(t, o) for t, o in zip(texts, row["out"], strict=True) if o != plain_text(t)] == []
