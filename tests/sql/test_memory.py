"""The memory engine in SQL: consent, the gate (every refusal recorded with its reason), upsert
with history, correction, forgetting, isolation, search, decay with a frozen clock, profile seed."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from ..conftest import World, unit_vector, vec_text
from .memory_helpers import events, remember

Conn = psycopg.Connection[dict[str, Any]]


# -- the gate --------------------------------------------------------------------------------------
def test_without_consent_nothing_is_stored_and_the_attempt_is_recorded(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    r = remember(db, "prefs.short_answers", True, "Prefere respostas curtas")
    assert r == {
        "status": "rejected",
        "reason": "no_consent",
        "sqlstate": "42501",
        "message": "the user has not consented to long-term memory (LGPD art. 7 I)",
    }
    rejected = events(db, world, "memory.write_rejected")
    assert [(e["reason"], e["user_id"]) for e in rejected] == [("no_consent", world.member_a)]
    assert db.execute(
        "select count(*) as n from hipocampo_private.memories where tenant_id = %s", (world.tenant_a,)
    ).fetchone() == {"n": 0}


@pytest.mark.parametrize(
    ("description", "named", "reason", "sqlstate"),
    [
        ("Prefere respostas curtas", {"category": None}, "missing_category", "23502"),
        ("Prefere respostas curtas", {"confidence": 0.5}, "low_confidence", "22003"),
        ("Prefere respostas curtas", {"confidence": 0.65, "source": "inferred"}, "low_confidence", "22003"),
        ("ok", {}, "too_short", "22023"),
        ("x" * 12_001, {}, "too_long", "22001"),
        ("Bom dia!", {}, "noise", "22023"),
        ("blz", {}, "noise", "22023"),
        ("tô esperando...", {}, "noise", "22023"),
        ("Meu CPF é 529.982.247-25", {}, "personal_data", "22023"),
        ("Meu telefone é (11) 98765-4321", {}, "personal_data", "22023"),
        ("Escreva para ana@exemplo.com.br", {}, "personal_data", "22023"),
        ("Cartão 4111 1111 1111 1111", {}, "personal_data", "22023"),
        ("Recebi o diagnóstico de depressão", {}, "health_data", "22023"),
        ("Meu salário é 5 mil", {}, "financial_data", "22023"),
    ],
)
def test_gate_refusals(
    db: Conn, user_a: World, description: str, named: dict[str, Any], reason: str, sqlstate: str
) -> None:
    category = named.pop("category", "preference")
    r = remember(db, "prefs.some_key", "v", description, category, **named)
    assert (r["status"], r["reason"], r["sqlstate"]) == ("rejected", reason, sqlstate), r
    assert [e["reason"] for e in events(db, user_a, "memory.write_rejected")] == [reason]


def test_descriptions_in_any_script_are_memories(db: Conn, user_a: World) -> None:
    """Letters of any script are words (hipocampo_private._plain_words): a description in Japanese,
    Cyrillic or Arabic is a memory, not noise, and not a copy of another one; emoji alone are noise."""
    for i, text in enumerate(["私の名前は田中です", "Любит крепкий чай", "يحب القهوة بدون سكر"]):
        r = remember(db, f"prefs.script_{i}", 1, text, seed=40 + i)
        assert r["status"] == "created", (text, r)
    r = remember(db, "prefs.emoji", 1, "👍👍👍", seed=50)
    assert (r["status"], r["reason"], r["sqlstate"]) == ("rejected", "noise", "22023")


def test_quota_of_active_memories(db: Conn, user_a: World) -> None:
    user_a.act("service_role")
    db.execute(
        'update hipocampo_private.settings set config = \'{"memory": {"max_active_per_user": 2}}\' '
        "where tenant_id = %s",
        (user_a.tenant_a,),
    )
    user_a.act("authenticated", user_a.member_a, user_a.tenant_a)
    assert remember(db, "prefs.a", 1, "Gosta de café", seed=1)["status"] == "created"
    assert remember(db, "prefs.b", 1, "Gosta de chá", seed=2)["status"] == "created"
    r = remember(db, "prefs.c", 1, "Gosta de suco", seed=3)
    assert (r["reason"], r["sqlstate"], r["message"]) == ("quota", "53400", "the user already has 2 active memories")
    # Replacing an existing key is not a new memory.
    assert remember(db, "prefs.a", 2, "Gosta muito de café", seed=4)["status"] == "updated"


def test_semantic_duplicate_returns_the_existing_memory(db: Conn, user_a: World) -> None:
    first = remember(db, "prefs.coffee", 1, "Gosta de café sem açúcar", seed=7)
    second = remember(db, "prefs.cafe", 1, "Gosta de café sem açúcar!", seed=7)
    assert second == {"status": "duplicate", "memory_id": first["memory_id"]}


def test_a_copy_of_the_description_is_a_duplicate_whatever_the_vectors(db: Conn, user_a: World) -> None:
    """Retyped (case, accents, punctuation, spacing): a duplicate even with unrelated vectors, which
    is how e5 sees such copies at its calibrated 0.995 (docs/BENCHMARKS.md §duplicate thresholds);
    one word changed is another memory; the staged tier is checked too."""
    first = remember(db, "prefs.coffee", 1, "Gosta de café sem açúcar.", seed=31)
    retyped = remember(db, "prefs.cafe", 1, "  gosta de CAFE, sem acucar ", seed=32)
    assert retyped == {"status": "duplicate", "memory_id": first["memory_id"]}
    assert remember(db, "prefs.tea", 1, "Gosta de chá sem açúcar.", seed=33)["status"] == "created"
    staged = remember(db, "prefs.music", "jazz", "Ouve jazz à noite", seed=34, intensity=3)
    assert staged["status"] == "staged"
    again = remember(db, "prefs.musica", "jazz", "ouve jazz a noite", seed=35)
    assert again == {"status": "duplicate", "memory_id": staged["memory_id"]}
    # Replacing a key with a copy of its own description is an update, not a duplicate of itself.
    assert remember(db, "prefs.coffee", 2, "gosta de cafe sem acucar", seed=36)["status"] == "updated"


def test_inferred_never_overrides_explicit(db: Conn, user_a: World) -> None:
    remember(db, "prefs.tone", "formal", "Prefere tom formal", seed=11)
    r = remember(
        db, "prefs.tone", "informal", "Parece preferir tom informal", seed=12, source="inferred", confidence=0.9
    )
    assert (r["status"], r["reason"], r["sqlstate"]) == ("rejected", "explicit_user_wins", "55000")


def test_bad_vocabulary_is_an_error(db: Conn, user_a: World) -> None:
    with pytest.raises(psycopg.errors.CheckViolation, match="invalid memory"):
        remember(db, "prefs.x", 1, "Gosta de jazz", category="hobbies")


# -- upsert, history, correction, forgetting -------------------------------------------------------
def test_upsert_keeps_one_active_row_and_the_history(db: Conn, user_a: World) -> None:
    a = remember(db, "user.city", "Recife", "Mora em Recife", seed=21)
    assert remember(db, "user.city", "Recife", "Mora em Recife", seed=21)["status"] == "unchanged"
    b = remember(db, "user.city", "Olinda", "Mora em Olinda", seed=22)
    assert b["status"] == "updated" and b["superseded"] == a["memory_id"]
    rows = db.execute(
        "select id, status, valid_to, supersedes, value from hipocampo.lookup_memories("
        "key => 'user.city', include_history => true)"
    ).fetchall()
    assert [(r["status"], r["value"]) for r in rows] == [("active", "Olinda"), ("deprecated", "Recife")]
    assert rows[1]["valid_to"] is not None and rows[0]["supersedes"] == rows[1]["id"]


def test_correct_and_forget(db: Conn, user_a: World) -> None:
    m = remember(db, "user.name", "Ane", "O nome do usuário é Ane", category="identity_profile", seed=31)
    c = db.execute(
        "select hipocampo.correct_memory(%s, '\"Ana\"', 'O nome do usuário é Ana') as r", (m["memory_id"],)
    ).fetchone()
    assert c is not None and c["r"]["status"] == "corrected" and c["r"]["superseded"] == m["memory_id"]
    active = db.execute(
        "select value, source, confidence from hipocampo.lookup_memories(key => 'user.name')"
    ).fetchall()
    assert active == [{"value": "Ana", "source": "explicit_user", "confidence": 1.0}]
    assert db.execute("select hipocampo.forget_memory(%s) as ok", (c["r"]["memory_id"],)).fetchone() == {"ok": True}
    assert db.execute("select * from hipocampo.lookup_memories(key => 'user.name')").fetchall() == []
    assert [e["event"] for e in events(db, user_a, "memory.corrected")] == ["memory.corrected"]
    assert len(events(db, user_a, "memory.forgotten")) == 1


def test_hard_delete_is_service_role_only(db: Conn, user_a: World) -> None:
    m = remember(db, "prefs.music", "jazz", "Gosta de jazz", seed=41)
    db.execute("savepoint s")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute("select hipocampo.hard_delete_memory(%s)", (m["memory_id"],))
    db.execute("rollback to savepoint s")
    user_a.act("service_role")
    assert db.execute("select hipocampo.hard_delete_memory(%s) as ok", (m["memory_id"],)).fetchone() == {"ok": True}


# -- isolation --------------------------------------------------------------------------------------
def test_personal_memories_are_private_and_shared_ones_are_visible(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    remember(
        db,
        "tenant.wifi_policy",
        "guest",
        "Wi-fi de visitantes é separado",
        category="operating_model",
        scope="tenant_shared",
        seed=51,
    )
    remember(db, "prefs.secret_hobby", "xadrez", "Joga xadrez às terças", seed=52)
    world.act("authenticated", world.member_a, world.tenant_a)
    keys = [r["key"] for r in db.execute("select key from hipocampo_private.memories").fetchall()]
    assert keys == ["tenant.wifi_policy"]
    # member_a cannot change the shared memory, nor forget admin_a's personal one
    shared = db.execute("select id from hipocampo_private.memories").fetchone()
    assert shared is not None
    assert db.execute("select hipocampo.forget_memory(%s) as ok", (shared["id"],)).fetchone() == {"ok": False}
    world.act("authenticated", world.member_b, world.tenant_b)
    assert db.execute("select count(*) as n from hipocampo_private.memories").fetchone() == {"n": 0}
    assert db.execute("select count(*) as n from hipocampo.lookup_memories()").fetchone() == {"n": 0}


def test_members_cannot_write_shared_memories(db: Conn, user_a: World) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        remember(
            db, "tenant.rule", "x", "Regra da casa sobre visitas", category="operating_model", scope="tenant_shared"
        )


def test_user_id_argument_cannot_impersonate(db: Conn, user_a: World) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="user mismatch"):
        remember(db, "prefs.x", 1, "Gosta de jazz", user_id=str(user_a.member_b))


# -- concurrency -----------------------------------------------------------------------------------
def test_concurrent_upserts_of_one_key_leave_one_active_row(database_url: str) -> None:
    user, slug = uuid.uuid4(), f"mc-{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as c:
        c.execute("set role service_role")
        tid = c.execute("select hipocampo.create_tenant('MC', %s) as t", (slug,)).fetchone()["t"]  # type: ignore[index]
        c.execute("select hipocampo.set_memory_consent(true, %s, %s)", (user, tid))
    errors: list[BaseException] = []
    statuses: list[str] = []

    def writer(n: int) -> None:
        try:
            with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as c:
                c.execute("set role service_role")
                for i in range(10):
                    r = c.execute(
                        "select hipocampo.remember('prefs.color', %s::jsonb, %s, 'preference', user_id => %s, "
                        "tenant_id => %s) as r",
                        (json.dumps(f"cor {n}-{i}"), f"Cor preferida {n} {i}", user, tid),
                    ).fetchone()
                    statuses.append(r["r"]["status"])  # type: ignore[index]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(statuses) == 60 and set(statuses) <= {"created", "updated"}
    with psycopg.connect(database_url, row_factory=dict_row) as c:
        rows = c.execute(
            "select status, count(*) as n from hipocampo_private.memories where tenant_id = %s group by 1 order by 1",
            (tid,),
        ).fetchall()
    assert rows == [{"status": "active", "n": 1}, {"status": "deprecated", "n": 59}]


# -- search -----------------------------------------------------------------------------------------
def test_search_thresholds_pinned_bonus_dedupe_and_access(db: Conn, user_a: World) -> None:
    q = unit_vector(61)
    remember(db, "prefs.exact", 1, "Memória igual à consulta", seed=61)
    remember(db, "prefs.pinned", 1, "Memória fixada", seed=62, pinned=True)
    rows = db.execute(
        "select key, similarity, score, rank, fallback from hipocampo.search_memories(%s::extensions.vector, "
        "'context', min_score => -1.0)",
        (vec_text(q),),
    ).fetchall()
    assert rows[0]["key"] == "prefs.exact" and rows[0]["similarity"] > 0.999 and rows[0]["rank"] == 1
    pinned = next(r for r in rows if r["key"] == "prefs.pinned")
    assert abs(pinned["score"] - pinned["similarity"] - 0.05) < 1e-9
    # The thresholds (config: 0.35 / 0.55): only the identical memory passes (random vectors ~ 0).
    for mode in ("context", "answer"):
        hits = db.execute(
            "select key from hipocampo.search_memories(%s::extensions.vector, %s)", (vec_text(q), mode)
        ).fetchall()
        assert [h["key"] for h in hits] == ["prefs.exact"]
    # Three reads returned it: counted when the read queue is drained, not by the reads.
    read = "select access_count, last_accessed_at from hipocampo_private.memories where key = 'prefs.exact'"
    assert db.execute(read).fetchone() == {"access_count": 0, "last_accessed_at": None}
    user_a.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    row = db.execute(read).fetchone()
    assert row is not None and row["access_count"] == 3 and row["last_accessed_at"] is not None


def test_search_tag_fallback_is_explicit(db: Conn, user_a: World) -> None:
    remember(db, "prefs.tea", 1, "Gosta de chá verde", seed=71, tags=["bebidas"])
    q = vec_text(unit_vector(71))
    tagged = db.execute(
        "select key, fallback from hipocampo.search_memories(%s::extensions.vector, filter_tags => %s)",
        (q, ["bebidas"]),
    ).fetchall()
    assert tagged == [{"key": "prefs.tea", "fallback": None}]
    for tags, why in (([], "empty_tags"), (["esportes"], "no_memory_with_tags")):
        rows = db.execute(
            "select key, fallback from hipocampo.search_memories(%s::extensions.vector, filter_tags => %s::text[])",
            (q, tags),
        ).fetchall()
        assert rows == [{"key": "prefs.tea", "fallback": why}]


def test_search_bad_input(db: Conn, user_a: World) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="mode must be context or answer"):
        db.execute(
            "select * from hipocampo.search_memories(%s::extensions.vector, 'guess')", (vec_text(unit_vector(1)),)
        )


# -- decay and expiry with a frozen clock ----------------------------------------------------------
def test_decay_deactivation_and_expiry(db: Conn, user_a: World) -> None:
    inferred = remember(db, "prefs.guess", 1, "Parece gostar de futebol", seed=81, source="inferred", confidence=0.72)
    explicit = remember(db, "prefs.said", 1, "Disse que gosta de vôlei", seed=82)
    pinned = remember(
        db, "prefs.pin", 1, "Fixada: gosta de basquete", seed=83, source="inferred", confidence=0.8, pinned=True
    )
    ttl = remember(db, "prefs.ttl", 1, "Vale só até dezembro", seed=84, expires_at="2026-12-01")
    user_a.act("service_role")
    db.execute(
        "update hipocampo_private.memories set created_at = '2026-01-01' where tenant_id = %s", (user_a.tenant_a,)
    )

    def run(when: str) -> dict[str, int]:
        row = db.execute("select hipocampo.run_memory_maintenance(%s::timestamptz) as r", (when,)).fetchone()
        assert row is not None
        return dict(row["r"])

    assert run("2026-03-01") == {"decayed": 0, "deactivated": 0, "expired": 0, "staging_purged": 0}
    assert run("2026-04-02") == {
        "decayed": 1,
        "deactivated": 0,
        "expired": 0,
        "staging_purged": 0,
    }  # 91 days without access
    assert run("2026-04-10") == {"decayed": 0, "deactivated": 0, "expired": 0, "staging_purged": 0}  # once per period
    assert run("2026-07-02") == {"decayed": 1, "deactivated": 0, "expired": 0, "staging_purged": 0}
    assert run("2026-10-01") == {"decayed": 1, "deactivated": 0, "expired": 0, "staging_purged": 0}
    assert run("2026-12-31") == {
        "decayed": 1,
        "deactivated": 0,
        "expired": 1,
        "staging_purged": 0,
    }  # 0.32 left; TTL passed
    assert run("2027-04-01") == {"decayed": 1, "deactivated": 1, "expired": 0, "staging_purged": 0}  # 0.22 < 0.3
    status = {
        str(r["id"]): (r["status"], round(r["confidence"], 2))
        for r in db.execute("select id, status, confidence from hipocampo_private.memories").fetchall()
    }
    assert status[inferred["memory_id"]] == ("expired", 0.22)
    assert status[explicit["memory_id"]] == ("active", 0.9)
    assert status[pinned["memory_id"]] == ("active", 0.8)
    assert status[ttl["memory_id"]][0] == "expired"
    assert len(events(db, user_a, "memory.decayed")) == 5
    # (one run's events: their ids order them by millisecond only)
    assert sorted(e["reason"] for e in events(db, user_a, "memory.expired")) == ["expires_at", "low_confidence"]


# -- profile seed -----------------------------------------------------------------------------------
def test_seed_profile_is_idempotent_and_refuses_free_text(db: Conn, user_a: World) -> None:
    profile = {
        "user.name": "Ana",
        "user.timezone": "America/Recife",
        "tenant.segment": "condomínios",
        "prefs.short_answers": True,
        "prefs.channels_enabled": ["whatsapp", "email"],
    }
    first = db.execute("select hipocampo.seed_profile(%s::jsonb) as r", (json.dumps(profile),)).fetchone()
    assert first is not None and set(first["r"].values()) == {"created"}
    again = db.execute("select hipocampo.seed_profile(%s::jsonb, 'profile') as r", (json.dumps(profile),)).fetchone()
    assert again is not None and set(again["r"].values()) == {"unchanged"}
    rows = db.execute(
        "select key, category, source, source_ref from hipocampo.lookup_memories() order by key"
    ).fetchall()
    assert {r["source"] for r in rows} == {"profile_seed"} and {r["source_ref"] for r in rows} == {"onboarding"}
    assert {r["key"]: r["category"] for r in rows}["tenant.segment"] == "tenant_business"
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="unknown profile keys: conversa"):
        db.execute('select hipocampo.seed_profile(\'{"conversa": "falei com o síndico ontem"}\')')


def test_set_memory_embeddings_fills_only_missing_vectors(db: Conn, user_a: World) -> None:
    r = db.execute('select hipocampo.seed_profile(\'{"user.name": "Ana", "prefs.no_emojis": true}\') as r')
    assert r.fetchone() == {"r": {"user.name": "created", "prefs.no_emojis": "created"}}
    rows = db.execute("select id, description from hipocampo_private.memories order by key").fetchall()
    assert [x["description"] for x in rows] == ["Prefere respostas sem emojis: sim", "Nome do usuário: Ana"]
    items = [{"memory_id": str(x["id"]), "embedding": unit_vector(i)} for i, x in enumerate(rows)]
    n = db.execute("select hipocampo.set_memory_embeddings(%s::jsonb) as n", (json.dumps(items),)).fetchone()
    assert n == {"n": 2}
    n = db.execute("select hipocampo.set_memory_embeddings(%s::jsonb) as n", (json.dumps(items),)).fetchone()
    assert n == {"n": 0}
    bad = [{"memory_id": str(rows[0]["id"]), "embedding": [1, 2, 3]}]
    with pytest.raises(psycopg.errors.DataException, match="embedding has 3 dimensions"), db.transaction():
        db.execute("select hipocampo.set_memory_embeddings(%s::jsonb)", (json.dumps(bad),))
