"""OpenAI and Azure OpenAI embeddings through the real ``openai`` SDK against a local
OpenAI-compatible HTTP endpoint (no internet here): batching, retries on 429/5xx, error mapping,
normalisation, base64 and float encodings."""

from __future__ import annotations

import base64
import json
import math
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from hipocampo.embeddings import AzureOpenAIEmbeddings, EmbeddingProvider, OpenAIEmbeddings
from hipocampo.errors import EmbeddingError


class FakeOpenAI:
    """State of the local endpoint: scripted failures, and every request it saw."""

    def __init__(self) -> None:
        self.fail: list[int] = []  # status codes to answer before succeeding
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.dims = 8


def make_handler(state: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            state.paths.append(self.path)
            state.requests.append(body)
            if state.fail:
                code = state.fail.pop(0)
                self._send(code, {"error": {"message": f"scripted {code}", "type": "test"}}, {"retry-after-ms": "1"})
                return
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            dims = body.get("dimensions") or state.dims
            data = []
            for i, text in enumerate(inputs):
                vec = [float(len(text) + j) for j in range(dims)]  # deterministic, not normalised
                if body.get("encoding_format") == "base64":
                    emb: Any = base64.b64encode(struct.pack(f"<{dims}f", *vec)).decode()
                else:
                    emb = vec
                data.append({"object": "embedding", "index": i, "embedding": emb})
            self._send(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body["model"],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                },
            )

    return Handler


@pytest.fixture
def endpoint() -> Iterator[tuple[str, FakeOpenAI]]:
    state = FakeOpenAI()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


def test_batches_and_normalises(endpoint: tuple[str, FakeOpenAI]) -> None:
    url, state = endpoint
    emb = OpenAIEmbeddings(dimensions=8, api_key="k", base_url=f"{url}/v1", batch_size=2)
    assert isinstance(emb, EmbeddingProvider) and emb.dims == 8
    vecs = emb.embed_documents(["a", "bb", "ccc", "dddd", "eeeee"])
    assert len(vecs) == 5 and all(abs(norm(v) - 1) < 1e-6 for v in vecs)
    assert [len(r["input"]) for r in state.requests] == [2, 2, 1]
    assert all(r["model"] == "text-embedding-3-small" and r["dimensions"] == 8 for r in state.requests)
    assert len(emb.embed_query("x")) == 8


def test_retries_rate_limits_and_server_errors(endpoint: tuple[str, FakeOpenAI]) -> None:
    url, state = endpoint
    state.fail = [429, 500, 503]
    emb = OpenAIEmbeddings(dimensions=8, api_key="k", base_url=f"{url}/v1", max_retries=5)
    assert len(emb.embed_documents(["a"])) == 1
    assert len(state.requests) == 4


def test_persistent_rate_limit_is_a_clear_error(endpoint: tuple[str, FakeOpenAI]) -> None:
    url, state = endpoint
    state.fail = [429] * 10
    emb = OpenAIEmbeddings(dimensions=8, api_key="k", base_url=f"{url}/v1", max_retries=2)
    with pytest.raises(EmbeddingError, match="embedding rate limit persisted after retries"):
        emb.embed_documents(["a"])
    assert len(state.requests) == 3


def test_authentication_error_is_not_retried(endpoint: tuple[str, FakeOpenAI]) -> None:
    url, state = endpoint
    state.fail = [401]
    emb = OpenAIEmbeddings(dimensions=8, api_key="bad", base_url=f"{url}/v1", max_retries=3)
    with pytest.raises(EmbeddingError, match="authentication failed"):
        emb.embed_query("a")
    assert len(state.requests) == 1


def test_wrong_dimensions_are_detected(endpoint: tuple[str, FakeOpenAI]) -> None:
    url, _ = endpoint
    emb = OpenAIEmbeddings(api_key="k", base_url=f"{url}/v1")  # expects 1536, endpoint answers 8
    with pytest.raises(EmbeddingError, match="expected 1536 dimensions, got 8"):
        emb.embed_query("a")


def test_unreachable_endpoint() -> None:
    emb = OpenAIEmbeddings(dimensions=8, api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=2)
    with pytest.raises(EmbeddingError, match="unreachable"):
        emb.embed_query("a")


def test_azure_deployment_path(endpoint: tuple[str, FakeOpenAI]) -> None:
    url, state = endpoint
    emb = AzureOpenAIEmbeddings(
        "emb-prod", api_version="2024-10-21", azure_endpoint=url, dimensions=8, api_key="k", normalize=False
    )
    vec = emb.embed_query("abc")
    assert vec == [float(3 + j) for j in range(8)]
    assert state.paths[0].startswith("/openai/deployments/emb-prod/embeddings?api-version=2024-10-21")
    assert emb.provider == "azure" and emb.model_name == "emb-prod"
