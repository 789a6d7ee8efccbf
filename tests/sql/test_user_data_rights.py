"""LGPD data-subject rights: export everything as JSON, erase a user leaving one pseudonymous
audit record; the observability views over the memory engine."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import World
from .memory_helpers import remember

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]


def one(db: Conn, sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = db.execute(sql, params).fetchone()
    assert row is not None
    return row["v"]


def fill(db: Conn, world: World) -> uuid.UUID:
    """member_a of tenant A with a memory, a history row, a staged item, a message and a session."""
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    remember(db, "prefs.cafe", "forte", "Gosta de café forte", seed=1)
    remember(db, "prefs.cafe", "fraco", "Gosta de café fraco", seed=2)
    remember(db, "projects.horta", 1, "Cuida de uma horta", "projects", seed=3, intensity=2)
    remember(db, "prefs.x", 1, "ok")  # refused, recorded
    conv = uuid.uuid4()
    db.execute("select hipocampo.add_message(%s, 'user', 'Bom dia, quero a segunda via')", (conv,))
    db.execute(
        "select hipocampo.update_conversation_summary(%s, 'Segunda via', "
        "(select max(id) from hipocampo_private.messages))",
        (conv,),
    )
    db.execute("select hipocampo.open_session(%s)", (conv,))
    return conv


def test_export_holds_everything_about_the_user(db: Conn, world: World) -> None:
    fill(db, world)
    data = one(db, "select hipocampo.export_user_data() as v")
    assert data["format"] == "hipocampo.user_export.v1"
    assert [(m["key"], m["status"]) for m in data["memories"]] == [
        ("prefs.cafe", "deprecated"),
        ("prefs.cafe", "active"),
    ]
    assert "embedding" not in data["memories"][0]
    assert [s["key"] for s in data["staged_memories"]] == ["projects.horta"]
    assert [m["content"] for m in data["messages"]] == ["Bom dia, quero a segunda via"]
    assert len(data["conversation_summaries"]) == 1 and len(data["sessions"]) == 1
    assert data["consent"]["granted"] is True
    assert "memory.write_rejected" in {e["event"] for e in data["events"]}


def test_members_export_only_themselves_admins_their_members(db: Conn, world: World) -> None:
    """A member exports only themselves; a tenant admin may export a member of their tenant (the
    controller answering for a data subject), recorded in the member's log with reason tenant_admin
    and the admin's pseudonym, never a user of another tenant."""
    fill(db, world)
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins"), db.transaction():
        db.execute("select hipocampo.export_user_data(%s)", (world.admin_a,))
    world.act("authenticated", world.admin_a, world.tenant_a)
    theirs = one(db, "select hipocampo.export_user_data(%s) as v", (world.member_a,))
    assert theirs["user_id"] == str(world.member_a) and theirs["memories"]
    with (
        pytest.raises(psycopg.errors.NoDataFound, match="is not a member of this tenant and holds no data in it"),
        db.transaction(),
    ):
        db.execute("select hipocampo.export_user_data(%s)", (world.member_b,))
    mine = one(db, "select hipocampo.export_user_data() as v")
    assert (mine["memories"], mine["messages"]) == ([], [])
    world.act("service_role")
    event = db.execute(
        "select reason, detail from hipocampo_private.memory_events"
        " where user_id = %s and event = 'user.exported' order by id desc limit 1",
        (world.member_a,),
    ).fetchone()
    assert event is not None
    ref = one(db, "select hipocampo_private._user_ref(%s, %s) as v", (world.tenant_a, world.admin_a))
    assert event["reason"] == "tenant_admin" and event["detail"]["by"] == ref
    world.act("authenticated", world.member_a)  # no tenant claim
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="no tenant"), db.transaction():
        db.execute("select hipocampo.export_user_data(tenant_id => %s)", (world.tenant_a,))


def test_erase_user_leaves_one_pseudonymous_record(db: Conn, world: World) -> None:
    fill(db, world)
    world.act("authenticated", world.member_b, world.tenant_b)  # another tenant's user is untouched
    db.execute("select hipocampo.set_memory_consent(true)")
    remember(db, "prefs.cha", 1, "Gosta de chá", seed=9)
    world.act("service_role")
    counts = one(db, "select hipocampo.erase_user(%s, %s) as v", (world.member_a, world.tenant_a))
    # The keyed pseudonym, computed by service_role; no client can compute it.
    ref = one(db, "select hipocampo_private._user_ref(%s, %s) as v", (world.tenant_a, world.member_a))
    assert ref != hashlib.sha256(f"{world.tenant_a}:{world.member_a}".encode()).hexdigest()
    assert counts == {
        "memories": 2,
        "shared_memories_pseudonymised": 0,
        "staged_memories": 1,
        "messages": 1,
        "conversation_summaries": 1,
        "sessions": 1,
        "feedback": 0,
        "events": counts["events"],
        "memberships": 1,
        "user_ref": ref,
    }
    assert counts["events"] >= 5
    for table in ("memories", "memory_staging", "messages", "conversation_summaries", "sessions", "memory_consents"):
        n = one(db, f"select count(*) as v from hipocampo_private.{table} where user_id = %s", (world.member_a,))
        assert n == 0, table
    left = db.execute(
        "select user_id, user_ref, event from hipocampo_private.memory_events where tenant_id = %s",
        (world.tenant_a,),
    ).fetchall()
    assert left == [{"user_id": None, "user_ref": ref, "event": "user.erased"}]
    assert one(db, "select count(*) as v from hipocampo_private.memories where user_id = %s", (world.member_b,)) == 1


def test_shared_memories_stay_with_a_pseudonymous_author(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    remember(db, "tenant.segment", "condominios", "Atende condomínios", "tenant_business", scope="tenant_shared")
    counts = one(db, "select hipocampo.erase_user() as v")  # the data subject erases themselves
    assert counts["shared_memories_pseudonymised"] == 1
    world.act("authenticated", world.member_a, world.tenant_a)
    row = db.execute("select key, user_id from hipocampo_private.memories where status = 'active'").fetchone()
    assert row is not None and row["key"] == "tenant.segment" and row["user_id"] != world.admin_a


def test_a_failed_erasure_changes_nothing(db: Conn, world: World) -> None:
    fill(db, world)
    world.act("authenticated", world.member_b, world.tenant_b)
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins can act on another user"),
        db.transaction(),
    ):
        db.execute("select hipocampo.erase_user(%s)", (world.member_a,))
    world.act("service_role")
    assert one(db, "select count(*) as v from hipocampo_private.memories where user_id = %s", (world.member_a,)) == 2


# -- observability ---------------------------------------------------------------------------------
def test_memory_metrics_views(db: Conn, world: World) -> None:
    fill(db, world)
    mid = one(db, "select id as v from hipocampo_private.memories where status = 'active'")
    db.execute("select hipocampo.correct_memory(%s, '\"médio\"', 'Gosta de café médio')", (mid,))
    remember(db, "prefs.y", 1, "blz")
    world.act("service_role")
    m = db.execute("select * from hipocampo.memory_metrics where tenant_id = %s", (world.tenant_a,)).fetchone()
    assert m is not None
    assert (m["memories_total"], m["staged_total"], m["writes"], m["corrected"], m["rejected"]) == (1, 1, 3, 1, 2)
    assert float(m["rejected_rate"]) == 0.4 and float(m["correction_rate"]) == pytest.approx(0.3333)
    rej = db.execute(
        "select reason, rejected, share from hipocampo.memory_rejections where tenant_id = %s order by reason",
        (world.tenant_a,),
    ).fetchall()
    assert [(r["reason"], r["rejected"]) for r in rej] == [("noise", 1), ("too_short", 1)]
    top = db.execute(
        "select category, memories, rank from hipocampo.memory_top_categories where tenant_id = %s",
        (world.tenant_a,),
    ).fetchall()
    assert top == [{"category": "preference", "memories": 1, "rank": 1}]
    # A plain member sees their own numbers only; another tenant sees nothing of A.
    world.act("authenticated", world.member_b, world.tenant_b)
    assert db.execute("select * from hipocampo.memory_rejections").fetchall() == []


# -- the hub's memory inspector: a tenant admin on a member's memory (issue 21) -------------------
def events(db: Conn, user: uuid.UUID, event: str) -> list[dict[str, Any]]:
    """The user's events of one kind, newest first (read as service_role)."""
    return [
        dict(r)
        for r in db.execute(
            "select reason, detail from hipocampo_private.memory_events where user_id = %s and event = %s"
            " order by id desc",
            (user, event),
        ).fetchall()
    ]


def test_an_admin_inspects_a_member_and_the_member_sees_it_in_their_log(db: Conn, world: World) -> None:
    fill(db, world)
    world.act("authenticated", world.admin_a, world.tenant_a)
    seen = one(db, "select hipocampo.inspect_user_memory(%s, 'prefs.cafe') as v", (world.member_a,))
    assert seen["user_id"] == str(world.member_a) and seen["consent"] is True
    assert [(m["key"], m["value"]) for m in seen["memories"]] == [("prefs.cafe", "fraco")]
    assert [m["value"] for m in seen["history"]] == ["fraco", "forte"]  # the supersedes chain, newest first
    assert seen["history"][0]["supersedes"] == seen["history"][1]["id"]
    assert [s["key"] for s in seen["staged"]] == ["projects.horta"]
    assert "embedding" not in seen["memories"][0] and seen["events"]
    with (
        pytest.raises(psycopg.errors.NoDataFound, match="is not a member of this tenant and holds no data in it"),
        db.transaction(),
    ):
        db.execute("select hipocampo.inspect_user_memory(%s)", (world.member_b,))
    bad_limit = pytest.raises(psycopg.errors.InvalidParameterValue, match=r"history_limit must lie in \[1, 1000\]")
    with bad_limit, db.transaction():
        db.execute("select hipocampo.inspect_user_memory(%s, history_limit => 0)", (world.member_a,))
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins"), db.transaction():
        db.execute("select hipocampo.inspect_user_memory(%s)", (world.admin_a,))
    mine = one(db, "select hipocampo.export_user_data() as v")
    inspected = [e for e in mine["events"] if e["event"] == "memory.inspected"]
    assert [(e["reason"], e["detail"]["key"]) for e in inspected] == [("tenant_admin", "prefs.cafe")]
    world.act("service_role")
    ref = one(db, "select hipocampo_private._user_ref(%s, %s) as v", (world.tenant_a, world.admin_a))
    assert inspected[0]["detail"]["by"] == ref and str(world.admin_a) not in str(inspected[0])


def test_an_admin_corrects_and_forgets_a_members_memory_through_the_gate(db: Conn, world: World) -> None:
    fill(db, world)
    world.act("service_role")
    mid = one(
        db,
        "select id as v from hipocampo_private.memories where user_id = %s and status = 'active'",
        (world.member_a,),
    )
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.CheckViolation, match="does not pass the memory gate"), db.transaction():
        db.execute(
            "select hipocampo.correct_user_memory(%s, '\"x\"', 'Meu CPF é 529.982.247-25, anote por favor')", (mid,)
        )
    fixed = one(db, "select hipocampo.correct_user_memory(%s, '\"médio\"', 'Gosta de café médio') as v", (mid,))
    assert fixed["status"] == "corrected" and fixed["superseded"] == str(mid)
    assert one(db, "select hipocampo.forget_user_memory(%s) as v", (fixed["memory_id"],)) is True
    assert one(db, "select hipocampo.forget_user_memory(%s) as v", (fixed["memory_id"],)) is False  # gone already
    world.act("authenticated", world.member_b, world.tenant_b)  # another tenant: its own, none of A's
    assert one(db, "select hipocampo.forget_user_memory(%s) as v", (mid,)) is False
    world.act("service_role")
    assert [e["reason"] for e in events(db, world.member_a, "memory.corrected")] == ["tenant_admin"]
    assert [e["reason"] for e in events(db, world.member_a, "memory.forgotten")] == ["tenant_admin"]
    status = one(db, "select status as v from hipocampo_private.memories where id = %s", (fixed["memory_id"],))
    assert status == "deleted"


def test_a_member_cannot_act_on_another_members_memory(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    mine = remember(db, "prefs.cha", "verde", "Gosta de chá verde", seed=4)["memory_id"]
    world.act("authenticated", world.member_a, world.tenant_a)
    assert one(db, "select hipocampo.forget_user_memory(%s) as v", (mine,)) is False
    with pytest.raises(psycopg.errors.NoDataFound, match="unknown memory"), db.transaction():
        db.execute("select hipocampo.correct_user_memory(%s, '\"preto\"', 'Gosta de chá preto')", (mine,))
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins"), db.transaction():
        db.execute("select count(*) from hipocampo.list_members(%s)", (world.tenant_a,))
    world.act("authenticated", world.admin_a, world.tenant_a)
    members = db.execute("select user_id, role from hipocampo.list_members(%s)", (world.tenant_a,)).fetchall()
    assert {(r["user_id"], r["role"]) for r in members} >= {(world.admin_a, "admin"), (world.member_a, "member")}
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="tenant mismatch"), db.transaction():
        db.execute("select count(*) from hipocampo.list_members(%s)", (world.tenant_b,))


def test_an_admin_erases_a_member_and_the_record_says_so(db: Conn, world: World) -> None:
    fill(db, world)
    world.act("authenticated", world.admin_a, world.tenant_a)
    counts = one(db, "select hipocampo.erase_user(%s) as v", (world.member_a,))
    assert counts["memberships"] == 1 and counts["memories"] == 2
    world.act("service_role")
    row = db.execute(
        "select reason, detail from hipocampo_private.memory_events where event = 'user.erased' and user_ref = %s",
        (counts["user_ref"],),
    ).fetchone()
    ref = one(db, "select hipocampo_private._user_ref(%s, %s) as v", (world.tenant_a, world.admin_a))
    assert row is not None and row["reason"] == "tenant_admin" and row["detail"]["by"] == ref


def test_an_admin_promotes_a_members_staged_memory_through_the_members_write_path(db: Conn, world: World) -> None:
    fill(db, world)
    world.act("service_role")
    staged = one(db, "select id as v from hipocampo_private.memory_staging where user_id = %s", (world.member_a,))
    world.act("authenticated", world.member_b, world.tenant_b)  # another tenant: refused before any work
    with pytest.raises(psycopg.errors.NoDataFound, match="unknown staged memory"), db.transaction():
        db.execute("select hipocampo.promote_user_memory(%s, 9)", (staged,))
    world.act("authenticated", world.admin_a, world.tenant_a)
    kept = one(db, "select hipocampo.promote_user_memory(%s, 3) as v", (staged,))
    assert kept["status"] == "kept"  # below memory.staging_below_intensity, as for the member
    done = one(db, "select hipocampo.promote_user_memory(%s, 3, true) as v", (staged,))
    assert done["status"] == "created" and done["promoted_from"] == str(staged)
    claims = one(db, "select current_setting('request.jwt.claims')::jsonb ->> 'sub' as v")
    assert claims == str(world.admin_a)  # the caller's claims again
    world.act("service_role")
    row = db.execute(
        "select user_id, scope, pinned from hipocampo_private.memories where id = %s", (done["memory_id"],)
    ).fetchone()
    assert row is not None and (row["user_id"], row["scope"], row["pinned"]) == (world.member_a, "personal", True)
    ev = events(db, world.member_a, "memory.promoted")
    ref = one(db, "select hipocampo_private._user_ref(%s, %s) as v", (world.tenant_a, world.admin_a))
    assert [(e["reason"], e["detail"]["by"], e["detail"]["promotion"]) for e in ev] == [
        ("tenant_admin", ref, "override")
    ]


def test_an_admin_serves_a_former_member_s_request(db: Conn, world: World) -> None:
    """Issue 44 §5: a removed member's memories and messages stay the tenant's until erased, and
    their LGPD request is the tenant admin's to serve (only service_role could before: P0002)."""
    fill(db, world)
    world.act("service_role")
    db.execute("select hipocampo.remove_member(%s, %s)", (world.tenant_a, world.member_a))
    world.act("authenticated", world.admin_a, world.tenant_a)
    theirs = one(db, "select hipocampo.export_user_data(%s) as v", (world.member_a,))
    assert theirs["memories"] and theirs["messages"]
    erased = one(db, "select hipocampo.erase_user(%s) as v", (world.member_a,))
    assert erased["messages"] == 1 and erased["memberships"] == 0
    with pytest.raises(psycopg.errors.NoDataFound, match="holds no data in it"), db.transaction():
        db.execute("select hipocampo.export_user_data(%s)", (world.member_a,))


def test_an_admin_does_not_erase_another_admin(db: Conn, world: World) -> None:
    """Issue 44 §5: erasure removes the membership, so one admin could lock the others out. The
    rule: an admin's data is erased by that admin or by the operator; other members by any admin."""
    other = uuid.uuid4()
    world.act("service_role")
    db.execute("select hipocampo.add_member(%s, %s, 'admin')", (world.tenant_a, other))
    world.act("authenticated", world.admin_a, world.tenant_a)
    refused = pytest.raises(psycopg.errors.InsufficientPrivilege, match="an admin's data is erased by that admin")
    with refused, db.transaction():
        db.execute("select hipocampo.erase_user(%s)", (other,))
    one(db, "select hipocampo.export_user_data(%s) as v", (other,))  # exporting is the controller's duty
    world.act("authenticated", other, world.tenant_a)
    assert one(db, "select hipocampo.erase_user() as v")["memberships"] == 1  # themselves
