"""A local OpenAI-compatible HTTP endpoint for tests (no internet here): /embeddings (OpenAI and
Azure deployment paths) and /chat/completions, driven through the real ``openai`` SDKs.

Records every request (``paths``, ``auths`` - the Authorization header - and ``requests`` - the
JSON bodies), answers scripted failures first (``fail``: status codes, with retry-after-ms 1),
then embeddings from ``vectorize`` (default: deterministic, un-normalised, ``dims`` long, or the
request's ``dimensions``; float or base64 encoding) and chat completions with ``reply`` (streamed
as Server-Sent Events of ``piece`` characters when the request asks ``stream``).
"""

from __future__ import annotations

import base64
import json
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LocalOpenAI:
    def __init__(self, vectorize: Callable[[str], list[float]] | None = None, dims: int = 8) -> None:
        self.fail: list[int] = []
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.auths: list[str] = []
        self.dims = dims
        self.reply = ""
        self.replies: list[str] = []  # answered first, one per chat completion, before ``reply``
        self.piece = 7  # characters per streamed chunk
        self.vectorize = vectorize
        state = self

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

            def _stream(self, chunks: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                state.paths.append(self.path)
                state.auths.append(self.headers.get("authorization", ""))
                state.requests.append(body)
                if state.fail:
                    code = state.fail.pop(0)
                    msg = {"error": {"message": f"scripted {code}", "type": "test"}}
                    self._send(code, msg, {"retry-after-ms": "1"})
                elif "/chat/completions" in self.path and body.get("stream"):
                    self._stream(state._chunks(body))
                elif "/chat/completions" in self.path:
                    self._send(200, state._chat(body))
                else:
                    self._send(200, state._embeddings(body))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.base_url = f"{self.url}/v1"

    def _embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for i, text in enumerate(inputs):
            if self.vectorize:
                vec = self.vectorize(text)
            else:
                dims = body.get("dimensions") or self.dims
                vec = [float(len(text) + j) for j in range(dims)]  # deterministic, not normalised
            emb: Any = vec
            if body.get("encoding_format") == "base64":
                emb = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()
            data.append({"object": "embedding", "index": i, "embedding": emb})
        return {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }

    def _next_reply(self) -> str:
        return self.replies.pop(0) if self.replies else self.reply

    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = self._next_reply()
        return {
            "id": "c1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply}}],
        }

    def _chunks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """``reply`` as a streamed completion's chunks (``stream`` true), ``piece`` characters each."""
        reply = self._next_reply()
        pieces = [reply[i : i + self.piece] for i in range(0, len(reply), self.piece)]
        base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
        chunks = [
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": p}, "finish_reason": None}]}
            for p in pieces
        ]
        return [*chunks, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def local_openai(vectorize: Callable[[str], list[float]] | None = None) -> Iterator[LocalOpenAI]:
    """A running ``LocalOpenAI``, shut down on exit."""
    endpoint = LocalOpenAI(vectorize)
    try:
        yield endpoint
    finally:
        endpoint.close()
