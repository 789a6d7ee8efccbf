"""hipocampo: Supabase-native RAG and long-term AI memory in your own Postgres."""

from .client import Actor, Hipocampo
from .errors import (
    DimensionMismatchError,
    EmbeddingError,
    HipocampoError,
    InvalidInputError,
    LoaderError,
    NotFoundError,
    PermissionDeniedError,
)
from .models import DocumentResult, IngestSummary, KnowledgeBase, SearchHit

__version__ = "0.1.0"

__all__ = [
    "Actor",
    "DimensionMismatchError",
    "DocumentResult",
    "EmbeddingError",
    "Hipocampo",
    "HipocampoError",
    "IngestSummary",
    "InvalidInputError",
    "KnowledgeBase",
    "LoaderError",
    "NotFoundError",
    "PermissionDeniedError",
    "SearchHit",
    "__version__",
]
