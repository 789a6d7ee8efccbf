"""The on-topic floor of an embedding model (issue 61 §1: ``rag.passages_floor``).

A question the answer gate cannot confirm is answered with passages when retrieval found a
passage at least this similar to it (the best dense similarity, a cosine), and refused below it
(off-topic). The floor is fitted on question sets whose knowledge bases are known, and reported
on a set left out (leave-one-dataset-out, benchmarks/passages_floor.py):

- each set is a knowledge base (its passages, embedded as the pipeline embeds chunks: title and
  text) and its own questions, which are on-topic for it (answerable or not);
- every other set's questions are off-topic for it (a university's rules asked of a condominium's
  regulation; a scientific claim asked of Brazilian web text), and so are a set's own questions
  marked ``off_topic``;
- the signal of a (question, knowledge base) pair is the question's best cosine over the
  knowledge base's passages.

Rule: the lowest value of a 0.01 grid under which at least ``MIN_OFF_TOPIC_REFUSED`` (95 %) of the
off-topic pairs of the fitting sets fall, each set weighing the same.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..config import load_config, repo_root
from ..embeddings import EmbeddingProvider, count_tokens
from .datasets import load_beir

__all__ = [
    "MIN_OFF_TOPIC_REFUSED",
    "PARAPHRASE_SETS",
    "QuestionSet",
    "best_cosines",
    "fit_floor",
    "load_sets",
    "refused_share",
]

MIN_OFF_TOPIC_REFUSED = 0.95
SCIFACT_DISTRACTORS = 700  # SciFact passages kept besides the relevant ones (its corpus is 5,183)


@dataclass
class QuestionSet:
    """A knowledge base's passages (``texts``, as embedded) and its questions: ``on_topic`` (its
    own, answerable or not) and ``off_topic`` (its own questions marked so)."""

    name: str
    texts: list[str]
    on_topic: list[str]
    off_topic: list[str] = field(default_factory=list)
    # A paraphrase set's units: the article or clause of each text, and the one that answers each
    # on-topic question (None: the set answers it nowhere). Empty for the BEIR sets.
    units: list[str | None] = field(default_factory=list)
    answers: list[str | None] = field(default_factory=list)


def _beir(name: str, limit_questions: int | None = None) -> QuestionSet:
    ds = load_beir(name)
    qids = sorted(ds.queries)[:limit_questions] if limit_questions else sorted(ds.queries)
    docs = sorted(ds.corpus)
    if name == "scifact":
        relevant = {d for q in qids for d in ds.qrels[q]}
        docs = sorted(relevant | set([d for d in docs if d not in relevant][:SCIFACT_DISTRACTORS]))
    texts = [f"{ds.corpus[d][0]}\n{ds.corpus[d][1]}" if ds.corpus[d][0] else ds.corpus[d][1] for d in docs]
    return QuestionSet(name, texts, [ds.queries[q] for q in qids])


def _paraphrase(name: str, document: str, questions: str, source_type: str) -> QuestionSet:
    """An example document cut as `hipocampo ingest --source-type <source_type>` cuts it (a
    document of articles or clauses by article: ``chunking.rule_for``; the context header before
    each chunk), with its judged questions (``examples/<questions>``: ``article`` names the unit
    that answers, ``kind`` off_topic the off-topic ones)."""
    from ..ingest.chunking import ChunkingRule, chunk_text, rule_for
    from ..ingest.pipeline import context_header

    root = repo_root() / "examples"
    path = root / document
    text = path.read_text("utf-8")
    rules = load_config()["chunking"]
    rule = rule_for(
        text,
        ChunkingRule.from_config(rules.get(source_type) or rules["other"]),
        ChunkingRule.from_config(rules["regulation"]),
    )
    chunks = chunk_text(text, rule, count_tokens)
    texts = [f"{context_header(path.name, c)}\n{c.content}" for c in chunks]
    rows = [json.loads(line) for line in (root / questions).read_text("utf-8").splitlines() if line]
    on = [r for r in rows if r.get("kind") != "off_topic"]
    off = [r["question"] for r in rows if r.get("kind") == "off_topic"]
    return QuestionSet(
        name,
        texts,
        [r["question"] for r in on],
        off,
        units=[str(c.metadata.get("article", "")) or None for c in chunks],
        answers=[r.get("article") for r in on],
    )


# The paraphrase sets (examples/): name -> (document, judged questions, the source type it is
# ingested with; other: none given, cut by clause). The regulation is written in Portuguese,
# Spanish and English (issue 59 §2).
PARAPHRASE_SETS = {
    "regulation": ("regulamento-condominio/regulamento-interno.md", "perguntas-regulamento.jsonl", "regulation"),
    "contract": ("contrato-locacao/contrato-de-locacao.txt", "perguntas-contrato.jsonl", "other"),
    "spanish": ("reglamento-condominio/reglamento-interno.md", "preguntas-reglamento.jsonl", "regulation"),
    "english": ("regulation-condominium/house-rules.md", "questions-house-rules.jsonl", "regulation"),
}


def load_sets(names: Sequence[str] = ("faquad", "quati", "scifact", "regulation", "contract")) -> list[QuestionSet]:
    """The question sets by name: FaQuAD (249 paragraphs, its first 300 questions by id), Quati
    (239 passages, 24 questions), SciFact (the relevant abstracts of its 300 test claims and 700
    others), the regulation (25 articles; 77 on-topic and 12 off-topic questions), the contract
    (22 clauses; 78 on-topic and 12 off-topic questions); and on request ``spanish``, the regulation
    written in Spanish (25 articles; 77 on-topic and 12 off-topic questions in Spanish), and
    ``english``, the same in English.

    Raises:
        FileNotFoundError: the shared datasets are missing.
    """
    beir = {"faquad": 300, "quati": None, "scifact": None}  # FaQuAD: its first 300 questions
    return [_beir(n, beir[n]) if n in beir else _paraphrase(n, *PARAPHRASE_SETS[n]) for n in names]


def best_cosines(embedder: EmbeddingProvider, sets: Sequence[QuestionSet]) -> dict[str, dict[str, list[float]]]:
    """``{kb: {"on": [...], "off": [...]}}``: each question's best cosine over the knowledge base
    ``kb``'s passages; ``on`` its own on-topic questions, ``off`` every other set's questions and its
    own off-topic ones."""
    import numpy as np

    passages = {s.name: np.asarray(embedder.embed_documents(s.texts), dtype=np.float32) for s in sets}
    questions = {
        s.name: (
            np.asarray([embedder.embed_query(q) for q in s.on_topic], dtype=np.float32),
            np.asarray([embedder.embed_query(q) for q in s.off_topic], dtype=np.float32) if s.off_topic else None,
        )
        for s in sets
    }

    def best(q: object, kb: str) -> list[float]:
        if q is None:
            return []
        return [float(x) for x in (np.asarray(q) @ passages[kb].T).max(axis=1)]

    out: dict[str, dict[str, list[float]]] = {}
    for s in sets:
        own_on, own_off = questions[s.name]
        off = best(own_off, s.name)
        for other in sets:
            if other.name != s.name:
                off += best(questions[other.name][0], s.name) + best(questions[other.name][1], s.name)
        out[s.name] = {"on": best(own_on, s.name), "off": off}
    return out


def refused_share(xs: Sequence[float], floor: float) -> float:
    """The share of ``xs`` under ``floor`` (refused as off-topic)."""
    return sum(x < floor for x in xs) / max(len(xs), 1)


def fit_floor(cosines: Mapping[str, Mapping[str, Sequence[float]]], names: Sequence[str]) -> float:
    """The lowest 0.01 step under which at least MIN_OFF_TOPIC_REFUSED of the off-topic pairs of
    the sets ``names`` fall (the mean of the sets' shares)."""
    for step in range(-100, 101):
        floor = round(step / 100, 2)
        share = sum(refused_share(cosines[n]["off"], floor) for n in names) / len(names)
        if share >= MIN_OFF_TOPIC_REFUSED:
            return floor
    return 1.0
