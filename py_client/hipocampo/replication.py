"""Replication lag of a read replica behind its primary (issue 46 §2): what the client, ``hipocampo
db status`` and ``hipocampo serve``'s /readyz report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

__all__ = ["ReplicaStatus", "replica_status"]


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
