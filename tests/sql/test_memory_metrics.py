"""The memory subsystem's metrics (issue 45 §2; the memory design: "record the moving average of
similarity per session over a 7-day window; monitor the p95 latency of the memory-search RPC and
the count of memories per user"): hipocampo.memory_search_similarity (from the similarity each
memory read records), read_stats' search_history latency, hipocampo.memory_quota_use. Frozen
days are rows written at fixed times."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import World, at_cosine, vec_text
from ..reads import READS, reader
from .memory_helpers import remember

Conn = psycopg.Connection[dict[str, Any]]


def log(db: Conn, world: World, at: str, rpc: str, similarity: float | None, conversation: Any) -> None:
    db.execute(
        "insert into hipocampo_private.data_access_log (at, caller, caller_role, tenant_id, rpc, rows_returned,"
        " latency_ms, similarity, conversation_id) values (%s, %s, 'authenticated', %s, %s, 1, 1, %s, %s)",
        (at, world.member_a, world.tenant_a, rpc, similarity, conversation),
    )


def test_the_similarity_is_a_7_day_moving_average_per_conversation(db: Conn, world: World) -> None:
    conv, other = uuid.uuid4(), uuid.uuid4()
    log(db, world, "2026-01-01 09:00Z", "context_pack", 0.8, conv)
    log(db, world, "2026-01-01 18:00Z", "search_memories", 0.6, conv)
    log(db, world, "2026-01-03 12:00Z", "context_pack", 0.4, conv)
    log(db, world, "2026-01-10 12:00Z", "context_pack", 0.9, conv)  # day 1 and 3 are out of its window
    log(db, world, "2026-01-03 12:00Z", "context_pack", 0.1, other)  # another conversation
    log(db, world, "2026-01-03 12:00Z", "hybrid_search", None, conv)  # not a memory read
    world.act("authenticated", world.admin_a, world.tenant_a)
    rows = db.execute(
        "select day::date::text as day, reads, similarity_7d::float as s, reads_7d"
        " from hipocampo.memory_search_similarity where conversation_id = %s order by day",
        (conv,),
    ).fetchall()
    assert rows == [
        {"day": "2026-01-01", "reads": 2, "s": 0.7, "reads_7d": 2},
        {"day": "2026-01-03", "reads": 1, "s": 0.6, "reads_7d": 3},
        {"day": "2026-01-10", "reads": 1, "s": 0.9, "reads_7d": 1},
    ]
    world.act("authenticated", world.member_a, world.tenant_a)  # a member: nothing (the access log)
    assert db.execute("select count(*) as n from hipocampo.memory_search_similarity").fetchone() == {"n": 0}


def test_tenant_metrics_carries_the_memory_metrics(db: Conn, world: World) -> None:
    conv = uuid.uuid4()
    for days_ago, sim in ((0, 0.5), (1, 0.7), (9, 0.1)):
        db.execute(
            "insert into hipocampo_private.data_access_log (at, caller, caller_role, tenant_id, rpc, rows_returned,"
            " latency_ms, similarity, conversation_id) values (now() - make_interval(days => %s), %s,"
            " 'authenticated', %s, 'context_pack', 1, 2, %s, %s)",
            (days_ago, world.member_a, world.tenant_a, sim, conv),
        )
    world.act("authenticated", world.admin_a, world.tenant_a)
    m = db.execute("select hipocampo.tenant_metrics(2) as m").fetchone()
    assert m is not None
    assert [x["similarity_7d"] for x in m["m"]["memory_similarity"]] == [0.7, 0.6]  # day 9 is out of both windows
    assert {(x["rpc"], x["calls"]) for x in m["m"]["reads"]} == {("context_pack", 1)}  # today; yesterday's too
    assert len(m["m"]["reads"]) == 2


def test_memory_reads_record_their_similarity_and_conversation(db: Conn, world: World) -> None:
    args = reader(db, world)  # member A with one memory of unit vector 1
    close = vec_text(at_cosine(1, 2, 0.6))  # cosine 0.6 with it
    db.execute(READS["context_pack"], {**args, "v": close})
    db.execute(READS["search_memories"], {**args, "v": close})
    db.execute(READS["search_history"], args)
    world.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    rows = db.execute(
        "select rpc, round(similarity::numeric, 3)::float as s, conversation_id as c"
        " from hipocampo_private.data_access_log where tenant_id = %s and caller = %s"
        " and rpc in ('context_pack', 'search_memories', 'search_history') order by rpc",
        (world.tenant_a, world.member_a),
    ).fetchall()
    assert rows == [
        {"rpc": "context_pack", "s": 0.6, "c": args["conv"]},
        {"rpc": "search_history", "s": None, "c": None},
        {"rpc": "search_memories", "s": 0.6, "c": None},
    ]


def test_search_history_s_latency_is_in_read_stats(db: Conn, world: World) -> None:
    args = reader(db, world)
    for _ in range(3):
        db.execute(READS["search_history"], args)
    world.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    row = db.execute(
        "select calls, latency_p95_ms from hipocampo.read_stats where tenant_id = %s and rpc = 'search_history'",
        (world.tenant_a,),
    ).fetchone()
    assert row is not None and row["calls"] == 3 and row["latency_p95_ms"] >= 0


@pytest.mark.parametrize("quota", [5])
def test_memory_quota_use_counts_users_near_and_at_the_quota(db: Conn, world: World, quota: int) -> None:
    world.act("service_role")
    db.execute(
        "select hipocampo.set_tenant_config('memory', %s::jsonb, %s)",
        (f'{{"max_active_per_user": {quota}}}', world.tenant_a),
    )
    users = {uuid.uuid4(): n for n in (5, 4, 1)}
    for user, n in users.items():
        db.execute("select hipocampo.add_member(%s, %s, 'member')", (world.tenant_a, user))
        db.execute("select hipocampo.set_memory_consent(true, %s, %s)", (user, world.tenant_a))
        for i in range(n):
            remember(
                db, f"prefs.k{i}", i, f"Preferência número {i}", seed=i + 1, user_id=user, tenant_id=world.tenant_a
            )
    query = (
        "select max_active_per_user as q, users, active_p50::float as p50, active_max as mx,"
        " users_near_quota as near, users_at_quota as at_quota from hipocampo.memory_quota_use()"
    )
    expected = {"q": quota, "users": 3, "p50": 4.0, "mx": 5, "near": 1, "at_quota": 1}
    world.act("authenticated", world.admin_a, world.tenant_a)  # counts RLS would hide from the admin
    assert db.execute(query).fetchone() == expected
    metrics = db.execute("select hipocampo.tenant_metrics(7) -> 'memory_quota' as m").fetchone()
    assert metrics is not None and metrics["m"]["users_at_quota"] == 1
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins"):
        db.execute(query)
