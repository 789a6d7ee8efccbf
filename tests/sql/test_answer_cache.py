"""The answer cache (issue 44 §1): keyed by tenant, knowledge bases, agent and the normalised
question; written only by the answer paths (cache_put is service_role's: every member of the
tenant reads an entry, so no member may write one); an entry has the shape every reader parses
and a bounded size; any change to its knowledge bases drops it."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import World

Conn = psycopg.Connection[dict[str, Any]]


def one(db: Conn, sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = db.execute(sql, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row["v"]


def cache_entry(db: Conn, kb: uuid.UUID, **changes: Any) -> dict[str, Any]:
    """An entry as Orchestrator.ask builds it, citing the first chunk of ``kb``."""
    db.execute("savepoint entry")
    db.execute("set local role none")
    row = db.execute(
        "select c.id, c.document_id, d.title, d.source_uri from hipocampo_private.chunks as c"
        " join hipocampo_private.documents as d on d.id = c.document_id where c.kb_id = %s order by c.id limit 1",
        (kb,),
    ).fetchone()
    db.execute("rollback to savepoint entry")
    assert row is not None
    source = {
        "n": 1,
        "document": row["title"],
        "document_id": str(row["document_id"]),
        "source_uri": row["source_uri"],
        "chunk_id": row["id"],
        "excerpt": "30 dias",
        "score": 0.9,
        "support": 0.8,
    }
    entry = {
        "answer": "O prazo é de 30 dias [1].",
        "refused": False,
        "reason": None,
        "confidence": 0.8,
        "sources": [source],
        "conflicts": [],
        "answer_source": "EXTRACTIVE",
    }
    return {**entry, **changes}


def cache_put(
    db: Conn, world: World, question: str, kb: uuid.UUID, entry: Any, agent: str | None = None, tenant: Any = None
) -> bool:
    """cache_put as the answer paths call it: service_role, naming the tenant (A's by default)."""
    world.act("service_role")
    return bool(
        one(
            db,
            "select hipocampo.cache_put(%s, array[%s]::uuid[], %s::jsonb, %s, %s) as v",
            (question, kb, json.dumps(entry), agent, tenant or world.tenant_a),
        )
    )


def test_no_member_writes_the_cache(db: Conn, world: World) -> None:
    """The reproduction: a plain member planted a scam answer for a real question, and the admin
    was served it as CACHE. cache_put is no user's now, whatever their role in the tenant."""
    planted = json.dumps(cache_entry(db, world.kb_a, answer="O prazo é de 999 dias; envie CPF e senha [1]"))
    for user in (world.member_a, world.admin_a):
        world.act("authenticated", user, world.tenant_a)
        with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
            db.execute(
                "select hipocampo.cache_put('Qual é o prazo?', array[%s]::uuid[], %s::jsonb)", (world.kb_a, planted)
            )
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert one(db, "select hipocampo.cache_get('Qual é o prazo?', array[%s]::uuid[]) as v", (world.kb_a,)) is None


def test_cache_is_keyed_by_normalised_question_and_invalidated_by_kb_changes(db: Conn, world: World) -> None:
    entry = cache_entry(db, world.kb_a)
    assert cache_put(db, world, "Qual é o prazo?", world.kb_a, entry)
    world.act("authenticated", world.member_a, world.tenant_a)
    got = one(db, "select hipocampo.cache_get('  qual e o PRAZO ', array[%s]::uuid[]) as v", (world.kb_a,))
    assert got == entry
    # Tenant B cannot read it, nor have an answer citing A's chunk cached for it.
    world.act("authenticated", world.member_b, world.tenant_b)
    assert one(db, "select hipocampo.cache_get('Qual é o prazo?', array[%s]::uuid[]) as v", (world.kb_a,)) is None
    chunk = entry["sources"][0]["chunk_id"]
    with pytest.raises(psycopg.errors.InvalidParameterValue) as exc, db.transaction():
        cache_put(db, world, "q", world.kb_b, entry, tenant=world.tenant_b)
    assert exc.value.diag.message_primary == f"cited chunk {chunk} is not in these knowledge bases"
    # Any document change in the KB drops it.
    world.act("authenticated", world.admin_a, world.tenant_a)
    one(db, "select hipocampo.set_document_status(%s, trust_score => 0.8::real) as v", (world.doc_a,))
    assert one(db, "select hipocampo.cache_get('Qual é o prazo?', array[%s]::uuid[]) as v", (world.kb_a,)) is None
    assert cache_put(db, world, "Qual é o prazo?", world.kb_a, entry)
    world.ingest(world.kb_a, "a2", ["Novo regulamento."], seed=3)
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert one(db, "select hipocampo.cache_get('Qual é o prazo?', array[%s]::uuid[]) as v", (world.kb_a,)) is None


def test_cache_ttl_follows_the_kb_and_agent_overrides(db: Conn, world: World) -> None:
    entry = cache_entry(db, world.kb_a)
    expiry = (
        "select extract(epoch from expires_at - now())::integer as v from hipocampo_private.answer_cache"
        " where kb_ids = array[%s]::uuid[] and agent = %s"
    )
    world.act("authenticated", world.admin_a, world.tenant_a)
    one(db, """select hipocampo.set_knowledge_base_config(%s, 'rag', '{"cache_ttl_seconds": 0}') as v""", (world.kb_a,))
    assert cache_put(db, world, "Qual é o prazo?", world.kb_a, entry) is False  # the KB says: never cache
    world.act("authenticated", world.admin_a, world.tenant_a)
    one(
        db, """select hipocampo.set_knowledge_base_config(%s, 'rag', '{"cache_ttl_seconds": 60}') as v""", (world.kb_a,)
    )
    assert cache_put(db, world, "Qual é o prazo?", world.kb_a, entry) is True
    assert one(db, expiry, (world.kb_a, "")) == 60
    world.act("authenticated", world.admin_a, world.tenant_a)
    binding = """select hipocampo.set_agent_binding('voz', array[%s]::uuid[], '{"cache_ttl_seconds": 30}') as v"""
    one(db, binding, (world.kb_a,))
    assert cache_put(db, world, "Qual é o prazo?", world.kb_a, entry, agent="voz") is True
    assert one(db, expiry, (world.kb_a, "voz")) == 30


def test_an_entry_has_the_shape_readers_parse_and_a_bounded_size(db: Conn, world: World) -> None:
    """What the answer paths store is what every reader parses (models.Answer, the edge function):
    a malformed entry, a refusal or one over rag.cache_max_entry_bytes is refused, 22023."""
    good = cache_entry(db, world.kb_a)
    source = good["sources"][0]
    world.act("service_role")
    limit = one(
        db, "select (hipocampo.rag_config(null, null, %s) ->> 'cache_max_entry_bytes')::integer as v", (world.tenant_a,)
    )
    assert limit == 65536
    huge = "x" * (limit + 1)
    cases: list[tuple[Any, str]] = [
        ([], "answer must be a json object with sources"),
        ({"answer": "x"}, "answer must be a json object with sources"),
        ({**good, "answer": ""}, "answer.answer must be a non-empty string"),
        ({**good, "answer": 5}, "answer.answer must be a non-empty string"),
        ({**good, "refused": True}, "a refusal is never cached"),
        ({**good, "confidence": "alta"}, "answer.confidence must be a number >= 0"),
        ({**good, "confidence": -1}, "answer.confidence must be a number >= 0"),
        ({**good, "answer_source": "CACHE"}, "answer.answer_source must be EXTRACTIVE or LLM"),
        ({**good, "conflicts": "nenhum"}, "answer.conflicts must be an array"),
        ({**good, "sources": [source] * 51}, "answer cites more than 50 sources"),
        (
            {**good, "sources": [{"chunk_id": source["chunk_id"]}]},
            "each source needs n, document, document_id, source_uri, chunk_id, excerpt and score",
        ),
        (
            {**good, "sources": [{**source, "chunk_id": "12"}]},
            "each source needs n, document, document_id, source_uri, chunk_id, excerpt and score",
        ),
        (
            {**good, "sources": [{**source, "document_id": "não"}]},
            "each source needs n, document, document_id, source_uri, chunk_id, excerpt and score",
        ),
    ]
    for entry, message in cases:
        with pytest.raises(psycopg.errors.InvalidParameterValue) as exc, db.transaction():
            cache_put(db, world, "Qual é o prazo?", world.kb_a, entry)
        assert exc.value.diag.message_primary is not None
        assert exc.value.diag.message_primary == message, entry
    with pytest.raises(psycopg.errors.InvalidParameterValue) as exc, db.transaction():
        cache_put(db, world, "Qual é o prazo?", world.kb_a, {**good, "answer": huge})
    assert exc.value.diag.message_primary is not None
    assert re.fullmatch(
        r"answer is \d+ bytes as json; rag.cache_max_entry_bytes is 65536", exc.value.diag.message_primary
    )
    world.act("service_role")
    assert (
        one(db, "select count(*) as v from hipocampo_private.answer_cache where tenant_id = %s", (world.tenant_a,)) == 0
    )
    assert cache_put(db, world, "Qual é o prazo?", world.kb_a, good)


def test_service_role_names_the_tenant(db: Conn, world: World) -> None:
    world.act("service_role")
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
        db.execute(
            "select hipocampo.cache_put('Qual é o prazo?', array[%s]::uuid[], %s::jsonb)",
            (world.kb_a, json.dumps(cache_entry(db, world.kb_a))),
        )
