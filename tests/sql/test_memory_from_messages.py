"""Memories from the conversation (issue 59 §6): a user's message passes what it states of them
through the memory gate (consent, forbidden kinds, duplicates, the explicit-user rule), with the
message it came from; the rules are shown and tested one by one."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import World
from .memory_helpers import events, remember

Conn = psycopg.Connection[dict[str, Any]]


def proposals(db: Conn, text: str) -> list[tuple[str, Any, str, str]]:
    rows = db.execute(
        "select key, value, description, category from hipocampo_private._memory_proposals(%s)", (text,)
    ).fetchall()
    return [(r["key"], r["value"], r["description"], r["category"]) for r in rows]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Oi! Meu nome é Ana Souza.", [("identity.name", "Ana Souza", "Nome: Ana Souza", "identity_profile")]),
        (
            "pode me chamar de João da Silva, por favor",
            [("identity.name", "João da Silva", "Nome: João da Silva", "identity_profile")],
        ),
        (
            "My name is Mary Jones and I live in apartment 12B.",
            [
                ("identity.name", "Mary Jones", "Nome: Mary Jones", "identity_profile"),
                ("identity.unit", "12B", "Mora na unidade 12B", "identity_profile"),
            ],
        ),
        ("moro no apto 302, bloco B", [("identity.unit", "302", "Mora na unidade 302", "identity_profile")]),
        ("Sou da unidade nº 1104.", [("identity.unit", "1104", "Mora na unidade 1104", "identity_profile")]),
        (
            "Eu prefiro respostas curtas e diretas.",
            [
                (
                    "preference.respostas_curtas_e",
                    "respostas curtas e diretas",
                    "Prefere respostas curtas e diretas",
                    "preference",
                )
            ],
        ),
        (
            "sou alérgica a amendoim, tem algo na festa?",
            [("health.allergy", "amendoim", "Alergia a amendoim", "identity_profile")],
        ),
        # Not statements about the user: nothing.
        ("qual é o horário da piscina?", []),
        ("meu nome é importante?", []),
        ("moro no centro", []),
        ("o síndico prefere", []),
    ],
)
def test_the_rules(db: Conn, text: str, expected: list[tuple[str, Any, str, str]]) -> None:
    assert proposals(db, text) == expected


def say(db: Conn, conversation: uuid.UUID, text: str, role: str = "user") -> int:
    row = db.execute("select hipocampo.add_message(%s, %s, %s) as id", (conversation, role, text)).fetchone()
    assert row is not None
    return int(row["id"])


def memories(db: Conn) -> dict[str, dict[str, Any]]:
    rows = db.execute(
        "select key, value, source, source_ref, conversation_id, status from hipocampo_private.memories"
        " where status = 'active' order by key"
    ).fetchall()
    return {r["key"]: dict(r) for r in rows}


def test_a_user_s_message_becomes_memories_through_the_gate(db: Conn, user_a: World) -> None:
    conv = uuid.uuid4()
    said = say(db, conv, "Oi, meu nome é Ana Souza e moro no apto 302. Sou alérgica a camarão.")
    got = memories(db)
    assert sorted(got) == ["identity.name", "identity.unit"]
    assert got["identity.name"]["value"] == "Ana Souza" and got["identity.unit"]["value"] == "302"
    assert {(m["source"], m["source_ref"], m["conversation_id"]) for m in got.values()} == {
        ("conversation", f"message:{said}", conv)
    }
    # The memory inspector shows the message each came from.
    user_a.act("authenticated", user_a.admin_a, user_a.tenant_a)
    seen = db.execute("select hipocampo.inspect_user_memory(%s) as v", (user_a.member_a,)).fetchone()
    assert seen and {m["key"]: m["source_message"]["content"] for m in seen["v"]["memories"]} == {
        "identity.name": "Oi, meu nome é Ana Souza e moro no apto 302. Sou alérgica a camarão.",
        "identity.unit": "Oi, meu nome é Ana Souza e moro no apto 302. Sou alérgica a camarão.",
    }
    # The allergy is health data: the gate refused it, and said why.
    refused = events(db, user_a, "memory.write_rejected")
    assert [(e["reason"], e["detail"]["key"], e["detail"]["source"]) for e in refused] == [
        ("health_data", "health.allergy", "conversation")
    ]
    # The assistant's words are not the user's.
    user_a.act("authenticated", user_a.member_a, user_a.tenant_a)
    say(db, conv, "Seu nome é Ana Souza? Meu nome é Assistente Virtual.", role="assistant")
    assert memories(db)["identity.name"]["value"] == "Ana Souza"
    # A new statement replaces the old value (history kept); said again, nothing changes.
    say(db, conv, "Agora moro no apartamento 401.")
    say(db, conv, "moro no apartamento 401")
    user_a.act("service_role")
    rows = db.execute(
        "select value, status from hipocampo_private.memories where tenant_id = %s and key = 'identity.unit'"
        " order by status = 'active'",
        (user_a.tenant_a,),
    ).fetchall()
    assert [(r["value"], r["status"]) for r in rows] == [("302", "deprecated"), ("401", "active")]


def test_the_user_s_correction_wins(db: Conn, user_a: World) -> None:
    conv = uuid.uuid4()
    say(db, conv, "meu nome é Ana")
    stated = remember(db, "identity.name", "Ana Paula", "Nome: Ana Paula", "identity_profile")
    assert stated["status"] == "updated"
    say(db, conv, "Meu nome é Ana")
    assert memories(db)["identity.name"]["value"] == "Ana Paula"
    refused = events(db, user_a, "memory.write_rejected")
    assert [e["reason"] for e in refused] == ["explicit_user_wins"]


def test_without_consent_or_switched_off_nothing_is_proposed(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    conv = uuid.uuid4()
    say(db, conv, "meu nome é Ana")  # no consent given
    assert memories(db) == {}
    world.act("service_role")
    assert db.execute(
        "select count(*) as n from hipocampo_private.memory_events where tenant_id = %s", (world.tenant_a,)
    ).fetchone() == {"n": 0}
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute(
        "select hipocampo.set_tenant_config('memory', %s::jsonb)", (json.dumps({"propose_from_messages": False}),)
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    say(db, conv, "meu nome é Ana")
    assert memories(db) == {}
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute(
        "select hipocampo.set_tenant_config('memory', %s::jsonb)", (json.dumps({"propose_from_messages": True}),)
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    say(db, conv, "meu nome é Ana")
    assert memories(db)["identity.name"]["value"] == "Ana"
