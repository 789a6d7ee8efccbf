"""The memory gate reads the whole memory (issue 16 §1.3 and §1.4).

Each case once stored data (value unchecked, direct INSERT ungated,
description rewritable by UPDATE) and is refused now.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from ..conftest import World, unit_vector, vec_text
from .memory_helpers import remember

Conn = psycopg.Connection[dict[str, Any]]


@pytest.fixture
def member(db: Conn, world: World) -> Conn:
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    return db


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "reason", "sqlstate", "message"),
    [
        ({"cpf": "529.982.247-25"}, "personal_data", "22023", "memory value carries personal data (CPF)"),
        ({"contato": {"email": "joao@exemplo.com"}}, "personal_data", "22023", "(e-mail)"),
        (["ligar", "11 98765-4321"], "personal_data", "22023", "(phone number)"),
        ({"529.982.247-25": "chave"}, "personal_data", "22023", "(CPF)"),
        ({"cartao": "4111 1111 1111 1111"}, "personal_data", "22023", "(card number)"),
        ({"nota": "tem diagnóstico de depressão"}, "health_data", "22023", "never stored as a memory: health data"),
        ({"blob": "x" * 9000}, "too_long", "22001", "the limit is 8192 (memory.value_max_bytes)"),
        (nested(9), "invalid_value", "22023", "nests deeper than 8 levels"),
    ],
    ids=[
        "cpf",
        "nested-email",
        "phone-in-array",
        "cpf-as-key",
        "card",
        "health",
        "9000-bytes",
        "depth-9",
    ],
)
def test_the_gate_refuses_values(
    member: Conn, world: World, value: Any, reason: str, sqlstate: str, message: str
) -> None:
    r = remember(member, "perfil.dados", value, "Dados do perfil do usuário", seed=11)
    assert (r["status"], r["reason"], r["sqlstate"]) == ("rejected", reason, sqlstate)
    assert message in r["message"]
    count = member.execute("select count(*) as n from hipocampo_private.memories where key = 'perfil.dados'").fetchone()
    assert count == {"n": 0}


def test_a_value_nested_5000_levels_is_refused(member: Conn) -> None:
    deep = "[" * 5000 + '"x"' + "]" * 5000  # json.dumps cannot write it; the database reads it
    row = member.execute(
        "select hipocampo.remember('perfil.dados', %s::jsonb, 'Dados do perfil', 'preference',"
        " %s::extensions.vector) as r",
        (deep, vec_text(unit_vector(18))),
    ).fetchone()
    assert row is not None
    assert (row["r"]["status"], row["r"]["reason"], row["r"]["sqlstate"]) == ("rejected", "too_long", "22001")


def test_ordinary_values_pass(member: Conn) -> None:
    value = {"bebida": "café", "horario": "07:30", "dias": [1, 2, 3], "valor": "R$ 1.500,00", "prof": nested(6)}
    assert remember(member, "prefs.cafe", value, "Toma café às 7h30", seed=12)["status"] == "created"


def test_the_description_is_read_by_the_same_scrubber(member: Conn) -> None:
    r = remember(member, "prefs.contato", "ok", "Ligar no 11 9 8765 4444 à noite", seed=13)
    assert (r["status"], r["reason"]) == ("rejected", "personal_data")
    assert r["message"] == "memory text carries personal data (phone number)"


@pytest.mark.parametrize(
    ("args", "sqlstate", "message"),
    [
        ({"key": None}, "22023", "key must not be null"),
        ({"scope": None}, "22023", "scope must not be null"),
        ({"source": None}, "22023", "source must not be null"),
        ({"key": "prefs." + "x" * 200}, "22001", "key is 206 characters; the limit is 200"),
    ],
)
def test_bad_arguments_are_named(member: Conn, args: dict[str, Any], sqlstate: str, message: str) -> None:
    named = {"key": "prefs.cafe", **args}
    key = named.pop("key")
    with pytest.raises(psycopg.Error) as err, member.transaction():
        remember(member, key, "x", "Gosta de café", seed=14, **named)
    assert err.value.sqlstate == sqlstate
    assert message in str(err.value)


def test_a_null_value_is_refused(member: Conn) -> None:
    row = member.execute(
        "select hipocampo.remember('prefs.cafe', null, 'Gosta de café', 'preference', %s::extensions.vector) as r",
        (vec_text(unit_vector(15)),),
    ).fetchone()
    assert row is not None
    assert (row["r"]["status"], row["r"]["reason"], row["r"]["sqlstate"]) == ("rejected", "invalid_value", "22023")


# -- direct writes as authenticated --------------------------------------------------------------
def insert(db: Conn, world: World, table: str, description: str, value: Any) -> None:
    extra = ", expires_at" if table == "memory_staging" else ""
    extra_value = ", now() + interval '1 day'" if table == "memory_staging" else ""
    db.execute(
        f"insert into hipocampo_private.{table} (tenant_id, user_id, category, key, value, description,"
        f" confidence, source, tags{extra}) values (%s, %s, 'preference', 'prefs.direto', %s::jsonb, %s, 0.9,"
        f" 'explicit_user', array['preference']{extra_value})",
        (world.tenant_a, world.member_a, json.dumps(value), description),
    )


@pytest.mark.parametrize("table", ["memories", "memory_staging"])
@pytest.mark.parametrize(
    ("consent", "description", "value"),
    [
        (False, "Gosta de café", "x"),  # no consent
        (True, "CPF 529.982.247-25 e cartão 4111 1111 1111 1111", "x"),
        (True, "Gosta de café", {"cpf": "52998224725"}),
        (True, "Gosta de café", nested(20)),
    ],
    ids=["no-consent", "pii-description", "pii-value", "too-deep"],
)
def test_a_direct_insert_passes_only_what_the_gate_passes(
    db: Conn, world: World, table: str, consent: bool, description: str, value: Any
) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(%s)", (consent,))
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"), db.transaction():
        insert(db, world, table, description, value)


@pytest.mark.parametrize("table", ["memories", "memory_staging"])
def test_a_direct_insert_the_gate_would_pass_is_allowed(db: Conn, world: World, table: str) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    insert(db, world, table, "Gosta de café", {"bebida": "café"})


@pytest.mark.parametrize("column", ["description", "value", "key", "user_id", "tenant_id"])
def test_a_stored_memory_cannot_be_rewritten_behind_the_gate(member: Conn, column: str) -> None:
    mid = remember(member, "prefs.cafe", "preto", "Gosta de café preto", seed=16)["memory_id"]
    new = {
        "description": "'CPF 529.982.247-25'",
        "value": """'{"cpf": "52998224725"}'::jsonb""",
        "key": "'prefs.outra'",
        "user_id": "gen_random_uuid()",
        "tenant_id": "tenant_id",
    }[column]
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"), member.transaction():
        member.execute(f"update hipocampo_private.memories set {column} = {new} where id = %s", (mid,))


def test_forget_still_works_after_consent_is_revoked(member: Conn) -> None:
    mid = remember(member, "prefs.cafe", "preto", "Gosta de café preto", seed=17)["memory_id"]
    member.execute("select hipocampo.set_memory_consent(false)")
    assert member.execute("select hipocampo.forget_memory(%s) as ok", (mid,)).fetchone() == {"ok": True}
