"""hybrid_search beside its peers on the same chunks and vectors, in one run (issue 47 §1).

Usage:  .venv/bin/python benchmarks/search_peers.py [--sets faquad,scifact] [--queries 200]
        [--rounds 3] [--k 10] [--write]

Three ways to search a set's knowledge base (tenant ``bench``, as benchmarks/retrieval.py builds
it, analysed), each called as a member of the tenant (``set local role authenticated`` and the
JWT claims, one transaction per call, one round trip with the 384-float query vector as text):

- ``hipocampo``: ``hipocampo.hybrid_search`` with its defaults (score fusion of the dense leg and
  BM25, MMR at lambda 1), ``match_count => k``.
- ``supabase``: the hybrid search of Supabase's guide (supabase.com/docs/guides/ai/hybrid-search):
  a table with a stored ``tsvector`` (GIN) and the embedding (HNSW, ``vector_ip_ops``); the
  full-text leg ranks ``fts @@ websearch_to_tsquery(q)`` by ``ts_rank_cd``, the semantic leg by
  inner product, each leg's first ``2 * least(k, 30)``, fused by RRF (k = 50) in a SQL function.
- ``langchain``: LangChain's ``SupabaseVectorStore`` query, ``match_documents``: the nearest by
  cosine distance (HNSW, ``vector_cosine_ops``) under an empty metadata filter; dense only.

The peers' table (schema ``bench_peer``, rebuilt per set) holds exactly the chunks of the set's
knowledge base: their text, their vectors, their document's id. Its text search configuration is
the knowledge base's language (the guide's example uses english; portuguese for FaQuAD is the fair
peer). The methods take turns (which goes first rotates per round); the time is the SQL call as the
client sees it. nDCG@10 and recall@10 are the same calls' (documents in first-hit order; the peers
ignore ties the way their SQL does). Reports p50 / p95 ms per method and set.
``--write`` puts the table in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from typing import Any

import psycopg

from hipocampo import Actor, Hipocampo
from hipocampo.embeddings import count_tokens
from hipocampo.evaluation import index_beir, ndcg_at_k, recall_at_k
from hipocampo.evaluation.datasets import load_beir
from models import with_model
from report import as_member, bench_member, pct, settle, write_section

PEER_SCHEMA = """
drop schema if exists bench_peer cascade;
create schema bench_peer;
create table bench_peer.documents (
    id bigint primary key,
    doc text not null,
    content text not null,
    metadata jsonb not null default '{{}}',
    fts tsvector generated always as (to_tsvector('{config}', content)) stored,
    embedding extensions.vector({dims}) not null
);
"""

PEER_INDEXES = """
create index on bench_peer.documents using gin (fts);
create index on bench_peer.documents using hnsw (embedding extensions.vector_ip_ops);
create index on bench_peer.documents using hnsw (embedding extensions.vector_cosine_ops);
"""

# The guide's hybrid_search, in its shape: two ranked legs, a full outer join, RRF.
SUPABASE_FN = """
create function bench_peer.hybrid_search(
    query_text text, query_embedding extensions.vector({dims}), match_count int,
    full_text_weight float = 1, semantic_weight float = 1, rrf_k int = 50
)
returns setof bench_peer.documents
language sql
as $$
with full_text as (
    select id,
        row_number() over (order by ts_rank_cd(fts, websearch_to_tsquery('{config}', query_text)) desc) as rank_ix
    from bench_peer.documents
    where fts @@ websearch_to_tsquery('{config}', query_text)
    order by rank_ix
    limit least(match_count, 30) * 2
),
semantic as (
    select id, row_number() over (order by embedding operator(extensions.<#>) query_embedding) as rank_ix
    from bench_peer.documents
    order by rank_ix
    limit least(match_count, 30) * 2
)
select documents.*
from full_text
full outer join semantic on full_text.id = semantic.id
join bench_peer.documents on coalesce(full_text.id, semantic.id) = documents.id
order by coalesce(1.0 / (rrf_k + full_text.rank_ix), 0.0) * full_text_weight
    + coalesce(1.0 / (rrf_k + semantic.rank_ix), 0.0) * semantic_weight desc
limit least(match_count, 30)
$$;
"""

# LangChain's SupabaseVectorStore function, in its shape.
LANGCHAIN_FN = """
create function bench_peer.match_documents(
    query_embedding extensions.vector({dims}), match_count int default null, filter jsonb default '{{}}'
)
returns table (id bigint, doc text, content text, metadata jsonb, similarity float)
language plpgsql
as $$
#variable_conflict use_column
begin
    return query
    select id, doc, content, metadata, 1 - (documents.embedding operator(extensions.<=>) query_embedding) as similarity
    from bench_peer.documents
    where metadata @> filter
    order by documents.embedding operator(extensions.<=>) query_embedding
    limit match_count;
end;
$$;
grant usage on schema bench_peer to authenticated;
grant select on all tables in schema bench_peer to authenticated;
grant execute on all functions in schema bench_peer to authenticated;
"""

CALLS = {
    "hipocampo": (
        "select source_uri from hipocampo.hybrid_search(query_text => %(q)s, query_embedding => "
        "%(v)s::extensions.vector, kb_ids => array[%(kb)s]::uuid[], match_count => %(k)s)"
    ),
    "supabase": "select doc from bench_peer.hybrid_search(%(q)s, %(v)s::extensions.vector, %(k)s)",
    "langchain": "select doc from bench_peer.match_documents(%(v)s::extensions.vector, %(k)s)",
}


def build_peer(conn: psycopg.Connection[Any], kb: str, prefix: str) -> int:
    """The peers' table and functions over the chunks of knowledge base ``kb``; its row count."""
    config, dims = conn.execute(
        "select hipocampo_private.text_search_config(kb.language)::text, e.dims"
        " from hipocampo_private.knowledge_bases as kb, hipocampo_private.embedding_models as e"
        " where kb.id = %s and e.active",
        (kb,),
    ).fetchone() or ("simple", 384)
    config = str(config).removeprefix("pg_catalog.")
    for sql in (PEER_SCHEMA, SUPABASE_FN, LANGCHAIN_FN):
        conn.execute(sql.format(config=config, dims=dims))  # type: ignore[arg-type]
    conn.execute(
        "insert into bench_peer.documents (id, doc, content, embedding)"
        " select c.id, substr(d.source_uri, %s), c.content, c.embedding"
        " from hipocampo_private.chunks as c join hipocampo_private.documents as d on d.id = c.document_id"
        " where c.kb_id = %s and d.status = 'active'",
        (len(prefix) + 1, kb),
    )
    conn.execute(PEER_INDEXES)  # type: ignore[arg-type]
    conn.execute("vacuum (analyze) bench_peer.documents")
    row = conn.execute("select count(*) from bench_peer.documents").fetchone()
    return int(row[0]) if row else 0


def ranked_docs(rows: list[tuple[Any, ...]], prefix: str) -> list[str]:
    """Document ids in first-hit order (a document's later chunks dropped)."""
    out: list[str] = []
    for (doc,) in rows:
        d = str(doc).removeprefix(prefix)
        if d not in out:
            out.append(d)
    return out


def run_set(
    root: Hipocampo, conn: psycopg.Connection[Any], name: str, args: argparse.Namespace, embedder: Any, claims: str
) -> list[str]:
    """Time every method on one set; the table rows."""
    ds = load_beir(name)
    tid = root.tenant_id("bench")
    service = root.as_actor(Actor.service(tid))
    kb = str(service.kb_id(index_beir(service, ds, embedder, count_tokens)))
    settle(conn)  # the load's clean-up done before any timing
    prefix = f"beir:{name}:"
    n_rows = build_peer(conn, kb, prefix)
    qids = [q for q in ds.queries if ds.qrels.get(q)][: args.queries]
    vectors = ["[" + ",".join(map(str, embedder.embed_query(ds.queries[q]))) + "]" for q in qids]
    methods = list(CALLS)
    times: dict[str, list[float]] = {m: [] for m in methods}
    quality: dict[str, tuple[list[float], list[float]]] = {m: ([], []) for m in methods}
    for n_round in range(args.rounds):
        order = methods[n_round % len(methods) :] + methods[: n_round % len(methods)]
        for method in order:
            for qid, vec in zip(qids, vectors, strict=True):
                params = {"q": ds.queries[qid], "v": vec, "kb": kb, "k": args.k}
                with as_member(conn, claims) as cur:
                    t0 = time.perf_counter()
                    cur.execute(CALLS[method], params)  # type: ignore[arg-type]
                    rows = cur.fetchall()
                    times[method].append((time.perf_counter() - t0) * 1000)
                if n_round == 0:
                    docs = ranked_docs(rows, prefix)
                    quality[method][0].append(ndcg_at_k(docs, ds.qrels[qid]))
                    quality[method][1].append(recall_at_k(docs, ds.qrels[qid]))
    lines = []
    for method in methods:
        xs = times[method]
        nd, rc = quality[method]
        line = (
            f"| {name} | {n_rows:,} | {method} | {len(xs)} | {statistics.median(xs):.2f} | {pct(xs, 95):.2f} "
            f"| {statistics.fmean(nd):.3f} | {statistics.fmean(rc):.3f} |"
        )
        print(line, flush=True)
        lines.append(line)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="faquad,scifact")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--k", type=int, default=10, help="rows asked of every method")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--section", default="search-peers", help="the BENCHMARKS.md section's marker name")
    ap.add_argument("--title", default="Hybrid search beside its peers (one run)")
    ap.add_argument("--beside", help="what else the database holds, said in the section")
    ap.add_argument(
        "--beside-chunks",
        type=int,
        default=0,
        help="what --beside says must be there: skip (nothing written) unless the database holds at least this many "
        "chunks of other tenants (latency.py's world, when the harness runs this step without it)",
    )
    ap.add_argument("--model", help="an offline embedding model (default: config.toml's, the one a new database has)")
    args = ap.parse_args()
    url, embedder = with_model(args.model)
    rows: list[str] = []
    with Hipocampo(url) as root, psycopg.connect(url, autocommit=True) as conn:
        tid, claims = bench_member(root)
        if args.beside_chunks:
            row = conn.execute("select count(*) from hipocampo_private.chunks where tenant_id <> %s", (tid,)).fetchone()
            if not row or row[0] < args.beside_chunks:
                have = row[0] if row else 0
                print(f"skipped: {have:,} chunks of other tenants, not the {args.beside_chunks:,} --beside says")
                return
        try:
            for name in args.sets.split(","):
                rows += run_set(root, conn, name, args, embedder, claims)
        finally:
            conn.execute("drop schema if exists bench_peer cascade")
    if args.write:
        begin, end = f"<!-- {args.section}:begin -->", f"<!-- {args.section}:end -->"
        cmd = "python benchmarks/search_peers.py " + shlex.join(sys.argv[1:])
        text = "\n".join(
            [
                begin,
                f"## {args.title}",
                "",
                f"Command: `{cmd.strip()}`. The same chunks and vectors ({embedder.model_name}) searched three ways, "
                "each called as a member of the tenant, one transaction per call, the query vector sent as text, "
                f"{args.k} rows asked of each; the methods take turns, the first rotating per round. `hipocampo`: "
                "`hybrid_search` with its defaults. `supabase`: the hybrid search of Supabase's guide (stored "
                "tsvector with GIN, HNSW `vector_ip_ops`, RRF k = 50), its text search configuration the "
                "knowledge base's language. `langchain`: LangChain's `match_documents` (HNSW `vector_cosine_ops`, "
                "dense only). nDCG@10 and recall@10 from the first round's calls. The database holds "
                + (args.beside or "the benchmark knowledge bases only")
                + ".",
                "",
                "| set | chunks | method | calls | p50 ms | p95 ms | nDCG@10 | recall@10 |",
                "|---|---|---|---|---|---|---|---|",
                *rows,
                end,
            ]
        )
        print(f"written to {write_section(begin, end, text)}")


if __name__ == "__main__":
    main()
