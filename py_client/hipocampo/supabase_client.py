"""The Python client over HTTP: hipocampo's edge functions through the official ``supabase``
package, for an app that has a Supabase URL, its anon key and a user's access token but no
database connection (issue 20 §2).

``Hipocampo.from_supabase(url, anon_key, access_token)`` returns a :class:`hipocampo.Hipocampo`
over an :class:`HttpTransport` (issue 47 §4: a transport the client takes, not a subclass): the
same methods (``search``, and ``Memory(client, embedder)``'s remember / recall / lookup / correct /
forget / consent / seed_profile / export / erase, ``kb_id`` / ``list_kbs``, ``rpc("context_pack",
…)`` and ``ask``), each call one ``functions.invoke`` of the edge function serving that RPC, as
the token's user (the function verifies the JWT and runs the RPC with its role and claims: RLS
and the caller model decide, as over a database connection). Errors come back typed by the
function's SQLSTATE (``from_sqlstate``; the memory gate's refusal as :class:`MemoryRejected`
with its reason). An RPC no edge function serves raises :class:`HipocampoError` 0A000 naming
the ones that are; so does what needs a database connection of its own (``transaction``,
``as_actor``, ingestion).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any
from uuid import UUID

from .errors import HipocampoError, MemoryRejected, from_sqlstate
from .models import Answer
from .rpc import Shape
from .transport import Actor

__all__ = ["ROUTES", "HttpTransport"]

#: RPC -> (edge function path, key of the reply holding the result, or "" for the whole reply).
ROUTES: dict[str, tuple[str, str]] = {
    "hybrid_search": ("search", "results"),
    "context_pack": ("context-pack", ""),
    "remember": ("memory/remember", ""),
    "search_memories": ("memory/recall", "results"),
    "lookup_memories": ("memory/lookup", "results"),
    "correct_memory": ("memory/correct", ""),
    "forget_memory": ("memory/forget", "forgotten"),
    "set_memory_consent": ("memory/consent", "granted"),
    "memory_consent": ("memory/consent-status", "granted"),
    "seed_profile": ("memory/seed-profile", ""),
    "erase_user": ("memory/erase", ""),
    "search_history": ("conversations/history", "results"),
    "knowledge_base_id": ("knowledge-bases/id", "kb_id"),
    "list_knowledge_bases": ("knowledge-bases", "results"),
    "record_feedback": ("feedback", "trace_id"),
}
# Arguments the Python client sends as JSON text (jsonb, vector literals); the functions take JSON.
_JSON_TEXT = ("value", "profile", "embedding", "query_embedding", "metadata", "attachments")


def _plain(name: str, value: Any) -> Any:
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if name in _JSON_TEXT and isinstance(value, str):
        return json.loads(value)
    if isinstance(value, list | tuple):
        return [_plain("", v) for v in value]
    return value


class HttpTransport:
    """The RPCs through a Supabase project's edge functions (``supabase`` package).

    Args:
        url: the project URL (``https://<ref>.supabase.co``; the functions at ``/functions/v1``).
        anon_key: the project's anon (publishable) key.
        access_token: the signed-in user's JWT (Supabase Auth); every call acts as that user.
    """

    def __init__(self, url: str, anon_key: str, access_token: str) -> None:
        from supabase import create_client

        self.url = url
        self._supabase = create_client(url, anon_key)
        self._supabase.functions.set_auth(access_token)

    def close(self) -> None:
        """Nothing to close (no connection pool)."""

    def rpc(self, actor: Actor, name: str, args: Mapping[str, Any] | None = None, shape: Shape = "value") -> Any:
        """Call the edge function serving ``hipocampo.<name>`` with the non-null ``args`` (as the
        access token's user, whatever ``actor`` says).

        Raises:
            HipocampoError: 0A000 when no edge function serves ``name``; else the function's
                error typed by its SQLSTATE (MemoryRejected for the memory gate's refusal).
        """
        from supabase_functions.errors import FunctionsHttpError

        if name not in ROUTES:
            served = ", ".join(sorted(ROUTES))
            raise HipocampoError(f"{name} is not served by the edge functions (they serve {served})", "0A000")
        path, key = ROUTES[name]
        body = {k: _plain(k, v) for k, v in (args or {}).items() if v is not None}
        try:
            reply = self._supabase.functions.invoke(path, {"body": body, "responseType": "json"})
        except FunctionsHttpError as exc:
            raise _error(exc) from None
        result = reply.get(key) if key and isinstance(reply, dict) else reply
        if shape == "none":
            return None
        return result

    def ask(
        self,
        question: str,
        *,
        kb_ids: Sequence[UUID | str] | None = None,
        agent: str | None = None,
        query_embedding: Sequence[float] | None = None,
        use_cache: bool = True,
        session_id: UUID | str | None = None,
    ) -> Answer:
        """Answer ``question`` with cited sources, or refuse, through the ``ask`` edge function:
        what ``Orchestrator.ask`` answers over the database (the same RPCs in the same order).

        Args:
            question: 3..2,000 characters (rag.question_min_chars / question_max_chars).
            kb_ids: knowledge bases (default: the agent binding's).
            agent: agent binding name.
            query_embedding: the question's vector (``list[float]``, the active model's dims);
                required when the active model is the offline one (it runs in Python only).
            use_cache: read and write the answer cache (rag.cache_ttl_seconds).
            session_id: a live session of the user, sent as ``X-Chat-Session-ID`` (follow-ups,
                reuse, the turn recorded; ``Orchestrator.ask``).

        Returns:
            :class:`Answer` (a refusal has ``refused=True`` and its ``reason``).

        Raises:
            InvalidInputError: no knowledge base, or no query_embedding with the offline model.
            PermissionDeniedError: not a member of the token's tenant.
        """
        from supabase_functions.errors import FunctionsHttpError

        body: dict[str, Any] = {"question": question, "use_cache": use_cache}
        if kb_ids is not None:
            body["kb_ids"] = [str(k) for k in kb_ids]
        if agent is not None:
            body["agent"] = agent
        if query_embedding is not None:
            body["query_embedding"] = [float(x) for x in query_embedding]
        options: dict[str, Any] = {"body": body, "responseType": "json"}
        if session_id is not None:
            options["headers"] = {"X-Chat-Session-ID": str(session_id)}
        try:
            reply = self._supabase.functions.invoke("ask", options)
        except FunctionsHttpError as exc:
            raise _error(exc) from None
        return Answer.model_validate(reply)


def _error(exc: Any) -> HipocampoError:
    """The function's ``{"error", "sqlstate", "reason"?}`` reply as a typed error."""
    response = getattr(exc.__cause__, "response", None)
    try:
        body = response.json() if response is not None else {}
    except ValueError:
        body = {}
    message = str(body.get("error") or exc.message)
    state = body.get("sqlstate")
    if body.get("reason"):
        return MemoryRejected(message, state, str(body["reason"]))
    if state is None and exc.status == 401:
        return from_sqlstate("42501", message)  # no or an invalid token: refused like the database
    return from_sqlstate(state, message)
