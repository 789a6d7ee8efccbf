"""The read RPCs with and without their writes, in the same run (issue 46 §1).

Usage:  .venv/bin/python benchmarks/reads_ab.py [--ref fe36eff] [--sets faquad,scifact] [--memories 200]
        [--queries 100] [--rounds 3] [--latency-tenants] [--write]

``before`` = ``hybrid_search`` and ``search_memories`` as ``supabase/schemas/`` defined them at git
``--ref`` (the last version whose reads wrote: a data_access_log row and the chunks' access times
for a search, the access counters of the memories for a recall), installed for the run as
``bench_ref.*`` with the helpers they wrote through, and dropped afterwards; ``after`` = the current
ones, whose only write is one read_queue row. Each set's corpus is a knowledge base of tenant
``bench`` (as benchmarks/retrieval.py builds it, analysed), its test questions asked as the tenant's
member (RLS, JWT claims); with ``--latency-tenants`` also SciFact questions over
benchmarks/latency.py's 100k chunks in 50 tenants, each as the member of one tenant in its
knowledge base. The memories are ``--memories`` SciFact questions offered to ``remember`` by that
member (all-MiniLM-L6-v2; those the memory gate keeps), recalled with the next ``--queries``
(``min_score => -1``: k rows). The
two versions in turn, which first alternating per round, one transaction per call; both must
return the same rows and scores (the run fails otherwise). Then the work the reads no longer do
is timed where it went: ``drain_read_queue`` over the rows the ``after`` calls queued (ms per
1,000 reads). ``--write`` puts the table in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
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
from report import as_member, bench_member, install_reference, latency_tenants, pct, write_section

BEGIN, END = "<!-- reads-ab:begin -->", "<!-- reads-ab:end -->"
SEARCH = (
    "select chunk_id, dense_score, lexical_score, fused_score, rank from {fn}("
    "query_text => %s, query_embedding => %s::extensions.vector, kb_ids => array[%s]::uuid[])"
)
RECALL = "select memory_id, score, rank from {fn}(%s::extensions.vector, min_score => -1)"
REFERENCE = [
    ("03_knowledge_bases.sql", "hipocampo_private._write_access_log"),
    ("05_hybrid_search.sql", "hipocampo.hybrid_search"),
    ("06_memory.sql", "hipocampo_private._touch_memories"),
    ("06_memory.sql", "hipocampo.search_memories"),
]


def _vec(v: Any) -> str:
    return "[" + ",".join(map(str, v)) + "]"


def _ab(
    conn: psycopg.Connection[Any],
    claims: str | list[str],
    call: str,
    fns: tuple[str, str],
    params: list[tuple[Any, ...]],
    rounds: int,
) -> dict[str, list[float]]:
    """Time ``call`` with each version over ``params`` (call i as ``claims[i]``, or all as one
    member); fail when their answers differ."""
    times: dict[str, list[float]] = {"before": [], "after": []}
    answers: dict[str, list[Any]] = {}
    versions = [("before", fns[0]), ("after", fns[1])]
    who = claims if isinstance(claims, list) else [claims] * len(params)
    for n_round in range(rounds):
        for label, fn in versions if n_round % 2 == 0 else versions[::-1]:
            answers[label] = []
            for p, member in zip(params, who, strict=True):
                with as_member(conn, member) as cur:
                    t0 = time.perf_counter()
                    cur.execute(call.format(fn=fn), p)  # type: ignore[arg-type]
                    got = cur.fetchall()
                    times[label].append((time.perf_counter() - t0) * 1000)
                answers[label].append([tuple(round(x, 9) if isinstance(x, float) else x for x in r) for r in got])
    if answers["before"] != answers["after"]:
        sys.exit(f"{call.split('(')[0]}: the two versions returned different results")
    return times


def _remember(service: Hipocampo, member: Hipocampo, texts: list[str], embedder: Any) -> int:
    """The member's memories (consent given): one per text; returns how many are stored."""
    member.rpc("set_memory_consent", {"granted": True}, "none")
    stored = 0
    for i, (text, v) in enumerate(zip(texts, embedder.embed_documents(texts), strict=True)):
        out = member.rpc(
            "remember",
            {"key": f"bench.note_{i}", "value": json.dumps(text), "description": text, "category": "projects",
             "embedding": list(v), "intensity": 8},
        )  # fmt: skip
        stored += bool(out and out.get("memory_id"))
    return stored


def _row(name: str, size: str, times: dict[str, list[float]]) -> str:
    b, a = statistics.median(times["before"]), statistics.median(times["after"])
    before, after = f"{b:.2f} / {pct(times['before'], 95):.2f}", f"{a:.2f} / {pct(times['after'], 95):.2f}"
    return f"| {name} | {size} | {len(times['after'])} | {before} | {after} | {b / a:.2f}× |"


def _at_scale(conn: psycopg.Connection[Any], embedder: Any, args: argparse.Namespace) -> str:
    """hybrid_search over benchmarks/latency.py's tenants (lat-00 …, 2,000 SciFact chunks each):
    query i as the member of tenant i mod n, in that tenant's knowledge base."""
    texts = list(load_beir("scifact").queries.values())[: args.queries]
    who, kbs, size = latency_tenants(conn, len(texts))
    params = [(q, _vec(embedder.embed_query(q)), kb) for q, kb in zip(texts, kbs, strict=True)]
    fns = ("bench_ref.hybrid_search", "hipocampo.hybrid_search")
    return _row("hybrid_search, latency tenants", size, _ab(conn, who, SEARCH, fns, params, args.rounds))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ref", default="fe36eff", help="git revision of the writing reads")
    ap.add_argument("--sets", default="faquad,scifact")
    ap.add_argument("--memories", type=int, default=200)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--latency-tenants", action="store_true", help="also hybrid_search over benchmarks/latency.py's 50 tenants"
    )
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    url = db.ensure_database()
    embedder = CachingEmbedder(LocalMiniLM(), repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite")
    rows: list[str] = []
    queued = 0
    with Hipocampo(url) as root, psycopg.connect(url, autocommit=True) as conn:
        tid, claims = bench_member(root)
        service = root.as_actor(Actor.service(tid))
        conn.execute("select hipocampo.drain_read_queue(100000)")
        install_reference(conn, args.ref, REFERENCE)
        try:
            for name in args.sets.split(","):
                ds = load_beir(name)
                kb = str(service.kb_id(index_beir(service, ds, embedder, count_tokens)))
                for table in ("chunks", "documents", "kb_postings", "kb_term_stats", "kb_text_stats"):
                    conn.execute(f"analyze hipocampo_private.{table}")
                n = conn.execute("select count(*) from hipocampo_private.chunks where kb_id = %s", (kb,)).fetchone()
                texts = list(ds.queries.values())[: args.queries]
                params = [(q, _vec(embedder.embed_query(q)), kb) for q in texts]
                fns = ("bench_ref.hybrid_search", "hipocampo.hybrid_search")
                rows.append(
                    _row(
                        f"hybrid_search, {name}",
                        f"{(n or [0])[0]:,} chunks",
                        _ab(conn, claims, SEARCH, fns, params, args.rounds),
                    )
                )
                queued += len(params) * args.rounds
                print(rows[-1], flush=True)
            if args.latency_tenants:
                rows.append(_at_scale(conn, embedder, args))
                queued += args.queries * args.rounds
                print(rows[-1], flush=True)
            notes = list(load_beir("scifact").queries.values())
            if len(notes) < args.memories + args.queries:
                sys.exit(f"SciFact has {len(notes)} questions: --memories + --queries must not exceed it")
            member = root.as_actor(Actor(
                "authenticated", json.loads(claims), None
            ))  # fmt: skip
            conn.execute(
                "delete from hipocampo_private.memories where tenant_id = %s and key like 'bench.note_%%'", (tid,)
            )
            stored = _remember(service, member, notes[: args.memories], embedder)
            conn.execute("analyze hipocampo_private.memories")
            recall = [(_vec(v),) for v in embedder.embed_documents(notes[args.memories : args.memories + args.queries])]
            fns = ("bench_ref.search_memories", "hipocampo.search_memories")
            rows.append(
                _row("search_memories", f"{stored} memories", _ab(conn, claims, RECALL, fns, recall, args.rounds))
            )
            queued += len(recall) * args.rounds
            print(rows[-1], flush=True)
        finally:
            conn.execute("drop schema if exists bench_ref cascade")
        t0 = time.perf_counter()
        drained = conn.execute("select hipocampo.drain_read_queue(100000)").fetchone()
        drain_ms = (time.perf_counter() - t0) * 1000
    reads = int(drained[0]["reads"]) if drained else 0
    drain = f"drain_read_queue over the {reads:,} reads the `after` calls queued: {drain_ms:.0f} ms " \
        f"({drain_ms / max(1, reads) * 1000:.0f} ms per 1,000 reads)."  # fmt: skip
    print(drain)
    if args.write:
        cmd = "python benchmarks/reads_ab.py " + shlex.join(sys.argv[1:])
        text = "\n".join(
            [
                BEGIN,
                "## Reads that do not write (issue 46 §1, before / after, one run)",
                "",
                f"Command: `{cmd.strip()}`. `before` = the read RPCs at git {args.ref}, which wrote in the reading "
                "transaction (a search: a `data_access_log` row and the access times of the chunks it returned, "
                "`chunk_access`, at most every 5 minutes; a recall: `access_count` and `last_accessed_at` of "
                "each memory returned), installed beside the current ones for the run; `after` = the current "
                "ones, which append one `read_queue` row. The same questions as the tenant's member (RLS), in "
                "turn, which first alternating per round, one transaction per call, defaults (k = 5); both "
                "returned the same rows and scores for every call.",
                "",
                "| read | size | calls per version | before p50 / p95 ms | after p50 / p95 ms | median ratio |",
                "|---|---|---|---|---|---|",
                *rows,
                "",
                drain,
                END,
            ]
        )
        print(f"written to {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
