"""hybrid_search latency, this version against an earlier one, in the same run (issue 18 §4).

Usage:  .venv/bin/python benchmarks/search_ab.py [--ref 4bf49f1] [--sets faquad,quati,scifact,latency]
        [--queries 100] [--rounds 3] [--transport] [--write]

The earlier version is ``hipocampo.hybrid_search`` as ``supabase/schemas/05_hybrid_search.sql``
defined it at git ``--ref``, installed for the run as ``bench_ref.hybrid_search`` and dropped
afterwards (a version before 6055af9 wrote ``chunks.last_accessed_at``,
which is gone, and cannot run any more).
Each set's corpus is a knowledge base of tenant ``bench`` (as benchmarks/retrieval.py builds it,
analysed); its test questions are asked as a member of the tenant (RLS, JWT claims), the two
versions in turn (which first alternates per round), one transaction per call; the time is the
SQL call as the client sees it (one round trip, the query vector sent as text). Both versions must return the same
chunks in the same order with the same scores (freshness aside: ``now()`` differs); the run
fails otherwise. Reports p50 / p95 ms per version and set and the ratio of the medians.
``--write`` puts the table in docs/BENCHMARKS.md.

The set ``latency`` is benchmarks/latency.py's 50 tenants of 2,000 SciFact chunks each (100,000 in
all; run that script first): question i is asked by the member of tenant i mod 50, in its
knowledge base, with the tenants' configuration as it is.

``--transport``: instead of two versions, the current ``hipocampo.hybrid_search`` with the query
vector sent as a text literal (``before``, how the Python client sent it) and in pgvector's binary
format (``after``, how ``hipocampo.rpc`` sends it since 2026-11-26); its own section.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from typing import Any

import psycopg

from hipocampo import Actor, Hipocampo, db
from hipocampo.config import repo_root
from hipocampo.embeddings import CachingEmbedder, LocalMiniLM, count_tokens
from hipocampo.evaluation import index_beir
from hipocampo.evaluation.datasets import load_beir
from hipocampo.rpc import BinaryVector
from report import as_member, bench_member, install_reference, latency_tenants, pct, write_section

BEGIN, END = "<!-- search-ab:begin -->", "<!-- search-ab:end -->"
T_BEGIN, T_END = "<!-- search-transport:begin -->", "<!-- search-transport:end -->"
CALL = (
    "select chunk_id, dense_score, lexical_score, fused_score, rank from {fn}("
    "query_text => %s, query_embedding => %s::extensions.vector, kb_ids => array[%s]::uuid[])"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ref", default="4bf49f1", help="git revision of the earlier version")
    ap.add_argument("--sets", default="faquad,quati,scifact")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--transport", action="store_true", help="text against binary query vectors, current version")
    ap.add_argument("--write", action="store_true")
    ap.add_argument(
        "--section",
        default=None,
        help="write a section of its own, <!-- search-ab-SECTION:begin -->, titled --title (default: the first A/B's)",
    )
    ap.add_argument("--title", default="Hybrid search on a small knowledge base (before / after, one run)")
    args = ap.parse_args()
    url = db.ensure_database()
    embedder = CachingEmbedder(LocalMiniLM(), repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite")
    rows: list[str] = []
    with Hipocampo(url) as root, psycopg.connect(url, autocommit=True) as conn:
        tid, claims = bench_member(root)
        if not args.transport:
            install_reference(conn, args.ref, [("05_hybrid_search.sql", "hipocampo.hybrid_search")])
        try:
            for name in args.sets.split(","):
                if name == "latency":
                    texts = list(load_beir("scifact").queries.values())[: args.queries]
                    who, kbs, size = latency_tenants(conn, len(texts))
                else:
                    ds = load_beir(name)
                    service = root.as_actor(Actor.service(tid))
                    kb = str(service.kb_id(index_beir(service, ds, embedder, count_tokens)))
                    for table in ("chunks", "documents", "kb_postings", "kb_term_stats", "kb_text_stats"):
                        conn.execute(f"analyze hipocampo_private.{table}")
                    chunks = conn.execute(
                        "select count(*) from hipocampo_private.chunks where kb_id = %s", (kb,)
                    ).fetchone()
                    texts = list(ds.queries.values())[: args.queries]
                    who, kbs, size = [claims] * len(texts), [kb] * len(texts), f"{(chunks or [0])[0]:,}"
                raw = [embedder.embed_query(t) for t in texts]
                sent: dict[str, list[Any]] = {
                    "text": ["[" + ",".join(map(str, v)) + "]" for v in raw],
                    "binary": [BinaryVector(v) for v in raw],
                }
                times: dict[str, list[float]] = {"before": [], "after": []}
                answers: dict[str, list[Any]] = {"before": [], "after": []}
                versions = (
                    [("before", "hipocampo.hybrid_search", "text"), ("after", "hipocampo.hybrid_search", "binary")]
                    if args.transport
                    else [("before", "bench_ref.hybrid_search", "text"), ("after", "hipocampo.hybrid_search", "text")]
                )
                for n_round in range(args.rounds):
                    # Which version goes first alternates: the second of a pair runs on warmer caches.
                    for label, fn, transport in versions if n_round % 2 == 0 else versions[::-1]:
                        answers[label] = []
                        for q, v, member, kb in zip(texts, sent[transport], who, kbs, strict=True):
                            with as_member(conn, member) as cur:
                                t0 = time.perf_counter()
                                cur.execute(CALL.format(fn=fn), (q, v, kb))  # type: ignore[arg-type]
                                got = cur.fetchall()
                                times[label].append((time.perf_counter() - t0) * 1000)
                            answers[label].append(
                                [tuple(round(x, 9) if isinstance(x, float) else x for x in r) for r in got]
                            )
                if answers["before"] != answers["after"]:
                    sys.exit(f"{name}: the two versions returned different results")
                b, a = statistics.median(times["before"]), statistics.median(times["after"])
                before, after = f"{b:.2f} / {pct(times['before'], 95):.2f}", f"{a:.2f} / {pct(times['after'], 95):.2f}"
                line = f"| {name} | {size} | {len(times['after'])} | {before} | {after} | {b / a:.2f}× |"
                print(line, flush=True)
                rows.append(line)
        finally:
            conn.execute("drop schema if exists bench_ref cascade")
    if args.write and args.transport:
        cmd = "python benchmarks/search_ab.py " + " ".join(sys.argv[1:])
        text = "\n".join(
            [
                T_BEGIN,
                "### The query vector as text or binary (one run)",
                "",
                f"Command: `{cmd.strip()}`. The current `hybrid_search`, the same test questions as a member of the "
                "tenant (RLS), one transaction per call, defaults; `before` sends the 384-float query vector as a "
                "text literal (how the Python client sent it), `after` in pgvector's binary format (how "
                "`hipocampo.rpc` sends every vector argument since 2026-11-26), which first alternating per round. "
                "Same rows and scores either way.",
                "",
                "| set | chunks in the KB | calls per way | text p50 / p95 ms | binary p50 / p95 ms | median ratio |",
                "|---|---|---|---|---|---|",
                *rows,
                T_END,
            ]
        )
        print(f"written to {write_section(T_BEGIN, T_END, text)}")
    elif args.write:
        cmd = "python benchmarks/search_ab.py " + shlex.join(sys.argv[1:])
        begin, end = (
            (f"<!-- search-ab-{args.section}:begin -->", f"<!-- search-ab-{args.section}:end -->")
            if args.section
            else (BEGIN, END)
        )
        text = "\n".join(
            [
                begin,
                f"## {args.title}",
                "",
                f"Command: `{cmd.strip()}`. `before` = `hybrid_search` at git {args.ref}, installed beside the "
                "current one for the run; both asked the same test questions as a member of the tenant (RLS), "
                "in turn, which one first alternating per round, one transaction per call, defaults (k = 5, "
                "hybrid, score fusion); the "
                "time is the SQL call as the client sees it, one round trip with the 384-float query vector as "
                "text (about 0.3 ms of it: `select %s::extensions.vector` alone). Both returned the same rows "
                "and scores for every question.",
                "",
                "| set | chunks in the KB | calls per version | before p50 / p95 ms | after p50 / p95 ms "
                "| median ratio |",
                "|---|---|---|---|---|---|",
                *rows,
                end,
            ]
        )
        print(f"written to {write_section(begin, end, text)}")


if __name__ == "__main__":
    main()
