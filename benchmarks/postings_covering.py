"""hybrid_search with and without tf / chunk_length in the postings' primary key, in one run.

Usage:  .venv/bin/python benchmarks/postings_covering.py [--sets faquad,scifact] [--queries 100]
        [--rounds 3] [--write]

The knowledge bases are benchmarks/retrieval.py's (tenant ``bench``). Each round rebuilds
``kb_postings_pkey`` without the included columns (the key before commit 2eb89b8),
vacuums and times every set's questions, then rebuilds it with them (``include (tf,
chunk_length)``: index-only scans) and times them again; the key is left as the migrations
define it. Questions as a member of the tenant (RLS, JWT claims), one transaction per call, the
SQL call as the client sees it. Reports p50 / p95 ms per key and set and the ratio of the medians;
``--write`` puts the table in docs/BENCHMARKS.md (§Covering postings).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import psycopg

from hipocampo import Actor, Hipocampo, db
from hipocampo.config import repo_root
from hipocampo.embeddings import CachingEmbedder, LocalMiniLM, count_tokens
from hipocampo.evaluation import index_beir
from hipocampo.evaluation.datasets import load_beir
from report import as_member, bench_member, pct, write_section

BEGIN, END = "<!-- postings-covering:begin -->", "<!-- postings-covering:end -->"
KEY = "primary key (tenant_id, kb_id, lexeme, chunk_id)"
CALL = (
    "select count(*) from hipocampo.hybrid_search(query_text => %s, query_embedding => %s::extensions.vector,"
    " kb_ids => array[%s]::uuid[])"
)


def rebuild_key(conn: psycopg.Connection[tuple[object, ...]], covering: bool) -> None:
    include = " include (tf, chunk_length)" if covering else ""
    conn.execute(
        "alter table hipocampo_private.kb_postings drop constraint kb_postings_pkey,"
        f" add constraint kb_postings_pkey {KEY}{include}"
    )
    conn.execute("vacuum analyze hipocampo_private.kb_postings")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="faquad,scifact")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    url = db.ensure_database()
    embedder = CachingEmbedder(LocalMiniLM(), repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite")
    work: list[tuple[str, str, list[str], list[str]]] = []
    with Hipocampo(url) as root:
        tid, claims = bench_member(root)
        service = root.as_actor(Actor.service(tid))
        for name in args.sets.split(","):
            ds = load_beir(name)
            kb = str(service.kb_id(index_beir(service, ds, embedder, count_tokens)))
            texts = list(ds.queries.values())[: args.queries]
            vectors = ["[" + ",".join(map(str, v)) + "]" for v in map(embedder.embed_query, texts)]
            work.append((name, kb, texts, vectors))
    times: dict[tuple[str, bool], list[float]] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            for _ in range(args.rounds):
                for covering in (False, True):
                    rebuild_key(conn, covering)
                    for name, kb, texts, vectors in work:
                        for q, v in zip(texts, vectors, strict=True):
                            with as_member(conn, claims) as cur:
                                t0 = time.perf_counter()
                                cur.execute(CALL, (q, v, kb))  # type: ignore[arg-type]
                                cur.fetchall()
                                times.setdefault((name, covering), []).append((time.perf_counter() - t0) * 1000)
        finally:
            rebuild_key(conn, True)
    rows = []
    for name, *_ in work:
        plain, cover = times[(name, False)], times[(name, True)]
        p, c = statistics.median(plain), statistics.median(cover)
        before, after = f"{p:.2f} / {pct(plain, 95):.2f}", f"{c:.2f} / {pct(cover, 95):.2f}"
        rows.append(f"| {name} | {len(cover)} | {before} | {after} | {p / c:.2f}× |")
        print(rows[-1], flush=True)
    if args.write:
        cmd = "python benchmarks/postings_covering.py " + " ".join(sys.argv[1:])
        text = "\n".join(
            [
                BEGIN,
                "## Covering postings (the BM25 leg by index-only scans)",
                "",
                f"Command: `{cmd.strip()}`. Each round rebuilds `kb_postings_pkey` without, then with "
                "`include (tf, chunk_length)`, vacuums, and times the sets' questions "
                "through `hybrid_search` as a member (RLS), one transaction per call, defaults (k = 5). Same "
                "rows and scores either way (the key's columns change, not the query).",
                "",
                "| set | calls per key | key only: p50 / p95 ms | covering key: p50 / p95 ms | median ratio |",
                "|---|---|---|---|---|",
                *rows,
                END,
            ]
        )
        print(f"written to {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
