"""The config rules on every write path (issue 44 §5): a tenant admin may write knowledge_bases
and agent_bindings rows directly (RLS lets them, as PostgREST would), so the rules of the RPCs
(operator-only keys and secret names, known keys, types, ranges, keys tuned per model, knowledge
bases of the tenant) are checked where the row is written, by triggers; the operator
(service_role) is not held to them, and a key the operator set stays when an admin changes
another."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import MODEL, World

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]


def update_kb(db: Conn, kb: uuid.UUID, column: str, value: Any) -> None:
    db.execute(
        f"update hipocampo_private.knowledge_bases set {column} = %s::jsonb where id = %s", (json.dumps(value), kb)
    )


@pytest.mark.parametrize(
    ("column", "value", "sqlstate", "message"),
    [
        (
            "overrides",
            {"rag": {"api_key_secret": "SUPABASE_SERVICE_ROLE_KEY"}},
            "42501",
            "rag.api_key_secret names a secret of the server: only the operator (service_role) sets it",
        ),
        ("overrides", {"rag": {"provider": "openai"}}, "42501", "rag.provider is the operator's to set"),
        ("overrides", {"rag": {"top_k": 500}}, "22003", "rag.top_k must lie in"),
        ("overrides", {"rag": {"no_such_key": 1}}, "22023", "unknown key rag.no_such_key"),
        ("overrides", {"rag": "everything"}, "22023", "a config section must be a json object"),
        ("tuning", {MODEL: {"rag": {"min_confidence": -5}}}, "22003", "rag.min_confidence must lie in"),
        ("tuning", {MODEL: {"rag": {"min_score": "abc"}}}, "22023", "rag.min_score must be a number"),
        ("tuning", {MODEL: {"rag": {"top_k": 3}}}, "22023", "rag.top_k is not tuned per model"),
        ("tuning", {"no-such-model": {"rag": {"min_score": 0.3}}}, "P0002", "unknown embedding model: no-such-model"),
    ],
)
def test_a_direct_write_of_a_knowledge_base_follows_the_rpc_rules(
    db: Conn, world: World, column: str, value: Any, sqlstate: str, message: str
) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.Error) as exc, db.transaction():
        update_kb(db, world.kb_a, column, value)
    assert exc.value.sqlstate == sqlstate and message in str(exc.value.diag.message_primary)


def test_the_operator_s_keys_stay_while_an_admin_changes_others(db: Conn, world: World) -> None:
    world.act("service_role")
    update_kb(db, world.kb_a, "overrides", {"rag": {"provider": "openai", "chat_model": "gpt-4o"}})
    world.act("authenticated", world.admin_a, world.tenant_a)
    update_kb(db, world.kb_a, "overrides", {"rag": {"provider": "openai", "chat_model": "gpt-4o", "top_k": 6}})
    assert db.execute(
        "select hipocampo.set_knowledge_base_config(%s, 'rag', '{\"min_confidence\": 0.7}') as v", (world.kb_a,)
    ).fetchone() == {"v": {"provider": "openai", "chat_model": "gpt-4o", "top_k": 6, "min_confidence": 0.7}}
    # Removing the operator's key is changing it.
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match=r"rag\.provider is the operator's"),
        db.transaction(),
    ):
        update_kb(db, world.kb_a, "overrides", {})
    update_kb(db, world.kb_a, "tuning", {MODEL: {"rag": {"min_confidence": 0.55}}})  # a valid tuning is written


def test_an_agent_binding_names_only_knowledge_bases_of_its_tenant(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    insert = (
        "insert into hipocampo_private.agent_bindings (tenant_id, name, kb_ids, rag_overrides)"
        " values (%s, %s, %s, %s::jsonb)"
    )
    with pytest.raises(psycopg.errors.NoDataFound, match=f"unknown knowledge base: {world.kb_b}"), db.transaction():
        db.execute(insert, (world.tenant_a, "portaria", [world.kb_a, world.kb_b], "{}"))
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match=r"rag\.provider is the operator's"),
        db.transaction(),
    ):
        db.execute(insert, (world.tenant_a, "portaria", [world.kb_a], '{"provider": "openai"}'))
    db.execute(insert, (world.tenant_a, "portaria", [world.kb_a], '{"top_k": 3}'))
    with pytest.raises(psycopg.errors.NoDataFound), db.transaction():
        db.execute("update hipocampo_private.agent_bindings set kb_ids = %s where name = 'portaria'", ([world.kb_b],))


def test_create_knowledge_base_names_an_operator_only_key_as_such(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with (
        pytest.raises(psycopg.errors.InsufficientPrivilege, match=r"rag\.provider is the operator's"),
        db.transaction(),
    ):
        db.execute("""select hipocampo.create_knowledge_base('x', overrides => '{"rag": {"provider": "openai"}}')""")
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins can create"), db.transaction():
        db.execute("select hipocampo.create_knowledge_base('x')")
