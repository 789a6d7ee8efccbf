"""The HTTP API (``hipocampo serve``): POST /ask, POST /context-pack, POST /v1/embeddings (OpenAI's
shape, the server's offline model: for JavaScript apps and the edge functions, whose provider
openai may point at it), GET /healthz, GET /readyz, and the knowledge-base hub's pages at /hub
(:mod:`hipocampo.hub`).

Auth: ``Authorization: Bearer <JWT>``, a Supabase-style token: HS256 with the project's JWT secret
(environment variable named by ``[http] jwt_secret_env`` in config.toml), or ES256 / RS256 with the
project's asymmetric signing keys, read from its JWKS URL (environment variable named by
``[http] jwks_url_env``; keys cached 5 min, a key id not in the cache refetches). Its ``role`` claim (authenticated |
service_role) and the claims themselves are set on the database transaction exactly as PostgREST
does (``set local role``; ``request.jwt.claims``), so RLS applies unchanged. A per-IP token bucket
(``hipocampo.take_ip_rate_limit``) runs before auth; the per user one inside ``ask``.

Responses of /ask carry ``X-Answer-Source`` (CACHE | SESSION | LLM | EXTRACTIVE | PASSAGES | REFUSAL) and
``X-Trace-ID``. When the database is unreachable /readyz answers 503 and /ask refuses with reason
``database_unavailable`` (503), never a 500; when it answers but its config was never seeded from
config.toml (SQLSTATE 55000), /readyz answers 503 "not_configured" with the missing keys and /ask
refuses with reason ``not_configured`` (503).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Annotated, Any, Literal
from uuid import UUID

import jwt
import psycopg
from fastapi import FastAPI, Header, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from ..answers import Orchestrator
from ..client import Actor, Hipocampo
from ..config import load_config
from ..db import readiness_problems
from ..embeddings import EmbeddingProvider, count_tokens
from ..errors import (
    DimensionMismatchError,
    HipocampoError,
    InvalidInputError,
    NotFoundError,
    PermissionDeniedError,
    PreconditionError,
)
from ..hub import DevUser, Hub, mount_hub

__all__ = ["AskRequest", "ContextPackRequest", "create_app"]

log = logging.getLogger("hipocampo.server")


class AskRequest(BaseModel):
    """Body of POST /ask."""

    question: str = Field(description="3..2,000 characters (rag.question_min_chars / question_max_chars)")
    kb_ids: list[UUID] | None = Field(default=None, description="knowledge bases (default: the agent's)")
    agent: str | None = Field(default=None, description="agent binding name")
    use_cache: bool = True
    session_id: UUID | None = Field(
        default=None,
        description="a live session of the caller (or the X-Chat-Session-ID header): follow-ups are resolved"
        " against it and the turn is recorded in it (issue 45 §3)",
    )
    tenant_id: UUID | None = Field(default=None, description="service_role only: the tenant to act on")
    stream: bool = Field(
        default=False,
        description="Server-Sent Events instead of one JSON body (also with Accept: text/event-stream): a chat"
        " model's answer as it is written (issue 59 §4)",
    )


class FeedbackRequest(BaseModel):
    """Body of POST /feedback (issue 59 §5): the caller's verdict on one of their replies."""

    trace_id: UUID = Field(description="the reply's trace id (the ask's trace_id / X-Trace-ID)")
    useful: bool = Field(description="true: the reply helped; false: it did not")
    comment: str | None = Field(default=None, description="1..1,000 characters")
    question: str | None = Field(
        default=None, description="the question asked (kept, scrubbed of PII, only when it is that reply's)"
    )
    tenant_id: UUID | None = Field(default=None, description="service_role only: the tenant to act on")


class EmbeddingsRequest(BaseModel):
    """Body of POST /v1/embeddings, OpenAI's shape (issue 45 §5: a JavaScript app or an edge
    function gets the offline model's vectors from `hipocampo serve`)."""

    input: str | list[str] = Field(description="one text or 1..2,048 texts, each 1..32,768 characters")
    model: str | None = Field(default=None, description="the served model's name (others: 404)")
    input_type: Literal["query", "passage"] = Field(
        default="passage",
        description="which side of a query/passage model (multilingual-e5-small): search inputs are queries",
    )
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, description="must be the model's, when given")


class ContextPackRequest(BaseModel):
    """Body of POST /context-pack."""

    conversation_id: UUID
    query: str
    modality: str = Field(default="chat", description="chat | voice")
    token_budget: int | None = Field(default=None, description="tokens (default context_pack.default_token_budget)")
    kb_ids: list[UUID] | None = None
    agent: str | None = None
    session_id: UUID | None = None
    user_id: UUID | None = Field(default=None, description="service_role only")
    tenant_id: UUID | None = Field(default=None, description="service_role only")


class _AuthError(Exception):
    def __init__(self, message: str, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


# Signing algorithms of Supabase's asymmetric JWT signing keys (verified against the JWKS).
_ASYMMETRIC = ("ES256", "RS256")


# HTTP status of the typed errors a request can cause (anything else from the database is 503).
_STATUS: dict[type[HipocampoError], int] = {
    PermissionDeniedError: 403,
    NotFoundError: 404,
    InvalidInputError: 422,
    DimensionMismatchError: 422,
}


class _JwtVerifier:
    """The caller of a request, from its bearer token: HS256 with the project's secret, or ES256 /
    RS256 with a key of the project's JWKS (named by the token's ``kid``)."""

    def __init__(self, secret: str, jwks_url: str, audience: str) -> None:
        self.secret = secret
        self.jwks = jwt.PyJWKClient(jwks_url, cache_keys=True, lifespan=300, timeout=5) if jwks_url else None
        self.audience = audience

    def actor(self, authorization: str | None, tenant_id: UUID | None) -> Actor:
        """The actor of ``authorization`` (``Bearer <JWT>``); ``tenant_id`` counts for service_role.

        Raises:
            _AuthError: no or an invalid token (401), or the signing keys cannot be read (503).
        """
        if not authorization or not authorization.lower().startswith("bearer "):
            raise _AuthError("missing bearer token")
        try:
            token = authorization[7:].strip()
            alg = jwt.get_unverified_header(token).get("alg")
            key: Any
            if alg == "HS256" and self.secret:
                key = self.secret
            elif alg in _ASYMMETRIC and self.jwks is not None:
                key = self.jwks.get_signing_key_from_jwt(token).key
            else:
                raise _AuthError(f"invalid token: signing algorithm {alg!r} is not configured here")
            claims: dict[str, Any] = jwt.decode(
                token, key, algorithms=[alg], options={"verify_aud": False, "require": ["exp", "role"]}
            )
        except jwt.PyJWKClientConnectionError as exc:
            raise _AuthError(f"cannot read the signing keys: {exc}", 503) from exc
        except (jwt.PyJWTError, ValueError) as exc:
            raise _AuthError(f"invalid token: {_token_problem(exc)}") from exc
        role = claims.get("role")
        if role == "service_role":
            return Actor("service_role", claims, tenant_id)
        if role == "authenticated" and claims.get("sub") and claims.get("aud") in (self.audience, [self.audience]):
            return Actor("authenticated", claims, None)
        raise _AuthError("token role must be authenticated (with sub and aud) or service_role")


def _token_problem(exc: Exception) -> str:
    """What is wrong with a token, in words: never the decoder's internals (issue 19 §1.7)."""
    if isinstance(exc, jwt.ExpiredSignatureError):
        return "expired"
    if isinstance(exc, jwt.ImmatureSignatureError):
        return "not valid yet"
    if isinstance(exc, jwt.InvalidSignatureError):
        return "signature verification failed"
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"missing claim {exc.claim!r}"
    if isinstance(exc, jwt.PyJWKClientError):
        return "no signing key matches its kid"
    if isinstance(exc, jwt.InvalidAlgorithmError):
        return "signing algorithm not allowed"
    return "not a well-formed JWT"


def _error(status: int, message: str, trace: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message, "trace_id": trace}, status, headers={"X-Trace-ID": trace, **headers})


def _openai_error(response: JSONResponse) -> JSONResponse:
    """An error of /v1/embeddings in OpenAI's shape ({"error": {"message", "type", "code"}}), so
    that OpenAI's SDKs show its message."""
    body = json.loads(bytes(response.body))
    kind = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}
    error = {"message": body["error"], "type": kind.get(response.status_code, "invalid_request_error"), "code": None}
    headers = {k: v for k, v in response.headers.items() if k.lower() in ("x-trace-id", "retry-after")}
    return JSONResponse({"error": error, "trace_id": body.get("trace_id")}, response.status_code, headers=headers)


def _validation_message(exc: Any) -> str:
    """One line for a request FastAPI could not read (issue 58 §4: its {"detail": [...]} reached
    OpenAI's SDKs and people): malformed JSON, token arrays for /v1/embeddings' input, or the
    first field that is wrong, by name."""
    errors = list(exc.errors())
    first = errors[0] if errors else {}
    if first.get("type") == "json_invalid":
        return f"the body is not valid JSON ({first.get('ctx', {}).get('error', 'malformed')})"
    where = [str(p) for p in first.get("loc", ()) if p != "body"]
    if where[:1] == ["input"] and any(e.get("type") in ("string_type", "list_type") for e in errors):
        return "input must be a string or an array of strings (token arrays are not accepted: send the text)"
    field = ".".join(w for w in where if not w.isdigit()) or "the body"
    return f"{field}: {first.get('msg', 'invalid')}"


async def _request_invalid(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's RequestValidationError answered in the API's shapes: OpenAI's under /v1/
    ({"error": {"message", "type", "code"}}), {"error", "trace_id"} elsewhere; 422 both."""
    trace = str(uuid.uuid4())
    response = JSONResponse({"error": _validation_message(exc), "trace_id": trace}, 422, headers={"X-Trace-ID": trace})
    return _openai_error(response) if request.url.path.startswith("/v1/") else response


class _Endpoints:
    """The routes' handlers over one connection pool (``root``, acting as service_role)."""

    def __init__(
        self, root: Hipocampo, verifier: _JwtVerifier, embedder: EmbeddingProvider | None, refusal_text: str
    ) -> None:
        self.root = root
        self.verifier = verifier
        self._embedder = embedder
        self.refusal_text = refusal_text

    def embedder(self) -> EmbeddingProvider:
        if self._embedder is None:
            from ..embeddings import active_provider

            self._embedder = active_provider(self.root)
        return self._embedder

    def embedding_budget(self, actor: Actor, characters: int, trace: str) -> JSONResponse | None:
        """Take ``characters`` from the caller's embeddings budget (``hipocampo.take_embedding_budget``:
        embedding.api_chars_per_minute per caller, by input size): 429 with Retry-After when it is
        spent, 422 for a request larger than the whole budget, else None."""
        claims = actor.claims or {}
        caller = f"{actor.role}:{claims.get('sub') or ''}"
        try:
            res = self.root.as_actor(Actor.service()).rpc(
                "take_embedding_budget", {"caller": caller, "characters": characters}
            ) or {"allowed": True}
        except InvalidInputError as exc:
            return _error(422, exc.message, trace)
        if res.get("allowed"):
            return None
        wait = int(res.get("retry_after_ms") or 0)
        out = _error(429, f"the embeddings budget of this caller is spent; retry in {wait} ms", trace)
        out.headers["Retry-After"] = str(max(1, wait // 1000))
        return out

    def ip_limited(self, request: Request, trace: str) -> JSONResponse | None:
        """429 when the client's address spent its bucket (``take_ip_rate_limit``), else None."""
        ip = request.client.host if request.client else "0.0.0.0"
        try:
            res = self.root.as_actor(Actor.service()).rpc("take_ip_rate_limit", {"ip": _inet(ip)}) or {"allowed": True}
        except (HipocampoError, psycopg.Error, OSError):
            return None  # the database is down: the endpoint itself answers 503
        if res.get("allowed"):
            return None
        retry = str(max(1, int(res.get("retry_after_ms", 1000)) // 1000))
        return _error(429, "too many requests from this address", trace, **{"Retry-After": retry})

    def caller(
        self, request: Request, authorization: str | None, tenant_id: UUID | None
    ) -> tuple[str, Actor | JSONResponse]:
        """A request's trace id and who it acts as: the address's rate limit, then the bearer
        JWT's actor (``tenant_id`` for service_role only); the error response instead of the
        actor when either refuses."""
        trace = str(uuid.uuid4())
        limited = self.ip_limited(request, trace)
        if limited:
            return trace, limited
        try:
            return trace, self.verifier.actor(authorization, tenant_id)
        except _AuthError as exc:
            return trace, _error(exc.status, str(exc), trace)

    def healthz(self) -> dict[str, str]:
        """Liveness: the process answers."""
        return {"status": "ok"}

    def readyz(self) -> JSONResponse:
        """Readiness: 200 when the database answers and is seeded; 503 with ``status``
        "unavailable" (unreachable) or "not_configured" (``problems``: config keys not seeded, no
        active embedding model; see :func:`hipocampo.db.readiness_problems`). With a read replica,
        ``replica``: its lag (``lag_bytes``, ``lag_ms``) and where the reads went (``reads``:
        replica, primary, primary_after_write); an unreachable replica is "unavailable"."""
        try:
            with self.root.transaction() as cur:  # service_role: may read the config rows
                problems = readiness_problems(cur.connection)
        except (HipocampoError, psycopg.Error, OSError) as exc:
            return JSONResponse({"status": "unavailable", "error": str(exc)}, 503)
        if problems:
            return JSONResponse({"status": "not_configured", "problems": problems}, 503)
        try:
            lag = self.root.replica_status()
        except HipocampoError as exc:
            return JSONResponse({"status": "unavailable", "error": f"read replica: {exc}"}, 503)
        if lag is None:
            return JSONResponse({"status": "ready"})
        replica = {"lag_bytes": lag.lag_bytes, "lag_ms": round(lag.lag_ms, 1), "reads": self.root.read_counts}
        return JSONResponse({"status": "ready", "replica": replica})

    def ask(
        self,
        body: AskRequest,
        request: Request,
        authorization: str | None = Header(default=None),
        x_chat_session_id: Annotated[UUID | None, Header()] = None,
    ) -> Response:
        """Answer with cited sources or refuse (see ``Orchestrator.ask``); within the session of
        ``session_id`` or the ``X-Chat-Session-ID`` header when one is given."""
        trace, actor = self.caller(request, authorization, body.tenant_id)
        if isinstance(actor, JSONResponse):
            return actor
        orch = Orchestrator(self.root.as_actor(actor), self.embedder())
        asked: dict[str, Any] = {
            "kb_ids": body.kb_ids,
            "agent": body.agent,
            "use_cache": body.use_cache,
            "session_id": body.session_id or x_chat_session_id,
        }
        if body.stream or "text/event-stream" in request.headers.get("accept", ""):
            return self._ask_stream(orch, body.question, asked, trace)
        try:
            ans = orch.ask(body.question, **asked)
        except (PermissionDeniedError, NotFoundError, InvalidInputError) as exc:
            return _error(_STATUS[type(exc)], exc.message, trace)
        except (HipocampoError, psycopg.Error, OSError) as exc:
            log.error("ask failed (trace %s): %s", trace, exc)
            return self._unavailable(body.question, trace, exc)
        status = 429 if ans.reason == "rate_limited" else 200
        headers = {"X-Answer-Source": ans.answer_source, "X-Trace-ID": str(ans.trace_id)}
        if ans.retry_after_ms:
            headers["Retry-After"] = str(max(1, ans.retry_after_ms // 1000))
        return JSONResponse(json.loads(ans.model_dump_json()), status, headers=headers)

    def _ask_stream(self, orch: Orchestrator, question: str, asked: dict[str, Any], trace: str) -> Response:
        """POST /ask as Server-Sent Events (sse-starlette; ``Orchestrator.ask_stream``'s events,
        each ``event: <name>`` and ``data: <json>``, as EventSource and the OpenAI SDK's SSE reader
        take them). An error before the first event is the JSON error /ask gives; a database lost
        midway ends the stream with a ``refusal`` event (database_unavailable)."""
        from sse_starlette import EventSourceResponse, ServerSentEvent
        from starlette.concurrency import iterate_in_threadpool

        events = orch.ask_stream(question, **asked)
        try:
            first = next(events)
        except (PermissionDeniedError, NotFoundError, InvalidInputError) as exc:
            return _error(_STATUS[type(exc)], exc.message, trace)
        except (HipocampoError, psycopg.Error, OSError) as exc:
            log.error("ask failed (trace %s): %s", trace, exc)
            return self._unavailable(question, trace, exc)
        data = first.data()
        headers = {"X-Answer-Source": str(data.get("answer_source")), "X-Trace-ID": str(data.get("trace_id"))}

        async def sse() -> AsyncIterator[ServerSentEvent]:
            yield ServerSentEvent(event=first.event, data=json.dumps(data))
            try:
                async for ev in iterate_in_threadpool(events):
                    yield ServerSentEvent(event=ev.event, data=json.dumps(ev.data()))
            except (HipocampoError, psycopg.Error, OSError) as exc:
                log.error("streamed ask failed (trace %s): %s", trace, exc)
                lost = json.loads(bytes(self._unavailable(question, str(data.get("trace_id")), exc).body))
                yield ServerSentEvent(event="refusal", data=json.dumps(lost))

        return EventSourceResponse(sse(), headers=headers, ping=15)

    def _unavailable(self, question: str, trace: str, exc: Exception) -> JSONResponse:
        """A 503 refusal: the database answers but is not seeded (55000), or does not answer."""
        reason = "not_configured" if isinstance(exc, PreconditionError) else "database_unavailable"
        payload = {
            "question": question,
            "answer": self.refusal_text,
            "refused": True,
            "reason": reason,
            "answer_source": "REFUSAL",
            "trace_id": trace,
            "sources": [],
            "confidence": 0.0,
        }
        return JSONResponse(payload, 503, headers={"X-Answer-Source": "REFUSAL", "X-Trace-ID": trace})

    def embeddings(
        self, body: EmbeddingsRequest, request: Request, authorization: str | None = Header(default=None)
    ) -> JSONResponse:
        """OpenAI-compatible embeddings with the server's model (any valid token of the project;
        the per-address rate limit applies). Vectors are L2-normalised; ``input_type`` "query" embeds
        as a search input (e5's "query: " side), "passage" as stored text. Errors: 401 no or bad
        token; 404 another model; 422 bad input (also more characters than a minute's budget); 429
        rate limited, by address or by input size (embedding.api_chars_per_minute characters per
        caller and minute)."""
        trace, actor = self.caller(request, authorization, None)
        if isinstance(actor, JSONResponse):
            return _openai_error(actor)
        embedder = self.embedder()
        texts = [body.input] if isinstance(body.input, str) else list(body.input)
        problem = _embeddings_problem(body, texts, embedder)
        if problem:
            return _openai_error(_error(problem[0], problem[1], trace))
        spent = self.embedding_budget(actor, sum(len(t) for t in texts), trace)
        if spent is not None:
            return _openai_error(spent)
        vectors = (
            [embedder.embed_query(t) for t in texts] if body.input_type == "query" else embedder.embed_documents(texts)
        )
        tokens = sum(count_tokens(t) for t in texts)
        data = [
            {"object": "embedding", "index": i, "embedding": _encoded(v, body.encoding_format)}
            for i, v in enumerate(vectors)
        ]
        return JSONResponse(
            {"object": "list", "data": data, "model": embedder.model_name,
             "usage": {"prompt_tokens": tokens, "total_tokens": tokens}},
            headers={"X-Trace-ID": trace},
        )  # fmt: skip

    def feedback(
        self, body: FeedbackRequest, request: Request, authorization: str | None = Header(default=None)
    ) -> JSONResponse:
        """Mark one of the caller's replies useful or not (``hipocampo.record_feedback``):
        ``{"trace_id"}``; 404 for a reply that is not the caller's, 422 for a bad comment or a
        question that is not the reply's."""
        trace, actor = self.caller(request, authorization, body.tenant_id)
        if isinstance(actor, JSONResponse):
            return actor
        try:
            marked = self.root.as_actor(actor).record_feedback(body.trace_id, body.useful, body.comment, body.question)
        except (PermissionDeniedError, NotFoundError, InvalidInputError) as exc:
            return _error(_STATUS[type(exc)], exc.message, trace)
        except (HipocampoError, psycopg.Error, OSError) as exc:
            log.error("feedback failed (trace %s): %s", trace, exc)
            return _error(503, "database unavailable", trace)
        return JSONResponse({"trace_id": str(marked)}, headers={"X-Trace-ID": trace})

    def context_pack(
        self, body: ContextPackRequest, request: Request, authorization: str | None = Header(default=None)
    ) -> JSONResponse:
        """The ContextPack of one turn (``hipocampo.context_pack``)."""
        trace, actor = self.caller(request, authorization, body.tenant_id)
        if isinstance(actor, JSONResponse):
            return actor
        args = body.model_dump(exclude={"query"}) | {
            "query": body.query,
            "query_embedding": list(self.embedder().embed_query(body.query)),
        }
        try:
            pack = self.root.as_actor(actor).rpc("context_pack", args)
        except (PermissionDeniedError, NotFoundError, InvalidInputError) as exc:
            return _error(_STATUS[type(exc)], exc.message, trace)
        except PreconditionError as exc:
            log.error("context-pack failed (trace %s): %s", trace, exc)
            return _error(503, exc.message, trace)
        except (HipocampoError, psycopg.Error, OSError) as exc:
            log.error("context-pack failed (trace %s): %s", trace, exc)
            return _error(503, "database unavailable", trace)
        return JSONResponse(pack or {}, headers={"X-Trace-ID": trace})


def create_app(
    url: str,
    embedder: EmbeddingProvider | None = None,
    *,
    jwt_secret: str | None = None,
    jwks_url: str | None = None,
    pool_timeout_s: float = 5.0,
    dev_user: DevUser | None = None,
    read_url: str | None = None,
    read_your_writes_wait_ms: float = 200.0,
) -> FastAPI:
    """The FastAPI app over the database at ``url``.

    Args:
        url: libpq URL of the hipocampo database (connected as a role that may ``set role``).
        embedder: question embeddings (default: the database's active model's, ``active_provider``,
            loaded on first use).
        jwt_secret: HS256 secret (default: the environment variable ``[http] jwt_secret_env``).
        jwks_url: JWKS of the project's asymmetric signing keys, e.g.
            ``https://<project>.supabase.co/auth/v1/.well-known/jwks.json`` (default: the
            environment variable ``[http] jwks_url_env``). A token's ``alg`` picks the key: HS256
            the secret, ES256 / RS256 the JWKS key named by its ``kid``.
        pool_timeout_s: seconds to wait for a connection before answering 503.
        dev_user: the hub's local development user (``hipocampo serve --dev-user``), or None.
        read_url: a read replica of ``url``'s database: the read RPCs go there, with each
            caller's own writes read back (:class:`hipocampo.client.Hipocampo`'s ``read_url`` and
            ``read_your_writes_wait_ms``).

    Raises:
        RuntimeError: neither a JWT secret nor a JWKS URL configured.
    """
    config = load_config()
    http = config.get("http", {})
    secret_env = str(http.get("jwt_secret_env", "SUPABASE_JWT_SECRET"))
    jwks_env = str(http.get("jwks_url_env", "SUPABASE_JWKS_URL"))
    secret = jwt_secret or os.environ.get(secret_env, "")
    jwks_at = jwks_url or os.environ.get(jwks_env, "")
    if not secret and not jwks_at:
        raise RuntimeError(f"no JWT key: set ${secret_env} (HS256) or ${jwks_env} (asymmetric signing keys)")
    verifier = _JwtVerifier(secret, jwks_at, str(http.get("jwt_audience", "authenticated")))
    root = Hipocampo(
        url, pool_timeout_s=pool_timeout_s, read_url=read_url, read_your_writes_wait_ms=read_your_writes_wait_ms
    )
    endpoints = _Endpoints(root, verifier, embedder, str(config.get("rag", {}).get("refusal_message", "")))

    mcp_app, mcp_server = _mcp(url, embedder, verifier, http)

    @contextlib.asynccontextmanager
    async def warm_up(_: FastAPI) -> AsyncIterator[None]:
        # The model loads before the first request is served, not during it (issue 19 §1.10).
        if embedder is not None:
            embedder.embed_query("aquecimento")
            log.info("embedding model %s loaded", embedder.model_name)
        if mcp_server is None:
            yield
            return
        async with mcp_server.session_manager.run():
            yield

    app = FastAPI(
        title="hipocampo",
        version="0.1.0",
        description="Answers that cite or refuse, and ContextPacks.",
        lifespan=warm_up,
    )
    from fastapi.exceptions import RequestValidationError

    app.add_exception_handler(RequestValidationError, _request_invalid)
    app.get("/healthz")(endpoints.healthz)
    app.get("/readyz")(endpoints.readyz)
    app.post("/ask")(endpoints.ask)
    app.post("/feedback")(endpoints.feedback)
    app.post("/context-pack")(endpoints.context_pack)
    app.post("/v1/embeddings")(endpoints.embeddings)
    hub = Hub(root, lambda token: verifier.actor(f"Bearer {token}", None), endpoints.embedder, dev_user)
    mount_hub(app, hub)  # the knowledge-base hub's pages at /hub (issue 21)
    if mcp_app is not None:
        app.mount("/", mcp_app)  # POST /mcp (and its auth metadata); after every route above
    app.state.hipocampo = root
    return app


def _mcp(url: str, embedder: EmbeddingProvider | None, verifier: _JwtVerifier, http: dict[str, Any]) -> tuple[Any, Any]:
    """The MCP server over streamable HTTP at ``/mcp`` (issue 20 §1), each request acting as its
    bearer JWT's actor (the same verification as /ask); (None, None) without the ``mcp`` extra."""
    from ..mcp_server import build_server, require_sdk

    try:
        require_sdk()
    except HipocampoError as exc:  # pragma: no cover - the extra is missing
        log.info("no MCP endpoint: %s", exc)
        return None, None
    from mcp.server.transport_security import TransportSecuritySettings

    server = build_server(
        url,
        embedder=embedder,
        verify=lambda token: verifier.actor(f"Bearer {token}", None),
        issuer_url=str(http.get("auth_issuer_url", "")),
    )
    # Stateless: every request stands alone (any worker can serve it) and carries its own token.
    # Host-header checks are the reverse proxy's; the token is what grants access here.
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return app, server


def _embeddings_problem(
    body: EmbeddingsRequest, texts: list[str], embedder: EmbeddingProvider
) -> tuple[int, str] | None:
    """(status, message) of what /v1/embeddings refuses in ``body``, or None."""
    if body.model and body.model != embedder.model_name:
        return 404, f"model {body.model!r} is not served here: this server embeds with {embedder.model_name}"
    if body.dimensions is not None and body.dimensions != embedder.dims:
        return 422, f"dimensions must be {embedder.dims} ({embedder.model_name}), got {body.dimensions}"
    if not 1 <= len(texts) <= 2048:
        return 422, f"input must hold 1 to 2048 texts (got {len(texts)})"
    bad = next((i for i, t in enumerate(texts) if not 1 <= len(t) <= 32_768), None)
    if bad is not None:
        return 422, f"input[{bad}] must have 1 to 32768 characters (got {len(texts[bad])})"
    return None


def _encoded(vector: Sequence[float], encoding: str) -> list[float] | str:
    """A vector as OpenAI returns it: floats, or base64 of little-endian float32."""
    if encoding == "float":
        return [float(x) for x in vector]
    import base64
    import struct

    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


def _inet(host: str) -> str:
    """A client host as an inet literal (test clients report a name, not an address)."""
    import ipaddress

    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return "127.0.0.1"
