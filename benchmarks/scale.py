"""The scaling curve behind docs/SCALE.md (issue 20 §5): DB-side ``hybrid_search`` latency as one
knowledge base grows, with synthetic vectors and real text statistics.

    python benchmarks/scale.py [--sizes 10000,100000] [--queries 40] [--write]

A throwaway tenant gets one knowledge base whose chunks are SciFact abstracts cycled (real
lexical statistics: BM25 postings, document frequencies) with random unit vectors (synthetic: no
model runs, so a million rows take minutes, not hours), written straight into the tables as the
owner in batches of 10,000 (the statement triggers keep postings and statistics as
``ingest_document`` does; the model's partial HNSW index is maintained row by row). After each
size is reached and analysed, ``--queries`` SciFact questions with random unit query vectors go
through ``hipocampo.hybrid_search`` as service_role, one transaction each (the SQL call alone,
no client work); p50 / p95 in ms. ``--index-after-load`` drops the model's HNSW index while
loading and builds it (parallel, 8 GB of maintenance_work_mem) before each measurement; the index
is rebuilt at the end whatever happens. Nothing else may call ``db.ensure_database()`` meanwhile:
it creates the configured model's index again. Sizes up to ``retrieval.exact_scan_max_rows`` (10,000) scan
the vectors exactly, larger ones use HNSW. The tenant is deleted at the end.

``--budgets`` (issue 60 §2): at each size, the same questions again with
``retrieval.lexical_postings_budget`` set to each budget in the tenant's config (0: every
posting, the reference), one random query vector per question for every budget, the budgets in
turn per question, timed after an untimed round: ``hybrid_search`` p50 / p95, recall@10 against
the reference (the same call reading every posting) of the chunks and of their distinct texts
(the abstracts are cycled, so a text has copies), and how many questions' terms hold more
postings than the budget (read by key beyond it). ``--write`` also replaces the postings
budget's section of docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hipocampo import db
from hipocampo.evaluation.datasets import load_beir
from report import pct, write_section

BEGIN, END = "<!-- scale:begin -->", "<!-- scale:end -->"
BUDGET_BEGIN, BUDGET_END = "<!-- lexical-budget:begin -->", "<!-- lexical-budget:end -->"
DIMS = 384
MODEL = "multilingual-e5-small"  # the default model (issue 61 §2); the vectors are random, 384 dimensions


def _vector(rng: random.Random) -> str:
    v = [rng.gauss(0, 1) for _ in range(DIMS)]
    n = sum(x * x for x in v) ** 0.5
    return "[" + ",".join(f"{x / n:.5f}" for x in v) + "]"


def grow(conn: psycopg.Connection[tuple[object, ...]], tenant: uuid.UUID, kb: uuid.UUID, texts: list[str],
         have: int, want: int, rng: random.Random) -> float:  # fmt: skip
    """Add chunks (100 per document) until the KB holds ``want``; returns the seconds taken."""
    t0 = time.perf_counter()
    while have < want:
        n = min(10_000, want - have)
        docs = [uuid.uuid4() for _ in range(max(1, n // 100))]
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                "insert into hipocampo_private.documents (id, tenant_id, kb_id, title, source_uri, content_hash)"
                " values (%s, %s, %s, %s, %s, %s)",
                [(d, tenant, kb, f"doc {d}", f"scale://{d}", d.hex) for d in docs],
            )
            rows = []
            for i in range(n):
                text = texts[(have + i) % len(texts)]
                rows.append((docs[i % len(docs)], i, text, f"{kb}:{have + i}", _vector(rng)))
            with cur.copy(
                "copy hipocampo_private.chunks (tenant_id, kb_id, document_id, chunk_index, content,"
                " token_count, content_hash, ts_config, embedding, embedding_model) from stdin"
            ) as copy:
                for doc, i, text, digest, vec in rows:
                    copy.write_row(
                        (tenant, kb, doc, i, text, 200, digest, "hipocampo_private.english_unaccent", vec, MODEL)
                    )
        have += n
        print(f"  {have} chunks ({time.perf_counter() - t0:.0f} s)", flush=True)
    return time.perf_counter() - t0


def hnsw_index(conn: psycopg.Connection[tuple[object, ...]]) -> str:
    """The name of the model's partial HNSW index on chunks (_ensure_model_index)."""
    row = conn.execute("select hipocampo_private._model_index_name('chunks', %s)", (MODEL,)).fetchone()
    assert row is not None
    return str(row[0])


def build_index(conn: psycopg.Connection[tuple[object, ...]]) -> float:
    """Build the model's HNSW index (parallel, enough memory); returns the seconds taken."""
    t0 = time.perf_counter()
    conn.execute("set maintenance_work_mem = '8GB'")
    conn.execute("set max_parallel_maintenance_workers = 1")
    conn.execute("select hipocampo_private._ensure_model_index(%s)", (MODEL,))
    conn.execute("reset maintenance_work_mem")
    conn.execute("reset max_parallel_maintenance_workers")
    return time.perf_counter() - t0


def measure(conn: psycopg.Connection[tuple[object, ...]], tenant: uuid.UUID, kb: uuid.UUID,
            queries: list[str], rng: random.Random) -> list[float]:  # fmt: skip
    conn.execute("analyze hipocampo_private.chunks")
    conn.execute("analyze hipocampo_private.kb_postings")
    out = []
    for q in queries:
        vec = _vector(rng)
        t0 = time.perf_counter()
        with conn.transaction():
            conn.execute("set local role service_role")
            conn.execute(
                "select count(*) from hipocampo.hybrid_search(query_text => %s,"
                " query_embedding => %s::extensions.vector, kb_ids => array[%s]::uuid[], tenant_id => %s)",
                (q, vec, kb, tenant),
            ).fetchone()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _top10(
    conn: psycopg.Connection[tuple[object, ...]], tenant: uuid.UUID, kb: uuid.UUID, q: str, vec: str
) -> list[tuple[int, str]]:
    with conn.transaction():
        conn.execute("set local role service_role")
        row = conn.execute(
            "select array_agg(chunk_id order by rank), array_agg(md5(content) order by rank)"
            " from hipocampo.hybrid_search(query_text => %s,"
            " query_embedding => %s::extensions.vector, kb_ids => array[%s]::uuid[], tenant_id => %s)",
            (q, vec, kb, tenant),
        ).fetchone()
    if not row or not isinstance(row[0], list) or not isinstance(row[1], list):
        return []
    return [(int(str(i)), str(t)) for i, t in zip(row[0], row[1], strict=True)]


def _postings(conn: psycopg.Connection[tuple[object, ...]], kb: uuid.UUID, q: str) -> int:
    """How many postings the question's terms hold in the knowledge base."""
    row = conn.execute(
        "select coalesce(sum(ts.doc_freq), 0)::bigint from hipocampo_private.knowledge_bases as k"
        " cross join lateral hipocampo_private._question_words(k.language, k.document_languages, %s) as u"
        " left join hipocampo_private.kb_term_stats as ts on ts.kb_id = k.id and ts.lexeme = u.lexeme"
        " where k.id = %s",
        (q, kb),
    ).fetchone()
    return int(str(row[0])) if row else 0


def _set_budget(conn: psycopg.Connection[tuple[object, ...]], tenant: uuid.UUID, budget: int) -> None:
    """The tenant's config row: retrieval.lexical_postings_budget = budget."""
    conn.execute(
        "insert into hipocampo_private.settings (tenant_id, config) values (%s, %s::jsonb)"
        " on conflict (coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid))"
        " do update set config = excluded.config",
        (tenant, f'{{"retrieval": {{"lexical_postings_budget": {budget}}}}}'),
    )


Curve = list[tuple[int, float, float, float, float, int]]


def measure_budgets(conn: psycopg.Connection[tuple[object, ...]], tenant: uuid.UUID, kb: uuid.UUID,
                    queries: list[str], budgets: list[int], rng: random.Random) -> Curve:  # fmt: skip
    """Per budget (0 first, the reference): hybrid_search p50 / p95 ms, recall@10 against the
    reference, and the questions whose terms hold more postings than the budget."""
    vecs = [_vector(rng) for _ in queries]
    postings = [_postings(conn, kb, q) for q in queries]
    order = [0, *(b for b in budgets if b != 0)]
    times: dict[int, list[float]] = {b: [] for b in order}
    tops: dict[int, list[list[tuple[int, str]]]] = {b: [] for b in order}
    try:
        for timed in (False, True):
            for q, v in zip(queries, vecs, strict=True):
                for b in order:
                    _set_budget(conn, tenant, b)
                    t0 = time.perf_counter()
                    top = _top10(conn, tenant, kb, q, v)
                    if timed:
                        times[b].append((time.perf_counter() - t0) * 1000)
                        tops[b].append(top)
    finally:
        conn.execute("delete from hipocampo_private.settings where tenant_id = %s", (tenant,))
    out = []
    for b in order:
        pairs = [(x, r) for x, r in zip(tops[b], tops[0], strict=True) if r]
        rec = [len({i for i, _ in x} & {i for i, _ in r}) / len(r) for x, r in pairs]
        # The chunks are abstracts cycled, so a text has copies: recall of the distinct texts too.
        rec_text = [len({t for _, t in x} & {t for _, t in r}) / len({t for _, t in r}) for x, r in pairs]
        over = sum(p > b for p in postings) if b else 0
        out.append(
            (b, statistics.median(times[b]), pct(times[b], 95), statistics.mean(rec), statistics.mean(rec_text), over)
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the tenant (for profiling); prints its ids")
    ap.add_argument(
        "--budgets",
        default="0,2000,4000,8000,16000",
        help="lexical_postings_budget values measured at each size ('' for none; 0, every posting, is the reference)",
    )
    ap.add_argument(
        "--index-after-load",
        action="store_true",
        help="drop the model's HNSW index while growing and build it before each measurement (large sizes)",
    )
    args = ap.parse_args()
    ds = load_beir("scifact")
    texts = [f"{t} {x}".strip() for t, x in ds.corpus.values()]
    queries = list(ds.queries.values())[: args.queries]
    rng = random.Random(7)
    url = db.ensure_database()
    rows = []
    budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    curves: list[tuple[int, Curve]] = []
    with psycopg.connect(url, autocommit=True) as conn:
        tenant, kb = uuid.uuid4(), uuid.uuid4()
        conn.execute("insert into hipocampo_private.tenants (id, name, slug) values (%s, 'Scale', %s)",
                     (tenant, f"scale-{tenant.hex[:8]}"))  # fmt: skip
        conn.execute("insert into hipocampo_private.knowledge_bases (id, tenant_id, name, language, status)"
                     " values (%s, %s, 'scale', 'english', 'ready')", (kb, tenant))  # fmt: skip
        try:
            have = 0
            for size in (int(s) for s in args.sizes.split(",")):
                if args.index_after_load:
                    conn.execute(f"drop index if exists hipocampo_private.{hnsw_index(conn)}")
                print(f"growing to {size} chunks", flush=True)
                took = grow(conn, tenant, kb, texts, have, size, rng)
                have = size
                built = build_index(conn) if args.index_after_load else 0.0
                lat = measure(conn, tenant, kb, queries, rng)
                rows.append((size, took, built, statistics.median(lat), pct(lat, 95)))
                print(
                    f"{size} chunks: load {took:.0f} s, index {built:.0f} s, hybrid_search p50 {rows[-1][3]:.1f} ms,"
                    f" p95 {rows[-1][4]:.1f} ms",
                    flush=True,
                )
                if budgets:
                    curves.append((size, measure_budgets(conn, tenant, kb, queries, budgets, rng)))
                    for b, p50, p95, rec, rec_text, over in curves[-1][1]:
                        print(f"  budget {b}: {p50:.1f} / {p95:.1f} ms, recall@10 {rec:.3f} / {rec_text:.3f}, {over}")
        finally:
            build_index(conn)  # the model's index is back whatever happened
            if args.keep:
                print(f"kept: tenant {tenant}, knowledge base {kb}")
            else:
                # The chunks in one statement first: the delete trigger then drops the knowledge
                # base's postings by key range (a tenant's cascade goes one document at a time).
                conn.execute("delete from hipocampo_private.chunks where tenant_id = %s", (tenant,))
                conn.execute("delete from hipocampo_private.tenants where id = %s", (tenant,))
    table = "| chunks in the KB | vector leg | load of the step (s) | HNSW build (s) | hybrid_search p50 ms "
    table += "| p95 ms |\n"
    table += "|---|---|---|---|---|---|\n"
    table += "\n".join(
        f"| {s:,} | {'exact' if s <= 10_000 else 'HNSW'} | {t:.0f} | {b:.0f} | {p50:.1f} | {p95:.1f} |"
        for s, t, b, p50, p95 in rows
    )
    print(table)
    if args.write:
        cmd = "python benchmarks/scale.py " + " ".join(a for a in sys.argv[1:] if a != "--write")
        text = (
            f"{BEGIN}\n## Scaling curve of one knowledge base (issue 20 §5)\n\n`{cmd.strip()}` "
            f"({time.strftime('%Y-%m-%d')}, 2 cores, embedded PostgreSQL 18 + pgvector 0.8): SciFact abstracts "
            f"cycled with random unit vectors, {args.queries} SciFact questions per size as service_role, "
            f"the SQL call alone.\n\n{table}\n{END}"
        )
        print(f"written: {write_section(BEGIN, END, text)}")
    if curves:
        btable = "| chunks in the KB | lexical_postings_budget | hybrid_search p50 ms | p95 ms "
        btable += "| recall@10 against every posting: chunks | texts | questions beyond the budget |\n"
        btable += "|---|---|---|---|---|---|---|\n"
        btable += "\n".join(
            f"| {size:,} | {'every posting' if b == 0 else f'{b:,}'} | {p50:.1f} | {p95:.1f} | {rec:.3f} "
            f"| {rec_text:.3f} | {f'{over} of {len(queries)}' if b else '-'} |"
            for size, curve in curves
            for b, p50, p95, rec, rec_text, over in curve
        )
        print(btable)
        if args.write:
            cmd = "python benchmarks/scale.py " + " ".join(a for a in sys.argv[1:] if a != "--write")
            text = (
                f"{BUDGET_BEGIN}\n## The lexical leg's postings budget (issue 60 §2)\n\n`{cmd.strip()}` "
                f"({time.strftime('%Y-%m-%d')}, 2 cores): the knowledge base above at each size, "
                f"{len(queries)} SciFact questions with a random query vector each, as service_role, "
                "every budget per question in turn, "
                "timed after an untimed round. `lexical_postings_budget`: the rarest terms' postings read in full "
                "while they sum to at most this, the others by key for the best 4 × candidates and the dense "
                "candidates; recall@10 against the same call reading every posting, of the chunks and of their "
                "distinct texts (each abstract has about size / 5,183 copies, so among the chunks it also "
                "measures which copies tie-break in).\n\n"
                f"{btable}\n{BUDGET_END}"
            )
            print(f"written: {write_section(BUDGET_BEGIN, BUDGET_END, text)}")


if __name__ == "__main__":
    main()
