"""The embedding-provider protocol."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["EmbeddingProvider", "l2_normalize"]


@runtime_checkable
class EmbeddingProvider(Protocol):
    """What ingestion and retrieval need from an embedding model.

    Attributes:
        model_name: registry name (``hipocampo_private.embedding_models.name``).
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


def l2_normalize(vec: Sequence[float]) -> list[float]:
    """Scale ``vec`` to unit L2 norm (a zero vector is returned unchanged)."""
    norm = math.sqrt(sum(x * x for x in vec))
    if norm == 0:
        return list(vec)
    return [x / norm for x in vec]
