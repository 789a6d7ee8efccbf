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


def test_users_export_only_themselves(db: Conn, world: World) -> None:
    fill(db, world)
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="user mismatch"), db.transaction():
        db.execute("select hipocampo.export_user_data(%s)", (world.member_a,))
    mine = one(db, "select hipocampo.export_user_data() as v")
    assert (mine["memories"], mine["messages"]) == ([], [])
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
    # The keyed pseudonym (004300), computed by service_role; no client can compute it.
    ref = one(db, "select hipocampo_private._user_ref(%s, %s) as v", (world.tenant_a, world.member_a))
    assert ref != hashlib.sha256(f"{world.tenant_a}:{world.member_a}".encode()).hexdigest()
    assert counts == {
        "memories": 2,
        "shared_memories_pseudonymised": 0,
        "staged_memories": 1,
        "messages": 1,
        "conversation_summaries": 1,
        "sessions": 1,
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
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="user mismatch"), db.transaction():
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
