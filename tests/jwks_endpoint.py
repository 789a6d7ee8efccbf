"""A local JWKS endpoint for tests: the public half of an ES256 (P-256) and an RS256 key, as a
Supabase project with asymmetric JWT signing keys publishes them at
``/auth/v1/.well-known/jwks.json``; ``sign`` makes tokens with either private half.

Records how often the key set was fetched (``fetches``); ``down = True`` answers 503.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm


def user_claims(sub: Any, tenant: Any) -> dict[str, Any]:
    """Claims of a Supabase user token (role authenticated, aud, sub, tenant), valid 10 minutes."""
    return {
        "role": "authenticated",
        "exp": int(time.time()) + 600,
        "aud": "authenticated",
        "sub": str(sub),
        "app_metadata": {"tenant_id": str(tenant)},
    }


class LocalJWKS:
    def __init__(self) -> None:
        self.keys: dict[str, tuple[str, Any]] = {
            "es-key-1": ("ES256", ec.generate_private_key(ec.SECP256R1())),
            "rs-key-1": ("RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048)),
        }
        self.fetches = 0
        self.down = False
        state = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                state.fetches += 1
                code, body = (503, b"{}") if state.down else (200, json.dumps(state.jwks()).encode())
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_port}/auth/v1/.well-known/jwks.json"

    def jwks(self) -> dict[str, Any]:
        out = []
        for kid, (alg, private) in self.keys.items():
            impl = ECAlgorithm.to_jwk if alg == "ES256" else RSAAlgorithm.to_jwk
            out.append(impl(private.public_key(), as_dict=True) | {"kid": kid, "alg": alg, "use": "sig"})
        return {"keys": out}

    def sign(self, claims: dict[str, Any], kid: str = "es-key-1", key: Any = None) -> str:
        """A token signed with the private key of ``kid`` (or with ``key``, under that kid)."""
        alg, private = self.keys.get(kid, ("ES256", None))
        return jwt.encode(claims, key or private, algorithm=alg, headers={"kid": kid})

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
