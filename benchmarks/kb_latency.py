"""Retrieval latency on a knowledge base the planner has not analysed yet, and after analyse.

Usage:  .venv/bin/python benchmarks/kb_latency.py [--runs 3] [--queries 30] [--write]

A new tenant's knowledge base is the common case: its chunks and postings are not in the
statistics of ``chunks`` / ``kb_postings`` until autovacuum analyses them (on a large shared table
that takes 10 % of its rows modified), and a tenant outside the most-common values is estimated at
a row or two. A plan that depends on those estimates can read every posting of the tenant per
query term.

Each run creates a new tenant, ingests FaQuAD's 249 paragraphs (../shared/datasets/faquad; one
document each, embedded with the offline all-MiniLM-L6-v2, cached) as a new knowledge base, and
times ``--queries`` FaQuAD questions through ``hipocampo.hybrid_search``, ``hipocampo.answer_evidence``
and ``hipocampo.context_pack`` as a member of the tenant (RLS), right away (not analysed), then runs
``analyze`` on the knowledge-base tables and times them again (analysed); the tenant is deleted at
the end. Reports medians and p95 of each phase over all runs. ``--write`` puts them in
docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from typing import Any

from hipocampo import Actor, Hipocampo
from hipocampo.evaluation.answer_sets import ingest_paragraphs
from hipocampo.evaluation.datasets import load_beir
from models import with_model
from report import pct, write_section

BEGIN, END = "<!-- kb-latency:begin -->", "<!-- kb-latency:end -->"
TABLES = ("chunks", "documents", "kb_postings", "kb_term_stats", "kb_text_stats")
CALLS = {
    "hybrid_search": "select count(*) from hipocampo.hybrid_search(query_text => %(q)s,"
    " query_embedding => %(v)s::extensions.vector, kb_ids => array[%(kb)s]::uuid[])",
    "answer_evidence": "select hipocampo.answer_evidence(%(q)s, %(v)s::extensions.vector, array[%(kb)s]::uuid[])",
    "context_pack": "select hipocampo.context_pack(%(c)s, %(q)s, %(v)s::extensions.vector, 'chat', 2000,"
    " array[%(kb)s]::uuid[])",
}


def timed_calls(client: Hipocampo, params: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Milliseconds of each call of each RPC in CALLS, one transaction per call."""
    out: dict[str, list[float]] = {name: [] for name in CALLS}
    for name, sql in CALLS.items():
        for p in params:
            t0 = time.perf_counter()
            with client.transaction() as cur:
                cur.execute(sql, p)
                cur.fetchall()
            out[name].append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--model", help="an offline embedding model (default: config.toml's, the one a new database has)")
    args = ap.parse_args()
    fq = load_beir("faquad")
    url, embedder = with_model(args.model)
    texts = list(fq.queries.values())[: args.queries]
    vectors = ["[" + ",".join(map(str, embedder.embed_query(t))) + "]" for t in texts]
    fresh: dict[str, list[float]] = {name: [] for name in CALLS}
    analysed: dict[str, list[float]] = {name: [] for name in CALLS}
    with Hipocampo(url) as root:
        for _ in range(args.runs):
            tid = root.create_tenant("Benchmark (kb latency)", f"bench-kb-latency-{uuid.uuid4().hex[:8]}")
            try:
                kb = ingest_paragraphs(root.as_actor(Actor.service(tid)), "faquad-paragraphs", fq.corpus, embedder)
                user, conversation = uuid.uuid4(), uuid.uuid4()
                root.add_member(tid, user, "member")
                member = root.as_actor(Actor.user(user, tid))
                with member.transaction() as cur:
                    for i in range(12):
                        cur.execute(
                            "select hipocampo.add_message(%s, %s, %s)",
                            (conversation, "user" if i % 2 == 0 else "assistant", f"mensagem {i} sobre matrícula"),
                        )
                params = [{"q": q, "v": v, "kb": kb, "c": conversation} for q, v in zip(texts, vectors, strict=True)]
                for name, times in timed_calls(member, params).items():
                    fresh[name] += times
                with root.transaction() as cur:
                    for table in TABLES:
                        cur.execute(f"analyze hipocampo_private.{table}")
                for name, times in timed_calls(member, params).items():
                    analysed[name] += times
            finally:
                with root.transaction() as cur:
                    cur.execute("delete from hipocampo_private.tenants where id = %s", (tid,))
    lines = [
        "| call | statistics of the knowledge base | calls | median ms | p95 ms |",
        "|---|---|---|---|---|",
    ]
    for name in CALLS:
        for label, data in (("not analysed yet (a new tenant)", fresh), ("after `analyze`", analysed)):
            t = data[name]
            lines.append(f"| {name} | {label} | {len(t)} | {statistics.median(t):.1f} | {pct(t, 95):.1f} |")
    for line in lines:
        print(line)
    if args.write:
        cmd = "python benchmarks/kb_latency.py " + " ".join(sys.argv[1:])
        text = "\n".join(
            [
                BEGIN,
                "## Retrieval on a knowledge base not analysed yet",
                "",
                f"Command: `{cmd.strip()}`. {args.runs} runs; each creates a new tenant, ingests FaQuAD's "
                f"{len(fq.corpus)} paragraphs as a new knowledge base and times {len(texts)} FaQuAD questions "
                "through each call, as a member of the tenant (RLS), before and after `analyze` of the "
                "knowledge-base tables. A new tenant is estimated at a row or two until its rows are "
                "analysed: hybrid_search's lexical leg reads postings and chunks by primary key whatever "
                "those estimates, so the cost does not grow with the tenant's other knowledge bases.",
                "",
                *lines,
                END,
            ]
        )
        print(f"written to {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
