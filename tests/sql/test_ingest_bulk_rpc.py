"""hipocampo.ingest_documents, the bulk path (issue 18 §3): a batch in one transaction, set-based,
each document with ingest_document's semantics; what it writes (documents, chunks, BM25 postings
and statistics) equals what ingest_document writes one document at a time."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from hipocampo.client import vector_text

from ..conftest import MODEL, World, unit_vector, vec_text

Conn = psycopg.Connection[dict[str, Any]]

TEXTS = [
    ["Prazo de trancamento de matrícula é de 30 dias corridos.", "A biblioteca abre às oito horas."],
    ["O refeitório fecha às vinte horas.", "Multa de R$ 5,00 por dia de atraso na devolução."],
    ["A reserva do salão de festas é feita com 15 dias de antecedência."],
]


def item(n: int, texts: list[str], version: str = "v1", text_form: bool = False, kb: str = "") -> dict[str, Any]:
    """One document of the batch; embeddings as json arrays or pgvector's text form. Chunk hashes
    are unique per tenant (a chunk whose hash the tenant holds is skipped): ``kb`` tells two
    knowledge bases' copies apart."""
    chunks = []
    for i, t in enumerate(texts):
        v = unit_vector(10 * n + i)
        chunks.append(
            {
                "chunk_index": i,
                "content": t,
                "token_count": len(t.split()),
                "content_hash": f"{kb}doc{n}-{version}-{i}",
                "metadata": {"title": f"Documento {n}"},
                "embedding": vector_text(v) if text_form else v,
            }
        )
    document = {
        "title": f"Documento {n}",
        "source_uri": f"bulk://doc{n}",
        "content_hash": f"doc{n}-{version}",
        "source_type": "regulation",
    }
    return {"document": document, "chunks": chunks}


def bulk(db: Conn, kb: Any, items: list[dict[str, Any]], model: str = MODEL) -> list[dict[str, Any]]:
    row = db.execute(
        "select hipocampo.ingest_documents(%s, %s::jsonb, %s) as r", (kb, json.dumps(items), model)
    ).fetchone()
    assert row is not None
    return list(row["r"])


def one(db: Conn, kb: Any, it: dict[str, Any]) -> dict[str, Any]:
    row = db.execute(
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s) as r",
        (kb, json.dumps(it["document"]), json.dumps(it["chunks"]), MODEL),
    ).fetchone()
    assert row is not None
    return dict(row["r"])


def new_kb(db: Conn, world: World, name: str) -> Any:
    row = db.execute("select hipocampo.create_knowledge_base(%s) as v", (name,)).fetchone()
    assert row is not None
    return row["v"]


def index_of(db: Conn, kb: Any) -> dict[str, Any]:
    """What a knowledge base's search reads, by content (ids differ between two KBs)."""
    db.execute("reset role")
    chunks = db.execute(
        "select d.source_uri, c.chunk_index, c.content, c.token_count, c.metadata, c.embedding::text as e,"
        " c.fts::text as fts, d.trust_score, d.chunk_count"
        " from hipocampo_private.chunks as c join hipocampo_private.documents as d on d.id = c.document_id"
        " where c.kb_id = %s order by 1, 2",
        (kb,),
    ).fetchall()
    postings = db.execute(
        "select d.source_uri, c.chunk_index, p.lexeme, p.tf, p.chunk_length from hipocampo_private.kb_postings as p"
        " join hipocampo_private.chunks as c on c.id = p.chunk_id"
        " join hipocampo_private.documents as d on d.id = c.document_id where p.kb_id = %s order by 1, 2, 3",
        (kb,),
    ).fetchall()
    terms = db.execute(
        "select lexeme, doc_freq from hipocampo_private.kb_term_stats where kb_id = %s order by 1", (kb,)
    ).fetchall()
    text = db.execute(
        "select chunk_count, token_total from hipocampo_private.kb_text_stats where kb_id = %s", (kb,)
    ).fetchall()
    return {"chunks": chunks, "postings": postings, "terms": terms, "text": text}


def test_a_batch_writes_what_one_document_at_a_time_writes(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    kb_one, kb_bulk = new_kb(db, world, "one"), new_kb(db, world, "bulk")
    singles = [one(db, kb_one, item(n, t, kb="one-")) for n, t in enumerate(TEXTS)]
    out = bulk(db, kb_bulk, [item(n, t, text_form=n == 1, kb="bulk-") for n, t in enumerate(TEXTS)])
    assert [r["status"] for r in out] == ["inserted"] * 3
    assert [(r["chunks"], r["skipped"]) for r in out] == [(s["chunks"], s["skipped"]) for s in singles]
    by_one, by_bulk = index_of(db, kb_one), index_of(db, kb_bulk)
    assert by_bulk == by_one
    assert by_bulk["postings"] and by_bulk["text"][0]["chunk_count"] == 5


def test_each_document_keeps_ingest_documents_semantics(db: Conn, world: World) -> None:
    """unchanged (zero writes), replaced, inserted, in the batch's order; a second run of the
    same batch writes nothing."""
    world.act("authenticated", world.admin_a, world.tenant_a)
    kb = new_kb(db, world, "mixed")
    first = bulk(db, kb, [item(0, TEXTS[0]), item(1, TEXTS[1])])
    db.execute("reset role")
    before = db.execute(
        "select id, xmin::text as x from hipocampo_private.chunks where kb_id = %s and document_id = %s order by id",
        (kb, first[0]["document_id"]),
    ).fetchall()
    world.act("authenticated", world.admin_a, world.tenant_a)
    out = bulk(db, kb, [item(2, TEXTS[2]), item(1, ["Texto novo do documento um."], "v2"), item(0, TEXTS[0])])
    assert [r["status"] for r in out] == ["inserted", "replaced", "unchanged"]
    assert out[1]["document_id"] == first[1]["document_id"] and out[2] == {
        "document_id": first[0]["document_id"],
        "status": "unchanged",
        "chunks": 0,
        "skipped": 0,
    }
    again = bulk(db, kb, [item(2, TEXTS[2]), item(1, ["Texto novo do documento um."], "v2"), item(0, TEXTS[0])])
    assert [r["status"] for r in again] == ["unchanged"] * 3
    db.execute("reset role")
    after = db.execute(
        "select id, xmin::text as x from hipocampo_private.chunks where kb_id = %s and document_id = %s order by id",
        (kb, first[0]["document_id"]),
    ).fetchall()
    assert after == before and len(before) == len(TEXTS[0])  # document 0's chunks were not rewritten
    replaced = db.execute(
        "select content from hipocampo_private.chunks where document_id = %s", (first[1]["document_id"],)
    ).fetchall()
    assert replaced == [{"content": "Texto novo do documento um."}]
    world.act("authenticated", world.admin_a, world.tenant_a)
    search = db.execute(
        "select count(*) as n from hipocampo.hybrid_search(query_text => 'texto novo',"
        " query_embedding => %s::extensions.vector, kb_ids => array[%s]::uuid[], min_similarity => -1)",
        (vec_text(unit_vector(10)), kb),
    ).fetchone()
    assert search is not None and search["n"] >= 1


def test_a_bad_document_refuses_the_batch_and_names_its_position(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    kb = new_kb(db, world, "bad")
    short = item(1, TEXTS[1])
    short["chunks"][1]["embedding"] = unit_vector(1, 10)
    db.execute("savepoint s")
    with pytest.raises(psycopg.errors.DataException) as exc:
        bulk(db, kb, [item(0, TEXTS[0]), short, item(2, TEXTS[2])])
    assert exc.value.sqlstate == "22000"
    assert exc.value.diag.message_primary == (
        f"documents[1]: embedding of chunk 1 has 10 dimensions; model {MODEL} expects 384"
    )
    db.execute("rollback to savepoint s")
    assert db.execute("select count(*) as n from hipocampo.list_documents(%s)", (kb,)).fetchone() == {"n": 0}


@pytest.mark.parametrize(
    ("documents", "sqlstate", "message"),
    [
        ([], "22023", "documents must be a json array of 1 to 1000 items"),
        ({"document": {}}, "22023", "documents must be a json array of 1 to 1000 items"),
        ([item(0, TEXTS[0])] * 1001, "22023", "documents must be a json array of 1 to 1000 items"),
        (
            [item(0, ["x"] * 5001), item(1, ["y"] * 5000)],
            "22023",
            "documents hold 10001 chunks; the limit is 10000",
        ),
        (
            [item(0, TEXTS[0]), item(1, TEXTS[1]), item(0, TEXTS[2])],
            "22023",
            "documents[0] and documents[2] have the same source_uri",
        ),
        (
            [item(0, TEXTS[0]), {"document": {"title": "x"}, "chunks": []}],
            "22023",
            "documents[1]: document must be an object with title, source_uri and content_hash",
        ),
        ([{"chunks": []}], "22023", "documents[0]: document must be an object with title, source_uri and content_hash"),
        (
            [{**item(0, TEXTS[0]), "document": {**item(0, TEXTS[0])["document"], "title": "t" * 501}}],
            "22001",
            "documents[0]: document.title is 501 characters; the limit is 500",
        ),
        (
            [{**item(0, TEXTS[0]), "document": {**item(0, TEXTS[0])["document"], "published_at": "ontem"}}],
            "22023",
            'invalid document field: invalid input syntax for type timestamp with time zone: "ontem"',
        ),
    ],
)
def test_bad_batches(db: Conn, world: World, documents: Any, sqlstate: str, message: str) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.Error) as exc:
        db.execute("select hipocampo.ingest_documents(%s, %s::jsonb, %s)", (world.kb_a, json.dumps(documents), MODEL))
    assert exc.value.sqlstate == sqlstate and exc.value.diag.message_primary == message


def test_a_malformed_text_vector_is_a_clear_error(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    bad = item(0, ["um"])
    bad["chunks"][0]["embedding"] = "[" + ",".join(["x"] * 384) + "]"
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"^invalid document field: invalid input syntax"):
        bulk(db, world.kb_a, [bad])


def test_a_member_cannot_ingest_and_another_tenant_is_not_found(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    denied = pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins can ingest documents")
    with denied, db.transaction():
        bulk(db, world.kb_a, [item(0, TEXTS[0])])
    world.act("authenticated", world.admin_b, world.tenant_b)
    with pytest.raises(psycopg.errors.NoDataFound), db.transaction():
        bulk(db, world.kb_a, [item(0, TEXTS[0])])


def test_unknown_model(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.NoDataFound) as exc:
        bulk(db, world.kb_a, [item(0, TEXTS[0])], model="nope")
    assert exc.value.diag.message_primary == "documents[0]: unknown embedding model: nope"


def test_the_model_index_is_deferred_for_a_first_load_and_built_after(db: Conn, world: World) -> None:
    """defer_model_index drops the model's HNSW index on chunks (searches go on, exactly);
    build_model_index builds what is missing, with the maintenance config's memory and workers;
    both are service_role's alone."""
    name = "select indexname from pg_indexes where indexname = 'chunks_embedding_hnsw_' || substr(md5(%s), 1, 12)"
    world.act("authenticated", world.admin_a, world.tenant_a)
    for rpc in ("defer_model_index", "build_model_index"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
            db.execute(f"select hipocampo.{rpc}(%s)", (MODEL,))
    world.act("service_role")
    assert db.execute("select hipocampo.defer_model_index(%s) as v", (MODEL,)).fetchone() == {"v": True}
    assert db.execute(name, (MODEL,)).fetchall() == []
    assert db.execute("select hipocampo.defer_model_index(%s) as v", (MODEL,)).fetchone() == {"v": False}
    out = bulk(db, world.kb_a, [item(n, t) for n, t in enumerate(TEXTS)])
    assert [r["status"] for r in out] == ["inserted"] * 3
    hits = db.execute(
        "select count(*) as n from hipocampo.hybrid_search(query_text => 'biblioteca',"
        " query_embedding => %s::extensions.vector, kb_ids => array[%s]::uuid[], tenant_id => %s,"
        " min_similarity => -1)",
        (vec_text(unit_vector(1)), world.kb_a, world.tenant_a),
    ).fetchone()
    assert hits is not None and hits["n"] >= 1
    built = db.execute("select hipocampo.build_model_index(%s) as v", (MODEL,)).fetchone()
    assert built is not None and db.execute(name, (MODEL,)).fetchall() == [{"indexname": built["v"]}]
    assert db.execute("select current_setting('maintenance_work_mem') as v").fetchone() == {"v": "1GB"}
    with pytest.raises(psycopg.errors.NoDataFound, match="unknown embedding model: nope"), db.transaction():
        db.execute("select hipocampo.defer_model_index('nope')")
    db.execute("reset role")
    db.execute(
        "update hipocampo_private.settings set config = config #- '{maintenance,index_build_parallel_workers}'"
        " where tenant_id is null"
    )
    world.act("service_role")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as exc, db.transaction():
        db.execute("select hipocampo.build_model_index(%s)", (MODEL,))
    assert exc.value.diag.message_primary == (
        "maintenance config is incomplete: index_build_maintenance_work_mem_mb, index_build_parallel_workers"
    )


def test_deleting_keeps_the_statistics_of_what_remains_and_a_deleted_kb_leaves_none(db: Conn, world: World) -> None:
    """A document deleted: the postings and statistics equal those of a knowledge base that never
    held it. A knowledge base deleted: none of its postings or statistics remain (dropped by key
    range), another one's untouched."""
    world.act("authenticated", world.admin_a, world.tenant_a)
    kb_all, kb_two = new_kb(db, world, "all"), new_kb(db, world, "two")
    out = bulk(db, kb_all, [item(n, t, kb="all-") for n, t in enumerate(TEXTS)])
    bulk(db, kb_two, [item(n, t, kb="two-") for n, t in enumerate(TEXTS) if n != 1])
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select hipocampo.delete_document(%s)", (out[1]["document_id"],))
    by_all, by_two = index_of(db, kb_all), index_of(db, kb_two)
    assert by_all == by_two and by_all["postings"]
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select hipocampo.delete_knowledge_base(%s)", (kb_all,))
    db.execute("reset role")
    left = db.execute(
        "select (select count(*) from hipocampo_private.kb_postings where kb_id = %(kb)s)"
        " + (select count(*) from hipocampo_private.kb_term_stats where kb_id = %(kb)s)"
        " + (select count(*) from hipocampo_private.kb_text_stats where kb_id = %(kb)s) as n",
        {"kb": kb_all},
    ).fetchone()
    assert left == {"n": 0}
    assert index_of(db, kb_two) == by_two
