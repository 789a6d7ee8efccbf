"""answer_evidence, this version against an earlier one, in one run.

Usage:  .venv/bin/python benchmarks/answer_evidence_ab.py [--ref 832e516] [--sets faquad,quati,scifact]
        [--queries 60] [--rounds 4] [--write]

``hipocampo.answer_evidence`` and the near-duplicate lookup it calls
(``hipocampo_private._near_duplicates``) as ``supabase/schemas/`` defined them at git ``--ref`` are
installed for the run as ``bench_ref.answer_evidence`` and ``bench_ref._near_duplicates`` (dropped
afterwards); the other functions they call are the current ones. Each set's corpus is a knowledge
base of tenant ``bench`` (as benchmarks/retrieval.py builds it); its test questions are asked of
both versions as a member of the tenant (RLS, JWT claims), in turn, which first alternating per
round, one transaction per call, the rag config's defaults. Both must return the same jsonb
(evidence, decision, conflicts, config). Reports p50 / p95 ms per version and set and the ratio of
the medians. ``--write`` puts the table in docs/BENCHMARKS.md.
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
from report import as_member, bench_member, install_reference, pct, write_section

BEGIN, END = "<!-- answer-evidence-ab:begin -->", "<!-- answer-evidence-ab:end -->"
CALL = "select {fn}(%s, %s::extensions.vector, array[%s]::uuid[])"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ref", default="832e516", help="git revision of the earlier version")
    ap.add_argument("--sets", default="faquad,quati,scifact")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    url = db.ensure_database()
    embedder = CachingEmbedder(LocalMiniLM(), repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite")
    rows: list[str] = []
    with Hipocampo(url) as root, psycopg.connect(url, autocommit=True) as conn:
        tid, claims = bench_member(root)
        install_reference(
            conn,
            args.ref,
            [
                ("05_hybrid_search.sql", "hipocampo_private._near_duplicates"),
                ("10_answers.sql", "hipocampo.answer_evidence"),
            ],
        )
        try:
            for name in args.sets.split(","):
                ds = load_beir(name)
                service = root.as_actor(Actor.service(tid))
                kb = str(service.kb_id(index_beir(service, ds, embedder, count_tokens)))
                counts = conn.execute(
                    "select (select count(*) from hipocampo_private.chunks where kb_id = %s),"
                    " (select count(*) from hipocampo_private.chunks where tenant_id = %s)",
                    (kb, tid),
                ).fetchone()
                assert counts is not None
                texts = list(ds.queries.values())[: args.queries]
                vectors = [BinaryVector(embedder.embed_query(t)) for t in texts]
                times: dict[str, list[float]] = {"before": [], "after": []}
                answers: dict[str, list[Any]] = {"before": [], "after": []}
                versions = [("before", "bench_ref.answer_evidence"), ("after", "hipocampo.answer_evidence")]
                for n_round in range(args.rounds):
                    for label, fn in versions if n_round % 2 == 0 else versions[::-1]:
                        answers[label] = []
                        for q, v in zip(texts, vectors, strict=True):
                            with as_member(conn, claims) as cur:
                                t0 = time.perf_counter()
                                cur.execute(CALL.format(fn=fn), (q, v, kb))  # type: ignore[arg-type]
                                got = cur.fetchone()
                                times[label].append((time.perf_counter() - t0) * 1000)
                            answers[label].append(got)
                if answers["before"] != answers["after"]:
                    sys.exit(f"{name}: the two versions returned different evidence")
                b, a = statistics.median(times["before"]), statistics.median(times["after"])
                line = (
                    f"| {name} | {counts[0]:,} | {counts[1]:,} | {len(times['after'])} "
                    f"| {b:.2f} / {pct(times['before'], 95):.2f} | {a:.2f} / {pct(times['after'], 95):.2f} "
                    f"| {b / a:.2f}× |"
                )
                print(line, flush=True)
                rows.append(line)
        finally:
            conn.execute("drop schema if exists bench_ref cascade")
    if args.write:
        cmd = "python benchmarks/answer_evidence_ab.py " + shlex.join(sys.argv[1:])
        text = "\n".join(
            [
                BEGIN,
                "## answer_evidence (before / after, one run)",
                "",
                f"Command: `{cmd.strip()}`. `before` = `answer_evidence` and `_near_duplicates` at git {args.ref}, "
                "installed beside the current ones for the run; both asked the same test questions as a member of "
                "the tenant (RLS), in turn, which first alternating per round, one transaction per call, the rag "
                "config's defaults. Both returned the same evidence, decision and conflicts for every question.",
                "",
                "| set | chunks in the KB | chunks in the tenant | calls per version | before p50 / p95 ms "
                "| after p50 / p95 ms | median ratio |",
                "|---|---|---|---|---|---|---|",
                *rows,
                END,
            ]
        )
        print(f"written to {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
