"""OpenAI and Azure OpenAI embeddings through the real ``openai`` SDK against a local
OpenAI-compatible HTTP endpoint (no internet here): batching, retries on 429/5xx, error mapping,
normalisation, base64 and float encodings."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from hipocampo.embeddings import AzureOpenAIEmbeddings, EmbeddingProvider, OpenAIEmbeddings
from hipocampo.errors import EmbeddingError

from .openai_endpoint import LocalOpenAI, local_openai


@pytest.fixture
def endpoint() -> Iterator[tuple[str, LocalOpenAI]]:
    with local_openai() as state:
        yield state.url, state


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


def test_batches_and_normalises(endpoint: tuple[str, LocalOpenAI]) -> None:
    url, state = endpoint
    emb = OpenAIEmbeddings(dimensions=8, api_key="k", base_url=f"{url}/v1", batch_size=2)
    assert isinstance(emb, EmbeddingProvider) and emb.dims == 8
    vecs = emb.embed_documents(["a", "bb", "ccc", "dddd", "eeeee"])
    assert len(vecs) == 5 and all(abs(norm(v) - 1) < 1e-6 for v in vecs)
    assert [len(r["input"]) for r in state.requests] == [2, 2, 1]
    assert all(r["model"] == "text-embedding-3-small" and r["dimensions"] == 8 for r in state.requests)
    assert len(emb.embed_query("x")) == 8


def test_retries_rate_limits_and_server_errors(endpoint: tuple[str, LocalOpenAI]) -> None:
    url, state = endpoint
    state.fail = [429, 500, 503]
    emb = OpenAIEmbeddings(dimensions=8, api_key="k", base_url=f"{url}/v1", max_retries=5)
    assert len(emb.embed_documents(["a"])) == 1
    assert len(state.requests) == 4


def test_persistent_rate_limit_is_a_clear_error(endpoint: tuple[str, LocalOpenAI]) -> None:
    url, state = endpoint
    state.fail = [429] * 10
    emb = OpenAIEmbeddings(dimensions=8, api_key="k", base_url=f"{url}/v1", max_retries=2)
    with pytest.raises(EmbeddingError, match="embedding rate limit persisted after retries"):
        emb.embed_documents(["a"])
    assert len(state.requests) == 3


def test_authentication_error_is_not_retried(endpoint: tuple[str, LocalOpenAI]) -> None:
    url, state = endpoint
    state.fail = [401]
    emb = OpenAIEmbeddings(dimensions=8, api_key="bad", base_url=f"{url}/v1", max_retries=3)
    with pytest.raises(EmbeddingError, match="authentication failed"):
        emb.embed_query("a")
    assert len(state.requests) == 1


def test_wrong_dimensions_are_detected(endpoint: tuple[str, LocalOpenAI]) -> None:
    url, _ = endpoint
    emb = OpenAIEmbeddings(api_key="k", base_url=f"{url}/v1")  # expects 1536, endpoint answers 8
    with pytest.raises(EmbeddingError, match="expected 1536 dimensions, got 8"):
        emb.embed_query("a")


def test_unreachable_endpoint() -> None:
    emb = OpenAIEmbeddings(dimensions=8, api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2)
    with pytest.raises(EmbeddingError, match="unreachable"):
        emb.embed_query("a")


def test_azure_deployment_path(endpoint: tuple[str, LocalOpenAI]) -> None:
    url, state = endpoint
    emb = AzureOpenAIEmbeddings(
        "emb-prod", api_version="2024-10-21", azure_endpoint=url, dimensions=8, api_key="k", normalize=False
    )
    vec = emb.embed_query("abc")
    assert vec == [float(3 + j) for j in range(8)]
    assert state.paths[0].startswith("/openai/deployments/emb-prod/embeddings?api-version=2024-10-21")
    assert emb.provider == "azure" and emb.model_name == "emb-prod"


def test_without_the_sdk_each_openai_path_names_its_extra() -> None:
    """``openai`` is the ``openai`` extra, not in the default install: the embedding providers
    and the LLM generator refuse with the install line, nothing else breaks (a fresh process
    where ``import openai`` fails)."""
    import subprocess
    import sys

    code = """
import sys
sys.modules["openai"] = None  # import openai -> ImportError, as without the package
from hipocampo.answers.generation import ChatAnswerer, GenerationError
from hipocampo.embeddings import AzureOpenAIEmbeddings, LocalMiniLM, OpenAIEmbeddings
from hipocampo.errors import EmbeddingError
out = []
for make in (lambda: OpenAIEmbeddings(), lambda: AzureOpenAIEmbeddings(deployment="d")):
    try:
        make()
    except EmbeddingError as exc:
        out.append(str(exc))
try:
    ChatAnswerer({"provider": "openai", "api_key_secret": "K", "base_url_secret": "U", "chat_model": "m"})
except GenerationError as exc:
    out.append(str(exc))
print(len(LocalMiniLM().embed_query("oi")))
print("\\n".join(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "384" and len(lines) == 4
    assert all("pip install 'hipocampo[openai]'" in line for line in lines[1:])
