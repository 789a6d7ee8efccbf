"""Plain text from the markdown that chunks keep (headings, emphasis, links, code marks): what
excerpts and answers show a person (issue 19 §1.9). Chunks themselves keep their markdown: the
chunker and the lexical index read its structure."""

from __future__ import annotations

import re

__all__ = ["plain_text"]

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),  # images: their alt text
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),  # links: their text
    (re.compile(r"(?m)(^|(?<=\s))#{1,6}\s+"), r"\1"),  # heading marks, also inside a joined line
    (re.compile(r"(?s)(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),  # bold, also across a line break (as SQL's)
    (re.compile(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])"), r"\1"),  # italics with *
    (re.compile(r"(?<!\w)_(?=\S)([^_]+?)(?<=\S)_(?!\w)"), r"\1"),  # italics with _
    (re.compile(r"`{1,3}([^`]*)`{1,3}"), r"\1"),  # code marks
    (re.compile(r"(?m)^\s*>\s?"), ""),  # block quotes
    (re.compile(r"(?m)^\s*[-*+]\s+(?=\S)"), "• "),  # bullets
)


def plain_text(text: str) -> str:
    """``text`` without markdown syntax, its words kept (``## Capítulo II`` → ``Capítulo II``,
    ``**multa**`` → ``multa``, ``[site](https://…)`` → ``site``); snake_case words and a lone
    ``#`` in "nº #3"-like text stay. Pure; never raises."""
    out = text
    for pattern, repl in _RULES:
        out = pattern.sub(repl, out)
    return out
