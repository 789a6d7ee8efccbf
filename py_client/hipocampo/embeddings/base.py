"""The embedding-provider protocol."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

__all__ = ["EmbeddingProvider", "TokenEmbedder", "TokenVectors", "cpu_threads", "l2_normalize", "token_embedder"]


@runtime_checkable
class EmbeddingProvider(Protocol):
    """What ingestion and retrieval need from an embedding model.

    Attributes:
        model_name: registry name (as ``hipocampo.active_embedding_model()`` returns it).
        provider: ``local`` | ``openai`` | ``azure``.
        dims: vector dimensions.
        model_version: a string that changes whenever vectors would change.
    """

    model_name: str
    provider: str
    dims: int
    model_version: str

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed passages: ``len(texts)`` vectors of ``dims`` floats, L2-normalised."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """Embed one query: ``dims`` floats, L2-normalised."""
        ...


class TokenVectors(NamedTuple):
    """A text's tokens for late interaction: WordPiece ``ids`` and, for each, the sign bits of its
    contextual embedding as a string of ``dims`` characters "0" / "1" (``bits``)."""

    ids: list[int]
    bits: list[str]


@runtime_checkable
class TokenEmbedder(Protocol):
    """A provider that also gives per-token vectors (the local model; OpenAI's API does not).

    Used by history search's late-interaction re-rank (docs/design.md
    §history search).
    """

    dims: int

    def embed_tokens(self, texts: Sequence[str], contexts: Sequence[Sequence[str]] | None = None) -> list[TokenVectors]:
        """Each text's tokens, each read after its context (the previous messages, oldest first)."""
        ...


def token_embedder(embedder: Any) -> TokenEmbedder | None:
    """``embedder`` when it gives token vectors (``tokens_supported`` true), else None."""
    if embedder is not None and getattr(embedder, "tokens_supported", False) and isinstance(embedder, TokenEmbedder):
        return embedder
    return None


def l2_normalize(vec: Sequence[float]) -> list[float]:
    """Scale ``vec`` to unit L2 norm (a zero vector is returned unchanged)."""
    norm = math.sqrt(sum(x * x for x in vec))
    if norm == 0:
        return list(vec)
    return [x / norm for x in vec]


def cpu_threads(threads: int | None = None) -> int:
    """Threads a local model computes with: ``threads``, else ``HIPOCAMPO_EMBED_THREADS``, else
    one per core (docs/design.md §Embeddings)."""
    env = os.environ.get("HIPOCAMPO_EMBED_THREADS")
    return threads or (int(env) if env else os.cpu_count() or 1)
