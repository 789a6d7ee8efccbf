"""plain_text: what excerpts and answers show a person (issue 19 §1.9: markdown '#' marks inside
excerpts and answers)."""

from __future__ import annotations

import pytest

from hipocampo.text import plain_text


@pytest.mark.parametrize(
    ("marked", "plain"),
    [
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
    ],
)
def test_markdown_marks_go_and_the_words_stay(marked: str, plain: str) -> None:
    assert plain_text(marked) == plain
