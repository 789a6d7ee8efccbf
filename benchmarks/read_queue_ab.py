"""The read queue logged or unlogged: what a search's record costs either way (issue 46 §1's
choice), in the same run.

Usage:  .venv/bin/python benchmarks/read_queue_ab.py [--sets faquad,scifact] [--queries 100] [--rounds 4] [--write]

The current ``hybrid_search`` asked each set's test questions as the tenant ``bench``'s member
(RLS), one transaction per call, with ``hipocampo_private.read_queue`` a logged table (``before``,
as shipped) and an unlogged one (``after``: ``alter table … set unlogged`` between the rounds,
which alternate); the queue is drained and set back to logged at the end. An unlogged table
writes no WAL for its rows, and is emptied by a crash of the server: the reads queued since the
last drain would leave the audit trail. ``--write`` puts the table in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from typing import Any

import psycopg

from hipocampo import Actor, Hipocampo, db
from hipocampo.config import repo_root
from hipocampo.embeddings import CachingEmbedder, LocalMiniLM, count_tokens
from hipocampo.evaluation import index_beir
from hipocampo.evaluation.datasets import load_beir
from reads_ab import SEARCH, _row, _vec
from report import as_member, bench_member, write_section

BEGIN, END = "<!-- read-queue-ab:begin -->", "<!-- read-queue-ab:end -->"


def _times(
    conn: psycopg.Connection[Any], claims: str, params: list[tuple[Any, ...]], rounds: int
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"before": [], "after": []}
    modes = [("before", "logged"), ("after", "unlogged")]
    for n_round in range(rounds):
        for label, mode in modes if n_round % 2 == 0 else modes[::-1]:
            conn.execute("select hipocampo.drain_read_queue(100000)")
            conn.execute(f"alter table hipocampo_private.read_queue set {mode}")
            for p in params:
                with as_member(conn, claims) as cur:
                    t0 = time.perf_counter()
                    cur.execute(SEARCH.format(fn="hipocampo.hybrid_search"), p)  # type: ignore[arg-type]
                    cur.fetchall()
                    times[label].append((time.perf_counter() - t0) * 1000)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="faquad,scifact")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    url = db.ensure_database()
    embedder = CachingEmbedder(LocalMiniLM(), repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite")
    rows: list[str] = []
    with Hipocampo(url) as root, psycopg.connect(url, autocommit=True) as conn:
        tid, claims = bench_member(root)
        service = root.as_actor(Actor.service(tid))
        try:
            for name in args.sets.split(","):
                ds = load_beir(name)
                kb = str(service.kb_id(index_beir(service, ds, embedder, count_tokens)))
                conn.execute("analyze hipocampo_private.chunks")
                n = conn.execute("select count(*) from hipocampo_private.chunks where kb_id = %s", (kb,)).fetchone()
                params = [(q, _vec(embedder.embed_query(q)), kb) for q in list(ds.queries.values())[: args.queries]]
                times = _times(conn, claims, params, args.rounds)
                rows.append(_row(f"hybrid_search, {name}", f"{(n or [0])[0]:,} chunks", times))
                print(rows[-1], flush=True)
        finally:
            conn.execute("select hipocampo.drain_read_queue(100000)")
            conn.execute("alter table hipocampo_private.read_queue set logged")
    if args.write:
        cmd = "python benchmarks/read_queue_ab.py " + shlex.join(sys.argv[1:])
        text = "\n".join(
            [
                BEGIN,
                "### The read queue logged or unlogged (issue 46 §1, one run)",
                "",
                f"Command: `{cmd.strip()}`. The current `hybrid_search` as the tenant's member (RLS), one transaction "
                "per call, defaults (k = 5); `before` with `read_queue` logged (as shipped), `after` unlogged, which "
                "first alternating per round.",
                "",
                "| read | size | calls per way | logged p50 / p95 ms | unlogged p50 / p95 ms | median ratio |",
                "|---|---|---|---|---|---|",
                *rows,
                END,
            ]
        )
        print(f"written to {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
