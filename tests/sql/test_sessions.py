"""Sessions in Postgres: inactivity TTL renewed by activity, absolute maximum, concurrent cap,
pending confirmations (5 min), expired sessions unreadable and purged; per-tenant bounds."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from ..conftest import World

Conn = psycopg.Connection[dict[str, Any]]


def one(db: Conn, sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = db.execute(sql, params).fetchone()
    assert row is not None
    return row["v"]


def age(db: Conn, world: World, session_id: str, minutes: float, expires_in: float | None = None) -> None:
    """Move a session's clock back by `minutes` (now() is fixed inside the test's transaction);
    optionally set its expiry `expires_in` minutes from now."""
    world.act("service_role")
    db.execute(
        "update hipocampo_private.sessions set created_at = created_at - %(d)s, "
        "last_activity_at = last_activity_at - %(d)s, expires_at = expires_at - %(d)s, "
        "absolute_expires_at = absolute_expires_at - %(d)s, pending_confirmations = ("
        "  select coalesce(jsonb_agg(jsonb_set(p, '{expires_at}', "
        "    to_jsonb((p ->> 'expires_at')::timestamptz - %(d)s))), '[]'::jsonb)"
        "  from jsonb_array_elements(pending_confirmations) as p) where id = %(id)s",
        {"d": timedelta(minutes=minutes), "id": session_id},
    )
    if expires_in is not None:
        db.execute(
            "update hipocampo_private.sessions set expires_at = now() + %s where id = %s",
            (timedelta(minutes=expires_in), session_id),
        )
    world.act("authenticated", world.member_a, world.tenant_a)


def test_open_read_and_activity(db: Conn, user_a: World) -> None:
    s = one(db, "select hipocampo.open_session() as v")
    assert (s["expires_at"] and s["evicted"], s["messages"], s["tools_used"]) == ([], [], [])
    sid = s["session_id"]
    one(db, "select hipocampo.session_add_message(%s, 'user', 'Oi, preciso da segunda via') as v", (sid,))
    one(db, "select hipocampo.update_session(%s, summary => 'Segunda via de boleto', tool => 'boleto') as v", (sid,))
    one(db, "select hipocampo.update_session(%s, tool => 'boleto') as v", (sid,))
    got = one(db, "select hipocampo.get_session(%s) as v", (sid,))
    assert [m["content"] for m in got["messages"]] == ["Oi, preciso da segunda via"]
    assert (got["summary"], got["tools_used"]) == ("Segunda via de boleto", ["boleto"])
    history = one(db, "select hipocampo.conversation_context(%s) as v", (s["conversation_id"],))
    assert [m["content"] for m in history["messages"]] == ["Oi, preciso da segunda via"]


def test_session_keeps_the_last_n_messages(db: Conn, user_a: World) -> None:
    user_a.act("service_role")
    db.execute("select hipocampo.set_tenant_config('sessions', '{\"last_messages\": 2}', %s)", (user_a.tenant_a,))
    user_a.act("authenticated", user_a.member_a, user_a.tenant_a)
    sid = one(db, "select hipocampo.open_session() as v")["session_id"]
    for i in range(4):
        db.execute("select hipocampo.session_add_message(%s, 'user', %s)", (sid, f"m{i}"))
    got = one(db, "select hipocampo.get_session(%s) as v", (sid,))
    assert [m["content"] for m in got["messages"]] == ["m2", "m3"]


def test_inactivity_ttl_is_renewed_by_activity_and_expired_sessions_are_unreadable(db: Conn, user_a: World) -> None:
    sid = one(db, "select hipocampo.open_session() as v")["session_id"]
    age(db, user_a, sid, 9)
    before = one(db, "select hipocampo.get_session(%s, renew => false) as v", (sid,))
    renewed = one(db, "select hipocampo.get_session(%s) as v", (sid,))
    assert renewed["expires_at"] > before["expires_at"]
    age(db, user_a, sid, 10.5)
    with pytest.raises(psycopg.errors.NoDataFound, match="unknown or expired session"), db.transaction():
        db.execute("select hipocampo.get_session(%s)", (sid,))
    assert one(db, "select count(*) as v from hipocampo_private.sessions") == 0  # RLS hides it
    user_a.act("service_role")
    assert one(db, "select hipocampo.purge_sessions() as v") == 1


def test_the_absolute_maximum_caps_renewal(db: Conn, user_a: World) -> None:
    sid = one(db, "select hipocampo.open_session() as v")["session_id"]
    age(db, user_a, sid, 115, expires_in=1)
    got = one(db, "select hipocampo.get_session(%s) as v", (sid,))
    assert got["expires_at"] == got["absolute_expires_at"]  # 5 minutes left, not 10


def test_at_most_three_live_sessions_per_user(db: Conn, user_a: World) -> None:
    ids = []
    for i in range(3):
        ids.append(one(db, "select hipocampo.open_session() as v")["session_id"])
        age(db, user_a, ids[-1], 3 - i)  # the first one is the least recently active
    fourth = one(db, "select hipocampo.open_session() as v")
    assert fourth["evicted"] == [ids[0]]
    assert one(db, "select count(*) as v from hipocampo_private.sessions") == 3


def test_pending_confirmations_expire_after_five_minutes(db: Conn, user_a: World) -> None:
    sid = one(db, "select hipocampo.open_session() as v")["session_id"]
    c1 = one(db, "select hipocampo.add_pending_confirmation(%s, 'send_invoice', '{\"n\": 1}') as v", (sid,))
    assert one(db, "select hipocampo.resolve_pending_confirmation(%s, %s) as v", (sid, c1["id"]))["payload"] == {"n": 1}
    c2 = one(db, "select hipocampo.add_pending_confirmation(%s, 'cancel_booking') as v", (sid,))
    age(db, user_a, sid, 5.5, expires_in=5)
    assert one(db, "select hipocampo.get_session(%s) as v", (sid,))["pending_confirmations"] == []
    with pytest.raises(psycopg.errors.NoDataFound, match="unknown or expired confirmation"), db.transaction():
        db.execute("select hipocampo.resolve_pending_confirmation(%s, %s)", (sid, c2["id"]))


def test_sessions_are_private(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    sid = one(db, "select hipocampo.open_session() as v")["session_id"]
    for user, tenant in ((world.admin_a, world.tenant_a), (world.member_b, world.tenant_b)):
        world.act("authenticated", user, tenant)
        with pytest.raises(psycopg.errors.NoDataFound, match="unknown or expired session"), db.transaction():
            db.execute("select hipocampo.get_session(%s)", (sid,))
        assert one(db, "select hipocampo.close_session(%s) as v", (sid,)) is False


# -- per-tenant configuration within bounds -------------------------------------------------------
def test_tenant_admin_sets_the_ttl_within_bounds(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert one(db, "select hipocampo.set_tenant_config('sessions', '{\"inactivity_ttl_minutes\": 15}') as v") == {
        "inactivity_ttl_minutes": 15
    }
    world.act("authenticated", world.member_a, world.tenant_a)
    s = one(db, "select hipocampo.open_session() as v")
    ttl = one(db, "select (%s::timestamptz - now()) as v", (s["expires_at"],))
    assert ttl == timedelta(minutes=15)
    world.act("authenticated", world.member_b, world.tenant_b)
    s = one(db, "select hipocampo.open_session() as v")
    assert one(db, "select (%s::timestamptz - now()) as v", (s["expires_at"],)) == timedelta(minutes=10)


@pytest.mark.parametrize(
    ("patch", "error", "message"),
    [
        ({"inactivity_ttl_minutes": 45}, psycopg.errors.NumericValueOutOfRange, r"must lie in \[5, 30\] \(got 45\)"),
        ({"absolute_max_minutes": 10}, psycopg.errors.NumericValueOutOfRange, r"must lie in \[30, 240\]"),
        ({"max_concurrent": 6}, psycopg.errors.NumericValueOutOfRange, r"must lie in \[1, 5\]"),
        ({"pending_confirmation_minutes": 10}, psycopg.errors.InvalidParameterValue, "is fixed"),
        ({"inactivity_ttl_minutes": "15"}, psycopg.errors.InvalidParameterValue, "must be a number"),
        ({"redis_url": "x"}, psycopg.errors.InvalidParameterValue, "unknown key sessions.redis_url"),
    ],
)
def test_tenant_config_refuses_values_out_of_bounds(
    db: Conn, world: World, patch: dict[str, Any], error: type[Exception], message: str
) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(error, match=message), db.transaction():
        db.execute("select hipocampo.set_tenant_config('sessions', %s::jsonb)", (json.dumps(patch),))


def test_only_admins_change_tenant_config(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins"), db.transaction():
        db.execute("select hipocampo.set_tenant_config('sessions', '{\"max_concurrent\": 5}')")
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="tenant mismatch"), db.transaction():
        db.execute("select hipocampo.set_tenant_config('sessions', '{\"max_concurrent\": 5}', %s)", (world.tenant_b,))
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="unknown section"), db.transaction():
        db.execute("select hipocampo.set_tenant_config('nope', '{}')")
    db.execute("select hipocampo.set_tenant_config('sessions', '{\"max_concurrent\": 5}')")
    assert one(db, "select hipocampo.set_tenant_config('sessions', '{\"max_concurrent\": null}') as v") == {}


def test_what_a_member_stores_in_a_session_is_bounded(db: Conn, user_a: World) -> None:
    """Issue 44 §4: a 10 MB summary and a 10 MB confirmation payload were accepted. The bounds are
    fixed keys of [sessions] (summary_max_chars 8,000, tool_max_chars 200, action_max_chars 200,
    payload_max_bytes 16,384, max_pending 20)."""
    sid = one(db, "select hipocampo.open_session() ->> 'session_id' as v")
    cases = [
        ("select hipocampo.update_session(%s, summary => %s)", ("x" * 8001,), "22001",
         "summary is 8001 characters; the limit is 8000 (sessions.summary_max_chars)"),
        ("select hipocampo.update_session(%s, tool => %s)", ("t" * 201,), "22001",
         "tool is 201 characters; the limit is 200 (sessions.tool_max_chars)"),
        ("select hipocampo.add_pending_confirmation(%s, %s)", ("a" * 201,), "22001",
         "action is 201 characters; the limit is 200 (sessions.action_max_chars)"),
        ("select hipocampo.add_pending_confirmation(%s, 'pagar', %s::jsonb)", (json.dumps({"x": "y" * 20000}),),
         "22001", "payload is 20009 bytes as json; the limit is 16384 (sessions.payload_max_bytes)"),
    ]  # fmt: skip
    for sql, args, state, message in cases:
        with pytest.raises(psycopg.Error) as exc, db.transaction():
            db.execute(sql, (sid, *args))  # type: ignore[arg-type]
        assert (exc.value.sqlstate, exc.value.diag.message_primary) == (state, message)
    assert one(db, "select hipocampo.update_session(%s, summary => %s) ->> 'summary' as v", (sid, "x" * 8000))
    for n in range(20):
        one(db, "select hipocampo.add_pending_confirmation(%s, %s) as v", (sid, f"acao {n}"))
    with pytest.raises(psycopg.errors.InvalidParameterValue) as full, db.transaction():
        db.execute("select hipocampo.add_pending_confirmation(%s, 'mais uma')", (sid,))
    assert full.value.diag.message_primary == "a session holds at most 20 pending confirmations (sessions.max_pending)"
    user_a.act("authenticated", user_a.admin_a, user_a.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="is fixed"), db.transaction():
        db.execute("""select hipocampo.set_tenant_config('sessions', '{"payload_max_bytes": 99999999}')""")
