"""The writing helpers write what they resolved, and bounded values (issue 44 §5): a member who
calls _memory_event directly gets rows of their own tenant about themselves, never a row without a
tenant or about nobody, cannot forge an erasure or inspection record, and cannot store a 20 MB
detail. _record_read is written only by the read it records (issue 57 §4: never called directly);
its bounds are shown through a probe overload of a read RPC (hipocampo.search_memories(text),
created in the test's transaction and rolled back with it), as the read calls it."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from psycopg import sql

from ..conftest import World

Conn = psycopg.Connection[dict[str, Any]]
RECORD = "select hipocampo_private._record_read(null, {}, {}, {}, {}, {}::bigint[])"


def _probe(db: Conn, world: World) -> None:
    """hipocampo.search_memories(text): runs the statement it is given from a read RPC's frame."""
    db.execute("reset role")
    db.execute(
        "create function hipocampo.search_memories(probe text) returns void language plpgsql"
        " set search_path = '' as $$ begin execute probe; end $$"
    )
    db.execute("grant execute on function hipocampo.search_memories(text) to authenticated")


def _record_as_the_read(db: Conn, *args: Any) -> None:
    """_record_read(null, rpc, rows, hash, latency, chunk ids) from the probe's frame."""
    statement = sql.SQL(RECORD).format(*(sql.Literal(a) for a in args)).as_string(db)
    db.execute("select hipocampo.search_memories(%s::text)", (statement,))


def test_a_null_tenant_in_the_access_log_is_the_caller_s_own(db: Conn, world: World) -> None:
    _probe(db, world)
    world.act("authenticated", world.member_a, world.tenant_a)
    _record_as_the_read(db, "search_memories", 1, "probe-hash", 1.0, [])
    world.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    rows = db.execute("select tenant_id, caller from hipocampo_private.data_access_log where query_hash = 'probe-hash'")
    assert rows.fetchall() == [{"tenant_id": world.tenant_a, "caller": world.member_a}]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search_memories", 1, "h" * 20_000_000, 0.0, []), "query_hash must be at most 128 characters"),
        (("search_memories", -1, "h", 0.0, []), "rows_returned and latency_ms must be >= 0"),
        (("search_memories", 1, "h", 1e12, []), "latency_ms is at most the time since the statement began"),
        (("search_memories", 1, "h", 0.0, list(range(1001))), "at most 1000 chunk ids and 10000 memory ids"),
    ],
)
def test_the_access_log_takes_bounded_values(db: Conn, world: World, args: tuple[Any, ...], message: str) -> None:
    _probe(db, world)
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message.replace("[", r"\[").replace("]", r"\]")):
        _record_as_the_read(db, *args)


@pytest.mark.parametrize("rpc", ["x" * 64, "Forged RPC!", "export_user_data", "probe_rpc"])
def test_a_read_record_names_only_the_read_on_the_stack(db: Conn, world: World, rpc: str) -> None:
    _probe(db, world)
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="read record: written only by the read it records"):
        _record_as_the_read(db, rpc, 1, "h", 0.0, [])


def test_a_memory_event_is_about_the_resolved_subject(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute(
        "select hipocampo_private._memory_event(%s, null, null, 'memory.consent', 'probe', '{}')", (world.tenant_a,)
    )
    world.act("service_role")
    rows = db.execute("select tenant_id, user_id from hipocampo_private.memory_events where reason = 'probe'")
    assert rows.fetchall() == [{"tenant_id": world.tenant_a, "user_id": world.member_a}]


@pytest.mark.parametrize(
    ("event", "reason", "detail", "message"),
    [
        ("user.erased", None, {}, "memory event: user.erased is written only by its RPC"),
        ("memory.inspected", None, {}, "memory event: memory.inspected is written only by its RPC"),
        ("memory.consent", "r" * 201, {}, "reason must be at most 200 characters"),
        ("memory.consent", None, {"x": "y" * 200_000}, "detail must be at most 131072 bytes"),
    ],
)
def test_a_member_cannot_forge_or_flood_the_memory_log(
    db: Conn, world: World, event: str, reason: str | None, detail: dict[str, Any], message: str
) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
        db.execute(
            "select hipocampo_private._memory_event(%s, null, null, %s, %s, %s::jsonb)",
            (world.tenant_a, event, reason, json.dumps(detail)),
        )


def test_the_audit_bounds_are_the_operator_s_config(db: Conn, world: World) -> None:
    """The bounds come from the global row (maintenance.*), not from SQL: raised, they let more in."""
    _probe(db, world)
    db.execute(
        "update hipocampo_private.settings set config = jsonb_set(jsonb_set(config,"
        " '{maintenance,read_record_max_chunk_ids}', '2000'), '{maintenance,memory_event_reason_max_chars}', '300')"
        " where tenant_id is null"
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    _record_as_the_read(db, "search_memories", 1, "h", 0.0, list(range(1001)))
    db.execute(
        "select hipocampo_private._memory_event(%s, null, null, 'memory.consent', %s, '{}')",
        (world.tenant_a, "r" * 201),
    )
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="at most 2000 chunk ids"):
        _record_as_the_read(db, "search_memories", 1, "h", 0.0, list(range(2001)))


def test_an_unseeded_bound_is_refused_not_ignored(db: Conn, world: World) -> None:
    _probe(db, world)
    db.execute(
        "update hipocampo_private.settings set config = config #- '{maintenance,read_record_max_chunk_ids}'"
        " where tenant_id is null"
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(
        psycopg.errors.ObjectNotInPrerequisiteState, match=r"maintenance\.read_record_max_chunk_ids is not configured"
    ):
        _record_as_the_read(db, "search_memories", 1, "h", 0.0, [])
