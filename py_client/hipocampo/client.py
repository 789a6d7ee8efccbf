"""The Python client: RPC calls as a given role with given JWT claims, RLS applying unchanged.

Every call runs in its own transaction with ``set local role <role>`` and
``request.jwt.claims`` set, exactly as PostgREST does for a Supabase request, so the database's
RLS policies are the barrier: a client acting for user A of tenant T cannot see tenant U.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
from pgvector import Vector
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from .errors import from_db_error
from .models import KnowledgeBase, ScrubResult, SearchHit

__all__ = ["Actor", "Hipocampo"]


@dataclass(frozen=True)
class Actor:
    """Who a call acts as: a database role plus JWT claims.

    ``Actor.service(tenant_id)``: service_role (bypasses RLS; tenant named explicitly).
    ``Actor.user(user_id, tenant_id)``: an authenticated user; the tenant travels in
    ``app_metadata.tenant_id`` and counts only if the user is a member.
    """

    role: str
    claims: dict[str, Any] = field(default_factory=dict)
    tenant_id: UUID | None = None

    @classmethod
    def service(cls, tenant_id: UUID | str | None = None) -> Actor:
        """service_role, optionally scoped to one tenant (passed as the RPCs' tenant_id)."""
        return cls("service_role", {"role": "service_role"}, UUID(str(tenant_id)) if tenant_id else None)

    @classmethod
    def user(cls, user_id: UUID | str, tenant_id: UUID | str | None = None) -> Actor:
        """An authenticated user; claims ``{sub, role, app_metadata: {tenant_id}}``."""
        claims: dict[str, Any] = {"sub": str(user_id), "role": "authenticated"}
        if tenant_id:
            claims["app_metadata"] = {"tenant_id": str(tenant_id)}
        return cls("authenticated", claims, None)

    @classmethod
    def anon(cls) -> Actor:
        """The anon role (no user)."""
        return cls("anon", {"role": "anon"}, None)

    def for_tenant(self, tenant_id: UUID | str) -> Actor:
        """The same actor scoped to another tenant (service_role only changes its tenant)."""
        if self.role == "service_role":
            return Actor.service(tenant_id)
        claims = dict(self.claims)
        claims["app_metadata"] = {"tenant_id": str(tenant_id)}
        return Actor(self.role, claims, None)


class Hipocampo:
    """Client of a hipocampo database.

    Args:
        url: libpq connection URL (see :func:`hipocampo.db.ensure_database`).
        actor: who the calls act as (default service_role without tenant).
        pool_size: connections kept open (psycopg_pool), default 4.
        pool_timeout_s: seconds to wait for a connection (default 30); then PoolTimeout.

    Errors from the database are raised as :mod:`hipocampo.errors` types carrying the SQLSTATE.
    """

    def __init__(
        self, url: str, actor: Actor | None = None, *, pool_size: int = 4, pool_timeout_s: float = 30.0
    ) -> None:
        self.url = url
        self.actor = actor or Actor.service()
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            open=True,
            timeout=pool_timeout_s,
            kwargs={"connect_timeout": max(1, int(pool_timeout_s))},
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._pool.close()

    def __enter__(self) -> Hipocampo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def as_actor(self, actor: Actor) -> Hipocampo:
        """A client sharing this pool that acts as ``actor``."""
        other = object.__new__(Hipocampo)
        other.url = self.url
        other.actor = actor
        other._pool = self._pool
        return other

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
        """A cursor in a transaction with the actor's role and JWT claims set (``set local``).

        Raises the typed error of a database error (``from_db_error``), also when no connection
        can be had (:class:`~hipocampo.errors.ConnectionLostError` after the pool timeout)."""
        try:
            with (
                self._pool.connection() as conn,
                conn.transaction(),
                conn.cursor(row_factory=dict_row) as cur,
            ):
                cur.execute(f"set local role {sql.Identifier(self.actor.role).as_string(conn)}")
                cur.execute(
                    "select set_config('request.jwt.claims', %s, true)",
                    (json.dumps(self.actor.claims),),
                )
                yield cur
        except psycopg.Error as err:
            raise from_db_error(err) from err

    def _tenant(self) -> str | None:
        return str(self.actor.tenant_id) if self.actor.tenant_id else None

    # -- tenants -----------------------------------------------------------------------------
    def create_tenant(self, name: str, slug: str, admin_user_id: UUID | str | None = None) -> UUID:
        """Create a tenant (service_role). Raises InvalidInputError when the slug exists."""
        with self.transaction() as cur:
            cur.execute(
                "select hipocampo.create_tenant(%s, %s, %s) as id",
                (name, slug, str(admin_user_id) if admin_user_id else None),
            )
            return UUID(str(_one(cur)["id"]))

    def tenant_id(self, slug: str) -> UUID | None:
        """Id of the tenant with ``slug`` (as the actor sees it), or None."""
        with self.transaction() as cur:
            cur.execute("select hipocampo.tenant_by_slug(%s) as id", (slug,))
            row = cur.fetchone()
            return UUID(str(row["id"])) if row and row["id"] else None

    def add_member(self, tenant_id: UUID | str, user_id: UUID | str, role: str = "member") -> None:
        """Add a user to a tenant as ``admin`` or ``member`` (service_role)."""
        with self.transaction() as cur:
            cur.execute("select hipocampo.add_member(%s, %s, %s)", (str(tenant_id), str(user_id), role))

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
        with self.transaction() as cur:
            cur.execute(
                "select hipocampo.create_knowledge_base(%s, %s, %s, %s, %s::jsonb, %s) as id",
                (
                    name,
                    description,
                    list(tags),
                    language,
                    json.dumps(overrides or {}),
                    self._tenant(),
                ),
            )
            return UUID(str(_one(cur)["id"]))

    def kb_id(self, name: str) -> UUID:
        """Id of the knowledge base ``name``. Raises NotFoundError."""
        with self.transaction() as cur:
            cur.execute("select hipocampo.knowledge_base_id(%s, %s) as id", (name, self._tenant()))
            return UUID(str(_one(cur)["id"]))

    def list_kbs(self) -> list[KnowledgeBase]:
        """The tenant's knowledge bases with counts."""
        with self.transaction() as cur:
            cur.execute("select * from hipocampo.list_knowledge_bases(%s)", (self._tenant(),))
            return [KnowledgeBase(**r) for r in cur.fetchall()]

    def set_kb_status(self, kb_id: UUID, status: str) -> None:
        """Set a KB's status: draft | indexing | ready | error."""
        with self.transaction() as cur:
            cur.execute("select hipocampo.set_knowledge_base_status(%s, %s)", (kb_id, status))

    def effective_config(self, kb_id: UUID | None = None) -> dict[str, Any]:
        """The config in force (global <- tenant <- KB), as stored in the database."""
        with self.transaction() as cur:
            cur.execute("select hipocampo.effective_config(%s, %s) as c", (self._tenant(), kb_id))
            return dict(_one(cur)["c"])

    def rag_config(self, kb_id: UUID | None = None, agent: str | None = None) -> dict[str, Any]:
        """The effective rag section (``hipocampo.rag_config``): global <- tenant <- KB <- agent
        binding, plus ``kb_ids`` (the agent's knowledge bases or ``[kb_id]``) and ``agent``.

        Raises:
            NotFoundError: unknown agent binding. PermissionDeniedError: no tenant.
        """
        with self.transaction() as cur:
            cur.execute("select hipocampo.rag_config(%s::uuid, %s, %s::uuid) as c", (kb_id, agent, self._tenant()))
            return dict(_one(cur)["c"])

    # -- documents ---------------------------------------------------------------------------
    def scrub_pii(self, texts: Sequence[str]) -> list[ScrubResult]:
        """Scrub PII from ``texts`` with the database's scrubber (``hipocampo.scrub_pii``).

        Returns one :class:`~hipocampo.models.ScrubResult` per text, in order (docs/SECURITY.md
        §PII). Reads and writes nothing; one round trip.
        """
        if not texts:
            return []
        with self.transaction() as cur:
            cur.execute("select text, counts from hipocampo.scrub_pii(%s::text[])", (list(texts),))
            return [ScrubResult(text=r["text"], counts=r["counts"]) for r in cur.fetchall()]

    def document_hashes(self, kb_id: UUID) -> dict[str, str]:
        """``{source_uri: content_hash}`` of the KB's documents."""
        with self.transaction() as cur:
            cur.execute("select source_uri, content_hash from hipocampo.document_hashes(%s)", (kb_id,))
            return {r["source_uri"]: r["content_hash"] for r in cur.fetchall()}

    def ingest_document(
        self,
        kb_id: UUID,
        document: dict[str, Any],
        chunks: Sequence[dict[str, Any]],
        embedding_model: str,
    ) -> dict[str, Any]:
        """Write one document and its chunks atomically (``hipocampo.ingest_document``).

        ``chunks[i]["embedding"]`` is a ``list[float]`` of the model's dims.
        Returns ``{"document_id", "status", "chunks", "skipped"}``.
        """
        with self.transaction() as cur:
            cur.execute(
                "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s) as r",
                (kb_id, json.dumps(document), json.dumps(list(chunks)), embedding_model),
            )
            return dict(_one(cur)["r"])

    def list_documents(self, kb_id: UUID) -> list[dict[str, Any]]:
        """The KB's documents (``hipocampo.list_documents``): id, title, source_uri, source_type,
        doc_type, status, trust_score 0..1, chunk_count, content_hash, dates; by source_uri."""
        with self.transaction() as cur:
            cur.execute("select * from hipocampo.list_documents(%s)", (kb_id,))
            return [dict(r) for r in cur.fetchall()]

    def membership_role(self, tenant_id: UUID | str, user_id: UUID | str) -> str | None:
        """``admin`` | ``member`` | None: the user's role in the tenant (service_role names both)."""
        with self.transaction() as cur:
            cur.execute("select hipocampo.membership_role(%s::uuid, %s::uuid) as r", (str(user_id), str(tenant_id)))
            row = cur.fetchone()
            return str(row["r"]) if row and row["r"] else None

    def active_embedding_model(self) -> str | None:
        """Name of the active embedding model (``hipocampo.active_embedding_model``), or None."""
        with self.transaction() as cur:
            cur.execute("select name from hipocampo.active_embedding_model()")
            row = cur.fetchone()
            return str(row["name"]) if row else None

    def delete_document(self, document_id: UUID) -> bool:
        """Delete a document with its chunks and embeddings; False when not visible."""
        with self.transaction() as cur:
            cur.execute("select hipocampo.delete_document(%s) as ok", (document_id,))
            return bool(_one(cur)["ok"])

    def heartbeat_job(self, job_id: UUID) -> None:
        """Renew a running ingestion job's lease (``hipocampo.heartbeat_ingestion_job``; lease
        maintenance.ingestion_lease_seconds = 300 s). Raises NotFoundError when the job is no
        longer running (e.g. marked interrupted after a longer silence)."""
        with self.transaction() as cur:
            cur.execute("select hipocampo.heartbeat_ingestion_job(%s)", (job_id,))

    def start_job(self, kb_id: UUID, documents_total: int) -> UUID:
        """Open an ingestion-job record (the knowledge base's interrupted jobs are recovered first)."""
        with self.transaction() as cur:
            cur.execute("select hipocampo.start_ingestion_job(%s, %s) as id", (kb_id, documents_total))
            return UUID(str(_one(cur)["id"]))

    def finish_job(self, job_id: UUID, status: str, counts: dict[str, int], errors: list[dict[str, Any]]) -> None:
        """Close an ingestion-job record."""
        with self.transaction() as cur:
            cur.execute(
                "select hipocampo.finish_ingestion_job(%s, %s, %s::jsonb, %s::jsonb)",
                (job_id, status, json.dumps(counts), json.dumps(errors)),
            )

    # -- retrieval ---------------------------------------------------------------------------
    def search(
        self,
        query: str,
        embedding: Sequence[float],
        *,
        kb_ids: Sequence[UUID] | None = None,
        source_types: Sequence[str] | None = None,
        metadata_filter: dict[str, Any] | None = None,
        match_count: int | None = None,
        **options: Any,
    ) -> list[SearchHit]:
        """Hybrid search (``hipocampo.hybrid_search``): ``match_count`` hits, best first.

        ``embedding`` is the query vector (``list[float]`` of the model's dims). ``options``:
        min_similarity, fusion ('score' | 'rrf'), dense_weight, lexical_weight, rerank
        ('none' | 'trust_recency'), mmr_lambda (0..1), embedding_model. None = config rows.

        Raises:
            InvalidInputError: empty or too long query, bad option.
            DimensionMismatchError: embedding of the wrong size.
            NotFoundError: unknown knowledge base or model.
        """
        allowed = {
            "min_similarity",
            "fusion",
            "dense_weight",
            "lexical_weight",
            "rerank",
            "mmr_lambda",
            "embedding_model",
        }
        unknown = set(options) - allowed
        if unknown:
            raise TypeError(f"unknown search options: {sorted(unknown)}")
        args: dict[str, Any] = {
            "query_text": query,
            "query_embedding": Vector(list(embedding)).to_text(),
            "kb_ids": list(kb_ids) if kb_ids else None,
            "source_types": list(source_types) if source_types else None,
            "metadata_filter": json.dumps(metadata_filter) if metadata_filter else None,
            "match_count": match_count,
            "tenant_id": self._tenant(),
            **options,
        }
        casts = {
            "query_embedding": "::extensions.vector",
            "kb_ids": "::uuid[]",
            "source_types": "::text[]",
            "metadata_filter": "::jsonb",
            "tenant_id": "::uuid",
        }
        named = ", ".join(f"{k} => %({k})s{casts.get(k, '')}" for k in args)
        with self.transaction() as cur:
            cur.execute(f"select * from hipocampo.hybrid_search({named})", args)  # type: ignore[arg-type,unused-ignore]
            return [SearchHit(**r) for r in cur.fetchall()]


def _one(cur: psycopg.Cursor[dict[str, Any]]) -> dict[str, Any]:
    row = cur.fetchone()
    assert row is not None
    return row
