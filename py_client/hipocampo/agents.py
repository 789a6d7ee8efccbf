"""Agent integration (seed 003's interfaces): a ``VectorStore`` with its Postgres implementation,
the RAG context provider, a Microsoft Agent Framework context provider, and the
``search_knowledge_base`` tool.

- :class:`PostgresVectorStore` keeps one namespace per knowledge base (ingestion and
  ``hipocampo.hybrid_search`` underneath, RLS applying to the client's actor).
- :class:`RagContextProvider` turns a query into context messages
  ``[context_prompt, "[1] title (source) …", "[2] …"]`` (rag.context_prompt, rag.top_k from the
  database config).
- :class:`HipocampoContextProvider` is an ``agent_framework.ContextProvider`` (async context
  manager): before each model call it adds those messages, and offers ``search_knowledge_base``
  as an on-demand tool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

from agent_framework import ContextProvider, FunctionTool, Message, tool
from pydantic import BaseModel, Field

from .client import Hipocampo
from .embeddings import EmbeddingProvider, count_tokens
from .errors import NotFoundError
from .ingest import DocumentInput, ingest_documents
from .ingest.loaders import LoadedDocument

__all__ = [
    "HipocampoContextProvider",
    "KnowledgeHit",
    "PostgresVectorStore",
    "RagContextProvider",
    "SearchKnowledgeBaseInput",
    "VectorDocument",
    "VectorStore",
    "make_search_tool",
]


@dataclass
class VectorDocument:
    """A document to add: ``text`` with a ``title`` and a ``source`` (URI or link for citation)."""

    text: str
    title: str
    source: str
    source_type: str = "other"
    trust_score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class KnowledgeHit(BaseModel):
    """One search result: the excerpt, its scores and where it comes from (for citation)."""

    excerpt: str
    score: float = Field(description="combined hybrid score (z-scored fusion)")
    similarity: float | None = Field(default=None, description="cosine similarity of the dense leg, 0..1")
    title: str
    source: str
    chunk_id: int
    document_id: UUID


class VectorStore(Protocol):
    """The vector-store interface agents use."""

    def add_documents(self, documents: Sequence[VectorDocument], namespace: str | None = None) -> int:
        """Store documents (chunked and embedded); returns the number of chunks written."""
        ...

    def similarity_search(
        self, query: str, top_k: int = 4, score_threshold: float | None = None, namespace: str | None = None
    ) -> list[KnowledgeHit]:
        """The ``top_k`` best hits; ``score_threshold`` is a floor on the cosine similarity (0..1)."""
        ...

    def clear(self, namespace: str | None = None) -> int:
        """Delete every document of the namespace; returns how many were deleted."""
        ...


class PostgresVectorStore:
    """:class:`VectorStore` over hipocampo: a namespace is a knowledge base of the actor's tenant.

    Args:
        client: acting as a tenant admin or service_role to write, any member to search (RLS).
        embedder: the knowledge base's embedding model.
        namespace: the default knowledge base name (created on first ``add_documents``).
    """

    def __init__(self, client: Hipocampo, embedder: EmbeddingProvider, namespace: str) -> None:
        self.client = client
        self.embedder = embedder
        self.namespace = namespace

    def add_documents(self, documents: Sequence[VectorDocument], namespace: str | None = None) -> int:
        name = namespace or self.namespace
        self.client.create_kb(name)
        inputs = [
            DocumentInput(LoadedDocument(d.title, d.text, d.source, dict(d.metadata)), d.source_type, d.trust_score)
            for d in documents
        ]
        return ingest_documents(self.client, name, inputs, self.embedder, count_tokens).chunks_written

    def similarity_search(
        self, query: str, top_k: int = 4, score_threshold: float | None = None, namespace: str | None = None
    ) -> list[KnowledgeHit]:
        kb = self.client.kb_id(namespace or self.namespace)
        hits = self.client.search(query, self.embedder.embed_query(query), kb_ids=[kb], match_count=top_k)
        return [
            KnowledgeHit(
                excerpt=h.content,
                score=h.final_score,
                similarity=h.dense_score,
                title=h.title,
                source=h.source_uri,
                chunk_id=h.chunk_id,
                document_id=h.document_id,
            )
            for h in hits
            if score_threshold is None or (h.dense_score or 0.0) >= score_threshold
        ]

    def clear(self, namespace: str | None = None) -> int:
        try:
            kb = self.client.kb_id(namespace or self.namespace)
        except NotFoundError:
            return 0
        # Keyset pages by source URI: deleting the rows already read moves no later page.
        return sum(self.client.delete_document(d.id) for d in self.client.iter_documents(kb))


class RagContextProvider:
    """Context messages for a query: ``[context_prompt, "[1] title (source)\\nexcerpt", …]``.

    ``top_k`` and ``context_prompt`` default to the database's rag config (``hipocampo.rag_config``
    of the store's knowledge base), read once.
    """

    def __init__(
        self,
        store: PostgresVectorStore,
        *,
        top_k: int | None = None,
        score_threshold: float | None = None,
        context_prompt: str | None = None,
    ) -> None:
        self.store = store
        self.score_threshold = score_threshold
        if top_k is None or context_prompt is None:
            cfg = store.client.rag_config(store.client.kb_id(store.namespace))
            top_k = top_k if top_k is not None else int(cfg["top_k"])
            context_prompt = context_prompt if context_prompt is not None else str(cfg["context_prompt"])
        self.top_k = top_k
        self.context_prompt = context_prompt

    def search(self, query: str, top_k: int | None = None) -> list[KnowledgeHit]:
        """The knowledge-base hits of ``query`` (``top_k`` default rag.top_k = 4)."""
        return self.store.similarity_search(query, top_k or self.top_k, self.score_threshold)

    def context_messages(self, query: str) -> tuple[list[str], list[KnowledgeHit]]:
        """The context texts (prompt first, then one per hit, numbered for citation) and the hits."""
        hits = self.search(query)
        texts = [self.context_prompt] + [f"[{i}] {h.title} ({h.source})\n{h.excerpt}" for i, h in enumerate(hits, 1)]
        return texts, hits


class SearchKnowledgeBaseInput(BaseModel):
    """Input of the ``search_knowledge_base`` tool."""

    query: str = Field(min_length=3, description="what to look up in the knowledge base (at least 3 characters)")
    top_k: int = Field(default=4, ge=1, le=20, description="how many excerpts to return (1..20)")


def make_search_tool(rag: RagContextProvider) -> FunctionTool:
    """The ``search_knowledge_base`` tool: excerpts, scores and sources of a query."""

    def search_knowledge_base(query: str, top_k: int = 4) -> list[dict[str, Any]]:
        return [h.model_dump(mode="json") for h in rag.search(query, top_k)]

    made: Callable[..., Any] = tool(
        name="search_knowledge_base",
        description="Search the knowledge base; returns excerpts with their scores, titles and sources to cite.",
        schema=SearchKnowledgeBaseInput,
    )
    result: FunctionTool = made(search_knowledge_base)
    return result


class HipocampoContextProvider(ContextProvider):
    """Agent Framework context provider: before each model call, adds the RAG context messages
    for the latest user message (``[context_prompt, chunk1, chunk2, …]`` with sources for
    citation) and the ``search_knowledge_base`` tool for on-demand search.

    Use as an async context manager (``async with HipocampoContextProvider(rag) as p``) or pass it
    in ``Agent(context_providers=[…])``. ``last_hits`` holds the hits of the latest call.
    """

    def __init__(self, rag: RagContextProvider, source_id: str = "hipocampo") -> None:
        super().__init__(source_id)
        self.rag = rag
        self.search_tool = make_search_tool(rag)
        self.last_hits: list[KnowledgeHit] = []

    async def __aenter__(self) -> HipocampoContextProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def before_run(self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]) -> None:
        """Adds the context messages and the search tool to the invocation ``context``."""
        query = next((m.text for m in reversed(context.input_messages) if m.role == "user" and m.text), "")
        context.extend_tools(self.source_id, [self.search_tool])
        if len(query.strip()) < 3:
            return
        texts, hits = await asyncio.to_thread(self.rag.context_messages, query)
        self.last_hits = hits
        state["sources"] = [{"title": h.title, "source": h.source, "chunk_id": h.chunk_id} for h in hits]
        context.extend_messages(self.source_id, [Message(role="system", contents=[t]) for t in texts])
