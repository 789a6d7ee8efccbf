"""Chunking per document type (the seed's table, in config.toml ``[chunking.<source_type>]``).

Text is cut into structural sections (articles and headings for regulations, headings for
manuals, a question with its answer for FAQs, topics for minutes, paragraphs otherwise), sections
into sentences, and sentences are
packed into chunks of ``min_tokens``..``max_tokens`` MiniLM tokens. A chunk never ends
mid-sentence, except when a single sentence is longer than ``max_tokens`` (then it is cut at
clause boundaries, then words). Each chunk after the first starts with the last whole sentences
of the previous one, up to ``overlap`` tokens. Each chunk records the section heading, the
articles that start in it (overlap excluded), for FAQs its question, and after an overlap how many
of its first characters repeat the previous chunk (``overlap_chars``) in its metadata.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_SENTENCES",
    "Chunk",
    "ChunkingRule",
    "chunk_sentences",
    "chunk_text",
    "cut_by_articles",
    "plain_markdown",
    "rule_for",
    "split_sentences",
]

# An article ("Art. 5º", "Artigo 12-A"; Spanish "Artículo 5", English / French "Article 5", Italian
# "Articolo 5", German "Artikel 5") or a contract's clause ("CLÁUSULA PRIMEIRA", "Cláusula 3ª",
# "CLÁUSULA DÉCIMA SEGUNDA", Spanish "Cláusula tercera"): the unit a regulation, a policy or a
# contract is cut by (issue 59 §2: documents in any language).
_ORDINAL = (
    r"(?:primeir[ao]|primer[ao]?|segund[ao]|terceir[ao]|tercer[ao]?|quart[ao]|cuart[ao]|quint[ao]|sext[ao]"
    r"|s[ée]p?tim[ao]|oitav[ao]|octav[ao]|non[ao]|noven[ao]|und[ée]cim[ao]|duod[ée]cim[ao]"
    r"|d[ée]cim[ao]|vig[ée]sim[ao]|trig[ée]sim[ao]|quadrag[ée]sim[ao]|cuadrag[ée]sim[ao])"
)
_ART_WORD = r"Art(?:igo|[íi]culo|icle|icolo|ikel)?"
_ARTICLE = re.compile(
    rf"^\s*({_ART_WORD}\.?\s*\d+[º°o]?(?:-[A-Z])?|Cl[áa]usula\s+(?:\d+[ªaº°o]?|{_ORDINAL}(?:\s+{_ORDINAL})?)\b)",
    re.IGNORECASE,
)
# How many article or clause headings make a document one cut by them, whatever its source type.
ARTICLES_MIN = 3
_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s+.+|(?:T[ÍI]TULO|CAP[ÍI]TULO|SE[ÇC][ÃA]O|SUBSE[ÇC][ÃA]O|SECCI[ÓO]N|ANEXO)\b.*)$",
    re.IGNORECASE,
)
_TOPIC = re.compile(r"^\s*(?:#{1,6}\s+.+|(?:\d{1,2}[.)]|[IVXLC]+\s*[-–.)]|Item\s+\d+|Pauta\b).*)$")
# A FAQ entry's question: a line ending in "?" (a heading, bold, numbered or "P:" / "Pergunta:" /
# "Q:" prefixed), at most 300 characters; what follows until the next question is its answer.
_QUESTION = re.compile(
    r"^\s*(?:#{1,6}\s+)?(?:\*\*)?\s*(?:(?:P|Q|Pergunta|Pregunta|Question)\s*[:.)–-]\s*|\d{1,3}[.)]\s+)?"
    r"(?P<q>[^\n?]{3,300}\?)\s*(?:\*\*)?\s*$",
    re.IGNORECASE,
)
_ANSWER = re.compile(r"^\s*(?:\*\*)?(?:R|A|Resposta|Respuesta|Answer)\s*[:.)–-]\s*(?:\*\*)?\s*", re.IGNORECASE)
_MD_HEADING = re.compile(r"^\s*(#{1,6})\s+(.+?)\s*#*\s*$")
# Inline markdown: bold / italics by asterisks or underscores, code marks (the words are kept).
_MD_INLINE = (
    (re.compile(r"\*\*([^\s*](?:(?:[^*]|\*(?!\*))*[^\s*])?)\*\*"), r"\1"),
    (re.compile(r"__([^\s_](?:(?:[^_]|_(?!_))*[^\s_])?)__"), r"\1"),
    (re.compile(r"(?<![\w*])\*([^*\s](?:[^*]*[^*\s])?)\*(?![\w*])"), r"\1"),
    (re.compile(r"`{1,3}([^`]*)`{1,3}"), r"\1"),
)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[\"“(\[¿¡]?[A-ZÁÉÍÓÚÂÊÔÃÕÇÑÜ0-9§])")
_CLAUSE = re.compile(r"(?<=[,;:])\s+")


@dataclass(frozen=True)
class ChunkingRule:
    """Sizes in MiniLM tokens: ``min_tokens``..``max_tokens`` per chunk, ``overlap`` carried over."""

    min_tokens: int
    max_tokens: int
    overlap: int
    split: str = "paragraph"

    @classmethod
    def from_config(cls, rule: dict[str, Any]) -> ChunkingRule:
        """Build from a ``[chunking.<type>]`` table; raises ValueError on inconsistent sizes."""
        r = cls(
            int(rule["min_tokens"]),
            int(rule["max_tokens"]),
            int(rule.get("overlap", 0)),
            str(rule.get("split", "paragraph")),
        )
        if not 0 < r.min_tokens <= r.max_tokens or not 0 <= r.overlap < r.max_tokens:
            raise ValueError(f"inconsistent chunking rule: {rule}")
        return r


@dataclass
class Chunk:
    """One chunk: ``content``, its ``token_count`` and ``metadata`` (section, article, articles)."""

    content: str
    token_count: int
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Section:
    heading: str | None
    article: str | None
    lines: list[str]
    question: str | None = None


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph (ends at . ! ? ; followed by a capital, digit or §)."""
    out: list[str] = []
    for para in re.split(r"\n+", text):
        para = para.strip()
        if para:
            out.extend(s.strip() for s in _SENTENCE_END.split(para) if s.strip())
    return out


MAX_SENTENCES = 64
"""Sentence embeddings a chunk may carry (``ingest_document``'s limit)."""


def chunk_sentences(text: str, limit: int = MAX_SENTENCES) -> list[str]:
    """The sentences of a chunk whose embeddings the answer gate reads (``rag.sentence_weight``,
    docs/design.md §answers): :func:`split_sentences`, a piece of fewer than 3 words joined to the
    next (an abbreviation's split: "Art." before "1º …"), at most ``limit`` (>= 1) of them,
    consecutive sentences joined in equal runs when there are more; ``[text]`` when it has none.

    >>> chunk_sentences("Art. 1º O prazo é de 30 dias. A multa é de R$ 100.")
    ['Art. 1º O prazo é de 30 dias.', 'A multa é de R$ 100.']
    """
    parts: list[str] = []
    for piece in split_sentences(text):
        if parts and len(parts[-1].split()) < 3:
            parts[-1] += " " + piece
        else:
            parts.append(piece)
    parts = parts or [text]
    if len(parts) <= limit:
        return parts
    size = -(-len(parts) // limit)  # ceil: runs of this many sentences
    return [" ".join(parts[i : i + size]) for i in range(0, len(parts), size)]


def plain_markdown(text: str) -> str:
    """``text`` without inline markdown marks: ``**bold**``, ``__bold__``, ``*italics*`` and code
    marks become their words (headings are read as structure by :func:`chunk_text`)."""
    for pattern, repl in _MD_INLINE:
        text = pattern.sub(repl, text)
    return text


def _sections(text: str, split: str) -> list[_Section]:
    """The structural sections of ``text``. Markdown is structure, not text: a ``#`` heading (and,
    for articles, a chapter / section line) becomes the heading path of what follows, without
    the marks, and is not itself content when sections are articles; inline emphasis is dropped.
    A level-1 heading is the document's title (the loader's), so the path starts below it."""
    sections: list[_Section] = []
    path: dict[int, str] = {}
    heading: str | None = None
    current = _Section(None, None, [])
    boundary = _TOPIC if split == "topic" else _HEADING
    if split == "question":  # a question line starts an entry even without a blank line before it
        text = re.sub(r"\n(?=[^\n]*\?[\s*]*$)", "\n\n", text, flags=re.MULTILINE)
    for block in re.split(
        rf"\n\s*\n|\n(?=\s*(?:#|\**{_ART_WORD}\.?\s*\d|\**CL[ÁA]USULA\s|T[ÍI]TULO|CAP[ÍI]TULO|SE[ÇC][ÃA]O|SECCI[ÓO]N))",
        text,
    ):
        block = plain_markdown(block.strip())
        if not block:
            continue
        first = block.split("\n", 1)[0]
        asked = _QUESTION.match(first) if split == "question" else None
        if asked:  # a FAQ entry: the question (kept as text) and its answer, one section
            if current.lines:
                sections.append(current)
            question = asked.group("q").strip()
            rest = _ANSWER.sub("", block.split("\n", 1)[1].strip()) if "\n" in block else ""
            current = _Section(heading, None, [question, *([rest] if rest else [])], question)
            continue
        md = _MD_HEADING.match(first)
        art = _ARTICLE.match(first) if split == "article" else None
        is_heading = bool(md) or (bool(boundary.match(first)) and len(first) < 200 and split != "paragraph")
        if is_heading and not art:
            level = len(md.group(1)) if md else 2
            rest = block.split("\n", 1)[1].strip() if "\n" in block else ""
            title = md.group(2).strip() if md else first.strip()
            if not md and rest and "\n" not in rest and len(rest) < 120 and not rest.endswith((".", ":", ";")):
                title, rest = f"{title} – {rest}", ""  # "CAPÍTULO I" over "DAS DISPOSIÇÕES GERAIS"
            path = {k: v for k, v in path.items() if k < level}
            path[level] = title
            heading = " › ".join(v for k, v in sorted(path.items()) if k > 1) or path.get(1)
            if current.lines:
                sections.append(current)
            # Under articles and FAQ entries a heading is context (the chunks' heading path), not text.
            lines = [rest] if rest else []
            if split not in ("article", "question"):
                lines = [path[level], *lines]
            current = _Section(heading, None, lines)
            continue
        if current.question is not None:
            block = _ANSWER.sub("", block)
        if art or split == "paragraph":
            if current.lines and (current.article is not None or split == "paragraph" or art):
                sections.append(current)
                current = _Section(heading, None, [])
            current.article = re.sub(r"\s+", " ", art.group(1)).strip() if art else current.article
        current.lines.append(block)
    if current.lines:
        sections.append(current)
    return sections


def _split_long(sentence: str, max_tokens: int, count: Callable[[str], int]) -> list[str]:
    pieces: list[str] = []
    buf = ""
    for part in _CLAUSE.split(sentence):
        cand = f"{buf} {part}".strip()
        if buf and count(cand) > max_tokens:
            pieces.append(buf)
            buf = part
        else:
            buf = cand
    if buf:
        pieces.append(buf)
    out: list[str] = []
    for p in pieces:
        if count(p) <= max_tokens:
            out.append(p)
            continue
        words = p.split()
        cur: list[str] = []
        for w in words:
            if cur and count(" ".join([*cur, w])) > max_tokens:
                out.append(" ".join(cur))
                cur = []
            cur.append(w)
        if cur:
            out.append(" ".join(cur))
    return out


def cut_by_articles(text: str) -> bool:
    """Whether ``text`` is a document of articles or clauses (at least :data:`ARTICLES_MIN` lines
    open with one: a regulation, a policy, a contract), which is cut an article or a clause a
    chunk whatever source type it was given (issue 61 §3)."""
    starts = sum(1 for line in text.splitlines() if _ARTICLE.match(plain_markdown(line).lstrip("*# ")))
    return starts >= ARTICLES_MIN


def rule_for(text: str, rule: ChunkingRule, articles: ChunkingRule) -> ChunkingRule:
    """The rule ``text`` is cut by: ``articles`` (the regulation's rule, when it splits by article)
    for a document of articles or clauses (:func:`cut_by_articles`) given a ``rule`` that splits
    neither by article nor by question, else ``rule`` (issue 61 §3)."""
    if rule.split not in ("article", "question") and articles.split == "article" and cut_by_articles(text):
        return articles
    return rule


def chunk_text(text: str, rule: ChunkingRule, count_tokens: Callable[[str], int]) -> list[Chunk]:
    """Cut ``text`` into chunks following ``rule``; ``count_tokens`` measures sizes.

    Returns chunks in document order; an empty text gives an empty list.
    """
    units: list[tuple[str, int, _Section, bool]] = []  # sentence, tokens, section, starts section
    for sec in _sections(text, rule.split):
        first = True
        for para in sec.lines:
            for sent in split_sentences(para):
                n = count_tokens(sent)
                parts = [sent] if n <= rule.max_tokens else _split_long(sent, rule.max_tokens, count_tokens)
                for p in parts:
                    units.append((p, count_tokens(p) if len(parts) > 1 else n, sec, first))
                    first = False

    chunks: list[Chunk] = []
    cur: list[tuple[str, int, _Section, bool]] = []
    carried = 0  # units at the start of cur that overlap the previous chunk

    def size(items: list[tuple[str, int, _Section, bool]]) -> int:
        return sum(u[1] for u in items) + max(len(items) - 1, 0)

    def close() -> None:
        nonlocal cur, carried
        if len(cur) <= carried:
            return
        own = cur[carried:]
        articles: list[str] = []
        for u in own:
            if u[2].article and u[2].article not in articles:
                articles.append(u[2].article)
        meta: dict[str, Any] = {}
        heading = next((u[2].heading for u in own if u[2].heading), None)
        if heading:
            meta["section"] = heading
        question = next((u[2].question for u in own if u[2].question), None)
        if question:
            meta["question"] = question
        if articles:
            meta["article"] = articles[0]
            meta["articles"] = articles
        content = " ".join(u[0] for u in cur)
        if carried:
            # The characters that repeat the previous chunk's end (its text and the space after):
            # the database measures a document's words without them (_measure_documents_text).
            meta["overlap_chars"] = len(" ".join(u[0] for u in cur[:carried])) + 1
        chunks.append(Chunk(content, count_tokens(content), meta))
        keep: list[tuple[str, int, _Section, bool]] = []
        for u in reversed(cur):
            if rule.overlap <= 0 or size([u, *keep]) > rule.overlap:
                break
            keep.insert(0, u)
        cur = keep
        carried = len(keep)

    for unit in units:
        new_section = unit[3] and len(cur) > carried and unit[2] is not cur[-1][2]
        # A structural boundary closes a chunk once it is big enough.
        if new_section and size(cur[carried:]) >= rule.min_tokens:
            close()
        if len(cur) > carried and size([*cur, unit]) > rule.max_tokens:
            close()
        # The overlap never pushes a chunk past max_tokens.
        while carried and size([*cur, unit]) > rule.max_tokens:
            cur.pop(0)
            carried -= 1
        cur.append(unit)
    close()
    return chunks
