"""The caller model: privilege comes from the request's role and JWT claims,
never from current_user.

Each attack below is issue 16 §1 items 1-3 as an attacker runs it through the RPCs exactly as
PostgREST calls them; every one succeeded on the code before the caller model and is refused (42501) now.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from ..conftest import World
from .memory_helpers import remember

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]


def one(db: Conn, sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = db.execute(sql, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row["v"]


# -- who attacks tenant A -------------------------------------------------------------------------
def _fresh_signup(world: World) -> None:
    """A signed-in user who belongs to no tenant and whose JWT names none."""
    world.act("authenticated", world.outsider)


def _claims_victim_without_membership(world: World) -> None:
    """A signed-in user whose JWT names tenant A, of which they were never a member."""
    world.act("authenticated", world.outsider, world.tenant_a)


def _removed_member(world: World) -> None:
    """member_a after their membership was removed; their token still names A."""
    world.act("service_role")
    world.conn.execute(
        "delete from hipocampo_private.memberships where tenant_id = %s and user_id = %s",
        (world.tenant_a, world.member_a),
    )
    world.act("authenticated", world.member_a, world.tenant_a)


def _admin_of_b_naming_a(world: World) -> None:
    """The admin of B with a token naming A."""
    world.act("authenticated", world.admin_b, world.tenant_a)


def _admin_of_b(world: World) -> None:
    """The admin of B, token naming B (passes the caller check, then names A in arguments)."""
    world.act("authenticated", world.admin_b, world.tenant_b)


def _no_sub(world: World) -> None:
    """role authenticated, no sub, no tenant: PostgREST accepts such a signed token."""
    world.act("authenticated")


def _no_sub_naming_a(world: World) -> None:
    world.act("authenticated", None, world.tenant_a)


def _forged_service_claims(world: World) -> None:
    """A connection that switched to authenticated but writes service_role claims."""
    world.conn.execute("reset role")
    world.conn.execute("set local role authenticated")
    world.conn.execute("select set_config('request.jwt.claims', %s, true)", (json.dumps({"role": "service_role"}),))


ATTACKERS: dict[str, Callable[[World], None]] = {
    "fresh_signup": _fresh_signup,
    "claims_victim_without_membership": _claims_victim_without_membership,
    "removed_member": _removed_member,
    "admin_of_b_naming_a": _admin_of_b_naming_a,
    "admin_of_b": _admin_of_b,
    "no_sub": _no_sub,
    "no_sub_naming_a": _no_sub_naming_a,
    "forged_service_claims": _forged_service_claims,
}


def _victim_has_data(db: Conn, world: World) -> None:
    """Tenant A has a cached answer and member_a has consented and has a memory."""
    world.act("service_role")
    cached = one(
        db,
        """select hipocampo.cache_put('prazo de trancamento', array[%s]::uuid[],
           '{"answer": "30 dias", "sources": []}', tenant_id => %s) as v""",
        (world.kb_a, world.tenant_a),
    )
    assert cached is True
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")


# -- what they try against tenant A (the victim) ------------------------------------------------
# Each: SQL with %(tenant)s / %(user)s / %(kb)s placeholders for the victim's ids.
ATTACKS: dict[str, str] = {
    "set_tenant_config": """select hipocampo.set_tenant_config('rag', '{"enabled": false}', tenant_id => %(tenant)s)""",
    "cache_get": "select hipocampo.cache_get('prazo de trancamento', array[%(kb)s]::uuid[], tenant_id => %(tenant)s)",
    "cache_put": """select hipocampo.cache_put('prazo', null, '{"answer": "forjada", "citations": []}',
                    tenant_id => %(tenant)s)""",
    "record_answer": """select hipocampo.record_answer(gen_random_uuid(), 'q', 'LLM', null, 0.9::real, 1, 1,
                        null, '{}', 1::real, null, tenant_id => %(tenant)s)""",
    "take_rate_limit": "select hipocampo.take_rate_limit(1, tenant_id => %(tenant)s)",
    "export_user_data": "select hipocampo.export_user_data(%(user)s, %(tenant)s)",
    "erase_user": "select hipocampo.erase_user(%(user)s, %(tenant)s)",
    "remember_for_victim": """select hipocampo.remember('k', '"v"', 'Gosta de café', 'preference', user_id => %(user)s,
                              tenant_id => %(tenant)s)""",
    "_memory_event": """select hipocampo_private._memory_event(%(tenant)s, %(user)s, null, 'memory.consent',
                        null, '{}')""",
    "_record_read": "select hipocampo_private._record_read(%(tenant)s, 'forged', 1, 'x', 1)",
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("attacker", sorted(ATTACKERS))
def test_no_caller_outside_tenant_a_acts_on_it(db: Conn, world: World, attacker: str, attack: str) -> None:
    _victim_has_data(db, world)
    ATTACKERS[attacker](world)
    params = {"tenant": world.tenant_a, "user": world.member_a, "kb": world.kb_a}
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute(ATTACKS[attack], params)  # type: ignore[arg-type]


def test_the_refusals_say_why(db: Conn, world: World) -> None:
    cases = [
        (_fresh_signup, "no tenant: the JWT claims name no tenant"),
        (_claims_victim_without_membership, "no tenant: the JWT claims name no tenant this user belongs to"),
        (_removed_member, "no tenant: the JWT claims name no tenant this user belongs to"),
        (_no_sub, "no user: the JWT has no subject"),
        (_forged_service_claims, "the JWT role service_role does not match the database role authenticated"),
    ]
    for attacker, message in cases:
        attacker(world)
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match=message), db.transaction():
            db.execute("select hipocampo.cache_get('q', null, tenant_id => %s)", (world.tenant_a,))
    world.act("authenticated", "not-a-uuid", world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="sub is not a uuid"), db.transaction():
        db.execute("select hipocampo.cache_get('q', null)")
    world.act("authenticated", world.member_a, "tenant-a")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="tenant claim is not a uuid"), db.transaction():
        db.execute("select hipocampo.cache_get('q', null)")


def test_the_victims_data_is_unchanged_after_the_attacks(db: Conn, world: World) -> None:
    _victim_has_data(db, world)
    for attacker in ATTACKERS.values():
        attacker(world)
        for sql in ATTACKS.values():
            with pytest.raises(psycopg.Error), db.transaction():
                db.execute(sql, {"tenant": world.tenant_a, "user": world.member_a, "kb": world.kb_a})  # type: ignore[arg-type]
    world.act("service_role")
    cfg = one(db, "select config as v from hipocampo_private.settings where tenant_id = %s", (world.tenant_a,))
    assert "rag" not in cfg
    answers = db.execute("select answer from hipocampo_private.answer_cache where tenant_id = %s", (world.tenant_a,))
    assert [r["answer"]["answer"] for r in answers.fetchall()] == ["30 dias"]
    assert (
        one(db, "select count(*) as v from hipocampo_private.answer_audit where tenant_id = %s", (world.tenant_a,)) == 0
    )
    assert one(db, "select count(*) as v from hipocampo_private.memories where tenant_id = %s", (world.tenant_a,)) == 0
    assert one(db, "select count(*) as v from hipocampo_private.data_access_log where rpc = 'forged'") == 0
    consent = one(
        db,
        "select granted as v from hipocampo_private.memory_consents where tenant_id = %s and user_id = %s",
        (world.tenant_a, world.member_a),
    )
    assert consent is True


def test_members_and_service_role_still_act(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    one(db, """select hipocampo.set_tenant_config('rag', '{"top_k": 6}', tenant_id => %s) as v""", (world.tenant_a,))
    world.act("authenticated", world.member_a, world.tenant_a)
    assert one(db, "select hipocampo.take_rate_limit() as v")["allowed"]
    assert one(db, "select (hipocampo.export_user_data())->>'user_id' as v") == str(world.member_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins"), db.transaction():
        db.execute("""select hipocampo.set_tenant_config('rag', '{"top_k": 5}')""")
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins can act on another user"),
        db.transaction(),
    ):
        db.execute("select hipocampo.export_user_data(%s)", (world.admin_a,))
    world.act("service_role")
    assert one(
        db, "select (hipocampo.export_user_data(%s, %s))->>'user_id' as v", (world.member_a, world.tenant_a)
    ) == str(world.member_a)
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="service_role must pass tenant_id"),
        db.transaction(),
    ):
        db.execute("select hipocampo.cache_get('q', null)")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="service_role must pass user_id"), db.transaction():
        db.execute("select hipocampo.export_user_data(tenant_id => %s)", (world.tenant_a,))
    # The database role alone (basejump's authenticate_as_service_role clears the claims) is service_role.
    db.execute("reset role")
    db.execute("set local role service_role")
    db.execute("select set_config('request.jwt.claims', '', true)")
    assert one(db, "select hipocampo.take_rate_limit(1, %s, %s) as v", (world.member_a, world.tenant_a))["allowed"]


# -- direct table access as authenticated (defence in depth) -------------------------------------
@pytest.mark.parametrize(("table", "intensity"), [("memories", None), ("memory_staging", 3)])
def test_a_member_cannot_share_their_own_memory(db: Conn, world: World, table: str, intensity: int | None) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    extra = {"intensity": intensity} if intensity else {}
    mid = remember(db, "prefs.cha", "verde", "Gosta de chá verde", seed=3, **extra)["memory_id"]
    assert one(db, f"select count(*) as v from hipocampo_private.{table} where id = %s", (mid,)) == 1
    # scope is not among the columns authenticated may update at all.
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"), db.transaction():
        db.execute(f"update hipocampo_private.{table} set scope = 'tenant_shared' where id = %s", (mid,))
    world.act("authenticated", world.admin_a, world.tenant_a)
    shared = db.execute(f"select id from hipocampo_private.{table} where scope = 'tenant_shared'").fetchall()
    assert shared == []


def test_the_current_tenant_is_the_callers_own(db: Conn, world: World) -> None:
    """Issue 58 §2: current_tenant names the tenant a call acts on (the hub's header): a member's
    from their claims, with their role in it (the hub signs in by it); a member naming another
    tenant is refused (42501); service_role names one (no role)."""
    world.act("authenticated", world.member_a, world.tenant_a)
    mine = db.execute("select id, slug, name, role from hipocampo.current_tenant()").fetchall()
    world.act("authenticated", world.admin_a, world.tenant_a)
    admin = db.execute("select role from hipocampo.current_tenant()").fetchall()
    world.act("service_role")
    a = db.execute("select slug, name from hipocampo_private.tenants where id = %s", (world.tenant_a,)).fetchone()
    assert a is not None and mine == [{"id": world.tenant_a, "slug": a["slug"], "name": a["name"], "role": "member"}]
    assert admin == [{"role": "admin"}]
    named = db.execute("select id, role from hipocampo.current_tenant(%s)", (world.tenant_b,)).fetchall()
    assert named == [{"id": world.tenant_b, "role": None}]
    for who, tenant, message in (
        ((world.member_a, world.tenant_a), world.tenant_b, "tenant mismatch: the JWT claims name another tenant"),
        (None, None, "no tenant: service_role must pass tenant_id"),
    ):
        if who is None:
            world.act("service_role")
        else:
            world.act("authenticated", *who)
        db.execute("savepoint s")
        with pytest.raises(psycopg.Error) as exc:
            db.execute("select * from hipocampo.current_tenant(%s)", (tenant,))
        db.execute("rollback to savepoint s")
        assert (exc.value.sqlstate, exc.value.diag.message_primary) == ("42501", message)
