"""Read replicas: the primary's link for reads recorded on a hot standby, and replication lag.

A read RPC on a hot standby (a Supabase read replica, or a streaming standby of the embedded
server) cannot write; it records itself on the primary through dblink, on the foreign server
``hipocampo_primary`` that :func:`link_primary` creates on the primary (physical replication copies
it to every standby). See supabase/schemas/11_read_recording.sql.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

__all__ = ["LINK_SERVER", "ReplicaStatus", "link_primary", "replica_status", "unlink_primary"]

LINK_SERVER = "hipocampo_primary"
# libpq options a dblink_fdw server takes (user and password belong to the user mapping).
_SERVER_OPTIONS = ("host", "hostaddr", "port", "dbname", "sslmode", "sslrootcert", "connect_timeout", "options")


def link_primary(conn: psycopg.Connection[Any], primary_url: str) -> None:
    """Create (or replace) the foreign server ``hipocampo_primary`` pointing at ``primary_url``,
    with a user mapping for the connection's user (the functions' owner, who runs the dblink call).

    Run on the primary, as the database owner; the standbys receive it by replication. On
    Supabase, ``primary_url`` is the project's direct connection string (``postgres`` with its
    password: a dblink connection by a role that is not a superuser must authenticate with one).

    Raises:
        psycopg.Error: the owner may not create servers (needs usage on dblink_fdw), or dblink is
            not installed (migrations install it).
    """
    parts = {k: v for k, v in conninfo_to_dict(primary_url).items() if v is not None}
    server = {k: str(v) for k, v in parts.items() if k in _SERVER_OPTIONS}
    mapping: dict[str, str] = {k: str(parts[k]) for k in ("user", "password") if k in parts}
    with conn.transaction():
        conn.execute(sql.SQL("drop server if exists {} cascade").format(sql.Identifier(LINK_SERVER)))
        conn.execute(
            sql.SQL("create server {} foreign data wrapper dblink_fdw options ({})").format(
                sql.Identifier(LINK_SERVER), _options(server)
            )
        )
        conn.execute(
            sql.SQL("create user mapping for current_user server {} options ({})").format(
                sql.Identifier(LINK_SERVER), _options(mapping or {"user": "postgres"})
            )
        )


def unlink_primary(conn: psycopg.Connection[Any]) -> None:
    """Drop the foreign server ``hipocampo_primary`` (reads in read-only transactions then fail with
    25006 instead of going unrecorded)."""
    conn.execute(sql.SQL("drop server if exists {} cascade").format(sql.Identifier(LINK_SERVER)))


def _options(values: dict[str, str]) -> sql.Composed:
    return sql.SQL(", ").join(sql.SQL("{} {}").format(sql.Identifier(k), sql.Literal(v)) for k, v in values.items())


@dataclass(frozen=True)
class ReplicaStatus:
    """A standby as its primary and itself see it: ``lag_bytes`` of WAL not yet replayed and
    ``lag_ms`` since the last replayed transaction's commit (0 when caught up)."""

    primary_lsn: str
    replay_lsn: str
    lag_bytes: int
    lag_ms: float
    in_recovery: bool


def replica_status(primary: psycopg.Connection[Any], replica: psycopg.Connection[Any]) -> ReplicaStatus:
    """The replica's lag behind the primary: WAL bytes (primary's current LSN minus the replica's
    replay LSN) and milliseconds (now minus the replay timestamp, 0 when nothing is pending).

    Raises:
        psycopg.Error: either server is unreachable.
    """
    row = primary.execute("select pg_catalog.pg_current_wal_lsn()::text").fetchone()
    assert row is not None
    lsn = str(row[0] if not isinstance(row, dict) else next(iter(row.values())))
    rep = replica.execute(
        "select pg_catalog.pg_is_in_recovery(), pg_catalog.pg_last_wal_replay_lsn()::text,"
        " pg_catalog.pg_wal_lsn_diff(%s::pg_lsn, coalesce(pg_catalog.pg_last_wal_replay_lsn(), %s::pg_lsn))::bigint,"
        " case when pg_catalog.pg_last_wal_replay_lsn() >= %s::pg_lsn then 0 else"
        " extract(epoch from now() - pg_catalog.pg_last_xact_replay_timestamp()) * 1000 end",
        (lsn, lsn, lsn),
    ).fetchone()
    assert rep is not None
    values = list(rep.values()) if isinstance(rep, dict) else list(rep)
    return ReplicaStatus(
        primary_lsn=lsn,
        replay_lsn=str(values[1]),
        lag_bytes=max(0, int(values[2] or 0)),
        lag_ms=float(values[3] or 0),
        in_recovery=bool(values[0]),
    )
