"""effective_config's cache for the transaction (issue 60 §1): the merge runs once per tenant,
knowledge base and caller in a transaction, and a config change is seen by the next call, in the
same transaction (a write to a table the config is merged from empties the cache) or in the
next one (the cache ends with its transaction)."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from ..conftest import World

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]


def top_k(db: Conn, kb: Any = None) -> int:
    row = db.execute("select (hipocampo.effective_config(null, %s) -> 'rag' ->> 'top_k')::int as v", (kb,)).fetchone()
    assert row
    return int(row["v"])


def cached_keys(db: Conn) -> list[str]:
    row = db.execute("select nullif(current_setting('hipocampo.config_cache', true), '')::jsonb as v").fetchone()
    return sorted((row or {}).get("v") or {})


def test_the_merge_is_kept_for_the_transaction_per_tenant_knowledge_base_and_caller(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select set_config('hipocampo.config_cache', '', true)")  # what the world's set-up read
    first = db.execute("select hipocampo.effective_config() as v").fetchone()
    assert len(cached_keys(db)) == 1
    again = db.execute("select hipocampo.effective_config() as v").fetchone()
    assert first == again and len(cached_keys(db)) == 1  # read back, not merged again
    top_k(db, world.kb_a)
    assert len(cached_keys(db)) == 2  # the knowledge base's config is its own entry
    world.act("authenticated", world.admin_a, world.tenant_a)
    top_k(db)
    assert len(cached_keys(db)) == 3  # another caller (other claims) merges for itself


def test_a_change_in_the_same_transaction_is_seen_by_the_next_call(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    before = top_k(db)
    db.execute("select hipocampo.set_tenant_config('rag', %s::jsonb)", (json.dumps({"top_k": before + 1}),))
    assert cached_keys(db) == []
    assert top_k(db) == before + 1
    db.execute("select hipocampo.set_knowledge_base_config(%s, 'rag', '{\"top_k\": 2}'::jsonb)", (world.kb_a,))
    assert top_k(db, world.kb_a) == 2
    # The operator's direct write of the global row (no RPC) empties it too.
    db.execute("reset role")
    db.execute(
        "update hipocampo_private.settings set config = jsonb_set(config, '{rag,max_tokens}', '777')"
        " where tenant_id is null"
    )
    world.act("authenticated", world.admin_a, world.tenant_a)
    row = db.execute("select hipocampo.effective_config() -> 'rag' ->> 'max_tokens' as v").fetchone()
    assert row and row["v"] == "777"


def test_a_knowledge_base_write_that_is_not_its_config_keeps_the_cache(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    top_k(db, world.kb_a)
    assert cached_keys(db)
    db.execute("reset role")
    db.execute(
        "update hipocampo_private.knowledge_bases set status = 'indexing', updated_at = now() where id = %s",
        (world.kb_a,),
    )
    assert cached_keys(db)  # ingestion's status and timestamps are not the config
    db.execute(
        'update hipocampo_private.knowledge_bases set overrides = \'{"rag": {"top_k": 3}}\' where id = %s',
        (world.kb_a,),
    )
    assert cached_keys(db) == []
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert top_k(db, world.kb_a) == 3


def test_a_change_made_elsewhere_is_seen_by_the_session_s_next_transaction(database_url: str) -> None:
    with (
        psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as reader,
        psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as writer,
    ):
        claims = json.dumps({"role": "service_role"})
        for conn in (reader, writer):
            conn.execute("select set_config('request.jwt.claims', %s, false)", (claims,))
            conn.execute("set role service_role")
        create = "select hipocampo.create_tenant('Cache', 'cache-' || md5(random()::text)) as v"
        tenant = writer.execute(create).fetchone()
        assert tenant
        tid = tenant["v"]
        read = "select (hipocampo.effective_config(%s) -> 'rag' ->> 'top_k')::int as v"
        with reader.transaction():
            row = reader.execute(read, (tid,)).fetchone()
            assert row
            before = row["v"]
        patch = json.dumps({"top_k": before + 2})
        writer.execute("select hipocampo.set_tenant_config('rag', %s::jsonb, %s)", (patch, tid))
        with reader.transaction():
            row = reader.execute(read, (tid,)).fetchone()
            assert row and row["v"] == before + 2
            cache = reader.execute("select current_setting('hipocampo.config_cache', true) as v").fetchone()
            assert cache and cache["v"]
        # The cache ended with the transaction.
        after = reader.execute("select coalesce(current_setting('hipocampo.config_cache', true), '') as v").fetchone()
        assert after == {"v": ""}
        writer.execute("select hipocampo.delete_tenant(%s)", (tid,))


def test_a_transaction_over_many_tenants_keeps_at_most_four_entries(db: Conn, world: World) -> None:
    """The maintenance jobs read the config of every tenant in one transaction: the cache starts
    again at its fifth entry instead of growing (each call parses it whole)."""
    world.act("service_role")
    tenants = [world.tenant_a, world.tenant_b]
    for n in range(4):
        row = db.execute(
            "select hipocampo.create_tenant('Many', %s) as v", (f"many-{n}-{world.tenant_a.hex[:6]}",)
        ).fetchone()
        assert row
        tenants.append(row["v"])
    db.execute("select set_config('hipocampo.config_cache', '', true)")
    for n, tenant in enumerate(tenants, start=1):
        db.execute("select hipocampo.effective_config(%s)", (tenant,))
        assert len(cached_keys(db)) == (n - 1) % 4 + 1


def test_the_merge_called_directly_honours_a_tenant_argument_for_service_role_only(db: Conn, world: World) -> None:
    """_merged_config is granted to authenticated (effective_config runs as the caller), so it
    resolves the tenant itself: a member naming another tenant is refused, not served by RLS alone."""
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("savepoint s")
    with pytest.raises(psycopg.Error) as exc:
        db.execute("select hipocampo_private._merged_config(%s, null)", (world.tenant_b,))
    db.execute("rollback to savepoint s")
    assert (exc.value.sqlstate, exc.value.diag.message_primary) == (
        "42501",
        "tenant mismatch: the JWT claims name another tenant",
    )
    own = db.execute("select hipocampo_private._merged_config(null, null) -> 'rag' as v").fetchone()
    assert own and own["v"]
