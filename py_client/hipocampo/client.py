"""The Python client: RPC calls as a given role with given JWT claims, RLS applying unchanged.

Every call runs in its own transaction with ``set local role <role>`` and
``request.jwt.claims`` set, exactly as PostgREST does for a Supabase request, so the database's
RLS policies are the barrier: a client acting for user A of tenant T cannot see tenant U.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal
from uuid import UUID

import psycopg

from .config_models import ConfigSection, EffectiveConfig, ModelCalibration, RagConfig
from .errors import HipocampoError, from_db_error
from .models import (
    AgentBinding,
    Answer,
    DocumentMetadataChange,
    DocumentRow,
    DocumentTextChunk,
    DocumentWrite,
    EmbeddingQueue,
    FeedbackSummary,
    JudgedQuestion,
    KnowledgeBase,
    KnowledgeBaseDeletion,
    MemberRow,
    NotLanguageDocument,
    ScrubResult,
    SearchHit,
    StoredDocument,
    TenantDeletion,
    TenantRow,
)
from .rpc import Shape
from .transport import READ_RPCS, Actor, SqlTransport, Transport

__all__ = ["READ_RPCS", "Actor", "Hipocampo", "vector_text"]


def vector_text(v: Sequence[float]) -> str:
    """An embedding (``list[float]``, any dims) in pgvector's text form ``"[0.1,0.2,…]"``, each
    value rounded to float32 (what pgvector stores) and written with 9 significant digits (enough
    to give back that float32 exactly). The bulk path sends embeddings so: PostgreSQL parses this
    ~3x faster than a json array of numbers (docs/BENCHMARKS.md §Bulk ingestion)."""
    f32 = struct.unpack(f"{len(v)}f", struct.pack(f"{len(v)}f", *v))
    return "[" + ",".join(map("{:.9g}".format, f32)) + "]"


def _chunk_as_text(chunk: dict[str, Any]) -> dict[str, Any]:
    """A chunk for ``ingest_documents`` with its embedding and sentence embeddings as
    :func:`vector_text`."""
    out = {**chunk, "embedding": vector_text(chunk["embedding"])}
    if chunk.get("sentence_embeddings") is not None:
        out["sentence_embeddings"] = [vector_text(v) for v in chunk["sentence_embeddings"]]
    return out


class Hipocampo:
    """Client of hipocampo: the RPCs as an actor, over a database connection or over HTTP.

    Args:
        url: libpq connection URL (see :func:`hipocampo.db.ensure_database`); the client then
            runs over a :class:`~hipocampo.transport.SqlTransport` built from it and the pool
            arguments below.
        actor: who the calls act as (default service_role without tenant).
        pool_size: connections kept open (psycopg_pool), default 4.
        pool_timeout_s: seconds to wait for a connection (default 30); then PoolTimeout.
        read_url: a read replica (a hot standby of ``url``'s database): the read RPCs
            (:data:`READ_RPCS`) go there, everything else to ``url``. None: everything to ``url``.
        read_your_writes_wait_ms: after an actor's write, how long its next read waits for the
            replica to replay that write (the primary's LSN after the commit) before reading from
            the primary instead (``[database] read_your_writes_wait_ms``, 200 ms).
        transport: the way to the RPCs instead of ``url`` (e.g. :meth:`from_supabase`'s HTTP one).

    Errors are raised as :mod:`hipocampo.errors` types carrying the SQLSTATE.
    """

    def __init__(
        self,
        url: str | None = None,
        actor: Actor | None = None,
        *,
        pool_size: int = 4,
        pool_timeout_s: float = 30.0,
        read_url: str | None = None,
        read_your_writes_wait_ms: float = 200.0,
        transport: Transport | None = None,
    ) -> None:
        if transport is None:
            if not url:
                raise ValueError("Hipocampo needs a database URL or a transport")
            transport = SqlTransport(
                url,
                pool_size=pool_size,
                pool_timeout_s=pool_timeout_s,
                read_url=read_url,
                read_your_writes_wait_ms=read_your_writes_wait_ms,
            )
        self._transport: Transport = transport
        self.url = transport.url
        self.actor = actor or Actor.service()

    @classmethod
    def from_supabase(cls, url: str, anon_key: str, access_token: str) -> Hipocampo:
        """The same client over HTTP, through a Supabase project's edge functions (the
        ``supabase`` package; ``pip install 'hipocampo[supabase]'``), acting as the user of
        ``access_token`` (:class:`hipocampo.supabase_client.HttpTransport`). For an app with no
        database connection; the RPCs the functions serve are listed in its ``ROUTES``, and
        :meth:`ask` answers through the ``ask`` function."""
        from .supabase_client import HttpTransport

        return cls(transport=HttpTransport(url, anon_key, access_token), actor=Actor("authenticated", {}, None))

    def close(self) -> None:
        """Close the transport: the connection pools and the sessions of unfinished jobs (they
        count as interrupted)."""
        self._transport.close()

    def __enter__(self) -> Hipocampo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sql(self) -> SqlTransport:
        """The database transport; over HTTP, 0A000 (what needs a connection of its own)."""
        if not isinstance(self._transport, SqlTransport):
            raise HipocampoError("no database connection over HTTP: use the RPC methods", "0A000")
        return self._transport

    def as_actor(self, actor: Actor) -> Hipocampo:
        """A client sharing this transport (its pool) that acts as ``actor``. Over HTTP every call
        acts as the access token's user: 0A000."""
        self._sql()
        other = object.__new__(Hipocampo)
        other._transport = self._transport
        other.url = self.url
        other.actor = actor
        return other

    @property
    def read_counts(self) -> dict[str, int]:
        """Where the read RPCs went: ``{"replica", "primary", "primary_after_write"}`` (the last:
        read from the primary because the replica had not replayed the actor's write in time)."""
        return dict(self._sql().routing.reads)

    def replica_status(self) -> Any:
        """The read replica's lag behind the primary (:class:`hipocampo.replication.ReplicaStatus`:
        WAL bytes and ms not replayed), or None without a read URL.

        Raises:
            ConnectionLostError: either server is unreachable.
        """
        from .replication import replica_status

        sql_transport = self._sql()
        if sql_transport.routing.read_pool is None:
            return None
        try:
            with sql_transport.pool.connection() as p, sql_transport.routing.read_pool.connection() as r:
                return replica_status(p, r)
        except psycopg.Error as err:
            raise from_db_error(err) from err

    @contextmanager
    def transaction(self, *, track: bool = True) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
        """A cursor in a transaction on the primary with the actor's role and JWT claims set
        (``set local``). With a read replica, what it committed is tracked (``track``): the actor's
        next read on the replica waits for it. Over HTTP: 0A000.

        Raises the typed error of a database error (``from_db_error``), also when no connection
        can be had (:class:`~hipocampo.errors.ConnectionLostError` after the pool timeout)."""
        with self._sql().transaction(self.actor, track=track) as cur:
            yield cur

    def _tenant(self) -> str | None:
        return str(self.actor.tenant_id) if self.actor.tenant_id else None

    # -- the one RPC caller -------------------------------------------------------------------
    def rpc(self, name: str, args: Mapping[str, Any] | None = None, shape: Shape = "value") -> Any:
        """Call ``hipocampo.<name>`` with named ``args`` as this client's actor: over a database
        connection in one transaction (:func:`hipocampo.rpc.call`: arguments cast to their
        declared types, an unknown one is InvalidInputError, database errors typed by SQLSTATE;
        with a read replica, the read RPCs (:data:`READ_RPCS`) run there); over HTTP through the
        edge function serving it. ``shape``: ``value`` | ``row`` | ``rows`` | ``none``.
        """
        return self._transport.rpc(self.actor, name, args, shape)

    def rpc_in(
        self,
        cur: psycopg.Cursor[dict[str, Any]],
        name: str,
        args: Mapping[str, Any] | None = None,
        shape: Shape = "value",
    ) -> Any:
        """:meth:`rpc` inside a transaction the caller holds (several calls, one transaction)."""
        return self._sql().rpc_in(cur, name, args, shape)

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
        """Answer ``question`` through the ``ask`` edge function (a client of :meth:`from_supabase`;
        see :meth:`hipocampo.supabase_client.HttpTransport.ask`). Over a database connection the
        pipeline runs in this process: ``hipocampo.Orchestrator(client, embedder).ask`` (0A000 here).
        """
        ask = getattr(self._transport, "ask", None)
        if ask is None:
            raise HipocampoError(
                "over a database connection, answer with hipocampo.Orchestrator(client, embedder).ask", "0A000"
            )
        answer: Answer = ask(
            question,
            kb_ids=kb_ids,
            agent=agent,
            query_embedding=query_embedding,
            use_cache=use_cache,
            session_id=session_id,
        )
        return answer

    # -- tenants -----------------------------------------------------------------------------
    def create_tenant(self, name: str, slug: str, admin_user_id: UUID | str | None = None) -> UUID:
        """Create a tenant (service_role). Raises InvalidInputError when the slug exists."""
        return UUID(str(self.rpc("create_tenant", {"name": name, "slug": slug, "admin_user_id": admin_user_id})))

    def tenant_id(self, slug: str) -> UUID | None:
        """Id of the tenant with ``slug`` (as the actor sees it), or None."""
        found = self.rpc("tenant_by_slug", {"slug": slug})
        return UUID(str(found)) if found else None

    def add_member(self, tenant_id: UUID | str, user_id: UUID | str, role: str = "member") -> None:
        """Add a user to a tenant as ``admin`` or ``member`` (service_role)."""
        self.rpc("add_member", {"tenant_id": tenant_id, "user_id": user_id, "role": role}, "none")

    def list_tenants(self) -> list[TenantRow]:
        """Every tenant with its member and knowledge-base counts (service_role)."""
        return [TenantRow.model_validate(dict(r)) for r in self.rpc("list_tenants", None, "rows")]

    def list_members(self, tenant_id: UUID | str) -> list[MemberRow]:
        """A tenant's members and their roles (service_role). Raises NotFoundError."""
        return [MemberRow.model_validate(dict(r)) for r in self.rpc("list_members", {"tenant_id": tenant_id}, "rows")]

    def remove_member(self, tenant_id: UUID | str, user_id: UUID | str) -> bool:
        """End a membership (service_role); False when there was none. The user's data stays:
        ``Memory.erase`` first for LGPD art. 18."""
        return bool(self.rpc("remove_member", {"tenant_id": tenant_id, "user_id": user_id}))

    def delete_tenant(self, tenant_id: UUID | str) -> TenantDeletion:
        """Delete a tenant and everything it holds, in one transaction (service_role;
        ``hipocampo.delete_tenant``): knowledge bases, documents, chunks with their postings and
        statistics, memories, messages, sessions, cache, config and audit rows.

        Returns:
            What was deleted: the tenant's id and slug, and counts of its knowledge bases,
            documents, chunks, memories, messages, members and audit rows.

        Raises:
            NotFoundError: unknown tenant (P0002).
            PermissionDeniedError: not service_role (42501).
        """
        return TenantDeletion.model_validate(self.rpc("delete_tenant", {"tenant_id": tenant_id}))

    def set_tenant_config(self, section: str, patch: dict[str, Any]) -> ConfigSection:
        """Override config keys of the tenant within their bounds (``hipocampo.set_tenant_config``);
        returns the tenant's overrides of the section after the change (values only, no bounds).

        Raises:
            InvalidInputError: unknown section or key, wrong type, locked key (22023), out of its
                ``<key>_range`` (22003). PermissionDeniedError: not a tenant admin.
        """
        args = {"section": section, "patch": patch, "tenant_id": self._tenant()}
        return ConfigSection.parse(section, self.rpc("set_tenant_config", args) or {})

    def set_tenant_tuning(self, model: str, section: str, patch: dict[str, Any]) -> ConfigSection:
        """Store the tenant's values for one embedding model (``hipocampo.set_tenant_tuning``: the
        model-dependent keys, e.g. retrieval.dense_weight, memory.answer_threshold,
        rag.min_confidence), in force only while ``model`` is active or searched, before the
        tenant's plain overrides (docs/design.md §calibration); a null value removes one. Returns
        the tenant's tuning of that section for ``model``.

        Raises:
            InvalidInputError: a key not tuned per model, unknown or of the wrong type (22023), out
                of its range (22003). NotFoundError: unknown embedding model (P0002).
                PermissionDeniedError: not a tenant admin (42501).
        """
        args = {"model": model, "section": section, "patch": patch, "tenant_id": self._tenant()}
        return ConfigSection.parse(section, self.rpc("set_tenant_tuning", args) or {})

    def set_kb_config(self, kb_id: UUID, section: str, patch: dict[str, Any]) -> ConfigSection:
        """Override config keys of one knowledge base (``hipocampo.set_knowledge_base_config``;
        validated like the tenant's); returns the KB's overrides of that section (values only).

        Raises:
            InvalidInputError: as set_tenant_config (22023, 22003). NotFoundError: unknown knowledge
                base (P0002). PermissionDeniedError: not a tenant admin (42501).
        """
        args = {"kb_id": kb_id, "section": section, "patch": patch}
        return ConfigSection.parse(section, self.rpc("set_knowledge_base_config", args) or {})

    def set_kb_tuning(self, kb_id: UUID, model: str, section: str, patch: dict[str, Any]) -> ConfigSection:
        """Store a knowledge base's values for one embedding model (``hipocampo.set_knowledge_base_tuning``:
        retrieval.min_similarity / dense_weight / dedupe_threshold, rag.min_score / min_confidence /
        sentence_*), in force only while ``model`` is the one searched (docs/design.md §calibration);
        a null value removes one. Returns the KB's tuning of that section for ``model``.

        Raises:
            InvalidInputError: a key not tuned per model, unknown or of the wrong type (22023), out
                of its range (22003). NotFoundError: unknown knowledge base or embedding model
                (P0002). PermissionDeniedError: not a tenant admin (42501).
        """
        args = {"kb_id": kb_id, "model": model, "section": section, "patch": patch}
        return ConfigSection.parse(section, self.rpc("set_knowledge_base_tuning", args) or {})

    # -- knowledge bases ---------------------------------------------------------------------
    def create_kb(
        self,
        name: str,
        *,
        description: str | None = None,
        tags: Sequence[str] = (),
        language: str = "portuguese",
        overrides: dict[str, Any] | None = None,
    ) -> UUID:
        """Create (or find by name) a knowledge base; returns its id.

        Raises:
            PermissionDeniedError: no tenant, or not an admin of it.
            InvalidInputError: bad name or language.
        """
        args = {
            "name": name,
            "description": description,
            "tags": list(tags),
            "language": language,
            "overrides": overrides or {},
            "tenant_id": self._tenant(),
        }
        return UUID(str(self.rpc("create_knowledge_base", args)))

    def kb_id(self, name: str) -> UUID:
        """Id of the knowledge base ``name``. Raises NotFoundError."""
        return UUID(str(self.rpc("knowledge_base_id", {"name": name, "tenant_id": self._tenant()})))

    def list_kbs(self) -> list[KnowledgeBase]:
        """The tenant's knowledge bases with counts."""
        rows = self.rpc("list_knowledge_bases", {"tenant_id": self._tenant()}, "rows")
        return [KnowledgeBase(**r) for r in rows]

    def set_kb_status(self, kb_id: UUID, status: str) -> None:
        """Set a KB's status: draft | indexing | ready | error."""
        self.rpc("set_knowledge_base_status", {"kb_id": kb_id, "status": status}, "none")

    def effective_config(self, kb_id: UUID | None = None) -> EffectiveConfig:
        """The config in force (global <- the active embedding model's calibration <- tenant <-
        KB), each section's values and the bounds of its keys (``config["retrieval"]["dense_weight"]``).

        Raises:
            PermissionDeniedError: no tenant (42501). NotFoundError: unknown knowledge base (P0002).
        """
        return EffectiveConfig.parse(self.effective_config_json(kb_id))

    def effective_config_json(self, kb_id: UUID | None = None) -> dict[str, Any]:
        """``effective_config``'s object as the RPC returns it (``{section: {key: value,
        <key>_range: [lo, hi], ...}}``), unparsed: for readers that only look values up (the
        ingestion pipeline, calibration); :meth:`effective_config` is the typed form.

        Raises:
            PermissionDeniedError: no tenant (42501). NotFoundError: unknown knowledge base (P0002).
        """
        out: dict[str, Any] = self.rpc("effective_config", {"tenant_id": self._tenant(), "kb_id": kb_id})
        return out

    def set_model_calibration(self, model: str, calibration: dict[str, dict[str, float]]) -> ModelCalibration:
        """Store an embedding model's calibration (service_role): ``{section: {key: value}}`` with
        every calibrated key (retrieval.min_similarity, dense_weight, dedupe_threshold;
        memory.context_threshold, answer_threshold, duplicate_cosine; conversations.dense_weight),
        thresholds as cosines in [-1, 1], weights in [0, 100] (docs/design.md §thresholds).

        Raises:
            InvalidInputError: a key is missing, unknown, not a number (22023) or out of range
                (22003).
            PermissionDeniedError: the actor is not service_role (42501).
        """
        stored = self.rpc("set_model_calibration", {"model": model, "calibration": calibration})
        return ModelCalibration(model=model, sections=stored)

    def set_agent_binding(self, name: str, kb_ids: Sequence[UUID], rag_overrides: dict[str, Any] | None = None) -> UUID:
        """Create or replace the agent binding ``name`` (``hipocampo.set_agent_binding``): the
        knowledge bases it answers from and its overrides of the rag section (replaced whole).

        Raises:
            InvalidInputError: a name not matching ``^[a-z0-9][a-z0-9_.-]{0,62}$``, no knowledge
                base, an override that is unknown, locked, of the wrong type (22023) or out of range
                (22003).
            NotFoundError: a knowledge base of another tenant or none (P0002).
            PermissionDeniedError: not a tenant admin; an operator-only key (42501).
        """
        args = {"name": name, "kb_ids": list(kb_ids), "rag_overrides": rag_overrides or {}, "tenant_id": self._tenant()}
        return UUID(str(self.rpc("set_agent_binding", args)))

    def list_agent_bindings(self) -> list[AgentBinding]:
        """The tenant's agent bindings, by name (members read them too)."""
        rows = self.rpc("list_agent_bindings", {"tenant_id": self._tenant()}, "rows")
        return [AgentBinding(**r) for r in rows]

    def delete_agent_binding(self, name: str) -> bool:
        """Delete the agent binding ``name``; False when there is none. Raises PermissionDeniedError
        (not a tenant admin)."""
        return bool(self.rpc("delete_agent_binding", {"name": name, "tenant_id": self._tenant()}))

    def embedding_queue(self) -> EmbeddingQueue:
        """The tenant's embedding queue (``hipocampo.tenant_embedding_queue``; admins): rows
        waiting, retrying and dead per kind, and at most 100 dead letters, newest first.

        Raises:
            PermissionDeniedError: not a tenant admin (42501).
        """
        return EmbeddingQueue.model_validate(self.rpc("tenant_embedding_queue", {"tenant_id": self._tenant()}) or {})

    def requeue_embeddings(self, kind: str | None = None) -> int:
        """Give the tenant's dead letters and retrying rows (of ``kind``: chunks | memories |
        memory_staging | messages; None: all) back to the embedding backfill; the number requeued.

        Raises:
            PermissionDeniedError: not a tenant admin (42501).
            InvalidInputError: an unknown kind (22023).
        """
        return int(self.rpc("requeue_tenant_embeddings", {"kind": kind, "tenant_id": self._tenant()}) or 0)

    def rag_config(self, kb_id: UUID | None = None, agent: str | None = None) -> RagConfig:
        """The effective rag section (``hipocampo.rag_config``): global <- tenant <- KB <- agent
        binding, with ``kb_ids`` (the agent's knowledge bases or ``[kb_id]``) and ``agent``.

        Raises:
            NotFoundError: unknown agent binding. PermissionDeniedError: no tenant.
        """
        return RagConfig.from_rpc(self.rag_config_json(kb_id, agent))

    def rag_config_json(self, kb_id: UUID | None = None, agent: str | None = None) -> dict[str, Any]:
        """``rag_config``'s object as the RPC returns it (the rag keys with their bounds,
        ``kb_ids``, ``agent``), unparsed: for the answer path, which reads values on every ask;
        :meth:`rag_config` is the typed form.

        Raises:
            NotFoundError: unknown agent binding. PermissionDeniedError: no tenant.
        """
        out: dict[str, Any] = self.rpc("rag_config", {"kb_id": kb_id, "agent": agent, "tenant_id": self._tenant()})
        return out

    # -- feedback on replies (issue 59 §5) ------------------------------------------------------
    def record_feedback(
        self, trace_id: UUID | str, useful: bool, comment: str | None = None, question: str | None = None
    ) -> UUID:
        """Mark the reply ``trace_id`` (every surface returns it) useful or not, with an optional
        ``comment`` (1..1,000 characters) and the ``question`` it answered (1..2,000 characters;
        kept, scrubbed of PII, only when it is the question that reply was asked: its sha256 is
        checked against the audit row). Marking again replaces the verdict and comment. A user
        marks their own replies; a service actor any of its tenant's.

        Raises:
            NotFoundError: no such reply of the tenant, or another user's (P0002).
            InvalidInputError: a comment or question out of its bounds, a question that is not
                the reply's, or a trace id that is not a uuid (22023).
        """
        args = {"trace_id": trace_id, "useful": useful, "comment": comment, "question": question}
        return UUID(str(self.rpc("record_feedback", {**args, "tenant_id": self._tenant()})))

    def feedback_summary(self, kb_id: UUID | None = None, weeks: int = 12) -> FeedbackSummary:
        """What the tenant's users said of its replies over ``weeks`` (1..104) weeks, for admins:
        per week useful / not useful and the share useful, and the newest 20 replies marked not
        useful with their question (of ``kb_id``'s replies, or all).

        Raises:
            PermissionDeniedError: not a tenant admin (42501). InvalidInputError: weeks out of range.
        """
        args = {"kb_id": kb_id, "weeks": weeks, "tenant_id": self._tenant()}
        return FeedbackSummary.model_validate(self.rpc("feedback_summary", args) or {})

    def judge_feedback(self, trace_id: UUID | str, document_ids: Sequence[UUID]) -> int:
        """Make the question of the reply ``trace_id`` (marked, with its question) a judged question
        of kb eval: ``document_ids`` (1..20, of one knowledge base) are the ones that answer it.
        Judging it again replaces its documents. Returns the judged question's id.

        Raises:
            PermissionDeniedError: not a tenant admin.
            NotFoundError: no such feedback with its question, or an unknown document.
            InvalidInputError: no document, more than 20, or documents of several knowledge bases.
        """
        args = {"trace_id": trace_id, "document_ids": list(document_ids), "tenant_id": self._tenant()}
        return int(self.rpc("judge_feedback", args))

    def judged_questions(self, kb_id: UUID) -> list[JudgedQuestion]:
        """The knowledge base's judged questions stored from feedback, oldest first (what
        ``kb eval --stored`` evaluates). Raises PermissionDeniedError (not an admin), NotFoundError
        (unknown knowledge base)."""
        rows = self.rpc("judged_questions", {"kb_id": kb_id, "tenant_id": self._tenant()}, "rows")
        return [JudgedQuestion.model_validate(dict(r)) for r in rows]

    def delete_judged_question(self, judged_id: int) -> bool:
        """Remove one judged question; False when the tenant has none of that id."""
        return bool(self.rpc("delete_judged_question", {"id": judged_id, "tenant_id": self._tenant()}))

    # -- documents ---------------------------------------------------------------------------
    def scrub_pii(self, texts: Sequence[str]) -> list[ScrubResult]:
        """Scrub PII from ``texts`` with the database's scrubber (``hipocampo.scrub_pii``).

        Returns one :class:`~hipocampo.models.ScrubResult` per text, in order (docs/SECURITY.md
        §PII). Reads and writes nothing; one round trip.
        """
        if not texts:
            return []
        rows = self.rpc("scrub_pii", {"texts": list(texts)}, "rows")
        return [ScrubResult(text=r["text"], counts=r["counts"]) for r in rows]

    def document_hashes(self, kb_id: UUID, embedding_model: str | None = None) -> dict[str, StoredDocument]:
        """The KB's documents by source_uri, as ingestion compares files with them; ``embedded``:
        the document has chunks of ``embedding_model`` (None = the active model)."""
        rows = self.rpc("document_hashes", {"kb_id": kb_id, "embedding_model": embedding_model}, "rows")
        return {str(r["source_uri"]): StoredDocument.model_validate(dict(r)) for r in rows}

    def set_document_metadata(self, document_id: UUID, metadata: dict[str, Any]) -> DocumentMetadataChange:
        """Change a document's source_type, trust_score (0..1), doc_type, author, published_at,
        version, data_classification or expires_at without re-embedding it
        (``hipocampo.set_document_metadata``); returns the document's metadata after the change
        and the keys it changed (``updated``).

        Raises:
            InvalidInputError: unknown field, bad value. NotFoundError: unknown document.
            PermissionDeniedError: not a tenant admin.
        """
        args = {"document_id": document_id, "metadata": metadata}
        return DocumentMetadataChange.model_validate(self.rpc("set_document_metadata", args))

    def ingest_document(
        self,
        kb_id: UUID,
        document: dict[str, Any],
        chunks: Sequence[dict[str, Any]],
        embedding_model: str,
    ) -> DocumentWrite:
        """Write one document and its chunks atomically (``hipocampo.ingest_document``).

        ``chunks[i]["embedding"]`` is a ``list[float]`` of the model's dims; the optional
        ``chunks[i]["sentence_embeddings"]`` 1..64 of them (the chunk's sentences by the same model,
        for the answer gate's sentence similarity, docs/design.md §answers).
        Returns what was done with the document (:class:`~hipocampo.models.DocumentWrite`).
        """
        args = {"kb_id": kb_id, "document": document, "chunks": list(chunks), "embedding_model": embedding_model}
        return DocumentWrite.model_validate(self.rpc("ingest_document", args))

    def ingest_documents(
        self,
        kb_id: UUID,
        items: Sequence[tuple[dict[str, Any], Sequence[dict[str, Any]]]],
        embedding_model: str,
    ) -> list[DocumentWrite]:
        """Write a batch of documents and their chunks in one transaction, set-based
        (``hipocampo.ingest_documents``, the bulk path): ``items`` are ``(document, chunks)`` pairs
        as :meth:`ingest_document` takes them, 1..1,000 with distinct source_uris, at most 10,000
        chunks in all; each chunk's ``embedding`` (``list[float]`` of the model's dims) and its
        optional ``sentence_embeddings`` are sent as :func:`vector_text`. Returns one
        :class:`~hipocampo.models.DocumentWrite` per item, in order.

        Raises:
            InvalidInputError: a bad item refuses the whole batch (22023 / 22001 / 22000, the
                message naming ``documents[i]``); nothing of the batch is written.
            PermissionDeniedError: not an admin of the knowledge base's tenant (42501).
        """
        documents = [
            {
                "document": document,
                "chunks": [_chunk_as_text(c) for c in chunks],
            }
            for document, chunks in items
        ]
        args = {"kb_id": kb_id, "documents": documents, "embedding_model": embedding_model}
        return [DocumentWrite.model_validate(r) for r in self.rpc("ingest_documents", args)]

    def defer_model_index(self, embedding_model: str) -> bool:
        """Before a large first load (service_role): drop the model's HNSW index on chunks
        (``hipocampo.defer_model_index``); True when one was dropped, False when it was absent.
        Searches of knowledge bases over ``retrieval.exact_scan_max_rows`` chunks scan exactly
        until :meth:`build_model_index`.

        Raises:
            PermissionDeniedError: the actor is not service_role (42501).
            NotFoundError: the model is not registered (P0002).
        """
        return bool(self.rpc("defer_model_index", {"embedding_model": embedding_model}))

    def build_model_index(self, embedding_model: str) -> str:
        """After a bulk load (service_role): build the model's missing HNSW indexes in one pass
        (``hipocampo.build_model_index``, memory in MB and parallel workers from
        ``maintenance.index_build_*``); returns the chunks index name. Writes to the tables wait
        while it builds (13 s for 100k 384-d chunks, docs/BENCHMARKS.md §Bulk ingestion).

        Raises:
            PermissionDeniedError: the actor is not service_role (42501).
            NotFoundError: the model is not registered (P0002).
            PreconditionError: the global config row lacks the ``index_build_*`` keys (55000).
        """
        return str(self.rpc("build_model_index", {"embedding_model": embedding_model}))

    def list_documents(self, kb_id: UUID, *, after: str | None = None, limit: int | None = None) -> list[DocumentRow]:
        """The KB's documents by source_uri (``hipocampo.list_documents``), a keyset page: those
        whose source_uri sorts after ``after`` (None: from the first), at most ``limit``
        (1..10000; None: all of them). Rows: id, title, source_uri, source_type, doc_type,
        status, trust_score 0..1, chunk_count, content_hash, dates, pii_replacements.

        Raises:
            NotFoundError: unknown knowledge base (P0002).
            InvalidInputError: ``limit`` outside 1..10000 (22023).
        """
        args = {"kb_id": kb_id, "after_source_uri": after, "max_rows": limit}
        return [DocumentRow.model_validate(dict(r)) for r in self.rpc("list_documents", args, "rows")]

    def document_page(
        self, kb_id: UUID, *, after: str | None = None, limit: int = 1000
    ) -> tuple[list[DocumentRow], str | None]:
        """One page of :meth:`list_documents` (at most ``limit`` rows, 1..10000) and the
        source_uri to continue after when more documents follow (None on the last page).

        Raises:
            NotFoundError, InvalidInputError: as :meth:`list_documents`.
        """
        rows = self.list_documents(kb_id, after=after, limit=limit)
        last = rows[-1].source_uri if len(rows) == limit else None
        more = last is not None and bool(self.list_documents(kb_id, after=last, limit=1))
        return rows, last if more else None

    def iter_documents(self, kb_id: UUID, *, page: int = 1000) -> Iterator[DocumentRow]:
        """Every document of the KB by source_uri, fetched ``page`` rows per call (keyset pages,
        each in its own transaction: a call costs its page whatever the KB's size)."""
        after: str | None = None
        while True:
            rows = self.list_documents(kb_id, after=after, limit=page)
            yield from rows
            if len(rows) < page:
                return
            after = rows[-1].source_uri

    def get_document(self, document_id: UUID) -> DocumentRow | None:
        """One document of the tenant by id (``hipocampo.get_document``): the columns of
        :meth:`list_documents` with kb_id and kb_name; None when the tenant has no document with
        that id."""
        row = self.rpc("get_document", {"document_id": document_id, "tenant_id": self._tenant()}, "row")
        return DocumentRow.model_validate(dict(row)) if row else None

    def document_text(self, document_id: UUID) -> list[DocumentTextChunk]:
        """A document's stored (scrubbed) text, chunk by chunk in order
        (``hipocampo.document_text``): ``[{chunk_index, section, content}]``; [] for a document the
        tenant does not have."""
        rows = self.rpc("document_text", {"document_id": document_id, "tenant_id": self._tenant()}, "rows")
        return [DocumentTextChunk.model_validate(dict(r)) for r in rows]

    def documents_not_language(
        self, kb_id: UUID, source_uris: Sequence[str] | None = None
    ) -> list[NotLanguageDocument]:
        """The knowledge base's documents whose text does not read as language
        (``hipocampo.documents_not_language``: word salad, OCR garbage; found by search, never
        evidence for an answer), only those of ``source_uris`` when given: ``[{document_id,
        source_uri, title, text_measures: {words, word_order}}]`` (word_order in bits).

        Raises:
            NotFoundError: unknown knowledge base (P0002).
        """
        args = {"kb_id": kb_id, "source_uris": list(source_uris) if source_uris is not None else None}
        return [NotLanguageDocument.model_validate(dict(r)) for r in self.rpc("documents_not_language", args, "rows")]

    def membership_role(self, tenant_id: UUID | str, user_id: UUID | str) -> str | None:
        """``admin`` | ``member`` | None: the user's role in the tenant (service_role names both)."""
        role = self.rpc("membership_role", {"user_id": user_id, "tenant_id": tenant_id})
        return str(role) if role else None

    def active_embedding_model(self) -> str | None:
        """Name of the active embedding model (``hipocampo.active_embedding_model``), or None."""
        row = self.rpc("active_embedding_model", None, "row")
        return str(row["name"]) if row else None

    def delete_kb(self, kb_id: UUID) -> KnowledgeBaseDeletion:
        """Delete a knowledge base with its documents, chunks and jobs
        (``hipocampo.delete_knowledge_base``); returns what was deleted.
        Raises NotFoundError, PermissionDeniedError (not an admin)."""
        return KnowledgeBaseDeletion.model_validate(self.rpc("delete_knowledge_base", {"kb_id": kb_id}))

    def delete_document(self, document_id: UUID) -> bool:
        """Delete a document with its chunks and embeddings; False when not visible."""
        return bool(self.rpc("delete_document", {"document_id": document_id}))

    def heartbeat_job(self, job_id: UUID) -> None:
        """Renew a running ingestion job's lease (``hipocampo.heartbeat_ingestion_job``; lease
        maintenance.ingestion_lease_seconds = 300 s). Raises NotFoundError when the job is no
        longer running (e.g. marked interrupted after a longer silence)."""
        self.rpc("heartbeat_ingestion_job", {"job_id": job_id}, "none")

    def start_job(self, kb_id: UUID, documents_total: int) -> UUID:
        """Open an ingestion-job record (the knowledge base's interrupted jobs are recovered first)
        on a database session of its own, kept open until :meth:`finish_job` or
        :meth:`end_job_session` (``start_ingestion_job(hold_session => true)``): when this process
        is killed its session ends, and the job counts as interrupted at once
        (``recover_ingestion_jobs``, e.g. by the next run), not when its lease (300 s) runs out.

        Raises the typed error of a database error (NotFoundError: unknown knowledge base)."""
        args = {"kb_id": kb_id, "documents_total": documents_total, "hold_session": True}
        transport = self._sql()
        try:
            conn = psycopg.connect(transport.url, autocommit=True)
        except psycopg.Error as err:
            raise from_db_error(err) from err
        try:
            with transport.acting(conn, self.actor) as cur:
                job = UUID(str(transport.rpc_in(cur, "start_ingestion_job", args, "value")))
        except psycopg.Error as err:
            conn.close()
            raise from_db_error(err) from err
        except BaseException:
            conn.close()
            raise
        transport.job_sessions[job] = conn
        return job

    def finish_job(self, job_id: UUID, status: str, counts: dict[str, int], errors: list[dict[str, Any]]) -> None:
        """Close an ingestion-job record, on the job's own session when this client started it
        (which it then ends)."""
        args = {"job_id": job_id, "status": status, "counts": counts, "errors": errors}
        transport = self._sql()
        conn = transport.job_sessions.pop(job_id, None)
        if conn is None:
            self.rpc("finish_ingestion_job", args, "none")
            return
        try:
            with transport.acting(conn, self.actor) as cur:
                transport.rpc_in(cur, "finish_ingestion_job", args, "none")
        except psycopg.Error as err:
            raise from_db_error(err) from err
        finally:
            conn.close()

    def end_job_session(self, job_id: UUID) -> None:
        """End the session of a job this client started and did not finish (a run that stopped on
        an error): the job counts as interrupted from now on. No-op for any other job."""
        conn = self._sql().job_sessions.pop(job_id, None)
        if conn is not None:
            conn.close()

    # -- retrieval ---------------------------------------------------------------------------
    def search_model(self, kb_ids: Sequence[UUID] | None = None) -> str | None:
        """The embedding model a search of these knowledge bases reads now
        (``hipocampo.search_model``): the active one, or during a model switch the previously
        active one until every chunk of them has a row of the active model. None when no model is
        active."""
        model = self.rpc("search_model", {"kb_ids": list(kb_ids) if kb_ids else None, "tenant_id": self._tenant()})
        return str(model) if model else None

    def search(
        self,
        query: str,
        embedding: Sequence[float],
        *,
        kb_ids: Sequence[UUID] | None = None,
        source_types: Sequence[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        match_count: int | None = None,
        min_similarity: float | None = None,
        fusion: Literal["score", "rrf"] | None = None,
        dense_weight: float | None = None,
        lexical_weight: float | None = None,
        rerank: Literal["none", "trust_recency"] | None = None,
        mmr_lambda: float | None = None,
        embedding_model: str | None = None,
    ) -> list[SearchHit]:
        """Hybrid search (``hipocampo.hybrid_search``): ``match_count`` hits (1..100), best first.

        ``embedding`` is the query vector (``list[float]`` of the model's dims). min_similarity
        (cosine, -1..1), fusion, dense_weight / lexical_weight (0..100), rerank, mmr_lambda (0..1),
        embedding_model: None takes the config rows' value (docs/design.md §retrieval).

        Raises:
            InvalidInputError: empty or too long query, an argument out of range.
            DimensionMismatchError: embedding of the wrong size.
            NotFoundError: unknown knowledge base or model.
        """
        args: dict[str, Any] = {
            "query_text": query,
            "query_embedding": list(embedding),
            "kb_ids": list(kb_ids) if kb_ids else None,
            "source_types": list(source_types) if source_types else None,
            "metadata_filter": metadata_filter or None,
            "match_count": match_count,
            "min_similarity": min_similarity,
            "fusion": fusion,
            "dense_weight": dense_weight,
            "lexical_weight": lexical_weight,
            "rerank": rerank,
            "mmr_lambda": mmr_lambda,
            "embedding_model": embedding_model,
            "tenant_id": self._tenant(),
        }
        return [SearchHit(**r) for r in self.rpc("hybrid_search", args, "rows")]
