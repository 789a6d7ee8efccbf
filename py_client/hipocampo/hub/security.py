"""The hub's web security: the session cookie, CSRF tokens, response headers and the local
development user's token.

- The session is the user's JWT itself, in an ``HttpOnly``, ``SameSite=Strict`` cookie scoped to
  ``/hub`` (``Secure`` behind HTTPS): never in a URL, a page or a log line. Every request verifies
  it again (signature, expiry) and acts as its role and claims, so RLS decides what a page shows.
- CSRF: a random token in its own ``SameSite=Strict`` cookie, repeated in every form (hidden field
  ``csrf``) and in the ``X-CSRF-Token`` header of script requests; a POST whose copy does not match
  is refused (403) before anything runs (the double-submit pattern).
- Headers: a content-security-policy that allows only this origin's scripts and styles (no inline
  script or style, no framing), ``nosniff``, ``no-referrer``.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any
from uuid import UUID

__all__ = [
    "CSRF_COOKIE",
    "CSRF_FIELD",
    "LANG_COOKIE",
    "SECURITY_HEADERS",
    "SESSION_COOKIE",
    "DevUser",
    "csrf_matches",
    "new_csrf_token",
]

SESSION_COOKIE = "hipocampo_session"
CSRF_COOKIE = "hipocampo_csrf"
LANG_COOKIE = "hipocampo_lang"
CSRF_FIELD = "csrf"

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


def new_csrf_token() -> str:
    """A fresh random CSRF token (32 bytes, URL-safe)."""
    return secrets.token_urlsafe(32)


def csrf_matches(cookie: str | None, sent: str | None) -> bool:
    """Whether the token sent with a POST equals the cookie's (constant-time)."""
    return bool(cookie) and bool(sent) and hmac.compare_digest(str(cookie), str(sent))


@dataclass(frozen=True)
class DevUser:
    """The local development user (``hipocampo serve --dev-user``): an admin of ``tenant_id``
    signed in with a token this server signs (HS256 with ``secret``), valid ``hours`` hours."""

    user_id: UUID
    tenant_id: UUID
    secret: str
    hours: int = 8

    def token(self) -> str:
        """A Supabase-shaped access token for the user (role authenticated, aud authenticated)."""
        import jwt

        now = int(time.time())
        claims: dict[str, Any] = {
            "sub": str(self.user_id),
            "role": "authenticated",
            "aud": "authenticated",
            "email": "dev@localhost",
            "app_metadata": {"tenant_id": str(self.tenant_id)},
            "iat": now,
            "exp": now + self.hours * 3600,
        }
        return str(jwt.encode(claims, self.secret, algorithm="HS256"))
