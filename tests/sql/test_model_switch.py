"""A model switch carries memories and history along: rows_to_embed lists the
rows search cannot read with the active model, set_row_embeddings stores their new vectors, and
drop_embedding_model refuses while the old model still embeds any of them."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import MODEL, World, calibrate, unit_vector, vec_text
from .memory_helpers import remember
from .test_conversations import Conn, add
from .test_history_tokens import bits, set_tokens
from .test_hybrid_search import explain_nested_statements, logged_plans

OTHER = "other-model-384"


def listed(db: Conn, kind: str, mine: set[str]) -> list[tuple[str, str]]:
    rows = db.execute("select row_id, content from hipocampo.rows_to_embed(%s, 1000)", (kind,)).fetchall()
    return [(r["row_id"], r["content"]) for r in rows if r["row_id"] in mine]


def set_embeddings(db: Conn, kind: str, items: list[tuple[Any, int]]) -> int:
    payload = json.dumps([{"id": str(i), "embedding": unit_vector(seed)} for i, seed in items])
    row = db.execute("select hipocampo.set_row_embeddings(%s, %s::jsonb) as n", (kind, payload)).fetchone()
    assert row is not None
    return int(row["n"])


def test_a_model_switch_reembeds_memories_staging_and_messages(db: Conn, user_a: World) -> None:
    old = remember(db, "prefs.tom", "formal", "Prefere tom formal", seed=1)
    new = remember(db, "prefs.tom", "informal", "Prefere tom informal", seed=2)
    assert new["status"] == "updated"
    staged = remember(db, "projects.horta", "tomates", "Planta tomates na varanda", "projects", seed=3, intensity=3)
    assert staged["status"] == "staged"
    conv = uuid.uuid4()
    embedded = add(db, conv, "user", "oi, tudo bem?", embedding=vec_text(unit_vector(4)))
    set_tokens(db, embedded, [7], [bits(7)])
    bare = add(db, conv, "user", "mensagem sem vetor (edge function)")
    mine = {str(old["memory_id"]), str(new["memory_id"]), str(staged["memory_id"]), str(embedded), str(bare)}
    user_a.act("service_role")
    # With the old model active, only the message without a vector is missing one.
    assert listed(db, "messages", mine) == [(str(bare), "mensagem sem vetor (edge function)")]
    assert listed(db, "memories", mine) == [] and listed(db, "memory_staging", mine) == []

    calibrate(db, OTHER)
    db.execute("select hipocampo.register_embedding_model(%s, 'local', 384, true)", (OTHER,))
    # The deprecated memory is history no search reads: not listed.
    assert listed(db, "memories", mine) == [(str(new["memory_id"]), "Prefere tom informal")]
    assert listed(db, "memory_staging", mine) == [(str(staged["memory_id"]), "Planta tomates na varanda")]
    assert listed(db, "messages", mine) == [
        (str(embedded), "oi, tudo bem?"),
        (str(bare), "mensagem sem vetor (edge function)"),
    ]
    after = db.execute("select row_id from hipocampo.rows_to_embed('messages', 1000, %s)", (str(embedded),))
    assert str(embedded) not in [r["row_id"] for r in after.fetchall()]

    db.execute("savepoint s")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as exc:
        db.execute("select hipocampo.drop_embedding_model(%s)", (MODEL,))
    db.execute("rollback to savepoint s")
    assert exc.value.diag.message_primary is not None
    assert exc.value.diag.message_primary.startswith(f"model {MODEL} still embeds ")
    assert exc.value.diag.message_primary.endswith(
        "messages that the active model does not: embed them with the active model first (hipocampo db embed-missing)"
    )

    assert set_embeddings(db, "memories", [(new["memory_id"], 10)]) == 1
    assert set_embeddings(db, "memories", [(new["memory_id"], 11)]) == 0  # already of the active model
    assert set_embeddings(db, "memory_staging", [(staged["memory_id"], 12)]) == 1
    assert set_embeddings(db, "messages", [(embedded, 13), (bare, 14)]) == 2
    rows = db.execute(
        "select id, embedding_model, token_ids, token_bits from hipocampo_private.messages where id = any(%s) "
        "order by id",
        ([embedded, bare],),
    ).fetchall()
    # A message's tokens belong to its old embedding's model: cleared with it.
    assert [(r["embedding_model"], r["token_ids"], r["token_bits"]) for r in rows] == [(OTHER, None, None)] * 2
    assert all(listed(db, kind, mine) == [] for kind in ("memories", "memory_staging", "messages"))
    got = db.execute(
        "select (embedding operator(extensions.<=>) %s::extensions.vector) < 1e-6 as same "
        "from hipocampo_private.memories where id = %s",
        (vec_text(unit_vector(10)), new["memory_id"]),
    ).fetchone()
    assert got == {"same": True}

    # The old model goes once nothing else needs it (the other tests' rows left out here); the
    # deprecated memory loses its vector of that model.
    db.execute("reset role")
    for table in ("memories", "memory_staging", "messages"):
        db.execute(
            f"delete from hipocampo_private.{table} where embedding_model = %s and tenant_id <> %s",
            (MODEL, user_a.tenant_a),
        )
    # (and every chunk of the old model: none has a row of the new one here, and a drop never
    # deletes a chunk's only text; test_a_drop_never_deletes_text_… below)
    db.execute("delete from hipocampo_private.chunks where embedding_model = %s", (MODEL,))
    user_a.act("service_role")
    db.execute("select hipocampo.drop_embedding_model(%s)", (MODEL,))
    old_row = db.execute(
        "select embedding, embedding_model from hipocampo_private.memories where id = %s", (old["memory_id"],)
    ).fetchone()
    assert old_row == {"embedding": None, "embedding_model": None}


def test_a_model_switch_reembeds_chunks_beside_their_source(db: Conn, world: World) -> None:
    world.act("service_role")
    before = db.execute(
        "select c.id, c.tenant_id, c.document_id, c.chunk_index, c.content,"
        " coalesce(c.metadata ->> 'title', d.title) as title"
        " from hipocampo_private.chunks as c join hipocampo_private.documents as d on d.id = c.document_id"
        " where c.embedding_model = %s order by c.id",
        (MODEL,),
    ).fetchall()
    mine = {str(r["id"]) for r in before}
    assert len(mine) >= 4 and listed(db, "chunks", mine) == []
    calibrate(db, OTHER)
    db.execute("select hipocampo.register_embedding_model(%s, 'local', 384, true)", (OTHER,))
    # The text ingestion embeds: the contextual header (metadata.title: the title and the heading
    # path; the document's title without one), a newline, the content.
    assert listed(db, "chunks", mine) == [(str(r["id"]), f"{r['title']}\n{r['content']}") for r in before]
    failed = str(before[0]["id"])
    db.execute("select hipocampo.record_embedding_failure('chunks', array[%s], 'HTTP 503')", (failed,))
    assert failed not in dict(listed(db, "chunks", mine))
    queue = db.execute("select waiting, retrying from hipocampo.embedding_queue where kind = 'chunks'").fetchone()
    assert queue is not None and queue["waiting"] >= len(mine) and queue["retrying"] == 1
    items = [(r["id"], 10 + n) for n, r in enumerate(before)]
    assert set_embeddings(db, "chunks", items) == len(before)
    assert set_embeddings(db, "chunks", items) == 0  # the active model's row is there: kept
    copies = db.execute(
        "select id, tenant_id, document_id, chunk_index, content from hipocampo_private.chunks"
        " where embedding_model = %s order by id",
        (OTHER,),
    ).fetchall()
    assert sorted(
        (str(r["document_id"]), r["chunk_index"], r["content"], str(r["tenant_id"])) for r in copies
    ) == sorted(
        (str(r["document_id"]), r["chunk_index"], r["content"], str(r["tenant_id"])) for r in before
    )  # (rows written by one statement: their ids order them by millisecond only)
    assert listed(db, "chunks", mine) == []
    assert db.execute(
        "select count(*) as n from hipocampo_private.embedding_failures where row_id = any(%s)", (list(mine),)
    ).fetchone() == {"n": 0}
    # Search reads the new rows with the new model, postings and statistics included.
    world.act("authenticated", world.member_a, world.tenant_a)
    found = db.execute(
        "select chunk_id, lexical_score from hipocampo.hybrid_search(query_text => %s,"
        " query_embedding => %s::extensions.vector, min_similarity => -1, match_count => 100)",
        (before[0]["content"].split()[0], vec_text(unit_vector(10))),
    ).fetchall()
    new_ids = {r["id"] for r in copies if r["tenant_id"] == world.tenant_a}
    assert found and {r["chunk_id"] for r in found} <= new_ids
    assert any(r["lexical_score"] for r in found)


def test_errors_are_clear(db: Conn, user_a: World) -> None:
    user_a.act("service_role")
    cases = [
        (
            "select * from hipocampo.rows_to_embed('documents')",
            "kind must be chunks, memories, memory_staging or messages",
        ),
        ("select * from hipocampo.rows_to_embed('messages', 0)", "batch_size must be 1..1000"),
        (
            "select hipocampo.set_row_embeddings('documents', '[]')",
            "kind must be chunks, memories, memory_staging or messages",
        ),
        (
            "select hipocampo.requeue_embedding_failures('documents')",
            "kind must be chunks, memories, memory_staging or messages",
        ),
        ("select hipocampo.set_row_embeddings('messages', '{}')", "items must be a json array"),
    ]
    for sql, message in cases:
        with pytest.raises(psycopg.errors.InvalidParameterValue) as exc, db.transaction():
            db.execute(sql)
        assert exc.value.diag.message_primary == message
    with pytest.raises(psycopg.errors.DataException) as dims, db.transaction():
        db.execute("""select hipocampo.set_row_embeddings('messages', '[{"id": "1", "embedding": [1, 0]}]')""")
    assert dims.value.diag.message_primary == f"embedding has 2 dimensions; model {MODEL} expects 384"
    db.execute("reset role")
    db.execute("update hipocampo_private.embedding_models set active = false")
    user_a.act("service_role")
    for sql in (
        "select * from hipocampo.rows_to_embed('messages')",
        "select hipocampo.set_row_embeddings('messages', '[]')",
    ):
        with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as exc, db.transaction():
            db.execute(sql)
        assert exc.value.diag.message_primary == "no embedding model is active"
    # Members cannot run either.
    user_a.act("authenticated", user_a.member_a, user_a.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
        db.execute("select * from hipocampo.rows_to_embed('messages')")


def test_a_drop_never_deletes_text_and_search_answers_through_the_switch(db: Conn, world: World) -> None:
    """Issue 44 §2: activating a new model and dropping the old one before the backfill deleted
    every chunk of a knowledge base (a chunk's row holds the only copy of its text). The drop is
    refused while any chunk lacks the active model's row; until a knowledge base is complete under
    the new model, search reads it with the old one, then moves, knowledge base by knowledge base."""
    db.execute("reset role")
    # Only this world's rows of the old model (the other tests' are left out, in this transaction).
    db.execute(
        "delete from hipocampo_private.chunks where embedding_model = %s and tenant_id <> all(%s)",
        (MODEL, [world.tenant_a, world.tenant_b]),
    )
    for table in ("memories", "memory_staging", "messages"):
        db.execute(f"delete from hipocampo_private.{table} where embedding_model = %s", (MODEL,))
    chunks = db.execute(
        "select id, tenant_id, kb_id, document_id, content, embedding::text as vector"
        " from hipocampo_private.chunks where embedding_model = %s order by id",
        (MODEL,),
    ).fetchall()
    assert {r["kb_id"] for r in chunks} == {world.kb_a, world.kb_b}
    first_a = next(r for r in chunks if r["kb_id"] == world.kb_a)
    search = (
        "select chunk_id from hipocampo.hybrid_search(query_text => %s, query_embedding => %s::extensions.vector,"
        " kb_ids => array[%s]::uuid[], match_count => 1)"
    )
    model_of = "select hipocampo.search_model(array[%s]::uuid[]) as v"

    world.act("service_role")
    calibrate(db, OTHER)
    db.execute("select hipocampo.register_embedding_model(%s, 'local', 384, true)", (OTHER,))
    # Activated, nothing filled: kb_a still answers from the old model.
    world.act("authenticated", world.member_a, world.tenant_a)
    assert one(db, model_of, (world.kb_a,)) == MODEL
    hits = db.execute(search, (first_a["content"], first_a["vector"], world.kb_a)).fetchall()
    assert [h["chunk_id"] for h in hits] == [first_a["id"]]

    world.act("service_role")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as exc, db.transaction():
        db.execute("select hipocampo.drop_embedding_model(%s)", (MODEL,))
    assert exc.value.diag.message_primary == (
        f"model {MODEL} still embeds {len(chunks)} chunks, 0 active memories, 0 staged memories and 0 messages"
        " that the active model does not: embed them with the active model first (hipocampo db embed-missing)"
    )

    # kb_a filled: it moves to the new model; kb_b, not yet filled, stays on the old one.
    of_a = [(r["id"], 20 + n) for n, r in enumerate(chunks) if r["kb_id"] == world.kb_a]
    assert set_embeddings(db, "chunks", of_a) == len(of_a)
    world.act("authenticated", world.member_a, world.tenant_a)
    assert one(db, model_of, (world.kb_a,)) == OTHER
    moved = db.execute(search, (first_a["content"], vec_text(unit_vector(20)), world.kb_a)).fetchall()
    moved_id = one(
        db,
        "select id as v from hipocampo_private.chunks where document_id = %s and content = %s and embedding_model = %s",
        (first_a["document_id"], first_a["content"], OTHER),
    )
    assert [h["chunk_id"] for h in moved] == [moved_id]
    world.act("authenticated", world.member_b, world.tenant_b)
    assert one(db, model_of, (world.kb_b,)) == MODEL

    # Everything filled: the drop goes through and every document keeps its text.
    world.act("service_role")
    rest = [(r["id"], 40 + n) for n, r in enumerate(chunks) if r["kb_id"] != world.kb_a]
    assert set_embeddings(db, "chunks", rest) == len(rest)
    assert one(db, "select hipocampo.drop_embedding_model(%s) as v", (MODEL,)) == len(chunks)
    kept = db.execute(
        "select document_id, content from hipocampo_private.chunks where document_id = any(%s) order by id",
        (list({r["document_id"] for r in chunks}),),
    ).fetchall()
    assert sorted((r["document_id"], r["content"]) for r in kept) == sorted(
        (r["document_id"], r["content"]) for r in chunks
    )
    world.act("authenticated", world.member_b, world.tenant_b)
    assert one(db, model_of, (world.kb_b,)) == OTHER


def one(db: Conn, sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = db.execute(sql, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row["v"]


def test_a_scope_of_one_models_chunks_is_not_scanned(db: Conn, world: World) -> None:
    """A database that has known two models (e5 the default, MiniLM switched to, or back): when
    every chunk of the scope has the candidate model by kb_text_stats, _search_model returns it
    without reading the chunks (every search and every ask scanned the scope's chunks for a twin:
    ~1 ms on FaQuAD, linear in the scope)."""
    world.act("service_role")
    calibrate(db, OTHER)
    db.execute("select hipocampo.register_embedding_model(%s, 'local', 384, false)", (OTHER,))
    explain_nested_statements(db)
    world.act("authenticated", world.member_a, world.tenant_a)
    plans = logged_plans(db)
    row = db.execute("select hipocampo.search_model(array[%s]::uuid[]) as v", (world.kb_a,)).fetchone()
    assert row is not None and row["v"] == MODEL
    assert plans and not [p for p in plans if "hipocampo_private.chunks" in p]
