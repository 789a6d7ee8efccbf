"""FaQuAD as the answer gate's question sets (issue 22 §3-§4): the knowledge bases and the
questions the gate's rules are chosen on (``hipocampo calibrate``'s sentence rule) and that the
answer benchmarks report (benchmarks/answers.py, calibrate_answers.py, calibrate_sentences.py).

- FaQuAD's 249 paragraphs as a knowledge base, one document each, of source type regulation at
  trust 0.9 (a university's regulations), each paragraph one chunk (``WHOLE``);
- the same without every fifth of its 39 articles (all their paragraphs);
- answerable: a FaQuAD question over the full knowledge base (success: answered citing its gold
  paragraph); unanswerable: a question of a removed article whose answer span (dataset.json)
  appears in no remaining paragraph, over the reduced one (success: refused);
- FaQuAD's own split: train.json (837 questions of 26 articles) chooses, dev.json (63 of 14
  others) is held out.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar
from uuid import UUID

from .datasets import BeirSet, datasets_dir

if TYPE_CHECKING:
    from ..client import Hipocampo
    from ..embeddings import EmbeddingProvider

__all__ = [
    "WHOLE",
    "answer_spans",
    "faquad_kbs",
    "faquad_sets",
    "faquad_split",
    "ingest_paragraphs",
    "plain",
    "unanswerable",
]

#: Chunking that keeps a paragraph whole (one chunk per document), as a knowledge-base override.
WHOLE = {"min_tokens": 1, "max_tokens": 2000, "overlap": 0, "split": "paragraph"}
T = TypeVar("T")


def plain(text: str) -> str:
    """Lowercase, accents dropped, whitespace collapsed: for answer-span containment."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return " ".join("".join(ch for ch in decomposed if not unicodedata.combining(ch)).split())


def answer_spans() -> dict[str, list[str]]:
    """FaQuAD's answer spans by question id (dataset.json, SQuAD v1 format).

    Raises:
        FileNotFoundError: the shared datasets are missing.
    """
    data = json.loads((datasets_dir() / "faquad" / "dataset.json").read_text("utf-8"))
    return {
        qa["id"]: [a["text"] for a in qa["answers"]]
        for art in data["data"]
        for para in art["paragraphs"]
        for qa in para["qas"]
    }


def faquad_split() -> dict[str, set[str]]:
    """FaQuAD's question ids per split: ``{"train": …, "dev": …}`` (train.json / dev.json).

    Raises:
        FileNotFoundError: the shared datasets are missing.
    """
    out: dict[str, set[str]] = {}
    for split in ("train", "dev"):
        data = json.loads((datasets_dir() / "faquad" / f"{split}.json").read_text("utf-8"))
        out[split] = {q["id"] for a in data["data"] for p in a["paragraphs"] for q in p["qas"]}
    return out


def ingest_paragraphs(
    client: Hipocampo,
    name: str,
    corpus: Mapping[str, tuple[str, str]],
    embedder: EmbeddingProvider,
    source_type: str = "regulation",
    trust: float | None = 0.9,
    prefix: str = "faquad",
    language: str = "portuguese",
) -> UUID:
    """Each passage of ``corpus`` ({id: (title, text)}) as one document of ``source_type`` (``trust``
    None: the type's default) and one chunk, source_uri ``<prefix>:<id>``, into the knowledge base
    ``name`` of ``language`` (its text search configuration: created, or reused: unchanged documents
    are skipped); then the sentence embeddings
    of any of the tenant's chunks that lack them where the gate weighs them (what `hipocampo db
    embed-missing` does). ``client`` acts as service_role of a tenant. Returns the knowledge
    base's id.
    """
    from ..backfill import backfill_chunk_sentences
    from ..embeddings import count_tokens
    from ..ingest import DocumentInput, ingest_documents
    from ..ingest.loaders import LoadedDocument

    client.create_kb(name, language=language, overrides={"chunking": {source_type: WHOLE}})
    docs = [
        DocumentInput(LoadedDocument(title or pid, text, f"{prefix}:{pid}"), source_type, trust_score=trust)
        for pid, (title, text) in corpus.items()
    ]
    ingest_documents(client, name, docs, embedder, count_tokens)
    backfill_chunk_sentences(client, embedder, tenant_id=client.actor.tenant_id)
    return client.kb_id(name)


def faquad_kbs(
    client: Hipocampo, fq: BeirSet, embedder: EmbeddingProvider, suffix: str = ""
) -> tuple[UUID, dict[str, tuple[str, str]], UUID]:
    """FaQuAD's paragraphs as a knowledge base ("faquad-paragraphs" + ``suffix``), and the same
    without every fifth of its 39 articles ("faquad-without-removed-documents" + ``suffix``):
    ``(full knowledge base id, the kept paragraphs, reduced knowledge base id)``."""
    kb_full = ingest_paragraphs(client, "faquad-paragraphs" + suffix, fq.corpus, embedder)
    removed_titles = set(sorted({title for title, _ in fq.corpus.values()})[::5])
    kept = {k: v for k, v in fq.corpus.items() if v[0] not in removed_titles}
    kb_held = ingest_paragraphs(client, "faquad-without-removed-documents" + suffix, kept, embedder)
    return kb_full, kept, kb_held


def unanswerable(fq: BeirSet, kept: Mapping[str, tuple[str, str]], qids: Iterable[str]) -> list[str]:
    """Of ``qids``, the questions no ``kept`` paragraph answers: their gold paragraphs are gone and
    none of their answer spans appears in a kept paragraph (case, accents and spacing ignored)."""
    spans = answer_spans()
    kept_text = [plain(text) for _, text in kept.values()]
    return [
        qid
        for qid in qids
        if not set(fq.qrels[qid]) & kept.keys()
        and not any(plain(span) in text for span in spans.get(qid, []) for text in kept_text)
    ]


def faquad_sets(
    ask: Callable[[str, UUID, set[str]], T],
    fq: BeirSet,
    kept: Mapping[str, tuple[str, str]],
    kb_full: UUID,
    kb_held: UUID,
) -> dict[str, list[T]]:
    """Every question of FaQuAD's sets asked once with ``ask(question, knowledge base, good
    sources)``: ``"train: answerable"`` and ``"dev: answerable"`` over the full knowledge base
    (good: the gold paragraph's source_uri), ``"train: unanswerable"`` and ``"dev: unanswerable"``
    over the reduced one (good: none)."""
    splits = faquad_split()
    sets: dict[str, list[T]] = {}
    for split in ("train", "dev"):
        ids = [qid for qid in fq.queries if qid in splits[split]]
        sets[f"{split}: answerable"] = [
            ask(fq.queries[qid], kb_full, {f"faquad:{d}" for d in fq.qrels[qid]}) for qid in ids
        ]
        sets[f"{split}: unanswerable"] = [ask(fq.queries[qid], kb_held, set()) for qid in unanswerable(fq, kept, ids)]
    return sets
