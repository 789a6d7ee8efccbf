"""Reads that do not write (issue 46 §1): a read RPC appends one read_queue row and nothing else;
drain_read_queue turns the rows into the access log, the chunks' access times and the memories'
counters; in a read-only transaction (a hot standby, a PostgREST GET) the row is appended on the
primary through dblink, and without that link the read fails rather than go unrecorded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from hipocampo.db import replica

from ..conftest import World
from ..reads import READS, RECORDED, reader

Conn = psycopg.Connection[dict[str, Any]]


def _queue_emptied(db: Conn) -> None:
    """The drain counts every queued read: what other tests committed goes first (rolled back with
    the test's transaction)."""
    db.execute("delete from hipocampo_private.read_queue")


def _queued(db: Conn, tenant: Any) -> list[dict[str, Any]]:
    return db.execute(
        "select rpc, caller, caller_role, rows_returned, cardinality(chunk_ids) as chunks,"
        " cardinality(memory_ids) as memories from hipocampo_private.read_queue where tenant_id = %s order by id",
        (tenant,),
    ).fetchall()


@pytest.mark.parametrize("read", sorted(READS))
def test_a_read_writes_nothing_but_its_queue_row(db: Conn, world: World, read: str) -> None:
    args = reader(db, world)
    world.act("service_role")
    before = db.execute(
        "select (select count(*) from hipocampo_private.data_access_log) as log,"
        " (select count(*) from hipocampo_private.chunk_access) as touched,"
        " (select sum(access_count) from hipocampo_private.memories) as counted"
    ).fetchone()
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute(READS[read], args)
    world.act("service_role")
    after = db.execute(
        "select (select count(*) from hipocampo_private.data_access_log) as log,"
        " (select count(*) from hipocampo_private.chunk_access) as touched,"
        " (select sum(access_count) from hipocampo_private.memories) as counted"
    ).fetchone()
    assert after == before
    queued = _queued(db, world.tenant_a)
    if read in RECORDED:
        assert [(q["rpc"], q["caller"], q["caller_role"]) for q in queued] == [
            (RECORDED[read], world.member_a, "authenticated")
        ]
    else:
        assert queued == []


@pytest.mark.parametrize("read", sorted(READS))
def test_every_read_runs_in_a_read_only_transaction(db: Conn, world: World, linked: str, read: str) -> None:
    args = reader(db, world)
    db.execute("set transaction_read_only = on")
    db.execute(READS[read], args)
    # Recorded on the primary (here the same server, through dblink: committed there already).
    world.act("service_role")
    queued = _queued(db, world.tenant_a)
    assert [q["rpc"] for q in queued] == ([RECORDED[read]] if read in RECORDED else [])
    assert all(q["caller"] == world.member_a and q["caller_role"] == "authenticated" for q in queued)


def test_without_the_link_a_read_only_read_fails_rather_than_go_unrecorded(db: Conn, world: World) -> None:
    args = reader(db, world)
    db.execute("reset role")
    replica.unlink_primary(db)  # inside the test's transaction (linked or not, session-wide)
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("set transaction_read_only = on")
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction) as exc:
        db.execute(READS["search_memories"], args)
    assert exc.value.diag.message_primary == (
        "a read in a read-only transaction is recorded on the primary: link it with hipocampo db link-primary"
    )


def test_a_drain_turns_reads_into_the_log_the_access_times_and_the_counters(db: Conn, world: World) -> None:
    _queue_emptied(db)
    args = reader(db, world)
    chunks = {r["chunk_id"] for r in db.execute(READS["hybrid_search"], args).fetchall()}
    for _ in range(2):
        db.execute(READS["search_memories"], args)
    world.act("service_role")
    out = db.execute("select hipocampo.drain_read_queue() as v").fetchone()
    assert out is not None
    assert out["v"]["reads"] == 3 and out["v"]["chunks_touched"] == len(chunks)
    assert out["v"]["memories_touched"] == 1 and _queued(db, world.tenant_a) == []
    log = db.execute(
        "select rpc, caller from hipocampo_private.data_access_log where tenant_id = %s order by id", (world.tenant_a,)
    ).fetchall()
    # (the reads of one transaction share their time; the log's ids order them by millisecond only)
    assert (
        sorted((r["rpc"], r["caller"]) for r in log)
        == [("hybrid_search", world.member_a)] + [("search_memories", world.member_a)] * 2
    )
    touched = db.execute("select chunk_id from hipocampo_private.chunk_access where tenant_id = %s", (world.tenant_a,))
    assert {r["chunk_id"] for r in touched.fetchall()} == chunks
    memory = db.execute("select access_count from hipocampo_private.memories where key = 'prefs.prazo'").fetchone()
    assert memory == {"access_count": 2}


def test_a_drain_skips_what_was_deleted_since(db: Conn, world: World) -> None:
    _queue_emptied(db)
    args = reader(db, world)
    db.execute(READS["hybrid_search"], args)
    world.act("authenticated", world.member_b, world.tenant_b)
    db.execute(READS["hybrid_search"], {**args})
    world.act("service_role")
    db.execute("select hipocampo.delete_tenant(%s)", (world.tenant_b,))
    db.execute("delete from hipocampo_private.chunks where tenant_id = %s", (world.tenant_a,))
    out = db.execute("select hipocampo.drain_read_queue() as v").fetchone()
    assert out is not None and out["v"]["reads"] == 1 and out["v"]["chunks_touched"] == 0
    left = db.execute("select count(*) as n from hipocampo_private.read_queue where tenant_id = %s", (world.tenant_b,))
    assert left.fetchone() == {"n": 0}


@pytest.mark.parametrize("max_rows", [0, 100_001, None])
def test_a_drain_takes_a_bounded_batch(db: Conn, max_rows: int | None) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"max_rows must be 1\.\.100000"):
        db.execute("select hipocampo.drain_read_queue(%s)", (max_rows,))


def test_members_neither_drain_nor_read_the_queue(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    for sql in ("select hipocampo.drain_read_queue()", "select * from hipocampo_private.read_queue"):
        db.execute("savepoint s")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute(sql)
        db.execute("rollback to savepoint s")


_DRAIN_AND_HANG = """
import sys, time, psycopg
with psycopg.connect(sys.argv[1]) as conn:
    conn.execute("select hipocampo.drain_read_queue()")
    print("drained", flush=True)
    time.sleep(120)
"""


def test_a_drain_killed_before_it_commits_leaves_its_rows_to_the_next(database_url: str) -> None:
    """kill -9 of the worker mid-drain: its transaction rolls back, the rows stay queued, the next
    drain writes each read once (nothing lost, nothing twice)."""
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
        slug = f"drain-{uuid.uuid4().hex[:8]}"
        row = conn.execute("select hipocampo.create_tenant('Drain', %s, null) as v", (slug,)).fetchone()
        assert row is not None
        tenant = row["v"]
        try:
            for i in range(5):
                conn.execute(
                    "select hipocampo_private._enqueue_read(%s, 'probe_kill', %s, null, 1, '{}', '{}')", (tenant, i)
                )
            proc = subprocess.Popen(
                [sys.executable, "-c", _DRAIN_AND_HANG, database_url], stdout=subprocess.PIPE, text=True
            )
            assert proc.stdout is not None and proc.stdout.readline().strip() == "drained"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            # The server notices the dead client and rolls its transaction back.
            conn.execute(
                "select pg_terminate_backend(pid, 10000) from pg_stat_activity"
                " where query = 'select hipocampo.drain_read_queue()' and pid <> pg_backend_pid()"
            )
            left = conn.execute(
                "select count(*) as n from hipocampo_private.read_queue where tenant_id = %s", (tenant,)
            ).fetchone()
            assert left == {"n": 5}
            conn.execute("select hipocampo.drain_read_queue()")
            logged = conn.execute(
                "select count(*) as n from hipocampo_private.data_access_log"
                " where tenant_id = %s and rpc = 'probe_kill'",
                (tenant,),
            ).fetchone()
            assert logged == {"n": 5}
        finally:
            conn.execute("select hipocampo.delete_tenant(%s)", (tenant,))


def test_read_stats_gives_each_rpc_s_latency_percentiles_to_the_tenant_s_admins(db: Conn, world: World) -> None:
    args = reader(db, world)
    db.execute(READS["search_memories"], args)  # a real recall, drained below
    world.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    # A frozen day of 20 recalls of 1 … 20 ms.
    db.execute(
        "insert into hipocampo_private.data_access_log (at, caller, caller_role, tenant_id, rpc, rows_returned,"
        " latency_ms) select '2026-01-05 10:00Z', %s, 'authenticated', %s, 'search_memories', 3, n"
        " from generate_series(1, 20) as n",
        (world.member_a, world.tenant_a),
    )
    query = (
        "select rpc, calls, latency_p50_ms, latency_p95_ms, rows_per_call from hipocampo.read_stats"
        " where tenant_id = %s and day = date_trunc('day', '2026-01-05 10:00Z'::timestamptz)"
    )
    world.act("authenticated", world.admin_a, world.tenant_a)
    row = db.execute(query, (world.tenant_a,)).fetchone()
    assert row is not None and (row["rpc"], row["calls"], row["latency_p50_ms"]) == ("search_memories", 20, 10.5)
    assert abs(row["latency_p95_ms"] - 19.05) < 1e-9 and row["rows_per_call"] == 3
    today = db.execute("select rpc from hipocampo.read_stats where day = date_trunc('day', now())").fetchall()
    assert {r["rpc"] for r in today} == {"search_memories"}
    for who in (("authenticated", world.member_a, world.tenant_a), ("authenticated", world.admin_b, world.tenant_b)):
        world.act(*who)
        assert db.execute(query, (world.tenant_a,)).fetchone() is None  # members and other tenants: nothing


@pytest.mark.parametrize(
    ("call", "args"),
    [
        # a read that did not happen, of a real read RPC's name
        ("select hipocampo_private._record_read(null, 'search_memories', 1, null, null)", ()),
        # another RPC's name and a latency of 31 years (it reached data_access_log and read_stats)
        ("select hipocampo_private._record_read(null, 'export_user_data', 1, null, 1e12)", ()),
        # another member's memory id, to keep it from decaying
        (
            "select hipocampo_private._record_read(null, 'lookup_memories', 1, null, null,"
            " memory_ids => array[%s]::uuid[])",
            ("00000000-0000-0000-0000-000000000001",),
        ),
    ],
)
def test_a_read_record_is_written_only_by_the_read_it_records(db: Conn, world: World, call: str, args: Any) -> None:
    """Issue 57 §4: a member appended 68,400 rows without reading, a forged export_user_data row
    with latency 1e12 ms, and another member's memory id 10,000 times."""
    _queue_emptied(db)
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as exc, db.transaction():
        db.execute(call, args)
    assert exc.value.diag.message_primary is not None
    assert exc.value.diag.message_primary.startswith("read record: written only by the read it records")
    world.act("service_role")
    assert _queued(db, world.tenant_a) == []
