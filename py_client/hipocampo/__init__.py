"""hipocampo: Supabase-native RAG and long-term AI memory in your own Postgres."""

from .answers import Orchestrator
from .client import Actor, Hipocampo
from .errors import (
    ConnectionLostError,
    DimensionMismatchError,
    EmbeddingError,
    HipocampoError,
    InvalidInputError,
    LoaderError,
    MemoryRejected,
    NotFoundError,
    PermissionDeniedError,
    PreconditionError,
)
from .memory import Memory
from .models import (
    AgentBinding,
    Answer,
    DocumentResult,
    HistoryHit,
    IngestSummary,
    KnowledgeBase,
    MemoryHit,
    MemoryRecord,
    Recall,
    RememberResult,
    ScrubResult,
    SearchHit,
    Source,
)

__version__ = "0.1.0"

__all__ = [
    "Actor",
    "AgentBinding",
    "Answer",
    "ConnectionLostError",
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
    "Orchestrator",
    "PermissionDeniedError",
    "PreconditionError",
    "Recall",
    "RememberResult",
    "ScrubResult",
    "SearchHit",
    "Source",
    "__version__",
]
