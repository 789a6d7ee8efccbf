"""A tenant moved to another database online, with PostgreSQL's logical replication (issue 46 §3:
``hipocampo tenant move``).

1. Checks: the target holds the source's migrations and not the tenant; the source has
   ``wal_level = logical``.
2. Copy: the tables of ``hipocampo_private._tenant_tables()`` whose key lacks the tenant column
   get ``replica identity full`` (a row filter on published updates and deletes may only name
   replica-identity columns); a publication of them filtered on the tenant; the target's identity
   sequences moved past the source's (its own rows never take a copied id); a subscription on the
   target copies the rows and then streams the tenant's changes while it keeps working.
3. Cut-over: the tenant's writes refused on the source (the tenant_moves row frozen, checked by
   ``_refuse_moving_tenant`` triggers created for the move), the subscription caught up with the
   source's WAL position after the freeze, ``tenant_digest`` equal on both sides table by table
   (else the move is undone: triggers dropped, the target's copy deleted, nothing else changed).
4. Then: subscription and publication dropped, replica identities restored, the target's
   sequences moved past the source's again, the tenant's memberships removed on the source (its
   users' tokens no longer open it there) and the move recorded (moved_at). Its rows stay on the
   source, frozen, until :func:`finish_move` deletes them after the grace period.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import dict_row

from ..errors import HipocampoError
from .tenant_copy import _last_migration, _move_sequences, _sequences, _Table, _tables, find_tenant

__all__ = ["TenantMoveError", "finish_move", "move_tenant"]

Say = Callable[[str], None]


class TenantMoveError(HipocampoError):
    """The move cannot start, or did not check out (then it was undone)."""


def _key_has_tenant(conn: psycopg.Connection[Any], table: _Table) -> bool:
    row = conn.execute(
        "select exists (select 1 from pg_catalog.pg_index as i join pg_catalog.pg_attribute as a"
        " on a.attrelid = i.indrelid and a.attnum = any(i.indkey)"
        " where i.indrelid = ('hipocampo_private.' || %s)::regclass and i.indisprimary and a.attname = %s) as v",
        (table.name, table.tenant_column),
    ).fetchone()
    return bool(row and row["v"])


def _where(target_url: str) -> str:
    """The target as the source records it: host, port and database, never a password."""
    parts = conninfo_to_dict(target_url)
    return f"{parts.get('host', '')}:{parts.get('port', '5432')}/{parts.get('dbname', '')}"


def _check(source: psycopg.Connection[Any], target: psycopg.Connection[Any], tenant: uuid.UUID) -> None:
    if _last_migration(source) != _last_migration(target):
        raise TenantMoveError("the target's migrations differ from the source's: migrate both first", "55000")
    if target.execute("select 1 from hipocampo_private.tenants where id = %s", (tenant,)).fetchone():
        raise TenantMoveError(f"tenant {tenant} is already in the target", "23505")
    level = source.execute("select current_setting('wal_level') as v").fetchone()
    if not level or level["v"] != "logical":
        raise TenantMoveError("the source's wal_level must be logical (Supabase's is) to move a tenant online", "55000")


def _all_sequences(conn: psycopg.Connection[Any], tables: list[_Table]) -> dict[str, int]:
    """Every identity of the tenant tables, the reassigned ones included (a move keeps every id)."""
    keep = [_Table(t.ord, t.name, t.tenant_column, [], t.derived) for t in tables]
    return _sequences(conn, keep)


def _publish(m: _Move) -> None:
    """Replica identity full where the key lacks the tenant column (each table noted in ``m.full``
    first, so that an undo restores what was changed), then the publication."""
    for t in m.tables:
        if not _key_has_tenant(m.source, t):
            m.full.append(t.name)
            m.source.execute(
                sql.SQL("alter table hipocampo_private.{} replica identity full").format(sql.Identifier(t.name))
            )
    members = sql.SQL(", ").join(
        sql.SQL("hipocampo_private.{} where ({} = {})").format(
            sql.Identifier(t.name), sql.Identifier(t.tenant_column), sql.Literal(str(m.tenant))
        )
        for t in m.tables
    )
    m.source.execute(sql.SQL("create publication {} for table {}").format(sql.Identifier(m.name), members))


def _unpublish(source: psycopg.Connection[Any], name: str, full: list[str]) -> None:
    source.execute(sql.SQL("drop publication if exists {}").format(sql.Identifier(name)))
    for table in full:
        source.execute(
            sql.SQL("alter table hipocampo_private.{} replica identity default").format(sql.Identifier(table))
        )


def _wait(what: str, done: Callable[[], bool], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise TenantMoveError(f"the move timed out waiting for {what} ({timeout_s:.0f} s)", "57014")
        time.sleep(0.1)


def _synced(target: psycopg.Connection[Any], name: str) -> bool:
    row = target.execute(
        "select count(*) filter (where r.srsubstate <> 'r') as left, count(*) as n from pg_catalog.pg_subscription_rel"
        " as r join pg_catalog.pg_subscription as s on s.oid = r.srsubid where s.subname = %s",
        (name,),
    ).fetchone()
    return bool(row and row["n"] > 0 and row["left"] == 0)


def _caught_up(source: psycopg.Connection[Any], name: str, lsn: str) -> bool:
    row = source.execute(
        "select confirmed_flush_lsn >= %s::pg_lsn as v from pg_catalog.pg_replication_slots where slot_name = %s",
        (lsn, name),
    ).fetchone()
    return bool(row and row["v"])


def _triggers(source: psycopg.Connection[Any], tables: list[_Table], on: bool) -> None:
    """Create (``on``) or drop the move's triggers on the tenant tables. Creating one waits for the
    writes in flight on its table, so every write after it goes through the trigger."""
    for t in tables:
        name = sql.Identifier(t.name)
        source.execute(sql.SQL("drop trigger if exists hipocampo_moving on hipocampo_private.{}").format(name))
        if on:
            source.execute(
                sql.SQL(
                    "create trigger hipocampo_moving before insert or update or delete on hipocampo_private.{}"
                    " for each row execute function hipocampo_private._refuse_moving_tenant({})"
                ).format(name, sql.Literal(t.tenant_column))
            )


def _freeze(source: psycopg.Connection[Any], tenant: uuid.UUID) -> None:
    """Refuse the tenant's writes from now on: the tenant's exclusive advisory lock (each write
    through the move's trigger holds it shared until its commit) waits for the writes in flight,
    then the freeze commits; a write after it waits for the lock, then sees the freeze."""
    with source.transaction():
        source.execute("select pg_catalog.pg_advisory_xact_lock(hashtextextended(%s, 0))", (str(tenant),))
        source.execute("update hipocampo_private.tenant_moves set frozen_at = now() where tenant_id = %s", (tenant,))


def _digests_differ(source: psycopg.Connection[Any], target: psycopg.Connection[Any], tenant: uuid.UUID) -> list[str]:
    """The tables whose digest differs between the two sides, computed on both at once (the
    digest reads every row of the tenant: most of the freeze)."""
    from concurrent.futures import ThreadPoolExecutor

    def digest(conn: psycopg.Connection[Any]) -> dict[str, Any]:
        row = conn.execute("select hipocampo.tenant_digest(%s) as v", (tenant,)).fetchone()
        assert row is not None
        return dict(row["v"])

    with ThreadPoolExecutor(2) as pool:
        a, b = pool.map(digest, (source, target))
    return sorted(k for k in a if a[k] != b.get(k))


def move_tenant(
    source_url: str,
    tenant: uuid.UUID | str,
    target_url: str,
    *,
    timeout_s: float = 600.0,
    say: Say = lambda _: None,
) -> dict[str, Any]:
    """Move tenant ``tenant`` (id or slug) of the database at ``source_url`` to the one at
    ``target_url`` online (the module's steps); ``source_url`` must be reachable from the target
    server (its subscription connects to it). Returns ``{"tenant", "target", "digest", "copy_ms",
    "freeze_ms"}`` (``copy_ms``: the initial copy; ``freeze_ms``: how long the tenant's writes were
    refused).

    Raises:
        TenantMoveError: the target's migrations differ or it holds the tenant, the source's
            wal_level is not logical (55000 / 23505: nothing was changed); a step timed out
            (57014) or the digests differ after the cut-over (XX000): the move was undone.
    """
    with (
        psycopg.connect(source_url, autocommit=True, row_factory=dict_row) as source,
        psycopg.connect(target_url, autocommit=True, row_factory=dict_row) as target,
    ):
        row = find_tenant(source, tenant, TenantMoveError)
        _check(source, target, row["id"])
        m = _Move(source, target, _tables(source), row["id"], f"hipocampo_move_{uuid.uuid4().hex[:12]}")
        source.execute(
            "insert into hipocampo_private.tenant_moves (tenant_id, target) values (%s, %s)"
            " on conflict (tenant_id) do update set target = excluded.target, started_at = now(), frozen_at = null,"
            " moved_at = null",
            (m.tenant, _where(target_url)),
        )
        try:
            _publish(m)
            say(f"copying tenant {row['slug']} ({len(m.tables)} tables)")
            copy_ms = _copy(m, source_url, timeout_s)
            say("copied; freezing the tenant's writes for the cut-over")
            frozen = time.monotonic()
            _check_after_freeze(m, timeout_s)
        except BaseException:
            _undo(m)
            raise
        _cut_over(m)
        freeze_ms = (time.monotonic() - frozen) * 1000
        digest = target.execute("select hipocampo.tenant_digest(%s) as v", (m.tenant,)).fetchone()
    say(f"moved: the tenant's writes were refused for {freeze_ms:.0f} ms")
    return {
        "tenant": str(m.tenant),
        "target": _where(target_url),
        "digest": digest["v"] if digest else {},
        "copy_ms": copy_ms,
        "freeze_ms": freeze_ms,
    }


@dataclass
class _Move:
    """One move: both connections (autocommit), the tenant tables, the tenant, the publication's
    and subscription's name, the tables set to replica identity full for it."""

    source: psycopg.Connection[Any]
    target: psycopg.Connection[Any]
    tables: list[_Table]
    tenant: uuid.UUID
    name: str
    full: list[str] = field(default_factory=list)


def _copy(m: _Move, source_url: str, timeout_s: float) -> float:
    """The target's sequences past the source's, then the subscription, until its initial copy
    is done; returns its time in ms."""
    _move_sequences(m.target, _all_sequences(m.source, m.tables), margin=1000)
    started = time.monotonic()
    m.target.execute(
        sql.SQL("create subscription {} connection {} publication {} with (copy_data = true)").format(
            sql.Identifier(m.name), sql.Literal(source_url), sql.Identifier(m.name)
        )
    )
    _wait("the initial copy", lambda: _synced(m.target, m.name), timeout_s)
    return (time.monotonic() - started) * 1000


def _check_after_freeze(m: _Move, timeout_s: float) -> None:
    """The move's triggers, the freeze, the subscription caught up with the source's position
    after it, the digests equal."""
    _triggers(m.source, m.tables, True)
    _freeze(m.source, m.tenant)
    lsn = m.source.execute("select pg_catalog.pg_current_wal_lsn()::text as v").fetchone()
    assert lsn is not None
    _wait("the subscription to catch up", lambda: _caught_up(m.source, m.name, lsn["v"]), timeout_s)
    differ = _digests_differ(m.source, m.target, m.tenant)
    if differ:
        raise TenantMoveError(f"the copy differs from the source in {', '.join(differ)}", "XX000")


def _drop_subscription(target: psycopg.Connection[Any], name: str) -> None:
    if target.execute("select 1 from pg_catalog.pg_subscription where subname = %s", (name,)).fetchone():
        target.execute(sql.SQL("drop subscription {}").format(sql.Identifier(name)))


def _undo(m: _Move) -> None:
    """A move that failed: the subscription and publication gone, the target's copy deleted, the
    source as it was (writes allowed again, identities restored, no move recorded)."""
    _drop_subscription(m.target, m.name)
    _unpublish(m.source, m.name, m.full)
    m.source.execute("delete from hipocampo_private.tenant_moves where tenant_id = %s", (m.tenant,))
    if not m.source.execute("select 1 from hipocampo_private.tenant_moves where moved_at is null").fetchone():
        _triggers(m.source, m.tables, False)
    if m.target.execute("select 1 from hipocampo_private.tenants where id = %s", (m.tenant,)).fetchone():
        m.target.execute("select hipocampo.delete_tenant(%s)", (m.tenant,))


def _cut_over(m: _Move) -> None:
    _drop_subscription(m.target, m.name)
    _unpublish(m.source, m.name, m.full)
    _move_sequences(m.target, _all_sequences(m.source, m.tables), margin=1000)
    # Its users' tokens no longer open the tenant here; its frozen rows wait for finish_move. The
    # freeze is lifted for this transaction's own delete only (others see it frozen throughout).
    with m.source.transaction():
        m.source.execute("update hipocampo_private.tenant_moves set frozen_at = null where tenant_id = %s", (m.tenant,))
        m.source.execute("delete from hipocampo_private.memberships where tenant_id = %s", (m.tenant,))
        m.source.execute(
            "update hipocampo_private.tenant_moves set frozen_at = now(), moved_at = now() where tenant_id = %s",
            (m.tenant,),
        )


def finish_move(source_url: str, tenant: uuid.UUID | str) -> dict[str, Any]:
    """After the grace period: delete a moved tenant's rows from the source (``delete_tenant``)
    and drop the move's triggers. Returns what ``delete_tenant`` deleted.

    Raises:
        TenantMoveError: the tenant has not been moved (55000) or is unknown (P0002).
    """
    with psycopg.connect(source_url, autocommit=True, row_factory=dict_row) as source:
        row = find_tenant(source, tenant, TenantMoveError)
        if row["moved_at"] is None:
            raise TenantMoveError(f"tenant {tenant} has not been moved: nothing to finish", "55000")
        tables = _tables(source)
        with source.transaction():
            source.execute(
                "update hipocampo_private.tenant_moves set frozen_at = null where tenant_id = %s", (row["id"],)
            )
            deleted = source.execute("select hipocampo.delete_tenant(%s) as v", (row["id"],)).fetchone()
            if not source.execute(
                "select 1 from hipocampo_private.tenant_moves where frozen_at is not null"
            ).fetchone():
                _triggers(source, tables, False)
    return dict(deleted["v"]) if deleted else {}
