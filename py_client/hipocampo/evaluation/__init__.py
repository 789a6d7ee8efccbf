"""Retrieval evaluation through the real RPC: nDCG@10 and recall@10 per mode.

Modes: ``dense`` (lexical weight 0), ``lexical`` (dense weight 0), ``hybrid`` (config fusion),
plus any extra named option sets. Each BEIR passage is ingested as one document and kept whole
as one chunk (the eval KB overrides ``chunking.faq`` to 2,000 tokens), since the qrels judge
passages; a document's rank is that of its best chunk.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..client import Hipocampo
from ..embeddings.base import EmbeddingProvider
from ..ingest.loaders import LoadedDocument
from ..ingest.pipeline import DocumentInput, ingest_documents
from .datasets import BeirSet

__all__ = ["MODES", "EvalResult", "evaluate", "index_beir", "ndcg_at_k", "recall_at_k"]

MODES: dict[str, dict[str, Any]] = {
    "dense": {"lexical_weight": 0.0, "dense_weight": 1.0, "min_similarity": -1.0},
    "lexical": {"dense_weight": 0.0, "lexical_weight": 1.0},
    "hybrid": {},
}


def ndcg_at_k(ranked: list[str], rel: dict[str, int], k: int = 10) -> float:
    """nDCG@k with graded relevance (gain = grade, log2 discount)."""
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: list[str], rel: dict[str, int], k: int = 10) -> float:
    """Share of relevant documents found in the top k."""
    return len(set(ranked[:k]) & set(rel)) / len(rel) if rel else 0.0


@dataclass
class EvalResult:
    """Mean nDCG@10 / recall@10 of one mode over ``queries`` queries; latency median in ms."""

    dataset: str
    mode: str
    ndcg10: float
    recall10: float
    queries: int
    median_ms: float


def index_beir(
    client: Hipocampo,
    ds: BeirSet,
    embedder: EmbeddingProvider,
    count_tokens: Callable[[str], int],
    kb_name: str | None = None,
) -> str:
    """Ingest the corpus of ``ds`` into KB ``kb_name`` (default ``eval-<name>``); idempotent."""
    name = kb_name or f"eval-{ds.name}"
    whole = {"min_tokens": 1, "max_tokens": 2000, "overlap": 0, "split": "paragraph"}
    client.create_kb(
        name, language=ds.language, description=f"BEIR corpus of {ds.name}", overrides={"chunking": {"faq": whole}}
    )
    inputs = [
        DocumentInput(LoadedDocument(title or doc_id, text, f"beir:{ds.name}:{doc_id}"), "faq")
        for doc_id, (title, text) in ds.corpus.items()
    ]
    ingest_documents(client, name, inputs, embedder, count_tokens)
    return name


def evaluate(
    client: Hipocampo,
    ds: BeirSet,
    embedder: EmbeddingProvider,
    kb_name: str,
    modes: dict[str, dict[str, Any]] | None = None,
    k: int = 10,
    embedding_model: str | None = None,
) -> list[EvalResult]:
    """Run every query of ``ds`` through ``hybrid_search`` in each mode; returns one row per mode.

    Queries are embedded as queries (``embed_query``: e5's ``query:`` prefix; the same vector as
    a passage for MiniLM) and searched with ``embedding_model`` (None: the active model)."""
    kb = client.kb_id(kb_name)
    qids = list(ds.queries)
    vectors = [embedder.embed_query(ds.queries[q]) for q in qids]
    prefix = f"beir:{ds.name}:"
    results: list[EvalResult] = []
    for mode, opts in (modes or MODES).items():
        nd: list[float] = []
        rc: list[float] = []
        times: list[float] = []
        for qid, vec in zip(qids, vectors, strict=True):
            t0 = time.perf_counter()
            hits = client.search(
                ds.queries[qid], vec, kb_ids=[kb], match_count=k * 2, embedding_model=embedding_model, **opts
            )
            times.append((time.perf_counter() - t0) * 1000)
            ranked: list[str] = []
            for h in hits:
                doc = h.source_uri.removeprefix(prefix)
                if doc not in ranked:
                    ranked.append(doc)
            nd.append(ndcg_at_k(ranked, ds.qrels[qid], k))
            rc.append(recall_at_k(ranked, ds.qrels[qid], k))
        times.sort()
        results.append(EvalResult(ds.name, mode, sum(nd) / len(nd), sum(rc) / len(rc), len(nd), times[len(times) // 2]))
    return results
