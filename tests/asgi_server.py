"""An ASGI app served by uvicorn on a free loopback port, in a thread (tests of HTTP surfaces:
the MCP endpoint of ``hipocampo serve``, the gateway in front of the edge functions)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``http://127.0.0.1:<port>`` while ``app`` is served; stopped on exit.

    Raises:
        RuntimeError: the server did not start within 10 s.
    """
    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start in 10 s")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
