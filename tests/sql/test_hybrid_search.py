"""hipocampo.hybrid_search: k rows under selective filters, errors, logging, touch, dedupe."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from ..conftest import MODEL, World, model_calibration, unit_vector, vec_text

Q = vec_text(unit_vector(7))


def search(
    db: psycopg.Connection[dict[str, Any]],
    text: str = "prazo de trancamento",
    emb: str = Q,
    **named: Any,
) -> list[dict[str, Any]]:
    # Test vectors are random, so the calibrated similarity floor is lifted unless under test.
    named.setdefault("min_similarity", -1.0)
    args = "".join(f", {k} => %({k})s" for k in named)
    return db.execute(
        "select * from hipocampo.hybrid_search("
        f"query_text => %(q)s, query_embedding => %(e)s::extensions.vector{args})",
        {"q": text, "e": emb, **named},
    ).fetchall()


def explain_nested_statements(db: psycopg.Connection[dict[str, Any]]) -> None:
    """auto_explain for the rest of the test's transaction, every statement and the ones inside
    functions (loaded as the session's superuser: call it before acting as anyone)."""
    db.execute("reset role")
    db.execute("load 'auto_explain'")
    db.execute("set local auto_explain.log_min_duration = 0")
    db.execute("set local auto_explain.log_nested_statements = on")


def logged_plans(db: psycopg.Connection[dict[str, Any]]) -> list[str]:
    """The plans auto_explain logs from here on (sent to the client), in order."""
    plans: list[str] = []
    db.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
    db.execute("set local client_min_messages = log")
    return plans


def test_returns_scores_and_citation_fields(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = search(db, match_count=2)
    assert [r["rank"] for r in rows] == [1, 2]
    top = rows[0]
    assert top["content"].startswith("Prazo de trancamento") and top["lexical_score"] > 0
    assert top["title"] == "a1" and top["source_uri"] == "test://a1" and top["source_type"] == "regulation"
    assert -1 <= top["dense_score"] <= 1
    assert rows[0]["final_score"] >= rows[1]["final_score"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "query_text must be 1..2000 characters (got an empty query)"),
        ("   ", "query_text must be 1..2000 characters (got an empty query)"),
        ("x" * 5000, "query_text must be 1..2000 characters (got 5000)"),
    ],
)
def test_bad_query_text(db: psycopg.Connection[dict[str, Any]], world: World, text: str, message: str) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue) as exc:
        search(db, text)
    assert exc.value.sqlstate == "22023" and exc.value.diag.message_primary == message


def test_wrong_vector_dimension(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.DataException) as exc:
        search(db, emb=vec_text(unit_vector(1, 3)))
    assert exc.value.sqlstate == "22000"
    assert exc.value.diag.message_primary == f"query_embedding has 3 dimensions; model {MODEL} expects 384"


def test_unknown_kb(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    missing = "00000000-0000-0000-0000-000000000001"
    with pytest.raises(psycopg.errors.NoDataFound) as exc:
        search(db, kb_ids=[missing])
    assert exc.value.diag.message_primary == f"unknown knowledge base: {missing}"


@pytest.mark.parametrize(
    ("named", "message"),
    [
        ({"match_count": 0}, "match_count must be 1..100 (got 0)"),
        ({"mmr_lambda": 2.0}, "mmr_lambda must be 0 or 1e-6..1 (got 2)"),
        # a positive value below 1e-6 underflowed the MMR score (22003); refused up front
        ({"mmr_lambda": 5e-324}, "mmr_lambda must be 0 or 1e-6..1 (got 5e-324)"),
        ({"lexical_weight": 5e-324}, "dense_weight and lexical_weight must be 0 or 1e-6..100, not both 0"),
        ({"dense_weight": 1e-7}, "dense_weight and lexical_weight must be 0 or 1e-6..100, not both 0"),
        ({"fusion": "magic"}, "fusion must be score or rrf (got magic)"),
        ({"rerank": "random"}, "rerank must be none or trust_recency (got random)"),
    ],
)
def test_bad_options(db: psycopg.Connection[dict[str, Any]], world: World, named: dict[str, Any], message: str) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue) as exc:
        search(db, **named)
    assert exc.value.diag.message_primary == message


@pytest.mark.parametrize("exact_max", [1_000_000, 0])
def test_k_rows_under_a_selective_filter(db: psycopg.Connection[dict[str, Any]], world: World, exact_max: int) -> None:
    """Many rows of other KBs/types, few matching the filter: still k rows, both via the exact
    scan and via HNSW (exact_scan_max_rows = 0 forces the index with iterative scan)."""
    world.act("service_role")
    db.execute(
        "update hipocampo_private.settings set config = %s::jsonb where tenant_id = %s",
        # hnsw_visit_cost 0: the index even for a scope small beside the graph.
        (json.dumps({"retrieval": {"exact_scan_max_rows": exact_max, "hnsw_visit_cost": 0}}), world.tenant_a),
    )
    noise = [f"Texto de ruído número {i} sobre outro assunto qualquer." for i in range(600)]
    for part in range(6):  # 600 rows: more than the first pass reads (4 * 80)
        world.ingest(
            world.kb_a,
            f"noise{part}",
            noise[part * 100 : (part + 1) * 100],
            seed=part,
            source_type="other",
        )
    world.ingest(
        world.kb_a,
        "rare",
        [f"Regra rara {i} de penalidade." for i in range(12)],
        source_type="penalty",
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = search(db, "regra de penalidade", source_types=["penalty"], match_count=10, min_similarity=-1.0)
    assert len(rows) == 10
    assert {r["source_type"] for r in rows} == {"penalty"}


def test_metadata_filter(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("service_role")
    world.ingest(world.kb_a, "art", ["Art. 5º O prazo é de dez dias."], metadata={"article": "Art. 5º"})
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = search(db, "prazo", metadata_filter=json.dumps({"article": "Art. 5º"}))
    assert [r["content"] for r in rows] == ["Art. 5º O prazo é de dez dias."]


def test_logs_the_access_and_touches_chunks(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = search(db, match_count=1)
    world.act("service_role")
    queued = db.execute(
        "select count(*) as n from hipocampo_private.data_access_log where tenant_id = %s", (world.tenant_a,)
    ).fetchone()
    assert queued == {"n": 0}  # the read wrote nothing but its queue row
    db.execute("select hipocampo.drain_read_queue()")
    log = db.execute(
        "select * from hipocampo_private.data_access_log where tenant_id = %s", (world.tenant_a,)
    ).fetchall()
    assert len(log) == 1
    entry = log[0]
    assert entry["caller"] == world.member_a and entry["caller_role"] == "authenticated"
    assert entry["rpc"] == "hybrid_search" and entry["rows_returned"] == 1 and entry["latency_ms"] >= 0
    assert len(entry["query_hash"]) == 64
    touched = db.execute(
        "select tenant_id, last_accessed_at from hipocampo_private.chunk_access where chunk_id = %s",
        (rows[0]["chunk_id"],),
    ).fetchone()
    assert touched is not None and touched["tenant_id"] == world.tenant_a


def ingest_copies(db: psycopg.Connection[dict[str, Any]], world: World, v: list[float], n: int, name: str) -> None:
    """``n`` one-chunk documents of tenant A's knowledge base with the same vector ``v`` (copies)."""
    world.act("service_role")
    for i in range(n):
        doc = {"title": f"{name}{i}", "source_uri": f"test://{name}{i}", "content_hash": f"{name}{i}"}
        chunk = [
            {
                "chunk_index": 0,
                "content": f"Multa por barulho após as 22h, {name} {i}.",
                "content_hash": f"{name}{i}",
                "embedding": v,
            }
        ]
        db.execute(
            "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
            (world.kb_a, json.dumps(doc), json.dumps(chunk), MODEL),
        )


def test_near_duplicates_are_dropped(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    v = unit_vector(99)
    ingest_copies(db, world, v, 2, "versão")
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = search(db, "multa por barulho", emb=vec_text(v), match_count=5)
    assert sum("Multa por barulho" in r["content"] for r in rows) == 1


def test_k_rows_when_the_first_candidates_are_near_duplicates(
    db: psycopg.Connection[dict[str, Any]], world: World
) -> None:
    # With mmr_lambda 1 the search reads the vectors of its first 2k candidates only; when those
    # are copies of one another it reads every candidate's and still returns k rows.
    v = unit_vector(98)
    ingest_copies(db, world, v, 12, "cópia")
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = search(db, "multa por barulho", emb=vec_text(v), match_count=3, mmr_lambda=1.0)
    assert len(rows) == 3 and [r["rank"] for r in rows] == [1, 2, 3]
    assert sum("Multa por barulho" in r["content"] for r in rows) == 1
    assert rows[0]["content"].startswith("Multa por barulho")


def test_mmr_and_rrf_and_rerank_run(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    for named in ({"mmr_lambda": 0.5}, {"fusion": "rrf"}, {"rerank": "trust_recency"}):
        rows = search(db, match_count=2, **named)
        assert len(rows) == 2, named


def test_deleting_a_document_deletes_its_chunks(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert db.execute("select hipocampo.delete_document(%s) as ok", (world.doc_a,)).fetchone() == {"ok": True}
    world.act("service_role")
    row = db.execute(
        "select count(*) as n from hipocampo_private.chunks where document_id = %s", (world.doc_a,)
    ).fetchone()
    assert row == {"n": 0}
    # The knowledge base held only this document: left without chunks, it loses its statistics
    # whole (the delete trigger drops them by key range).
    stats = db.execute(
        "select (select count(*) from hipocampo_private.kb_text_stats where kb_id = %(kb)s)"
        " + (select count(*) from hipocampo_private.kb_term_stats where kb_id = %(kb)s)"
        " + (select count(*) from hipocampo_private.kb_postings where kb_id = %(kb)s) as n",
        {"kb": world.kb_a},
    ).fetchone()
    assert stats == {"n": 0}


def test_expired_rows_are_purged(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("service_role")
    db.execute(
        "update hipocampo_private.chunks set expires_at = '2020-01-01' where document_id = %s",
        (world.doc_a,),
    )
    row = db.execute("select hipocampo.purge_expired('2026-01-01'::timestamptz) as r").fetchone()
    assert row is not None and (row["r"]["documents"], row["r"]["chunks"]) == (0, 2)


@pytest.mark.parametrize("budget", [8000, 1])
def test_lexical_scores_are_okapi_bm25(db: psycopg.Connection[dict[str, Any]], world: World, budget: int) -> None:
    """Every returned chunk's lexical_score is Okapi BM25 over the KB's postings and statistics,
    computed here independently: lexical hits, and dense hits outside the lexical leg's candidates
    (scored in a second step) alike, whether every term's postings are read or, beyond a
    lexical_postings_budget of 1, the common terms' only by key."""
    world.act("service_role")
    # Candidates per leg = match_count (5). Eight chunks carry the query's term, longer and longer
    # (lower BM25); the three longest lie closest to the query vector, so the dense leg brings
    # them in from outside the lexical leg's five.
    db.execute(
        "update hipocampo_private.settings set config = %s::jsonb where tenant_id = %s",
        (
            json.dumps(
                {"retrieval": {"candidate_multiplier": 1, "min_candidates": 1, "lexical_postings_budget": budget}}
            ),
            world.tenant_a,
        ),
    )
    chunks = [
        {
            "chunk_index": i,
            "content": "O trancamento " + "dura um semestre letivo " * i,
            "content_hash": f"bm25-{i}",
            "embedding": unit_vector(7) if i >= 5 else unit_vector(1000 + i),
        }
        for i in range(8)
    ]
    doc = {"title": "bm25", "source_uri": "test://bm25", "content_hash": "bm25"}
    db.execute(
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
        (world.kb_a, json.dumps(doc), json.dumps(chunks), MODEL),
    )
    expected = {
        r["chunk_id"]: r["score"]
        for r in db.execute(
            """
            with r as (
                select (hipocampo.effective_config(%(t)s) -> 'retrieval' ->> 'bm25_k1')::double precision as k1,
                    (hipocampo.effective_config(%(t)s) -> 'retrieval' ->> 'bm25_b')::double precision as b
            ),
            term as (
                select ts.lexeme,
                    ln(1 + (st.chunk_count - ts.doc_freq + 0.5) / (ts.doc_freq + 0.5)) as idf,
                    st.token_total::double precision / st.chunk_count as avg_len
                from hipocampo_private.kb_term_stats as ts
                inner join hipocampo_private.kb_text_stats as st
                    on st.kb_id = ts.kb_id and st.embedding_model = ts.embedding_model
                where ts.kb_id = %(kb)s and ts.lexeme in (
                    select u.lexeme from unnest(to_tsvector(
                        hipocampo_private.text_search_config('portuguese'), 'prazo de trancamento'
                    )) as u
                )
            )
            select c.id as chunk_id, coalesce(sum(
                term.idf * p.tf * (r.k1 + 1) / (p.tf + r.k1 * (1 - r.b + r.b * p.chunk_length / term.avg_len))
            ), 0) as score
            from hipocampo_private.chunks as c
            cross join term
            cross join r
            left join hipocampo_private.kb_postings as p
                on p.chunk_id = c.id and p.lexeme = term.lexeme
            where c.kb_id = %(kb)s
            group by c.id
            """,
            {"kb": world.kb_a, "t": world.tenant_a},
        ).fetchall()
    }
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = search(db, "prazo de trancamento", emb=Q, match_count=5, dense_weight=10.0)
    fifth = sorted(expected.values(), reverse=True)[4]
    if budget == 8000:
        assert len(rows) == 5
        assert any(0 < expected[r["chunk_id"]] < fifth for r in rows)  # scored in the second step
    else:
        # Within a budget of 1 the lexical candidates are the rare term's chunks and the dense
        # leg's (the world's own chunks have random vectors), three of which share one vector and
        # are deduplicated: fewer rows, each scored over every term.
        assert any(expected[r["chunk_id"]] > 0 for r in rows)
    assert {r["chunk_id"]: r["lexical_score"] for r in rows} == pytest.approx(
        {r["chunk_id"]: expected[r["chunk_id"]] for r in rows}
    )


def test_an_incomplete_retrieval_config_is_an_error(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("service_role")
    db.execute(
        "update hipocampo_private.settings set config = config #- '{retrieval,min_candidates}' where tenant_id is null"
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as exc:
        search(db)
    assert exc.value.sqlstate == "55000"
    assert (
        exc.value.diag.message_primary
        == "retrieval config is incomplete: seed it from config.toml (hipocampo db migrate)"
    )


def test_a_search_touches_only_the_chunks_it_returns(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    returned = {r["chunk_id"] for r in search(db, match_count=1)}
    world.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    touched = db.execute("select a.chunk_id as id, a.tenant_id from hipocampo_private.chunk_access as a").fetchall()
    assert {r["id"] for r in touched} == returned
    assert {r["tenant_id"] for r in touched} == {world.tenant_a}


@pytest.mark.parametrize(("minutes", "after"), [(-60, timedelta(minutes=-60)), (6, timedelta(0))])
def test_a_drain_keeps_each_chunk_s_latest_read(
    db: psycopg.Connection[dict[str, Any]], world: World, minutes: int, after: timedelta
) -> None:
    # A chunk whose recorded access is `minutes` old, read again: the drain keeps the later time
    # (a time in the future stays; one 6 minutes old becomes this read's, now()).
    world.act("authenticated", world.member_a, world.tenant_a)
    chunk = search(db, match_count=1)[0]["chunk_id"]
    world.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    db.execute(
        "update hipocampo_private.chunk_access set last_accessed_at = now() - make_interval(mins => %s)"
        " where chunk_id = %s",
        (minutes, chunk),
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    search(db, match_count=1)
    world.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    row = db.execute(
        "select now() - last_accessed_at as age from hipocampo_private.chunk_access where chunk_id = %s", (chunk,)
    ).fetchone()
    assert row is not None and row["age"] == after


def test_deleting_chunks_deletes_their_access_times(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    chunk = search(db, match_count=1)[0]["chunk_id"]
    world.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    db.execute("delete from hipocampo_private.chunks where id = %s", (chunk,))
    left = db.execute(
        "select count(*) as n from hipocampo_private.chunk_access where chunk_id = %s", (chunk,)
    ).fetchone()
    assert left is not None and left["n"] == 0


def test_members_read_only_their_tenants_access_times(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    search(db, match_count=1)
    world.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    world.act("authenticated", world.member_b, world.tenant_b)
    seen = db.execute("select count(*) as n from hipocampo_private.chunk_access").fetchone()
    assert seen is not None and seen["n"] == 0
    world.act("authenticated", world.member_a, world.tenant_a)
    seen = db.execute("select count(*) as n from hipocampo_private.chunk_access").fetchone()
    assert seen is not None and seen["n"] == 1


def test_a_metadata_filter_reaches_past_the_nearest_chunks(
    db: psycopg.Connection[dict[str, Any]], world: World
) -> None:
    # 200 chunks nearer to the query than the one the filter keeps: the first pass (4 * the
    # candidates) finds none that passes, the second reads every chunk (the covering index's path).
    world.act("service_role")
    near = [f"perto {i}" for i in range(200)]
    chunks = [
        {"chunk_index": i, "content": t, "token_count": 2, "content_hash": f"near-{i}", "embedding": unit_vector(7)}
        for i, t in enumerate(near)
    ]
    doc = {"title": "near", "source_uri": "test://near", "content_hash": "near", "source_type": "regulation"}
    db.execute(
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
        (world.kb_a, json.dumps(doc), json.dumps(chunks), MODEL),
    )
    world.ingest(world.kb_a, "far", ["Art. 9º Longe da consulta."], seed=5, metadata={"article": "Art. 9º"})
    world.act("authenticated", world.member_a, world.tenant_a)
    q = vec_text(unit_vector(7))
    assert search(db, "consulta", emb=q, dense_weight=1, lexical_weight=0)[0]["content"].startswith("perto")
    rows = search(db, "consulta", emb=q, metadata_filter=json.dumps({"article": "Art. 9º"}))
    assert [r["content"] for r in rows] == ["Art. 9º Longe da consulta."]


def test_the_covered_dimensions_are_one_number(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    """The exact scans repeat the covering index's predicate (vector_dims(embedding) <= 640) so a
    cached plan can use it, and choose that path by the same limit: written in five places, they
    must agree, or the scans silently fall back to the heap."""
    world.act("service_role")
    row = db.execute(
        "select pg_get_expr(i.indpred, i.indrelid) as pred from pg_index as i"
        " where i.indexrelid = 'hipocampo_private.chunks_scope_vectors_idx'::regclass"
    ).fetchone()
    assert row is not None
    limit = re.fullmatch(r"\(?extensions\.vector_dims\(embedding\) <= (\d+)\)?", row["pred"])
    assert limit is not None, row["pred"]
    for fn in ("hipocampo_private._dense_leg", "hipocampo_private._near_duplicates"):
        src = db.execute("select pg_get_functiondef(%s::regproc) as src", (fn,)).fetchone()
        assert src is not None
        numbers = re.findall(r"vector_dims\([a-z0-9_.]+\) <= (\d+)|dims [<>]=? (\d+)", src["src"])
        assert len(numbers) == 2 and {a or b for a, b in numbers} == {limit.group(1)}, (fn, numbers)


def test_a_model_of_more_than_640_dimensions_is_searched_exactly(
    db: psycopg.Connection[dict[str, Any]], world: World
) -> None:
    # Its vectors do not fit a btree entry of the covering index: the exact scan reads the heap.
    world.act("service_role")
    wide = "test-wide-768"
    db.execute("select hipocampo.register_embedding_model(%s, 'local', 768)", (wide,))
    db.execute("select hipocampo.set_model_calibration(%s, %s::jsonb)", (wide, json.dumps(model_calibration(MODEL))))
    chunks = [
        {
            "chunk_index": i,
            "content": t,
            "token_count": 3,
            "content_hash": f"wide-{i}",
            "metadata": {"n": i},
            "embedding": unit_vector(40 + i, 768),
        }
        for i, t in enumerate(["Primeiro trecho largo.", "Segundo trecho largo."])
    ]
    doc = {"title": "wide", "source_uri": "test://wide", "content_hash": "wide", "source_type": "regulation"}
    db.execute(
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
        (world.kb_a, json.dumps(doc), json.dumps(chunks), wide),
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    q = vec_text(unit_vector(41, 768))
    rows = search(db, "trecho", emb=q, embedding_model=wide)
    assert rows[0]["content"] == "Segundo trecho largo." and rows[0]["dense_score"] == pytest.approx(1.0)
    rows = search(db, "trecho", emb=q, embedding_model=wide, metadata_filter=json.dumps({"n": 0}))
    assert [r["content"] for r in rows] == ["Primeiro trecho largo."]


def test_trust_recency_reorders_by_the_configured_weights(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    """The trust_recency rerank changes the order by its weights (retrieval.trust_recency_*, no
    weight in SQL; issue 47 §1, issue 45 §1): a close passage of low trust comes first when
    similarity weighs alone, after a distant trusted one when trust weighs alone."""
    from ..conftest import at_cosine

    world.act("service_role")
    for name, cosine, trust in (("perto", 0.95, 0.1), ("confiavel", 0.3, 1.0)):
        doc = {"title": name, "source_uri": f"test://{name}", "content_hash": name, "trust_score": trust}
        chunk = [
            {
                "chunk_index": 0,
                "content": f"Horário da piscina: {name}.",
                "content_hash": name,
                "embedding": at_cosine(7, 70, cosine),
            }
        ]
        db.execute(
            "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
            (world.kb_a, json.dumps(doc), json.dumps(chunk), MODEL),
        )
    world.act("authenticated", world.admin_a, world.tenant_a)
    order = {}
    for weighs in ("similarity", "trust"):
        weights = {f"trust_recency_{k}_weight": float(k == weighs) for k in ("similarity", "trust", "freshness")}
        db.execute(
            "select hipocampo.set_knowledge_base_config(%s, 'retrieval', %s::jsonb)", (world.kb_a, json.dumps(weights))
        )
        rows = search(db, "horário da piscina", match_count=10, rerank="trust_recency", kb_ids=[world.kb_a])
        order[weighs] = [r["title"] for r in rows if r["title"] in ("perto", "confiavel")]
    assert order == {"similarity": ["perto", "confiavel"], "trust": ["confiavel", "perto"]}


def test_mmr_puts_a_different_passage_before_a_near_twin(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    """MMR diversifies, shown by an order (issue 45 §1: only its near-duplicate drop was tested)."""
    from .test_memory_search_behaviour import CLOSE, FAR, QUERY, TWIN

    world.act("service_role")
    for name, vector in (("perto", CLOSE), ("gemeo", TWIN), ("longe", FAR)):
        doc = {"title": name, "source_uri": f"test://mmr-{name}", "content_hash": f"mmr-{name}"}
        chunk = [
            {
                "chunk_index": 0,
                "content": f"Regras da sauna: {name}.",
                "content_hash": f"mmr-{name}",
                "embedding": vector.strip("[]").split(","),
            }
        ]
        chunk[0]["embedding"] = [float(x) for x in chunk[0]["embedding"]]
        db.execute(
            "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
            (world.kb_a, json.dumps(doc), json.dumps(chunk), MODEL),
        )
    world.act("authenticated", world.member_a, world.tenant_a)
    order = {}
    for lam in (1.0, 0.5):
        rows = search(db, "regras da sauna", emb=QUERY, match_count=3, mmr_lambda=lam, kb_ids=[world.kb_a])
        order[lam] = [r["title"] for r in rows]
    assert order == {1.0: ["perto", "gemeo", "longe"], 0.5: ["perto", "longe", "gemeo"]}


def test_the_dense_leg_leans_on_questions_in_other_words(db: psycopg.Connection[dict[str, Any]], world: World) -> None:
    """Issue 61 §3: a question the best lexical hit covers little of (coverage, the idf-weighted
    share of its lexemes) weighs the dense leg by 1 + (coverage_dense_boost - 1) * (1 - coverage) ^
    coverage_exponent: the passage that means it, in other words, comes before the one that shares
    an incidental word; with the model's boost at 1 (no lean) the order is the old one."""
    from ..conftest import at_cosine

    world.act("service_role")
    texts = {
        "palavras": ("Aos domingos o salão de festas fica fechado para limpeza; aos domingos não há reservas.", 0.55),
        "sentido": ("A área de lazer aquática abre às 9h no fim de semana, com salva-vidas.", 0.9),
    }
    for name, (content, cosine) in texts.items():
        doc = {"title": name, "source_uri": f"test://{name}", "content_hash": name}
        chunk = [{"chunk_index": 0, "content": content, "content_hash": name, "embedding": at_cosine(7, 71, cosine)}]
        db.execute(
            "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
            (world.kb_a, json.dumps(doc), json.dumps(chunk), MODEL),
        )
    order = {}
    for boost in (1.0, 12.0):
        world.act("service_role")
        calibration = model_calibration()
        calibration["retrieval"] = {**calibration["retrieval"], "coverage_dense_boost": boost}
        db.execute("select hipocampo.set_model_calibration(%s, %s::jsonb)", (MODEL, json.dumps(calibration)))
        world.act("authenticated", world.member_a, world.tenant_a)
        rows = search(db, "Posso nadar no domingo de manhã?", match_count=10, kb_ids=[world.kb_a])
        order[boost] = [r["title"] for r in rows if r["title"] in texts]
    assert order == {1.0: ["palavras", "sentido"], 12.0: ["sentido", "palavras"]}


@pytest.mark.parametrize(("stopwords", "scored"), [(None, False), ([], True)])
def test_the_lexical_leg_leaves_the_question_stopwords_out(
    db: psycopg.Connection[dict[str, Any]], world: World, stopwords: list[str] | None, scored: bool
) -> None:
    """Issue 61 §3: rag.question_stopwords (interrogatives and auxiliaries, "faz" among the
    defaults) are not searched by the lexical leg: "Posso fazer festa?" gives the one rule holding
    "fazer" no BM25 score, which in a small knowledge base (a high idf) put it first; with the
    tenant's list emptied it is scored again."""
    world.act("service_role")
    if stopwords is not None:
        db.execute(
            "update hipocampo_private.settings set config = %s::jsonb where tenant_id = %s",
            (json.dumps({"rag": {"question_stopwords": stopwords}}), world.tenant_a),
        )
    world.ingest(world.kb_a, "garagem", ["Na garagem é proibido fazer reparos mecânicos nos veículos."], seed=5)
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = search(db, "Posso fazer festa?", match_count=20, kb_ids=[world.kb_a], dense_weight=1e-6)
    garage = [r for r in rows if r["content"].startswith("Na garagem")]
    assert bool(garage and garage[0]["lexical_score"]) == scored, rows


def test_coverage_reads_the_question_in_the_chunks_own_language(
    db: psycopg.Connection[dict[str, Any]], world: World
) -> None:
    """Issue 59 §2: the fusion's coverage reads the question with the stemmer of the best chunk's
    language (its document's), not the knowledge base's: an English abstract in a Portuguese
    knowledge base holding every content word of an English question covers all of it."""
    from ..conftest import unit_vector

    world.act("service_role")
    docs = {
        "vacinas": ("english", "Children need these vaccines every year, at school."),
        "prazo": ("portuguese", "O prazo de trancamento da matrícula é de trinta dias."),
    }
    ids = {}
    for name, (language, content) in docs.items():
        doc = {"title": name, "source_uri": f"test://{name}", "content_hash": name, "language": language}
        chunk = [{"chunk_index": 0, "content": content, "content_hash": name, "embedding": unit_vector(5)}]
        db.execute(
            "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
            (world.kb_a, json.dumps(doc), json.dumps(chunk), MODEL),
        )
        ids[name] = db.execute(
            "select c.id from hipocampo_private.chunks as c join hipocampo_private.documents as d"
            " on d.id = c.document_id where d.source_uri = %s",
            (f"test://{name}",),
        ).fetchone()["id"]

    def coverage(name: str, question: str) -> float:
        return float(
            db.execute(
                "select hipocampo_private._coverage(%s, %s, %s, array_agg(k.id), array_agg(w.lexeme),"
                " array_agg(1.0::double precision), '{}'::jsonb) as c"
                " from hipocampo_private.knowledge_bases as k"
                " cross join lateral hipocampo_private._question_words(k.language, k.document_languages, %s) as w"
                " where k.id = %s",
                (world.tenant_a, ids[name], question, question, world.kb_a),
            ).fetchone()["c"]
        )

    assert coverage("vacinas", "Do the children need vaccines?") == 1.0  # children, need, vaccin: English stems
    assert coverage("prazo", "Qual o prazo de trancamento?") == 1.0
    assert coverage("prazo", "Qual o prazo de trancamento e de recurso?") == pytest.approx(2 / 3)  # recurs


def test_the_lexical_leg_probes_the_term_statistics_by_key_beside_other_tenants(
    db: psycopg.Connection[dict[str, Any]], world: World
) -> None:
    """With other tenants' terms in kb_term_stats, the lexical leg looks up the question's few
    lexemes by the table's key. Told that _question_words returns 1,000 rows (the default), the
    planner hashed the whole table instead: 200 ms a call for a member of one of 50 tenants
    (benchmarks/tenants.py); the function declares ``rows 8``."""
    explain_nested_statements(db)
    world.act("service_role")
    db.execute(
        "with k as (select gen_random_uuid() as kb_id from generate_series(1, 50)),"
        " s as (insert into hipocampo_private.kb_text_stats (tenant_id, kb_id, embedding_model, chunk_count,"
        " token_total) select %(t)s, kb_id, %(m)s, 2000, 400000 from k)"
        " insert into hipocampo_private.kb_term_stats (tenant_id, kb_id, embedding_model, lexeme, doc_freq)"
        " select %(t)s, k.kb_id, %(m)s, 'termo' || g, 1 from k cross join generate_series(1, 2000) as g",
        {"t": world.tenant_b, "m": MODEL},
    )
    db.execute("analyze hipocampo_private.kb_term_stats, hipocampo_private.kb_text_stats")
    plans = logged_plans(db)
    world.act("authenticated", world.member_a, world.tenant_a)
    assert search(db, match_count=2)
    lexical = [p for p in plans if "kb_term_stats" in p]
    assert lexical, "the lexical leg's statement was not seen"
    assert not [p for p in lexical if "Seq Scan on kb_term_stats" in p], lexical


@pytest.mark.parametrize(("visit_cost", "path"), [(4.5, "exact"), (0, "hnsw")])
def test_a_scope_small_beside_the_graph_is_scanned_exactly(
    db: psycopg.Connection[dict[str, Any]], world: World, visit_cost: float, path: str
) -> None:
    """A scope above exact_scan_max_rows whose rows are few beside the model's HNSW graph (other
    tenants' chunks) is scanned exactly: scope rows² ≤ hnsw_visit_cost × candidates × graph rows
    (a filtered walk visits about graph rows / scope rows tuples per candidate). With the cost at
    0 the index is walked."""
    world.act("service_role")
    world.ingest(world.kb_b, "other", [f"Texto {i} de outro inquilino." for i in range(60)], seed=3)
    db.execute("reset role")
    db.execute("analyze hipocampo_private.chunks")  # the graph's reltuples
    explain_nested_statements(db)
    world.act("service_role")
    patch = {"exact_scan_max_rows": 1, "hnsw_visit_cost": visit_cost}
    db.execute(
        "update hipocampo_private.settings set config = %s::jsonb where tenant_id = %s",
        (json.dumps({"retrieval": patch}), world.tenant_a),
    )
    plans = logged_plans(db)
    world.act("authenticated", world.member_a, world.tenant_a)
    assert search(db, match_count=2)
    dense = [p for p in plans if "with nn as" in p and "document_id" in p]
    assert dense, "the dense leg's statement was not seen"
    walked = any("::extensions.vector(" in p for p in dense)
    assert walked == (path == "hnsw"), dense


def _budget_world(db: psycopg.Connection[dict[str, Any]], world: World, budget: int) -> dict[str, int]:
    """kb_a gains a rare term (zircônio, in three long chunks, one of them also holding the common
    term) beside a common one (quartzo, in four more chunks), a short chunk holding quartzo alone
    five times (lexically the best), four penalty chunks holding quartzo and three
    penalty chunks holding neither at the query vector (the dense leg's candidates); candidates
    per leg = match_count. Returns the chunks' ids by their text."""
    world.act("service_role")
    db.execute(
        "update hipocampo_private.settings set config = %s::jsonb where tenant_id = %s",
        (
            json.dumps(
                {"retrieval": {"candidate_multiplier": 1, "min_candidates": 1, "lexical_postings_budget": budget}}
            ),
            world.tenant_a,
        ),
    )
    long = " ".join(f"palavra{j}" for j in range(60))
    texts = [f"O zircônio {i} aparece nesta rocha antiga e dura, {long}." for i in range(2)]
    texts.append(f"O zircônio aparece ao lado do quartzo nesta rocha antiga e dura, {long}.")
    texts += [f"Uma rocha {i} de quartzo entre muitas outras pedras da serra." for i in range(4)]
    texts.append("Quartzo quartzo quartzo quartzo quartzo.")
    world.ingest(world.kb_a, "rocks", texts, seed=11)
    for items in (
        [f"Multa {i} paga em quartzo lapidado." for i in range(4)],
        [f"Texto neutro {i} sem as palavras procuradas." for i in range(3)],
    ):
        chunks = [
            {
                "chunk_index": i,
                "content": t,
                "content_hash": f"{t}-h",
                "embedding": unit_vector(7) if t.startswith("Texto") else unit_vector(3000 + i),
            }
            for i, t in enumerate(items)
        ]
        doc = {"title": items[0], "source_uri": f"test://{items[0]}", "content_hash": items[0]}
        doc["source_type"] = "penalty"
        db.execute(
            "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
            (world.kb_a, json.dumps(doc), json.dumps(chunks), MODEL),
        )
    return {
        r["content"]: r["id"]
        for r in db.execute("select id, content from hipocampo_private.chunks where kb_id = %s", (world.kb_a,))
    }


@pytest.mark.parametrize("budget", [0, 3])
def test_the_lexical_leg_reads_common_terms_by_key_beyond_its_postings_budget(
    db: psycopg.Connection[dict[str, Any]], world: World, budget: int
) -> None:
    """retrieval.lexical_postings_budget (issue 60 §2): the rare term's postings (3) are read in
    full, the common term's (10) beyond a budget of 3 only by key for the chunks that can rank.
    The chunk holding only the common term, lexically the best, is then not scored, and the chunk
    holding both keeps its whole BM25 score; with 0 (every posting) the common-only chunk ranks."""
    ids = _budget_world(db, world, budget)
    both = next(i for t, i in ids.items() if "zircônio aparece ao lado do quartzo" in t)
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = search(db, "zircônio quartzo", match_count=3, dense_weight=1e-6)
    by_id = {r["chunk_id"]: r["lexical_score"] for r in rows}
    assert both in by_id
    assert (ids["Quartzo quartzo quartzo quartzo quartzo."] in by_id) == (budget == 0), rows
    world.act("service_role")
    db.execute(
        "update hipocampo_private.settings set config = config #- '{retrieval,lexical_postings_budget}'"
        " where tenant_id = %s",
        (world.tenant_a,),
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    exact = {
        r["chunk_id"]: r["lexical_score"] for r in search(db, "zircônio quartzo", match_count=3, dense_weight=1e-6)
    }
    assert by_id[both] == pytest.approx(exact[both])


@pytest.mark.parametrize("keep", [1, 2, 5])
def test_the_lexical_leg_keeps_the_best_scored_chunks_and_the_dense_candidates(
    db: psycopg.Connection[dict[str, Any]], world: World, keep: int
) -> None:
    """_bm25_read (issue 60 §2) hands on the best `keep` chunks of all and every dense candidate
    holding a term read, best first, with the scores the whole list gives them: the same as taking
    them from every chunk scored and sorted; a dense candidate holding no term is not among them."""
    ids = _budget_world(db, world, 0)
    db.execute("reset role")  # the private step, called as hybrid_search's definer calls it
    terms = "select t.* from hipocampo_private._lexical_terms(array[%s]::uuid[], %s, 'zircônio quartzo', 0, null) as t"
    t = db.execute(terms, (world.kb_a, MODEL)).fetchone()
    read = (
        "select r.ids, r.scores from hipocampo_private._bm25_read(%s, %s, %s, %s, %s, %s, 1.2, 0.75, %s,"
        " %s::bigint[]) as r"
    )
    args = (world.tenant_a, t["t_kb"], t["t_lex"], t["t_idf"], t["t_avg"], t["t_read"])
    every = db.execute(read, (*args, None, [])).fetchone()
    assert len(every["ids"]) == 12  # every chunk holding zircônio or quartzo
    neutral = next(i for c, i in ids.items() if c.startswith("Texto neutro"))
    dense = [every["ids"][-1], neutral, every["ids"][0], every["ids"][6]]
    got = db.execute(read, (*args, keep, dense)).fetchone()
    wanted = [i for n, i in enumerate(every["ids"]) if n < keep or i in dense]
    assert got["ids"] == wanted
    assert got["scores"] == [every["scores"][every["ids"].index(i)] for i in wanted]


def test_a_bounded_lexical_leg_the_filters_leave_short_reads_every_posting(
    db: psycopg.Connection[dict[str, Any]], world: World
) -> None:
    """Within the budget the candidates are the rare term's chunks and the dense leg's; when the
    filters leave fewer than the candidates asked of them (source_types penalty: none of those
    holds the rare term), the leg reads every term's postings again, so the penalty chunks holding
    the common term score."""
    _budget_world(db, world, 3)
    world.act("authenticated", world.member_a, world.tenant_a)
    rows = search(db, "zircônio quartzo", match_count=3, dense_weight=1e-6, source_types=["penalty"])
    assert len(rows) == 3
    assert all(r["content"].startswith("Multa") and r["lexical_score"] > 0 for r in rows), rows
