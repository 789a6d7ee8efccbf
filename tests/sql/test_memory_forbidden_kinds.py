"""What never becomes a memory (issue 45 §4, the memory design's list): credentials, financial
data, health data, opinions about people and classifications of a user are refused by kind, the
kind being the refusal's reason in the member's log; ordinary preferences and facts pass; a
tenant's own sensitive patterns refuse as sensitive_data; the kinds are the operator's."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from ..conftest import World
from .memory_helpers import events, remember

Conn = psycopg.Connection[dict[str, Any]]

REFUSED = [
    ("Minha senha do aplicativo é abc123", "credentials"),
    ("Meu salário é 5 mil", "financial_data"),
    ("Está com o nome sujo no Serasa", "financial_data"),
    ("Recebi o diagnóstico de depressão", "health_data"),
    ("Tenho alergia a amendoim", "health_data"),
    ("O vizinho do 302 é muito barulhento", "opinion_about_person"),
    ("A síndica é uma mentirosa", "opinion_about_person"),
    ("Não confio no porteiro da noite", "opinion_about_person"),
    ("Cliente de alto risco", "user_classification"),
    ("Score de crédito baixo", "user_classification"),
    ("É mau pagador", "user_classification"),
    ("Morador problemático", "user_classification"),
]

PASSED = [
    "Prefere respostas curtas",
    "Gosta de reservar o salão aos sábados",
    "Tem um cachorro chamado Rex",
    "O síndico atende às terças",
    "O vizinho do 302 e a esposa pediram a vaga",
    "O porteiro é muito atencioso",
    "Trabalha como gerente de loja",
    "Prefere o nível de detalhe alto nas respostas",
    "Participa da assembleia todo mês",
    "Quer receber avisos por e-mail",
]


@pytest.mark.parametrize(("description", "kind"), REFUSED)
def test_each_forbidden_kind_is_refused_as_itself(db: Conn, user_a: World, description: str, kind: str) -> None:
    r = remember(db, "notes.some_key", "v", description, "pattern")
    assert (r["status"], r["reason"], r["sqlstate"]) == ("rejected", kind, "22023"), r
    assert r["message"] == (
        f"memory text is of a kind never stored as a memory: {kind.replace('_', ' ')} (memory.forbidden_kinds)"
    )
    assert [e["reason"] for e in events(db, user_a, "memory.write_rejected")] == [kind]


def test_a_forbidden_kind_in_the_value_is_refused(db: Conn, user_a: World) -> None:
    r = remember(db, "notes.key", {"obs": "o vizinho é folgado"}, "Observação sobre a vaga", "pattern")
    assert (r["status"], r["reason"]) == ("rejected", "opinion_about_person"), r


@pytest.mark.parametrize("description", PASSED)
def test_ordinary_memories_pass(db: Conn, user_a: World, description: str) -> None:
    r = remember(db, "notes.ok", "v", description, "preference", seed=hash(description) % 1000)
    assert r["status"] == "created", (description, r)


def test_a_tenant_s_own_patterns_refuse_as_sensitive_data(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    db.execute(
        "select hipocampo.set_tenant_config('memory', %s)", (json.dumps({"sensitive_patterns": ["\\mplaca\\M"]}),)
    )
    r = remember(db, "notes.car", "v", "A placa do carro dele", "pattern")
    assert (r["reason"], r["message"]) == (
        "sensitive_data",
        "memory text carries sensitive data (memory.sensitive_patterns)",
    )


def test_the_kinds_are_the_operator_s(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"memory\.forbidden_kinds is fixed"):
        db.execute("select hipocampo.set_tenant_config('memory', '{\"forbidden_kinds\": {}}')")


def test_switched_off_the_kind_is_stored(db: Conn, user_a: World) -> None:
    """Without the kinds in the config (the operator's global row), the same text is stored: the
    gate reads the config, not constants."""
    user_a.act("service_role")
    db.execute("reset role")
    db.execute(
        "update hipocampo_private.settings set config = jsonb_set(config, '{memory,forbidden_kinds}', '{}')"
        " where tenant_id is null"
    )
    user_a.act("authenticated", user_a.member_a, user_a.tenant_a)
    assert remember(db, "notes.x", "v", "Meu salário é 5 mil", "pattern")["status"] == "created"
