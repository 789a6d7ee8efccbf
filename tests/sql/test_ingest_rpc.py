"""hipocampo.ingest_document: atomic, idempotent, clear errors, nothing half-written."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from ..conftest import MODEL, World, calibrate, unit_vector


def ingest(
    db: psycopg.Connection[dict[str, Any]],
    kb: Any,
    doc: dict[str, Any],
    chunks: list[dict[str, Any]],
) -> dict[str, Any]:
    row = db.execute(
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s) as r",
        (kb, json.dumps(doc), json.dumps(chunks), MODEL),
    ).fetchone()
    assert row is not None
    return dict(row["r"])


def chunk(i: int, text: str, dims: int = 384) -> dict[str, Any]:
    return {
        "chunk_index": i,
        "content": text,
        "token_count": 3,
        "content_hash": f"h-{text}",
        "embedding": unit_vector(i, dims),
    }


DOC = {
    "title": "Regimento",
    "source_uri": "test://regimento",
    "content_hash": "v1",
    "source_type": "regulation",
}


def test_insert_then_unchanged_then_replaced(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    first = ingest(db, world.kb_a, DOC, [chunk(0, "um"), chunk(1, "dois")])
    assert first["status"] == "inserted" and first["chunks"] == 2
    again = ingest(db, world.kb_a, DOC, [chunk(0, "um"), chunk(1, "dois")])
    assert again == {
        "document_id": first["document_id"],
        "status": "unchanged",
        "chunks": 0,
        "skipped": 0,
    }
    changed = ingest(db, world.kb_a, {**DOC, "content_hash": "v2"}, [chunk(0, "três")])
    assert changed["status"] == "replaced" and changed["chunks"] == 1
    rows = db.execute(
        "select content from hipocampo_private.chunks where document_id = %s",
        (first["document_id"],),
    ).fetchall()
    assert [r["content"] for r in rows] == ["três"]


def test_wrong_dimension_writes_nothing(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.DataException) as exc:
        ingest(db, world.kb_a, DOC, [chunk(0, "um"), chunk(1, "dois", dims=10)])
    assert exc.value.diag.message_primary == f"embedding of chunk 1 has 10 dimensions; model {MODEL} expects 384"


def test_sentence_embeddings_are_stored_in_order_and_checked(
    db: psycopg.Connection[dict[str, Any]], world: World
) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    sentences = [unit_vector(7), unit_vector(8)]
    out = ingest(db, world.kb_a, DOC, [{**chunk(0, "um"), "sentence_embeddings": sentences}, chunk(1, "dois")])
    rows = db.execute(
        "select content, sentence_embeddings::text[] as s from hipocampo_private.chunks"
        " where document_id = %s order by chunk_index",
        (out["document_id"],),
    ).fetchall()
    assert [r["content"] for r in rows] == ["um", "dois"] and rows[1]["s"] is None
    assert [[float(x) for x in v.strip("[]").split(",")] for v in rows[0]["s"]] == [
        pytest.approx(v, abs=1e-6) for v in sentences
    ]
    cases: list[tuple[Any, type[psycopg.Error], str]] = [
        (
            [],
            psycopg.errors.InvalidParameterValue,
            "sentence_embeddings of chunk 0 must be a json array of 1 to 64 embeddings",
        ),
        (
            "x",
            psycopg.errors.InvalidParameterValue,
            "sentence_embeddings of chunk 0 must be a json array of 1 to 64 embeddings",
        ),
        (
            [unit_vector(1)] * 65,
            psycopg.errors.InvalidParameterValue,
            "sentence_embeddings of chunk 0 must be a json array of 1 to 64 embeddings",
        ),
        (
            [unit_vector(1), unit_vector(2, 10)],
            psycopg.errors.DataException,
            f"a sentence embedding of chunk 0 has 10 dimensions; model {MODEL} expects 384",
        ),
    ]
    for bad, exc, message in cases:
        db.execute("savepoint s")
        with pytest.raises(exc) as err:
            ingest(db, world.kb_a, {**DOC, "content_hash": "v2"}, [{**chunk(0, "três"), "sentence_embeddings": bad}])
        db.execute("rollback to savepoint s")
        assert err.value.diag.message_primary == message
    # Nothing of the refused versions was written.
    assert [
        r["content"]
        for r in db.execute(
            "select content from hipocampo_private.chunks where document_id = %s order by chunk_index",
            (out["document_id"],),
        ).fetchall()
    ] == ["um", "dois"]


def test_a_failing_chunk_leaves_no_half_document(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("savepoint s")
    with pytest.raises(psycopg.errors.CheckViolation, match="invalid document"):
        ingest(db, world.kb_a, {**DOC, "trust_score": 7}, [chunk(0, "um")])
    db.execute("rollback to savepoint s")
    assert db.execute(
        "select count(*) as n from hipocampo_private.documents where source_uri = %s",
        (DOC["source_uri"],),
    ).fetchone() == {"n": 0}


@pytest.mark.parametrize(
    ("doc", "chunks", "message"),
    [
        (
            {"title": "x"},
            [chunk(0, "um")],
            "document must be an object with title, source_uri and content_hash",
        ),
        (DOC, [], "chunks must be a non-empty json array"),
        (  # a raw 23502 before (issue 44 §5)
            DOC,
            [{k: v for k, v in chunk(0, "um").items() if k != "chunk_index"}],
            "chunk 0 needs content, content_hash and chunk_index (an integer >= 0)",
        ),
        (
            DOC,
            [{**chunk(0, "um"), "chunk_index": -1}],
            "chunk 0 needs content, content_hash and chunk_index (an integer >= 0)",
        ),
        (
            {**DOC, "published_at": "ontem"},
            [chunk(0, "um")],
            'invalid document field: invalid input syntax for type timestamp with time zone: "ontem"',
        ),
    ],
)
def test_bad_shapes(
    db: psycopg.Connection[dict[str, Any]],
    world: World,
    doc: dict[str, Any],
    chunks: list[dict[str, Any]],
    message: str,
) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue) as exc:
        ingest(db, world.kb_a, doc, chunks)
    assert exc.value.sqlstate == "22023" and exc.value.diag.message_primary == message


def test_unknown_model(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.NoDataFound, match="unknown embedding model: nope"):
        db.execute(
            "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, 'nope')",
            (world.kb_a, json.dumps(DOC), json.dumps([chunk(0, "um")])),
        )


def test_member_cannot_ingest(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins can ingest documents"):
        ingest(db, world.kb_a, DOC, [chunk(0, "um")])


def test_new_model_lives_beside_the_old_one(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    """Seed rule: embeddings are never overwritten; the old model's rows go only after the switch."""
    world.act("service_role")
    idx = db.execute("select hipocampo.register_embedding_model('test-model-8', 'openai', 8) as v").fetchone()
    assert idx is not None
    assert db.execute("select count(*) as n from pg_indexes where indexname = %s", (idx["v"],)).fetchone() == {"n": 1}
    doc = {**DOC, "source_uri": "test://a1", "content_hash": "a1-0"}
    ingest_new = db.execute(
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, 'test-model-8') as r",
        (world.kb_a, json.dumps(doc), json.dumps([chunk(0, "novo", dims=8)])),
    ).fetchone()
    assert ingest_new is not None and ingest_new["r"]["status"] == "embedded"  # same text, a new model
    models = db.execute(
        "select embedding_model, count(*) as n from hipocampo_private.chunks where document_id = %s "
        "group by 1 order by 1",
        (world.doc_a,),
    ).fetchall()
    assert [m["embedding_model"] for m in models] == [MODEL, "test-model-8"]
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="is active"):
        db.execute("savepoint s")
        db.execute("select hipocampo.drop_embedding_model(%s)", (MODEL,))
    db.execute("rollback to savepoint s")
    db.execute("savepoint s")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState, match="test-model-8 has no calibration"):
        db.execute("select hipocampo.activate_embedding_model('test-model-8')")
    db.execute("rollback to savepoint s")
    calibrate(db, "test-model-8")
    db.execute("select hipocampo.activate_embedding_model('test-model-8')")
    # The other chunks of the old model have no row of the new one: dropping it would delete their
    # only text (issue 44 §2).
    refused = pytest.raises(
        psycopg.errors.ObjectNotInPrerequisiteState, match=rf"model {MODEL} still embeds [1-9]\d* chunks"
    )
    with refused, db.transaction():
        db.execute("select hipocampo.drop_embedding_model(%s)", (MODEL,))
    db.execute("reset role")
    for table in ("memories", "memory_staging", "messages"):  # other modules' rows, committed
        db.execute(f"delete from hipocampo_private.{table} where embedding_model = %s", (MODEL,))
    db.execute(
        "delete from hipocampo_private.chunks as c where c.embedding_model = %s and not exists ("
        " select 1 from hipocampo_private.chunks as n where n.tenant_id = c.tenant_id"
        " and n.content_hash = c.content_hash and n.embedding_model = 'test-model-8')",
        (MODEL,),
    )
    left = db.execute("select count(*) as n from hipocampo_private.chunks where embedding_model = %s", (MODEL,))
    world.act("service_role")
    dropped = db.execute("select hipocampo.drop_embedding_model(%s) as n", (MODEL,)).fetchone()
    assert dropped == left.fetchone()  # the chunks whose text a row of test-model-8 keeps


def test_the_python_surface_rpcs(db: Any, world: World) -> None:
    """What the Python package once read from hipocampo_private directly."""
    db.execute("reset role")
    slugs = {
        r["id"]: r["slug"]
        for r in db.execute(
            "select id, slug from hipocampo_private.tenants where id in (%s, %s)", (world.tenant_a, world.tenant_b)
        ).fetchall()
    }
    world.act("authenticated", world.member_a, world.tenant_a)
    by_slug = "select hipocampo.tenant_by_slug(%s) as t"
    assert db.execute(by_slug, (slugs[world.tenant_a],)).fetchone() == {"t": world.tenant_a}
    assert db.execute(by_slug, (slugs[world.tenant_b],)).fetchone() == {"t": None}  # not the member's tenant
    docs = db.execute("select title, chunk_count from hipocampo.list_documents(%s)", (world.kb_a,)).fetchall()
    assert docs == [{"title": "a1", "chunk_count": 2}]
    assert db.execute("select hipocampo.membership_role() as r").fetchone() == {"r": "member"}
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
        db.execute("select hipocampo.membership_role(%s, %s)", (world.admin_a, world.tenant_a))
    model = db.execute("select name from hipocampo.active_embedding_model()").fetchone()
    assert model == {"name": MODEL}
    world.act("authenticated", world.member_b, world.tenant_b)
    with pytest.raises(psycopg.errors.NoDataFound), db.transaction():
        db.execute("select * from hipocampo.list_documents(%s)", (world.kb_a,))
    world.act("service_role")
    assert db.execute(by_slug, (slugs[world.tenant_b],)).fetchone() == {"t": world.tenant_b}
    assert db.execute("select hipocampo.membership_role(%s, %s) as r", (world.admin_a, world.tenant_a)).fetchone() == {
        "r": "admin"
    }
    assert db.execute("select hipocampo.membership_role(%s, %s) as r", (world.outsider, world.tenant_a)).fetchone() == {
        "r": None
    }


def test_an_admin_sets_a_documents_expiry_and_its_chunks_follow(
    db: psycopg.Connection[dict[str, Any]], world: World
) -> None:
    """As an authenticated admin (the hub's document page), not only as service_role: the copy of
    expires_at to the chunks used to fail with 42501 (no UPDATE on chunks for authenticated)."""
    world.act("authenticated", world.admin_a, world.tenant_a)
    doc = ingest(db, world.kb_a, DOC, [chunk(0, "um"), chunk(1, "dois")])["document_id"]
    row = db.execute(
        'select hipocampo.set_document_metadata(%s, \'{"expires_at": "2031-12-31T00:00:00Z"}\') as r', (doc,)
    ).fetchone()
    assert row is not None and row["r"]["updated"] == ["expires_at"]
    expiries = db.execute("select distinct expires_at from hipocampo_private.chunks where document_id = %s", (doc,))
    assert [str(r["expires_at"].date()) for r in expiries.fetchall()] == ["2031-12-31"]
    world.act("authenticated", world.member_a, world.tenant_a)
    denied = pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins can change documents")
    with denied, db.transaction():
        db.execute("select hipocampo.set_document_metadata(%s, '{\"expires_at\": null}')", (doc,))
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
        db.execute("update hipocampo_private.chunks set content = 'x' where document_id = %s", (doc,))


def test_a_documents_pii_count_is_stored_and_listed(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    ingest(db, world.kb_a, {**DOC, "pii_replacements": 3}, [chunk(0, "um")])
    listed = db.execute(
        "select pii_replacements from hipocampo.list_documents(%s) where source_uri = 'test://regimento'",
        (world.kb_a,),
    ).fetchall()
    assert [r["pii_replacements"] for r in listed] == [3]
    ingest(db, world.kb_a, {**DOC, "content_hash": "v2"}, [chunk(0, "dois")])  # not reported: kept
    listed = db.execute(
        "select pii_replacements from hipocampo.list_documents(%s) where source_uri = 'test://regimento'",
        (world.kb_a,),
    ).fetchall()
    assert [r["pii_replacements"] for r in listed] == [3]
    with pytest.raises(psycopg.errors.CheckViolation, match="invalid document"), db.transaction():
        ingest(db, world.kb_a, {**DOC, "source_uri": "test://outro", "pii_replacements": -1}, [chunk(0, "três")])


def test_a_chunking_rule_override_gives_the_whole_rule(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    """A knowledge base's chunking rule replaces the global rule of its source type: a partial one
    ({"max_tokens": 2000}) was accepted and then failed ingestion in the client (KeyError)."""
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("savepoint s")
    with pytest.raises(psycopg.errors.InvalidParameterValue) as exc:
        db.execute(
            "select hipocampo.set_knowledge_base_config(%s, 'chunking', %s::jsonb)",
            (world.kb_a, json.dumps({"regulation": {"max_tokens": 2000}})),
        )
    db.execute("rollback to savepoint s")
    assert exc.value.diag.message_primary == (
        "chunking.regulation must give every key of the rule: max_tokens, min_tokens, overlap, split "
        '(got {"max_tokens": 2000})'
    )
    whole = {"min_tokens": 1, "max_tokens": 2000, "overlap": 0, "split": "paragraph"}
    db.execute(
        "select hipocampo.set_knowledge_base_config(%s, 'chunking', %s::jsonb)",
        (world.kb_a, json.dumps({"regulation": whole})),
    )


def test_documents_come_a_keyset_page_at_a_time(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    """list_documents' pages (after_source_uri, max_rows) by source_uri; without them, all."""
    world.act("authenticated", world.admin_a, world.tenant_a)
    row = db.execute("select hipocampo.create_knowledge_base('pages') as kb").fetchone()
    assert row is not None
    kb = row["kb"]
    for n in (3, 1, 4, 2, 5):
        doc = {**DOC, "title": f"d{n}", "source_uri": f"test://d{n}", "content_hash": f"v{n}"}
        ingest(db, kb, doc, [chunk(0, f"t{n}")])
    page = "select title from hipocampo.list_documents(%s, %s, %s)"

    def titles(after: str | None, n: int | None) -> list[str]:
        return [r["title"] for r in db.execute(page, (kb, after, n)).fetchall()]

    assert titles(None, None) == ["d1", "d2", "d3", "d4", "d5"]
    assert titles(None, 2) == ["d1", "d2"]
    assert titles("test://d2", 2) == ["d3", "d4"]
    assert titles("test://d4", 2) == ["d5"]
    assert titles("test://d5", 2) == []
    for bad in (0, 10_001):
        refused = pytest.raises(psycopg.errors.InvalidParameterValue, match=rf"must lie in \[1, 10000\]: {bad}")
        with refused, db.transaction():
            db.execute(page, (kb, None, bad))


def test_one_document_by_id_in_the_callers_tenant(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    """get_document: the document with its knowledge base; another tenant's is no row, for a
    user of that tenant and for service_role naming it; service_role must name a tenant."""
    world.act("authenticated", world.admin_a, world.tenant_a)
    doc = ingest(db, world.kb_a, DOC, [chunk(0, "um")])["document_id"]
    one = "select kb_id, kb_name, title, chunk_count from hipocampo.get_document(%s, %s)"
    kb_name = db.execute("select name from hipocampo_private.knowledge_bases where id = %s", (world.kb_a,)).fetchone()
    assert kb_name is not None
    expected = [{"kb_id": world.kb_a, "kb_name": kb_name["name"], "title": "Regimento", "chunk_count": 1}]
    world.act("authenticated", world.member_a, world.tenant_a)
    assert db.execute(one, (doc, None)).fetchall() == expected
    world.act("authenticated", world.member_b, world.tenant_b)
    assert db.execute(one, (doc, None)).fetchall() == []
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
        db.execute(one, (doc, world.tenant_a))  # naming another tenant
    world.act("service_role")
    assert db.execute(one, (doc, world.tenant_a)).fetchall() == expected
    assert db.execute(one, (doc, world.tenant_b)).fetchall() == []
    no_tenant = pytest.raises(psycopg.errors.InsufficientPrivilege, match="service_role must pass tenant_id")
    with no_tenant, db.transaction():
        db.execute(one, (doc, None))


def test_a_document_takes_at_most_the_configured_chunks(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    """Issue 44 §4: 1,500 chunks in one call were taken; embedding.max_chunks_per_document bounds it."""
    world.act("service_role")
    db.execute(
        "update hipocampo_private.settings set config = jsonb_set(config, '{embedding,max_chunks_per_document}', '3')"
        " where tenant_id is null"
    )
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"at most 3 chunks .* got 4\)"), db.transaction():
        ingest(db, world.kb_a, DOC, [chunk(i, f"parte {i}") for i in range(4)])
    assert ingest(db, world.kb_a, DOC, [chunk(i, f"parte {i}") for i in range(3)])["status"] == "inserted"
