"""Tenant isolation for every table and RPC: members of A never read or write B; anon sees
nothing; service_role sees all."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from ..conftest import MODEL, World, unit_vector, vec_text

pytestmark = pytest.mark.any_model

TABLES = [
    "tenants",
    "memberships",
    "settings",
    "knowledge_bases",
    "documents",
    "chunks",
    "kb_term_stats",
    "kb_text_stats",
    "kb_postings",
    "chunk_access",
    "ingestion_jobs",
    "data_access_log",
    "memory_consents",
    "memories",
    "memory_events",
    "memory_staging",
    "messages",
    "conversation_summaries",
    "sessions",
    "agent_bindings",
    "answer_audit",
    "answer_feedback",
    "judged_questions",
]
TENANT_COLUMN = {"tenants": "id"}
PERSONAL_TABLES = {"messages", "conversation_summaries", "sessions"}  # rows of one user, tested in test_conversations
# The shared model registry and its calibrations: readable by all, written by service_role.
GLOBAL_TABLES = {"embedding_models", "model_calibrations"}
# No client role reads or writes these: only their RPCs (cache_get/cache_put, take_rate_limit,
# the read RPCs through _record_read).
SERVICE_ONLY_TABLES = {
    "answer_cache",
    "embedding_failures",
    "id_keys",
    "project_secrets",
    "rate_limit_buckets",
    "read_queue",
    "tenant_moves",
}


def test_every_table_is_covered(db: psycopg.Connection[dict[str, Any]]) -> None:
    rows = db.execute(
        "select c.relname from pg_class c join pg_namespace n on n.oid = c.relnamespace "
        "where n.nspname = 'hipocampo_private' and c.relkind = 'r'"
    ).fetchall()
    assert {r["relname"] for r in rows} == set(TABLES) | GLOBAL_TABLES | SERVICE_ONLY_TABLES


@pytest.mark.parametrize("table", sorted(SERVICE_ONLY_TABLES))
@pytest.mark.parametrize("role", ["anon", "authenticated"])
def test_service_only_tables_refuse_client_roles(
    db: psycopg.Connection[dict[str, Any]], world: World, table: str, role: str
) -> None:
    world.act(role, world.admin_a if role == "authenticated" else None, world.tenant_a if role != "anon" else None)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute(f"select 1 from hipocampo_private.{table} limit 1")


def count(db: psycopg.Connection[dict[str, Any]], table: str, tenant: Any) -> int:
    col = TENANT_COLUMN.get(table, "tenant_id")
    row = db.execute(f"select count(*) as n from hipocampo_private.{table} where {col} = %s", (tenant,)).fetchone()
    assert row is not None
    return int(row["n"])


@pytest.mark.parametrize("table", [t for t in TABLES if t not in ("data_access_log",)])
def test_member_of_a_sees_none_of_b(db: psycopg.Connection[dict[str, Any]], world: World, table: str) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    assert count(db, table, world.tenant_b) == 0


@pytest.mark.parametrize(
    "table", ["tenants", "knowledge_bases", "documents", "chunks", "kb_term_stats", "kb_text_stats", "kb_postings"]
)
def test_member_of_a_sees_a(db: psycopg.Connection[dict[str, Any]], world: World, table: str) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    assert count(db, table, world.tenant_a) > 0


def test_claiming_a_tenant_without_membership_gives_nothing(
    db: psycopg.Connection[dict[str, Any]], world: World
) -> None:
    world.act("authenticated", world.outsider, world.tenant_a)
    assert count(db, "chunks", world.tenant_a) == 0
    assert count(db, "documents", world.tenant_a) == 0


@pytest.mark.parametrize("table", TABLES)
def test_anon_is_refused_every_table(db: psycopg.Connection[dict[str, Any]], world: World, table: str) -> None:
    world.act("anon")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute(f"select 1 from hipocampo_private.{table} limit 1")


@pytest.mark.parametrize(
    "table",
    [
        t
        for t in TABLES
        if t
        not in ("settings", "data_access_log", "agent_bindings", "answer_audit", "answer_feedback", "judged_questions")
        and "memor" not in t
        and t not in PERSONAL_TABLES
        and t != "chunk_access"  # written by searches; tests/sql/test_hybrid_search.py
    ],
)
def test_service_role_sees_every_tenant(db: psycopg.Connection[dict[str, Any]], world: World, table: str) -> None:
    world.act("service_role")
    if table == "ingestion_jobs":
        db.execute("select hipocampo.start_ingestion_job(%s, 1)", (world.kb_a,))
        db.execute("select hipocampo.start_ingestion_job(%s, 1)", (world.kb_b,))
    assert count(db, table, world.tenant_a) > 0
    assert count(db, table, world.tenant_b) > 0


def test_member_cannot_insert_into_another_tenant(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute(
            "insert into hipocampo_private.knowledge_bases (tenant_id, name) values (%s, 'evil')",
            (world.tenant_b,),
        )


def test_member_cannot_update_or_delete_another_tenant(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    cur = db.execute("update hipocampo_private.documents set title = 'x' where tenant_id = %s", (world.tenant_b,))
    assert cur.rowcount == 0
    cur = db.execute("delete from hipocampo_private.chunks where tenant_id = %s", (world.tenant_b,))
    assert cur.rowcount == 0
    world.act("service_role")
    assert count(db, "chunks", world.tenant_b) == 2


def test_plain_member_cannot_write_its_own_tenant(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins can create knowledge bases"):
        db.execute("select hipocampo.create_knowledge_base('new')")


def test_rpc_ingest_into_another_tenants_kb_is_unknown(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    doc = {"title": "x", "source_uri": "test://x", "content_hash": "x"}
    chunks = [{"chunk_index": 0, "content": "x", "content_hash": "x", "embedding": unit_vector(1)}]
    with pytest.raises(psycopg.errors.NoDataFound, match=f"unknown knowledge base: {world.kb_b}"):
        db.execute(
            "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
            (world.kb_b, json.dumps(doc), json.dumps(chunks), MODEL),
        )


def test_rpc_search_of_another_tenants_kb_is_unknown(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.NoDataFound, match="unknown knowledge base"):
        db.execute(
            "select * from hipocampo.hybrid_search('prazo', %s::extensions.vector, array[%s]::uuid[])",
            (vec_text(unit_vector(1)), world.kb_b),
        )


def test_rpc_search_without_kb_filter_stays_in_the_tenant(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = db.execute(
        "select kb_id, content from hipocampo.hybrid_search('prazo trancamento', %s::extensions.vector)",
        (vec_text(unit_vector(1)),),
    ).fetchall()
    assert rows and {r["kb_id"] for r in rows} == {world.kb_a}
    assert all("45 dias" not in r["content"] for r in rows)


def test_rpc_tenant_argument_cannot_override_the_jwt(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="tenant mismatch"):
        db.execute("select hipocampo.create_knowledge_base('x', tenant_id => %s)", (world.tenant_b,))


def test_rpc_without_tenant_claim_is_refused(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="no tenant"):
        db.execute("select * from hipocampo.list_knowledge_bases()")


def test_anon_cannot_call_rpcs(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("anon")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute(
            "select * from hipocampo.hybrid_search('prazo', %s::extensions.vector)",
            (vec_text(unit_vector(1)),),
        )


def test_delete_document_of_another_tenant_does_nothing(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    row = db.execute("select hipocampo.delete_document(%s) as ok", (world.doc_b,)).fetchone()
    assert row == {"ok": False}
    world.act("service_role")
    assert count(db, "documents", world.tenant_b) == 1


def test_members_read_only_their_own_memberships(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = db.execute("select user_id from hipocampo_private.memberships").fetchall()
    assert [r["user_id"] for r in rows] == [world.member_a]


def test_access_log_is_admin_only_and_per_tenant(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_b, world.tenant_b)
    db.execute(
        "select * from hipocampo.hybrid_search('prazo', %s::extensions.vector)",
        (vec_text(unit_vector(1)),),
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute(
        "select * from hipocampo.hybrid_search('prazo', %s::extensions.vector)",
        (vec_text(unit_vector(1)),),
    )
    world.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    world.act("authenticated", world.member_a, world.tenant_a)
    assert count(db, "data_access_log", world.tenant_a) == 0  # members cannot read the log
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert count(db, "data_access_log", world.tenant_a) == 1
    assert count(db, "data_access_log", world.tenant_b) == 0


@pytest.mark.parametrize(
    "call",
    [
        "select * from hipocampo.document_hashes(%(kb)s)",
        "select hipocampo.set_knowledge_base_status(%(kb)s, 'error')",
        "select hipocampo.start_ingestion_job(%(kb)s, 1)",
    ],
)
def test_kb_rpcs_treat_another_tenants_kb_as_unknown(
    db: psycopg.Connection[dict[str, Any]], world: World, call: str
) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.NoDataFound) as exc:
        db.execute(call, {"kb": world.kb_b})
    assert exc.value.diag.message_primary == f"unknown knowledge base: {world.kb_b}"


def test_finish_job_of_another_tenant_is_unknown(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("service_role")
    row = db.execute("select hipocampo.start_ingestion_job(%s, 1) as v", (world.kb_b,)).fetchone()
    assert row is not None
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.NoDataFound, match="unknown ingestion job"):
        db.execute("select hipocampo.finish_ingestion_job(%s, 'failed')", (row["v"],))


def test_name_lookups_stay_in_the_tenant(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    # Both tenants have a KB named 'kb': each member resolves its own.
    world.act("authenticated", world.member_a, world.tenant_a)
    assert db.execute("select hipocampo.knowledge_base_id('kb') as v").fetchone() == {"v": world.kb_a}
    assert [r["id"] for r in db.execute("select id from hipocampo.list_knowledge_bases()").fetchall()] == [world.kb_a]
    world.act("authenticated", world.member_b, world.tenant_b)
    assert db.execute("select hipocampo.knowledge_base_id('kb') as v").fetchone() == {"v": world.kb_b}


def test_effective_config_reads_only_the_callers_tenant(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("service_role")
    db.execute(
        'update hipocampo_private.settings set config = \'{"retrieval": {"match_count": 9}}\' where tenant_id = %s',
        (world.tenant_b,),
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    cfg = db.execute("select hipocampo.effective_config() as c").fetchone()
    assert cfg is not None and cfg["c"]["retrieval"]["match_count"] == 5
    db.execute("savepoint s")
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="tenant mismatch"):
        db.execute("select hipocampo.effective_config(%s)", (world.tenant_b,))
    db.execute("rollback to savepoint s")
    world.act("authenticated", world.member_b, world.tenant_b)
    cfg = db.execute("select hipocampo.effective_config() as c").fetchone()
    assert cfg is not None and cfg["c"]["retrieval"]["match_count"] == 9


def test_service_only_rpcs_are_refused_to_users(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    for call in (
        "select hipocampo.create_tenant('x', 'x')",
        "select hipocampo.purge_expired()",
        "select hipocampo.register_embedding_model('m', 'local', 3)",
    ):
        db.execute("savepoint s")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied for function"):
            db.execute(call)
        db.execute("rollback to savepoint s")
