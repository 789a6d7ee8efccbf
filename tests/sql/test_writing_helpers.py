"""The writing helpers write what they resolved, and bounded values (issue 44 §5): a member who
calls _record_read or _memory_event directly gets rows of their own tenant about themselves, never
a row without a tenant or about nobody, cannot forge an erasure or inspection record, and cannot
store a 20 MB detail."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from ..conftest import World

Conn = psycopg.Connection[dict[str, Any]]


def test_a_null_tenant_in_the_access_log_is_the_caller_s_own(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select hipocampo_private._record_read(null, 'probe_rpc', 1, 'h', 1)")
    world.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    rows = db.execute("select tenant_id, caller from hipocampo_private.data_access_log where rpc = 'probe_rpc'")
    assert rows.fetchall() == [{"tenant_id": world.tenant_a, "caller": world.member_a}]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("x" * 64, 1, "h", 1.0, []), "rpc must be 1..63 characters of [a-z_]"),
        (("Forged RPC!", 1, "h", 1.0, []), "rpc must be 1..63 characters of [a-z_]"),
        (("probe_rpc", 1, "h" * 20_000_000, 1.0, []), "query_hash must be at most 128 characters"),
        (("probe_rpc", -1, "h", 1.0, []), "rows_returned and latency_ms must be >= 0"),
        (("probe_rpc", 1, "h", 1.0, list(range(1001))), "at most 1000 chunk ids and 10000 memory ids"),
    ],
)
def test_the_access_log_takes_bounded_values(db: Conn, world: World, args: tuple[Any, ...], message: str) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message.replace("[", r"\[").replace("]", r"\]")):
        db.execute("select hipocampo_private._record_read(null, %s, %s, %s, %s, %s::bigint[])", args)


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
    db.execute(
        "update hipocampo_private.settings set config = jsonb_set(jsonb_set(config,"
        " '{maintenance,read_record_max_chunk_ids}', '2000'), '{maintenance,memory_event_reason_max_chars}', '300')"
        " where tenant_id is null"
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute(
        "select hipocampo_private._record_read(null, 'probe_rpc', 1, 'h', 1, %s::bigint[])", (list(range(1001)),)
    )
    db.execute(
        "select hipocampo_private._memory_event(%s, null, null, 'memory.consent', %s, '{}')",
        (world.tenant_a, "r" * 201),
    )
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="at most 2000 chunk ids"):
        db.execute(
            "select hipocampo_private._record_read(null, 'probe_rpc', 1, 'h', 1, %s::bigint[])", (list(range(2001)),)
        )


def test_an_unseeded_bound_is_refused_not_ignored(db: Conn, world: World) -> None:
    db.execute(
        "update hipocampo_private.settings set config = config #- '{maintenance,read_record_max_chunk_ids}'"
        " where tenant_id is null"
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(
        psycopg.errors.ObjectNotInPrerequisiteState, match=r"maintenance\.read_record_max_chunk_ids is not configured"
    ):
        db.execute("select hipocampo_private._record_read(null, 'probe_rpc', 1, 'h', 1)")
