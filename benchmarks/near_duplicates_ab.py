"""answer_evidence's near-duplicate lookup, this version against an earlier one, in one run.

Usage:  .venv/bin/python benchmarks/near_duplicates_ab.py [--ref 0840145] [--sets faquad,scifact]
        [--queries 60] [--rounds 4] [--write]

``hipocampo_private._near_duplicates`` as ``supabase/schemas/05_hybrid_search.sql`` defined it at
git ``--ref`` is installed for the run as ``bench_ref._near_duplicates`` (dropped afterwards).
Each set's corpus is a knowledge base of tenant ``bench`` (as benchmarks/retrieval.py builds it);
for each test question, asked as a member of the tenant (RLS, JWT claims), ``answer_evidence``
gives the hits, and both versions look up those hits' near-duplicates as answer_evidence does
(``retrieval.dedupe_threshold`` of the model, 3 per hit), in turn, which first alternating per
round, one transaction per call. Both must return the same rows. Reports p50 / p95 ms per
version and set, the ratio of the medians, and ``answer_evidence`` itself (current version).
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

from hipocampo import Actor, Hipocampo, db
from hipocampo.config import repo_root
from hipocampo.embeddings import CachingEmbedder, LocalMiniLM, count_tokens
from hipocampo.evaluation import index_beir
from hipocampo.evaluation.datasets import load_beir
from hipocampo.rpc import BinaryVector
from report import as_member, bench_member, install_reference, pct, write_section

BEGIN, END = "<!-- near-duplicates-ab:begin -->", "<!-- near-duplicates-ab:end -->"
LOOKUP = "select of_chunk_id, chunk_id, distance from {fn}(%s::bigint[], array[%s]::uuid[], %s, %s, 3)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ref", default="0840145", help="git revision of the earlier version")
    ap.add_argument("--sets", default="faquad,scifact")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    url = db.ensure_database()
    embedder = CachingEmbedder(LocalMiniLM(), repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite")
    rows: list[str] = []
    with Hipocampo(url) as root, psycopg.connect(url, autocommit=True) as conn:
        tid, claims = bench_member(root)
        install_reference(conn, args.ref, [("05_hybrid_search.sql", "hipocampo_private._near_duplicates")])
        try:
            for name in args.sets.split(","):
                ds = load_beir(name)
                service = root.as_actor(Actor.service(tid))
                kb = str(service.kb_id(index_beir(service, ds, embedder, count_tokens)))
                chunks = conn.execute(
                    "select count(*) from hipocampo_private.chunks where kb_id = %s", (kb,)
                ).fetchone()
                texts = list(ds.queries.values())[: args.queries]
                vectors = [BinaryVector(embedder.embed_query(t)) for t in texts]
                evidence_ms: list[float] = []
                hits: list[list[int]] = []
                with as_member(conn, claims) as cur:
                    # The threshold answer_evidence passes: the tenant's (the model's calibration).
                    cur.execute("select (hipocampo.effective_config() -> 'retrieval' ->> 'dedupe_threshold')::float")
                    row = cur.fetchone()
                assert row is not None
                dedupe: float = row[0]
                for q, v in zip(texts, vectors, strict=True):
                    with as_member(conn, claims) as cur:
                        t0 = time.perf_counter()
                        cur.execute(
                            "select hipocampo.answer_evidence(%s, %s::extensions.vector, array[%s]::uuid[])", (q, v, kb)
                        )
                        got = cur.fetchone()
                        evidence_ms.append((time.perf_counter() - t0) * 1000)
                    assert got is not None
                    hits.append([e["chunk_id"] for e in got[0]["evidence"] if "near_duplicate_of" not in e])
                times: dict[str, list[float]] = {"before": [], "after": []}
                answers: dict[str, list[Any]] = {"before": [], "after": []}
                versions = [("before", "bench_ref._near_duplicates"), ("after", "hipocampo_private._near_duplicates")]
                for n_round in range(args.rounds):
                    for label, fn in versions if n_round % 2 == 0 else versions[::-1]:
                        answers[label] = []
                        for ids in hits:
                            with as_member(conn, claims) as cur:
                                t0 = time.perf_counter()
                                cur.execute(LOOKUP.format(fn=fn), (ids, kb, str(tid), dedupe))  # type: ignore[arg-type]
                                got_rows = cur.fetchall()
                                times[label].append((time.perf_counter() - t0) * 1000)
                            answers[label].append([(a, b, round(d, 9)) for a, b, d in got_rows])
                if answers["before"] != answers["after"]:
                    sys.exit(f"{name}: the two versions returned different rows")
                b, a = statistics.median(times["before"]), statistics.median(times["after"])
                n_chunks = chunks[0] if chunks else 0
                line = (
                    f"| {name} | {n_chunks:,} | {len(times['after'])} | {b:.2f} / {pct(times['before'], 95):.2f} "
                    f"| {a:.2f} / {pct(times['after'], 95):.2f} | {b / a:.2f}× "
                    f"| {statistics.median(evidence_ms):.1f} / {pct(evidence_ms, 95):.1f} |"
                )
                print(line, flush=True)
                rows.append(line)
        finally:
            conn.execute("drop schema if exists bench_ref cascade")
    if args.write:
        cmd = "python benchmarks/near_duplicates_ab.py " + shlex.join(sys.argv[1:])
        text = "\n".join(
            [
                BEGIN,
                "## Near-duplicate lookup of answer_evidence (before / after, one run)",
                "",
                f"Command: `{cmd.strip()}`. `before` = `_near_duplicates` at git {args.ref}, installed beside the "
                "current one for the run; both looked up the near-duplicates of the same hits (each test question's "
                "`answer_evidence` evidence) as a member of the tenant (RLS), in turn, which first alternating per "
                "round, one transaction per call, 3 per hit above the model's `retrieval.dedupe_threshold`. Both "
                "returned the same rows. The last column is `answer_evidence` itself (current version, once per "
                "question, before the rounds).",
                "",
                "| set | chunks in the KB | calls per version | before p50 / p95 ms | after p50 / p95 ms "
                "| median ratio | answer_evidence p50 / p95 ms |",
                "|---|---|---|---|---|---|---|",
                *rows,
                END,
            ]
        )
        print(f"written to {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
