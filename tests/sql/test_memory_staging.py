"""Short-term staging: routing by intensity, the 30-day window, promotion (recomputed intensity or
a human override), purge unless pinned, search over both tiers, isolation."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from ..conftest import World, unit_vector, vec_text
from .memory_helpers import events, remember

Conn = psycopg.Connection[dict[str, Any]]


def count(db: Conn, table: str, where: str = "true", params: tuple[Any, ...] = ()) -> int:
    row = db.execute(f"select count(*) as n from hipocampo_private.{table} where {where}", params).fetchone()
    assert row is not None
    return int(row["n"])


def test_intensity_routes_between_staging_and_long_term(db: Conn, user_a: World) -> None:
    low = remember(db, "projects.reforma", "cozinha", "Está reformando a cozinha", "projects", seed=1, intensity=6.94)
    high = remember(db, "projects.mudanca", "Recife", "Vai se mudar para Recife", "projects", seed=2, intensity=7)
    plain = remember(db, "prefs.cafe", "sem açúcar", "Toma café sem açúcar", seed=3)
    assert low["status"] == "staged" and (high["status"], plain["status"]) == ("created", "created")
    row = db.execute(
        "select intensity, expires_at - created_at as ttl from hipocampo_private.memory_staging where id = %s",
        (low["memory_id"],),
    ).fetchone()
    assert row is not None and float(row["intensity"]) == 6.9 and row["ttl"].days == 30
    assert count(db, "memories", "key = 'projects.reforma'") == 0
    assert [str(e["memory_id"]) for e in events(db, user_a, "memory.staged")] == [low["memory_id"]]


def test_the_gate_applies_to_staging(db: Conn, user_a: World) -> None:
    r = remember(db, "prefs.x", 1, "valeu", intensity=2)
    assert (r["status"], r["reason"], r["sqlstate"]) == ("rejected", "noise", "22023")
    assert count(db, "memory_staging") == 0


def test_staging_expiry_must_lie_within_30_days(db: Conn, user_a: World) -> None:
    with (
        pytest.raises(psycopg.errors.InvalidParameterValue, match="a staged memory must expire within 30 days"),
        db.transaction(),
    ):
        remember(db, "projects.x", 1, "Planeja uma viagem", "projects", intensity=3, expires_at="2099-01-01")
    r = remember(db, "projects.x", 1, "Planeja uma viagem", "projects", intensity=3, expires_at="tomorrow")
    assert r["status"] == "staged"


def test_a_new_staged_value_replaces_the_staged_key(db: Conn, user_a: World) -> None:
    first = remember(db, "projects.viagem", "Lisboa", "Planeja ir a Lisboa", "projects", seed=1, intensity=4)
    second = remember(db, "projects.viagem", "Porto", "Planeja ir ao Porto", "projects", seed=2, intensity=5)
    assert second["replaced"] == first["memory_id"]
    assert count(db, "memory_staging") == 1


def test_promotion_by_recomputed_intensity(db: Conn, user_a: World) -> None:
    staged = remember(db, "projects.curso", "python", "Começou um curso de Python", "projects", seed=5, intensity=5)
    kept = db.execute("select hipocampo.promote_memory(%s, 6.5) as r", (staged["memory_id"],)).fetchone()
    assert kept is not None and kept["r"] == {"status": "kept", "memory_id": staged["memory_id"], "intensity": 6.5}
    moved = db.execute("select hipocampo.promote_memory(%s, 8) as r", (staged["memory_id"],)).fetchone()
    assert moved is not None
    r = moved["r"]
    assert (r["status"], r["promoted_from"]) == ("created", staged["memory_id"])
    assert count(db, "memory_staging") == 0
    m = db.execute("select intensity, pinned from hipocampo_private.memories where id = %s", (r["memory_id"],))
    assert m.fetchone() == {"intensity": 8, "pinned": False}
    assert [e["reason"] for e in events(db, user_a, "memory.promoted")] == ["intensity"]


def test_a_human_override_pins_and_promotes_whatever_the_intensity(db: Conn, user_a: World) -> None:
    staged = remember(db, "people.socio", "Bruno", "O sócio se chama Bruno", "people_contacts", seed=6, intensity=3)
    row = db.execute("select hipocampo.promote_memory(%s, 4, override => true) as r", (staged["memory_id"],))
    r = row.fetchone()
    assert r is not None and r["r"]["status"] == "created"
    m = db.execute("select intensity, pinned from hipocampo_private.memories where id = %s", (r["r"]["memory_id"],))
    assert m.fetchone() == {"intensity": 4, "pinned": True}


def test_a_refused_promotion_keeps_the_staged_item(db: Conn, user_a: World) -> None:
    user_a.act("service_role")
    db.execute(
        'update hipocampo_private.settings set config = \'{"memory": {"max_active_per_user": 1}}\' '
        "where tenant_id = %s",
        (user_a.tenant_a,),
    )
    user_a.act("authenticated", user_a.member_a, user_a.tenant_a)
    remember(db, "prefs.cha", 1, "Gosta de chá verde", seed=7)
    staged = remember(db, "projects.horta", 1, "Cuida de uma horta", "projects", seed=8, intensity=2)
    r = db.execute("select hipocampo.promote_memory(%s, 9) as r", (staged["memory_id"],)).fetchone()
    assert r is not None and (r["r"]["status"], r["r"]["reason"]) == ("rejected", "quota")
    assert count(db, "memory_staging") == 1


def test_promote_bad_input(db: Conn, user_a: World) -> None:
    with pytest.raises(psycopg.errors.NoDataFound, match="unknown staged memory"), db.transaction():
        db.execute("select hipocampo.promote_memory(gen_random_uuid(), 8)")
    staged = remember(db, "projects.y", 1, "Aprende violão", "projects", intensity=2)
    with pytest.raises(psycopg.errors.NullValueNotAllowed, match="intensity is required"), db.transaction():
        db.execute("select hipocampo.promote_memory(%s, null)", (staged["memory_id"],))
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"intensity must be 0\.\.10"), db.transaction():
        db.execute("select hipocampo.promote_memory(%s, 11)", (staged["memory_id"],))


def test_expired_staging_is_purged_unless_pinned(db: Conn, user_a: World) -> None:
    a = remember(db, "projects.a", 1, "Lê um livro sobre vendas", "projects", seed=11, intensity=2)
    b = remember(db, "projects.b", 1, "Treina para uma corrida", "projects", seed=12, intensity=2, pinned=True)
    db.execute("select 1")  # same transaction: the purge runs with a clock 31 days ahead
    user_a.act("service_role")
    r = db.execute("select hipocampo.run_memory_maintenance(now() + interval '31 days') as r").fetchone()
    assert r is not None and r["r"]["staging_purged"] == 1
    left = db.execute("select id::text from hipocampo_private.memory_staging").fetchall()
    assert [x["id"] for x in left] == [b["memory_id"]]
    purged = events(db, user_a, "memory.purged")
    assert [(str(e["memory_id"]), e["reason"]) for e in purged] == [(a["memory_id"], "staging_expired")]


def test_search_covers_both_tiers_and_can_leave_staging_out(db: Conn, user_a: World) -> None:
    remember(db, "projects.a", 1, "Reforma da cozinha", "projects", seed=21, intensity=2)
    remember(db, "projects.b", 1, "Mudança para Recife", "projects", seed=22)
    q = vec_text(unit_vector(21))
    rows = db.execute(
        "select key, tier from hipocampo.search_memories(%s::extensions.vector, min_score => -1)", (q,)
    ).fetchall()
    assert {(r["key"], r["tier"]) for r in rows} == {("projects.a", "staging"), ("projects.b", "long_term")}
    rows = db.execute(
        "select key from hipocampo.search_memories(%s::extensions.vector, min_score => -1, include_staging => false)",
        (q,),
    ).fetchall()
    assert [r["key"] for r in rows] == ["projects.b"]
    user_a.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    touched = db.execute("select access_count from hipocampo_private.memory_staging").fetchone()
    assert touched == {"access_count": 1}


def test_staged_memories_are_private(db: Conn, user_a: World) -> None:
    staged = remember(db, "projects.a", 1, "Reforma da cozinha", "projects", seed=21, intensity=2)
    assert [r["id"] for r in db.execute("select id::text from hipocampo.staged_memories()").fetchall()] == [
        staged["memory_id"]
    ]
    user_a.act("authenticated", user_a.admin_a, user_a.tenant_a)
    assert db.execute("select id from hipocampo.staged_memories()").fetchall() == []
    assert count(db, "memory_staging") == 0
    with pytest.raises(psycopg.errors.NoDataFound, match="unknown staged memory"), db.transaction():
        db.execute("select hipocampo.promote_memory(%s, 9)", (staged["memory_id"],))
    user_a.act("authenticated", user_a.member_b, user_a.tenant_b)
    assert count(db, "memory_staging") == 0
