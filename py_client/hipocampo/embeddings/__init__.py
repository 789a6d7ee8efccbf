"""Embedding providers: one protocol, an offline default and OpenAI / Azure OpenAI."""

from .base import EmbeddingProvider, TokenEmbedder, TokenVectors, l2_normalize, token_embedder
from .cache import CachingEmbedder
from .e5 import LocalE5
from .factory import active_provider, provider_from_config
from .local import LocalMiniLM, count_tokens
from .openai_provider import AzureOpenAIEmbeddings, OpenAIEmbeddings

__all__ = [
    "AzureOpenAIEmbeddings",
    "CachingEmbedder",
    "EmbeddingProvider",
    "LocalE5",
    "LocalMiniLM",
    "OpenAIEmbeddings",
    "TokenEmbedder",
    "TokenVectors",
    "active_provider",
    "count_tokens",
    "l2_normalize",
    "provider_from_config",
    "token_embedder",
]
