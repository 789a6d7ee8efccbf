"""hipocampo: Supabase-native RAG and long-term AI memory in your own Postgres."""

from .client import Actor, Hipocampo
from .errors import (
    DimensionMismatchError,
    EmbeddingError,
    HipocampoError,
    InvalidInputError,
    LoaderError,
    MemoryRejected,
    NotFoundError,
    PermissionDeniedError,
)
from .memory import Memory
from .models import (
    DocumentResult,
    HistoryHit,
    IngestSummary,
    KnowledgeBase,
    MemoryHit,
    MemoryRecord,
    Recall,
    RememberResult,
    SearchHit,
)

__version__ = "0.1.0"

__all__ = [
    "Actor",
    "DimensionMismatchError",
    "DocumentResult",
    "EmbeddingError",
    "Hipocampo",
    "HipocampoError",
    "HistoryHit",
    "IngestSummary",
    "InvalidInputError",
    "KnowledgeBase",
    "LoaderError",
    "Memory",
    "MemoryHit",
    "MemoryRecord",
    "MemoryRejected",
    "NotFoundError",
    "PermissionDeniedError",
    "Recall",
    "RememberResult",
    "SearchHit",
    "__version__",
]
