"""Pydantic models returned by the client."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, Field

__all__ = ["DocumentResult", "IngestSummary", "KnowledgeBase", "SearchHit"]


class KnowledgeBase(BaseModel):
    """A knowledge base with its document and chunk counts."""

    id: UUID
    name: str
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    status: str
    language: str
    documents: int = 0
    chunks: int = 0
    updated_at: datetime | None = None


class SearchHit(BaseModel):
    """One row of ``hipocampo.hybrid_search``: the chunk, its document (for citation), scores.

    ``dense_score`` is a cosine similarity (-1..1) or None when the dense leg did not find it;
    ``lexical_score`` is Okapi BM25 (>= 0) or None; ``fused_score`` z-score sum or RRF;
    ``final_score`` after the optional rerank; ``rank`` is 1-based.
    """

    chunk_id: int
    document_id: UUID
    kb_id: UUID
    chunk_index: int
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    title: str
    source_uri: str
    source_type: str
    author: str | None = None
    published_at: datetime | None = None
    trust_score: float
    dense_score: float | None = None
    lexical_score: float | None = None
    fused_score: float
    final_score: float
    rank: int


class DocumentResult(BaseModel):
    """Outcome of one document: ``status`` inserted | replaced | unchanged | failed."""

    source_uri: str
    title: str
    status: str
    chunks: int = 0
    pii_replaced: int = 0
    error: str | None = None


class IngestSummary(BaseModel):
    """Totals of an ingestion run; ``seconds`` wall time, ``chunks_per_second`` over it."""

    kb: str
    job_id: UUID | None = None
    documents_total: int = 0
    documents_ingested: int = 0
    documents_unchanged: int = 0
    documents_failed: int = 0
    chunks_written: int = 0
    embedding_calls: int = 0
    pii_replaced: int = 0
    seconds: float = 0.0
    chunks_per_second: float = 0.0
    documents: list[DocumentResult] = Field(default_factory=list)
