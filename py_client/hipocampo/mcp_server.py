"""hipocampo as an MCP server (issue 20 §1): the knowledge bases and a user's memory as tools.

``hipocampo mcp --tenant SLUG --user UUID`` serves the Model Context Protocol over stdio, for a
local agent host (Claude Desktop, Cursor, VS Code, Agent Framework) that starts it as a
subprocess. Every tool acts as that one user: role ``authenticated`` with the JWT claims
``{sub: user, app_metadata: {tenant_id}}``, exactly as the HTTP API and the edge functions do,
so RLS and the caller model decide what each call may read or write (a user who is not a member
of the tenant is refused 42501 on every call). The host that starts the process chooses the
user, as with the CLI. Over streamable HTTP (``hipocampo serve``, ``POST /mcp``) each request
acts instead as its bearer JWT, verified as every HTTP endpoint verifies it (401 otherwise).

Tools: ``search_knowledge_base``, ``ask``, ``remember``, ``recall``, ``forget``, ``correct``,
``list_memories``, ``context_pack``. Resources (read-only JSON): ``hipocampo://knowledge-bases``
and ``hipocampo://memories``. A refused or invalid call is an MCP tool error whose text is
``error [SQLSTATE]: message``, the CLI's one line. The embedding model loads on the first tool
that needs a vector.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar
from uuid import UUID

from pydantic import Field

from .answers import Orchestrator
from .client import Actor, Hipocampo
from .embeddings import EmbeddingProvider, active_provider
from .embeddings.factory import query_vector
from .errors import HipocampoError, PermissionDeniedError
from .memory import Memory
from .memory.vocabulary import Category, Emotion
from .models import (
    Answer,
    Consent,
    ContextPack,
    FeedbackRecorded,
    Forgotten,
    MemoryHit,
    MemoryRecord,
    PassageHit,
    RememberResult,
)
from .text import plain_text

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["build_server", "require_sdk"]

_T = TypeVar("_T")

INSTRUCTIONS = (
    "hipocampo holds this user's knowledge bases (documents of their organisation) and their "
    "long-term memory. Search or ask the knowledge bases before answering questions about the "
    "organisation's rules and documents, and cite what you use. Recall memories before "
    "personalising an answer; remember only what the user asked you to remember or clearly "
    "stated about themselves; correct or forget when the user says a memory is wrong or asks to "
    "forget it. Memory writes need the user's consent (LGPD) and pass a gate that refuses "
    "personal identifiers and sensitive data: report a refusal to the user, do not work around it."
)


class _Session:
    """Who the calls act as, the clients and the embedder (loaded on first use).

    stdio: one fixed user. HTTP: the actor of each request's bearer JWT, which the SDK's bearer
    middleware verified (``_BearerVerifier``) and keeps in its auth context for the request.
    """

    def __init__(self, url: str, actor: Actor | None, embedder: EmbeddingProvider | None) -> None:
        self.root = Hipocampo(url)
        self.fixed = self.root.as_actor(actor) if actor is not None else None
        self._embedder = embedder

    @property
    def client(self) -> Hipocampo:
        if self.fixed is not None:
            return self.fixed
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        if token is None or not token.claims:  # the bearer middleware answers 401 before this
            raise PermissionDeniedError("missing bearer token", "42501")
        claims = dict(token.claims)
        return self.root.as_actor(Actor(str(claims.get("role")), claims, None))

    def embedder(self) -> EmbeddingProvider:
        if self._embedder is None:
            self._embedder = active_provider(self.root)
        return self._embedder

    def memory(self, *, embed: bool = True) -> Memory:
        return Memory(self.client, self.embedder() if embed else None)

    def kb_ids(self, names: list[str] | str | None) -> list[UUID] | None:
        """The knowledge bases' ids; one name may come as a string (issue 58 §4: a string here was
        a raw validation error with a URL)."""
        client = self.client
        if isinstance(names, str):
            names = [names]
        return [client.kb_id(n) for n in names] if names else None


class _BearerVerifier:
    """The SDK's TokenVerifier over hipocampo's JWT verification (``verify(token) -> Actor``, the
    same as every HTTP endpoint's): a token it refuses is no access token (the SDK answers 401)."""

    def __init__(self, verify: Callable[[str], Actor]) -> None:
        self.verify = verify

    async def verify_token(self, token: str) -> Any:
        import anyio.to_thread
        from mcp.server.auth.provider import AccessToken

        try:
            actor = await anyio.to_thread.run_sync(self.verify, token)
        except Exception:
            return None
        claims = {**actor.claims, "role": actor.role}
        return AccessToken(token=token, client_id="supabase", scopes=[], subject=claims.get("sub"), claims=claims)


def _call(fn: Callable[[], _T], *, resource: bool = False) -> _T:
    """Run a tool (or resource) body; a hipocampo error becomes an MCP tool error (a resource
    error) whose text is ``error [SQLSTATE]: message``."""
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError

    try:
        return fn()
    except HipocampoError as exc:
        text = f"error [{exc.sqlstate}]: {exc.message}" if exc.sqlstate else f"error: {exc.message}"
        raise (ResourceError(text) if resource else ToolError(text)) from None


def _dump(model: Any) -> Any:
    return model.model_dump(mode="json")


def require_sdk() -> None:
    """Raise HipocampoError naming the extra to install when the MCP SDK is missing."""
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        raise HipocampoError("the MCP server needs the MCP SDK: pip install 'hipocampo[mcp]'") from None


def build_server(
    url: str,
    tenant_id: UUID | None = None,
    user_id: UUID | None = None,
    embedder: EmbeddingProvider | None = None,
    *,
    verify: Callable[[str], Actor] | None = None,
    issuer_url: str | None = None,
) -> MCPServer:
    """The MCP server (``mcp.server.mcpserver.MCPServer``).

    Args:
        url: the database URL (``hipocampo.db.ensure_database()``).
        tenant_id, user_id: stdio: who every call acts as (role authenticated, JWT claims sub and
            app_metadata.tenant_id); RLS and the caller model apply.
        embedder: the provider for query and memory vectors (default: config.toml's, loaded on
            the first tool that needs one).
        verify: HTTP instead: each request's bearer token to its Actor (raises when invalid);
            every call acts as that actor. ``issuer_url`` (with ``verify``) is the auth server
            named in the protected-resource metadata (``[http] auth_issuer_url``; Supabase Auth:
            ``https://<ref>.supabase.co/auth/v1``).

    Raises:
        ValueError: neither a user nor ``verify``, or ``verify`` without ``issuer_url``.
        HipocampoError: the MCP SDK is not installed (``require_sdk``).
    """
    require_sdk()
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer

    actor: Actor | None = None
    if verify is None:
        if tenant_id is None or user_id is None:
            raise ValueError("build_server needs tenant_id and user_id (stdio) or verify (HTTP)")
        actor = Actor.user(user_id, tenant_id)
    s = _Session(url, actor, embedder)
    auth: dict[str, Any] = {}
    if verify is not None:
        if not issuer_url:
            raise ValueError("build_server needs issuer_url with verify ([http] auth_issuer_url)")
        settings = AuthSettings.model_validate({"issuer_url": issuer_url, "resource_server_url": None})
        auth = {"token_verifier": _BearerVerifier(verify), "auth": settings}
    # WARNING: the SDK logs every refused call at INFO on stderr, which hosts show as noise.
    server = MCPServer("hipocampo", instructions=INSTRUCTIONS, version=_version(), log_level="WARNING", **auth)
    _knowledge_tools(server, s)
    _answer_tools(server, s)
    _memory_tools(server, s)
    _consent_tool(server, s)
    _resources(server, s)
    return server


def _version() -> str:
    from . import __version__

    return __version__


def _knowledge_tools(server: MCPServer, s: _Session) -> None:
    @server.tool()
    def search_knowledge_base(
        query: Annotated[str, Field(description="What to look for, in the user's words (1..2,000 characters).")],
        kb: Annotated[
            list[str] | str | None,
            Field(description="Knowledge base names to search (a list, or one name); omit for all of the tenant's."),
        ] = None,
        top_k: Annotated[
            int | None,
            Field(ge=1, le=100, description="How many passages to return (default retrieval.match_count, 5)."),
        ] = None,
    ) -> list[PassageHit]:
        """Hybrid search (meaning + keywords) over the organisation's documents. Returns the best
        passages with their document title, source and scores (dense: cosine -1..1; lexical:
        BM25 >= 0; final: the fused ranking score). Cite title and source when you use one."""

        def run() -> list[PassageHit]:
            client = s.client
            kb_ids = s.kb_ids(kb)
            vector = query_vector(client, query, s.embedder(), kb_ids)
            hits = client.search(query, vector, kb_ids=kb_ids, match_count=top_k)
            return [
                PassageHit(
                    rank=h.rank,
                    title=h.title,
                    source_uri=h.source_uri,
                    excerpt=plain_text(h.content),
                    dense_score=h.dense_score,
                    lexical_score=h.lexical_score,
                    final_score=h.final_score,
                    document_id=h.document_id,
                    chunk_id=h.chunk_id,
                )
                for h in hits
            ]

        return _call(run)


def _answer_tools(server: MCPServer, s: _Session) -> None:
    """``ask`` (Orchestrator.ask, within a session when one is named) and ``context_pack``."""

    @server.tool()
    def ask(
        question: Annotated[str, Field(description="The question (3..2,000 characters).")],
        kb: Annotated[
            list[str] | str | None,
            Field(
                description="Knowledge base names to answer from (a list, or one name); omit (and agent) for all of"
                " the tenant's."
            ),
        ] = None,
        agent: Annotated[str | None, Field(description="Agent binding (its knowledge bases and settings).")] = None,
        use_cache: Annotated[
            bool, Field(description="Read and write the tenant's answer cache (rag.cache_ttl_seconds).")
        ] = True,
        session_id: Annotated[
            str | None,
            Field(
                description="A live session of the user (open_session): a follow-up such as 'e aos domingos?' is"
                " resolved against its previous turn, a question it already answered is answered again"
                " (answer_source SESSION), and the turn is recorded in it."
            ),
        ] = None,
    ) -> Answer:
        """Answer from the knowledge bases with numbered citations [n]; or, when no passage answers
        exactly but some are on the question's topic, those passages quoted and cited
        (answer_source PASSAGES, refused = false: say that no exact answer was found and show
        them); or refuse with a reason when nothing is on topic or the evidence conflicts. A
        refusal is a normal result (refused = true, reason, closest passage): tell the user, do
        not invent an answer. The
        result has the fields of every other surface (Orchestrator.ask, POST /ask, the ask edge
        function): answer, refused, reason, confidence, sources, conflicts, answer_source,
        trace_id, closest, resolved_question, timings_ms."""

        def run() -> Answer:
            client = s.client
            kb_ids = s.kb_ids(kb)
            if kb_ids is None and agent is None:  # neither named: every knowledge base of the tenant
                kb_ids = [k.id for k in client.list_kbs()]
            ans = Orchestrator(client, s.embedder()).ask(  # the RPC caller checks the uuid (22023)
                question, kb_ids=kb_ids, agent=agent, use_cache=use_cache, session_id=session_id or None
            )
            return ans

        return _call(run)

    @server.tool()
    def feedback(
        trace_id: Annotated[str, Field(description="The reply's trace_id (from ask).")],
        useful: Annotated[bool, Field(description="Whether the reply helped the user.")],
        comment: Annotated[str | None, Field(description="What the user said about it (1..1,000 characters).")] = None,
        question: Annotated[
            str | None,
            Field(
                description="The question exactly as it was asked, so that an admin can make it a judged question"
                " (kept only when it is that reply's)."
            ),
        ] = None,
    ) -> FeedbackRecorded:
        """Record whether one of the user's replies was useful, when the user says so (thumbs up or
        down, "isso não respondeu"). The tenant's admins read it per week and turn questions
        marked not useful into judged questions of the knowledge base's evaluation."""
        return _call(lambda: FeedbackRecorded(trace_id=s.client.record_feedback(trace_id, useful, comment, question)))

    @server.tool()
    def context_pack(
        conversation_id: Annotated[str, Field(description="The conversation's id (a uuid).")],
        query: Annotated[str, Field(description="The user's current message.")],
        modality: Annotated[
            Literal["chat", "voice"], Field(description="How the user talks to the assistant.")
        ] = "chat",
        token_budget: Annotated[
            int | None,
            Field(
                description="Tokens the pack may use (default context_pack.default_token_budget, 2,000; "
                "at least context_pack.min_token_budget)."
            ),
        ] = None,
        kb: Annotated[
            list[str] | str | None, Field(description="Knowledge base names for the RAG part (a list, or one name).")
        ] = None,
    ) -> ContextPack:
        """Everything to put in the prompt for this turn, within a token budget: the user's
        relevant memories, the conversation's recent messages and summary, and knowledge-base
        passages with citations."""

        def run() -> ContextPack:
            args = {  # the RPC caller checks the uuid (22023 "conversation_id is not a uuid")
                "conversation_id": conversation_id,
                "query": query,
                "query_embedding": s.embedder().embed_query(query),
                "modality": modality,
                "token_budget": token_budget,
                "kb_ids": s.kb_ids(kb),
            }
            return ContextPack.model_validate(s.client.rpc("context_pack", args))

        return _call(run)


def _memory_tools(server: MCPServer, s: _Session) -> None:
    @server.tool()
    def remember(
        key: Annotated[str, Field(description="A stable dotted key, e.g. prefs.short_answers or projects.garden.")],
        value: Annotated[Any, Field(description="The value (string, number, boolean or a small JSON object).")],
        description: Annotated[str, Field(description="One sentence saying what to remember, in the user's words.")],
        category: Annotated[Category, Field(description="The kind of memory (one of the schema's categories).")],
        emotion: Annotated[Emotion | None, Field(description="How the user felt about it, if they said.")] = None,
        intensity: Annotated[float | None, Field(ge=0, le=10, description="How much it matters, 0..10.")] = None,
    ) -> RememberResult:
        """Store or update one memory of the user (one active value per key; the old value is kept
        as history). Refused (42501) without the user's consent or when the text carries personal
        identifiers or sensitive data; low-intensity items are staged before becoming long-term."""
        return _call(
            lambda: s.memory().remember(key, value, description, category, emotion=emotion, intensity=intensity)
        )

    @server.tool()
    def recall(
        query: Annotated[str, Field(description="What you want to know about the user.")],
        k: Annotated[
            int | None, Field(ge=1, le=100, description="How many memories at most (default memory.match_count).")
        ] = None,
    ) -> list[MemoryHit]:
        """Memories of the user relevant to the query (their own and the tenant's shared ones),
        best first, with their key, value, description and score (cosine)."""
        return _call(lambda: s.memory().recall(query, k=k).hits)

    @server.tool()
    def list_memories() -> list[MemoryRecord]:
        """Every memory the user has: long-term and staged, with ids (for correct and forget)."""
        return _call(lambda: s.memory(embed=False).list())

    @server.tool()
    def correct(
        memory_id: Annotated[str, Field(description="The memory's id (from recall or list_memories).")],
        value: Annotated[Any, Field(description="The right value.")],
        description: Annotated[str, Field(description="The corrected sentence.")],
    ) -> RememberResult:
        """Replace a memory the user says is wrong; the wrong one is kept in its history."""
        return _call(lambda: s.memory().correct(memory_id, value, description))

    @server.tool()
    def forget(
        memory_id: Annotated[str, Field(description="The memory's id (from recall or list_memories).")],
    ) -> Forgotten:
        """Forget a memory when the user asks (soft delete; it stops being recalled)."""
        return _call(lambda: Forgotten(forgotten=s.memory(embed=False).forget(memory_id), memory_id=UUID(memory_id)))


def _consent_tool(server: MCPServer, s: _Session) -> None:
    @server.tool()
    def memory_consent(
        granted: Annotated[
            bool | None,
            Field(
                description="true: the user agrees to be remembered; false: the user withdraws it; "
                "omit to only read the current state."
            ),
        ] = None,
    ) -> Consent:
        """The user's consent to long-term memory (LGPD art. 7 I): without it every remember is
        refused (no_consent). Ask the user first, in their words; record their answer here (true
        or false), never assume it. Returns {"granted": bool}."""

        def run() -> Consent:
            mem = s.memory(embed=False)
            if granted is not None:
                mem.consent(granted)
            return Consent(granted=mem.has_consent())

        return _call(run)


def _resources(server: MCPServer, s: _Session) -> None:
    @server.resource("hipocampo://knowledge-bases", name="knowledge-bases", mime_type="application/json")
    def knowledge_bases() -> str:
        """The tenant's knowledge bases with status, documents and chunks (read-only)."""
        return _call(lambda: json.dumps([_dump(kb) for kb in s.client.list_kbs()], ensure_ascii=False), resource=True)

    @server.resource("hipocampo://memories", name="memories", mime_type="application/json")
    def memories() -> str:
        """The user's memories, long-term and staged (read-only)."""
        return _call(
            lambda: json.dumps([_dump(m) for m in s.memory(embed=False).list()], ensure_ascii=False), resource=True
        )
