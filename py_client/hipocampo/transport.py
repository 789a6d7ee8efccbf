"""How a :class:`hipocampo.Hipocampo` reaches the RPCs (issue 47 §4): over a database connection
(:class:`SqlTransport`: a connection pool, each call in a transaction as the actor, PostgREST's
way, with an optional read replica) or over HTTP through a Supabase project's edge functions
(:class:`hipocampo.supabase_client.HttpTransport`). The client takes either; what needs a
database connection of its own (transactions, ingestion-job sessions, the replica's status) is
the SQL transport's alone.

``Actor`` (who a call acts as) lives here so both transports and the client share it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from .errors import from_db_error
from .rpc import Shape, Signatures, call, load_signatures

__all__ = ["READ_RPCS", "Actor", "SqlTransport", "Transport"]


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


# The RPCs that only read (issue 46 §1: their record goes to the read queue, on the primary through
# dblink from a standby): a read replica can serve them.
READ_RPCS = frozenset(
    {
        "hybrid_search",
        "answer_evidence",
        "search_memories",
        "lookup_memories",
        "search_history",
        "context_pack",
        "evidence_support",
        "conversation_context",
    }
)

# Asked at the end of a tracked transaction: whether it was assigned an xid (it wrote).
_WROTE = "select pg_catalog.pg_current_xact_id_if_assigned() is not null as wrote"


class Transport(Protocol):
    """What a client needs of a way to the RPCs."""

    url: str

    def rpc(self, actor: Actor, name: str, args: Mapping[str, Any] | None, shape: Shape) -> Any:
        """Call ``hipocampo.<name>`` with named ``args`` as ``actor``; errors typed by SQLSTATE."""
        ...

    def close(self) -> None:
        """Release what the transport holds."""
        ...


@dataclass
class _Routing:
    """What the clients sharing a pool share about the read replica: its pool, the primary's LSN
    after each actor's last write (read-your-writes), and where the reads went."""

    read_pool: ConnectionPool | None
    wait_s: float
    written: dict[str, str] = field(default_factory=dict)
    reads: dict[str, int] = field(default_factory=lambda: {"replica": 0, "primary": 0, "primary_after_write": 0})


class SqlTransport:
    """The RPCs over a database connection pool (psycopg_pool), each call in its own transaction
    as the actor (``set local role`` and ``request.jwt.claims``, as PostgREST does), the read RPCs
    (:data:`READ_RPCS`) on a read replica when one is given.

    Args:
        url: libpq connection URL (see :func:`hipocampo.db.ensure_database`).
        pool_size: connections kept open, default 4; pool_timeout_s: seconds to wait for one (30).
        read_url: a hot standby of ``url``'s database for the read RPCs, or None.
        read_your_writes_wait_ms: after an actor's write, how long its next read waits for the
            replica to replay it before reading from the primary (200 ms).
    """

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 4,
        pool_timeout_s: float = 30.0,
        read_url: str | None = None,
        read_your_writes_wait_ms: float = 200.0,
    ) -> None:
        self.url = url
        kwargs = {"connect_timeout": max(1, int(pool_timeout_s))}
        self.pool = ConnectionPool(
            url, min_size=1, max_size=pool_size, open=True, timeout=pool_timeout_s, kwargs=kwargs
        )
        read_pool = None
        if read_url:
            read_pool = ConnectionPool(
                read_url,
                min_size=1,
                max_size=pool_size,
                open=True,
                timeout=pool_timeout_s,
                kwargs={**kwargs, "autocommit": True},
            )
        self.routing = _Routing(read_pool, max(0.0, read_your_writes_wait_ms) / 1000)
        # The RPCs' argument types, read from the catalog on the first call (hipocampo.rpc).
        self.signatures: Signatures = {}
        # The sessions of the ingestion jobs its clients run (Hipocampo.start_job), by job id.
        self.job_sessions: dict[UUID, psycopg.Connection[Any]] = {}

    def close(self) -> None:
        """Close the pools and the sessions of unfinished jobs (they count as interrupted)."""
        for job in list(self.job_sessions):
            self.job_sessions.pop(job).close()
        self.pool.close()
        if self.routing.read_pool is not None:
            self.routing.read_pool.close()

    @contextmanager
    def acting(self, conn: psycopg.Connection[Any], actor: Actor) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
        """A cursor in a transaction of ``conn`` with the actor's role and JWT claims (``set local``)."""
        with conn.transaction(), conn.cursor(row_factory=dict_row) as cur:
            cur.execute(f"set local role {sql.Identifier(actor.role).as_string(conn)}")
            cur.execute("select set_config('request.jwt.claims', %s, true)", (json.dumps(actor.claims),))
            yield cur

    @staticmethod
    def _actor_key(actor: Actor) -> str:
        return json.dumps([actor.role, actor.claims, str(actor.tenant_id)], sort_keys=True)

    def _note_write(self, conn: psycopg.Connection[Any], actor: Actor) -> None:
        """After a transaction of ``conn`` that wrote committed on the primary: the LSN the replica
        must replay before this actor reads from it (read-your-writes)."""
        row = conn.execute("select pg_catalog.pg_current_wal_lsn()::text").fetchone()
        if row:
            self.routing.written[self._actor_key(actor)] = str(row[0])

    def _replayed(self, conn: psycopg.Connection[Any], actor: Actor) -> bool:
        """Whether the replica has replayed this actor's last write, waiting up to the
        read-your-writes wait (a server not in recovery has nothing to replay)."""
        key = self._actor_key(actor)
        lsn = self.routing.written.get(key)
        deadline = time.monotonic() + self.routing.wait_s
        while lsn is not None:
            row = conn.execute(
                "select coalesce(pg_catalog.pg_last_wal_replay_lsn() >= %s::pg_lsn, true)", (lsn,)
            ).fetchone()
            if row and row[0]:
                self.routing.written.pop(key, None)
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    def _read_rpc(self, actor: Actor, name: str, args: Mapping[str, Any] | None, shape: Shape) -> Any:
        """A read RPC on the replica, or on the primary when it has not replayed the actor's write."""
        pool = self.routing.read_pool
        assert pool is not None
        try:
            with pool.connection() as conn:
                if self._replayed(conn, actor):
                    with self.acting(conn, actor) as cur:
                        result = self.rpc_in(cur, name, args, shape)
                    self.routing.reads["replica"] += 1
                    return result
        except psycopg.Error as err:
            raise from_db_error(err) from err
        self.routing.reads["primary_after_write"] += 1
        with self.transaction(actor, track=False) as cur:
            return self.rpc_in(cur, name, args, shape)

    @contextmanager
    def transaction(self, actor: Actor, *, track: bool = True) -> Iterator[psycopg.Cursor[dict[str, Any]]]:
        """A cursor in a transaction on the primary as ``actor``; with a read replica, what it
        committed is tracked (``track``) for the actor's next read. Database errors are raised
        typed (``from_db_error``; ConnectionLostError after the pool timeout)."""
        track = track and self.routing.read_pool is not None
        try:
            with self.pool.connection() as conn:
                with self.acting(conn, actor) as cur:
                    yield cur
                    # Only a transaction that wrote has an xid: a read-only one moves no replica.
                    wrote = track and cur.execute(_WROTE).fetchone() == {"wrote": True}
                if wrote:
                    self._note_write(conn, actor)
        except psycopg.Error as err:
            raise from_db_error(err) from err

    def rpc(self, actor: Actor, name: str, args: Mapping[str, Any] | None, shape: Shape) -> Any:
        """One RPC in its own transaction as ``actor`` (:func:`hipocampo.rpc.call`); the read
        RPCs on the replica when there is one."""
        if name in READ_RPCS and self.routing.read_pool is not None:
            return self._read_rpc(actor, name, args, shape)
        with self.transaction(actor) as cur:
            result = self.rpc_in(cur, name, args, shape)
        if name in READ_RPCS:
            self.routing.reads["primary"] += 1
        return result

    def rpc_in(
        self, cur: psycopg.Cursor[dict[str, Any]], name: str, args: Mapping[str, Any] | None, shape: Shape
    ) -> Any:
        """An RPC inside a transaction the caller holds."""
        if not self.signatures:
            self.signatures.update(load_signatures(cur))
        return call(cur, self.signatures, name, args, shape)
