"""Bad arguments get a documented SQLSTATE naming them, not a raw engine error (issue 16 §1.9).
Each case below once raised 54000, 2201W, 22003 or 23502, or (the last ones, found when the fuzzer
took in the admin and the service_role RPCs) 23502 / 22P02."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import MODEL, World, unit_vector, vec_text

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]

V = vec_text(unit_vector(5))
ZERO = vec_text([0.0] * len(unit_vector(5)))


def doc(**over: Any) -> str:
    return json.dumps({"title": "Regimento", "source_uri": "test://r", "content_hash": "h", **over})


CHUNKS = json.dumps(
    [
        {
            "chunk_index": 0,
            "content": "Prazo de 30 dias.",
            "token_count": 4,
            "content_hash": "c",
            "embedding": unit_vector(5),
        }
    ]
)

ZERO_CHUNKS = json.dumps([{**json.loads(CHUNKS)[0], "embedding": [0.0] * len(unit_vector(5))}])

CASES: dict[str, tuple[str, tuple[Any, ...], str, str]] = {
    "source_uri over 2,048 bytes": (
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
        ("kb_a", doc(source_uri="file:///" + "a" * 3000), CHUNKS, MODEL),
        "22001",
        "document.source_uri is 3008 bytes; the limit is 2048",
    ),
    "title over 500 characters": (
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
        ("kb_a", doc(title="t" * 2800), CHUNKS, MODEL),
        "22001",
        "document.title is 2800 characters; the limit is 500",
    ),
    "null embedding_model": (
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
        ("kb_a", doc(), CHUNKS, None),
        "22023",
        "embedding_model must not be null",
    ),
    "trust_score 1e300": (
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
        ("kb_a", doc(trust_score=1e300), CHUNKS, MODEL),
        "22023",
        "invalid document field",
    ),
    "search_memories match_count -1": (
        "select * from hipocampo.search_memories(%s::extensions.vector, match_count => -1)",
        (V,),
        "22023",
        "match_count must be 1..100 (got -1)",
    ),
    "search_memories match_count 2^31-1": (
        "select * from hipocampo.search_memories(%s::extensions.vector, match_count => 2147483647)",
        (V,),
        "22023",
        "match_count must be 1..100",
    ),
    "search_history match_count -1": (
        "select * from hipocampo.search_history('prazo', match_count => -1)",
        (),
        "22023",
        "match_count must be 1..100 (got -1)",
    ),
    "search_history match_count 2^31-1": (
        "select * from hipocampo.search_history('prazo', match_count => 2147483647)",
        (),
        "22023",
        "match_count must be 1..100",
    ),
    "hybrid_search match_count -2^31": (
        "select * from hipocampo.hybrid_search('prazo', %s::extensions.vector, match_count => -2147483648)",
        (V,),
        "22023",
        "match_count must be 1..100",
    ),
    "hybrid_search dense_weight 1e308": (
        "select * from hipocampo.hybrid_search('prazo', %s::extensions.vector, dense_weight => 1e308)",
        (V,),
        "22023",
        "dense_weight and lexical_weight must be 0 or 1e-6..100",
    ),
    "hybrid_search zero query vector": (
        "select * from hipocampo.hybrid_search('prazo', %s::extensions.vector)",
        (ZERO,),
        "22023",
        "query_embedding is a zero vector: its cosine similarity is undefined",
    ),
    "search_memories zero query vector": (
        "select * from hipocampo.search_memories(%s::extensions.vector)",
        (ZERO,),
        "22023",
        "query_embedding is a zero vector: its cosine similarity is undefined",
    ),
    "answer_evidence zero query vector": (
        "select hipocampo.answer_evidence('prazo', %s::extensions.vector, array[%s]::uuid[])",
        (ZERO, "kb_a"),
        "22023",
        "query_embedding is a zero vector: its cosine similarity is undefined",
    ),
    "ingest_document zero embedding": (
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
        ("kb_a", doc(), ZERO_CHUNKS, MODEL),
        "23514",
        'violates check constraint "chunks_embedding_not_zero"',
    ),
    "remember zero embedding": (
        "select hipocampo.remember('prefs.cafe', '1', 'Gosta de café', 'preference', %s::extensions.vector)",
        (ZERO,),
        "23514",
        'violates check constraint "memories_embedding_not_zero"',
    ),
    "add_message zero embedding": (
        "select hipocampo.add_message(%s, 'user', 'oi', embedding => %s::extensions.vector)",
        ("conversation", ZERO),
        "23514",
        'violates check constraint "messages_embedding_not_zero"',
    ),
    "add_message null content": (
        "select hipocampo.add_message(%s, 'user', null)",
        ("conversation",),
        "22023",
        "content must not be null",
    ),
    "add_message null conversation_id": (
        "select hipocampo.add_message(null, 'user', 'oi')",
        (),
        "22023",
        "conversation_id must not be null",
    ),
    "remember intensity 99": (
        "select hipocampo.remember('prefs.cafe', '1', 'Gosta de café', 'preference', %s::extensions.vector,"
        " intensity => 99)",
        (V,),
        "22023",
        "intensity must be 0..10 (got 99)",
    ),
    "remember confidence 1e308": (
        "select hipocampo.remember('prefs.cafe', '1', 'Gosta de café', 'preference', %s::extensions.vector,"
        " confidence => 1e308)",
        (V,),
        "22023",
        "confidence must be 0..1",
    ),
    # Found by the fuzzer over the admin RPCs; 23502 / 22P02 before it.
    "knowledge base without a name": (
        "select hipocampo.create_knowledge_base(%s)",
        (None,),
        "23514",
        "a knowledge base needs a name of 1..200 characters",
    ),
    "knowledge base with an out-of-range override": (
        "select hipocampo.create_knowledge_base('kb-x', overrides => %s::jsonb)",
        ('{"rag": {"top_k": 999}}',),
        "22003",
        "rag.top_k must lie in [1, 20] (got 999)",
    ),
    "knowledge base overrides not of sections": (
        "select hipocampo.create_knowledge_base('kb-x', overrides => %s::jsonb)",
        ("[1]",),
        "22023",
        "overrides must be a json object of config sections",
    ),
    "document expiry as a huge number": (
        "select hipocampo.set_document_metadata(%s, %s::jsonb)",
        ("doc_a", '{"expires_at": -2.87e16}'),
        "22023",
        "invalid document field",
    ),
    "answer audit without a trace id": (
        "select hipocampo.record_answer(null, 'q', 'LLM', null, 0.5, 1, 1, '{}', '{}', null, array[%s]::uuid[])",
        ("kb_a",),
        "22023",
        "trace_id, answer_source and latency_ms are required",
    ),
    "knowledge base status null": (
        "select hipocampo.set_knowledge_base_status(%s, null)",
        ("kb_a",),
        "23514",
        "a knowledge base's status is one of draft, indexing, ready, error",
    ),
    "memory consent neither given nor refused": (
        "select hipocampo.set_memory_consent(null)",
        (),
        "22023",
        "granted must be true or false",
    ),
    "agent binding without a name": (
        "select hipocampo.set_agent_binding(%s, array[%s]::uuid[])",
        (None, "kb_a"),
        "22023",
        "an agent binding's name must match ^[a-z0-9][a-z0-9_.-]{0,62}$ (got null)",
    ),
    # Found by the fuzzer over the service_role RPCs; 22P02 before it.
    "memory embedding that is not a vector": (
        "select hipocampo.set_memory_embeddings(%s::jsonb)",
        ('[{"memory_id": "00000000-0000-0000-0000-000000000001", "embedding": [0.0, null]}]',),
        "22023",
        "invalid item 00000000-0000-0000-0000-000000000001: ",  # pgvector words the rest by version
    ),
}

# As service_role: 23502 or 22P02 before it.
SERVICE_CASES: dict[str, tuple[str, tuple[Any, ...], str, str]] = {
    "answer cached for no knowledge base": (
        "select hipocampo.cache_put('Qual o prazo?', '{}'::uuid[], %s::jsonb, tenant_id => %s)",
        ('{"answer": "30 dias", "sources": []}', "tenant_a"),
        "22023",
        "kb_ids must name at least one knowledge base (and no null)",
    ),
    "answer cached without sources": (
        "select hipocampo.cache_put('Qual o prazo?', array[gen_random_uuid()], %s::jsonb, tenant_id => %s)",
        ('{"answer": "30 dias"}', "tenant_a"),
        "22023",
        "answer must be a json object with sources",
    ),
    "answer cached citing a chunk id that is not a number": (
        "select hipocampo.cache_put('Qual o prazo?', array[gen_random_uuid()], %s::jsonb, tenant_id => %s)",
        ('{"answer": "30 dias", "sources": [{"chunk_id": "abc"}]}', "tenant_a"),
        "22023",
        "each source needs n, document, document_id, source_uri, chunk_id, excerpt and score",
    ),
    "tenant without a slug": (
        "select hipocampo.create_tenant('Sol', null)",
        (),
        "23514",
        "a tenant needs a name of 1..200 characters and a slug matching",
    ),
    "member without a user": (
        "select hipocampo.add_member(%s, null)",
        ("tenant_a",),
        "22023",
        "tenant_id and user_id are required",
    ),
    "member without a role": (
        "select hipocampo.add_member(%s, gen_random_uuid(), null)",
        ("tenant_a",),
        "23514",
        "role must be admin or member",
    ),
    "embedding model without dimensions": (
        "select hipocampo.register_embedding_model('fuzz-model', 'local', null)",
        (),
        "23514",
        "an embedding model needs a name, a provider (local | openai | azure) and dims 1..2000",
    ),
    "backfill cursor of the wrong kind": (
        "select * from hipocampo.rows_to_embed('chunks', 10, %s)",
        ("00000000-0000-0000-0000-000000000001",),
        "22023",
        "after_id of chunks must be an id as rows_to_embed gives it (got 00000000-0000-0000-0000-000000000001)",
    ),
    "backfilled message id that is a uuid": (
        "select hipocampo.set_row_embeddings('messages', %s::jsonb)",
        (json.dumps([{"id": "00000000-0000-0000-0000-000000000001", "embedding": V}]),),
        "22023",
        "invalid item 00000000-0000-0000-0000-000000000001: invalid input syntax for type bigint",
    ),
    "backfilled embedding that is not a vector": (
        "select hipocampo.set_row_embeddings('memories', %s::jsonb)",
        ('[{"id": "x", "embedding": {}}]',),
        "22023",
        "invalid item x: ",  # pgvector words the rest by version
    ),
    "sentence embedding that is not a vector": (
        "select hipocampo.set_chunk_sentences(%s::jsonb)",
        ('[{"id": "1", "sentence_embeddings": [[null]]}]',),
        "22023",
        "invalid item 1: ",  # pgvector words the rest by version
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_arguments_are_named(db: Conn, world: World, case: str) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    sql, params, sqlstate, message = CASES[case]
    named = {"kb_a": world.kb_a, "doc_a": world.doc_a, "conversation": uuid.uuid4()}
    values = tuple(str(named[p]) if isinstance(p, str) and p in named else p for p in params)
    with pytest.raises(psycopg.Error) as err, db.transaction():
        db.execute(sql, values)
    assert (err.value.sqlstate, message in str(err.value)) == (sqlstate, True), str(err.value)


@pytest.mark.parametrize("case", sorted(SERVICE_CASES))
def test_bad_service_arguments_are_named(db: Conn, world: World, case: str) -> None:
    world.act("service_role")
    sql, params, sqlstate, message = SERVICE_CASES[case]
    values = tuple(str(world.tenant_a) if p == "tenant_a" else p for p in params)
    with pytest.raises(psycopg.Error) as err, db.transaction():
        db.execute(sql, values)
    assert (err.value.sqlstate, message in str(err.value)) == (sqlstate, True), str(err.value)


def test_the_answer_helpers_read_only_numbers_as_numbers(db: Conn, world: World) -> None:
    """extractive_answer and answer_sources document no errors: in extractive_answer a support that
    is not a number counts as 0 (it was 22P02), evidence that is not an array quotes nothing (it
    was 22023)."""
    items = [{"n": 1, "content": "Prazo de 30 dias.", "support": "alta"}, {"n": 2, "content": "Multa.", "support": 0.9}]
    row = db.execute("select hipocampo.extractive_answer(%s::jsonb, 0.5) as v", (json.dumps(items),)).fetchone()
    assert row == {"v": "Multa. [2]"}
    row = db.execute("""select hipocampo.extractive_answer('{"n": 1}', 0.5) as v""").fetchone()
    assert row == {"v": None}
    # answer_sources likewise: n, chunk_id, score and support are read only where they are numbers
    # (22P02 before), and a marker of more than 9 digits names no item (22003 before).
    items = [{"n": "um", "content": "Prazo.", "support": "alta"}, {"n": 1, "content": "Multa.", "chunk_id": 1.5}]
    row = db.execute(
        "select hipocampo.answer_sources('Veja [99999999999] e [1].', %s::jsonb) as v", (json.dumps(items),)
    ).fetchone()
    assert row is not None
    assert [(x["n"], x["chunk_id"], x["support"], x["excerpt"]) for x in row["v"]] == [(1, None, 0, "Multa.")]


def test_history_search_reads_its_query_limit_from_config(db: Conn, world: World) -> None:
    """conversations.max_query_chars (2,000), not a literal."""
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("""select hipocampo.set_tenant_config('conversations', '{"max_query_chars": 10}')""")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"1\.\.10 characters"), db.transaction():
        db.execute("select * from hipocampo.search_history('uma pergunta longa demais')")
    assert db.execute("select count(*) as n from hipocampo.search_history('curta')").fetchone() == {"n": 0}
