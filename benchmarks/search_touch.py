"""What a search pays for touching the access time of the chunks it returns (issue 18 §4).

Usage:  .venv/bin/python benchmarks/search_touch.py [--sets faquad,scifact] [--queries 100]
        [--rounds 2] [--label NAME] [--write]

Each question of each set (a knowledge base of tenant ``bench``, as benchmarks/retrieval.py
builds it) is asked three times as a member (RLS), one transaction per call, defaults (k = 5):
once to learn the chunks it returns; then, after those chunks' access times are cleared (outside
the clock), the ``touch`` call, which writes them; then at once the ``no touch`` call, which
finds them touched less than 5 minutes ago and writes none. A chunk's access time is
``chunks.last_accessed_at`` before commit 6055af9 and a row of
``hipocampo_private.chunk_access`` since; the script clears whichever the
database has. The two calls return the same rows.

Results are kept per ``--label`` (default: the git revision) in
``.hipocampo/bench/search_touch.json``; ``--write`` puts every kept label's rows in
docs/BENCHMARKS.md, so a run before a change and one after it share one table.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
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
from report import as_member, bench_member, pct, write_section

BEGIN, END = "<!-- search-touch:begin -->", "<!-- search-touch:end -->"
CALL = (
    "select chunk_id from hipocampo.hybrid_search("
    "query_text => %s, query_embedding => %s::extensions.vector, kb_ids => array[%s]::uuid[])"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="faquad,scifact")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--label", default=None, help="name of this run's rows (default: the git revision)")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    label = (
        args.label
        or subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=repo_root(), check=True, capture_output=True, text=True
        ).stdout.strip()
    )
    store = repo_root() / ".hipocampo" / "bench" / "search_touch.json"
    kept: dict[str, list[list[Any]]] = json.loads(store.read_text()) if store.exists() else {}
    url = db.ensure_database()
    embedder = CachingEmbedder(LocalMiniLM(), repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite")
    rows: list[list[Any]] = []
    with Hipocampo(url) as root, psycopg.connect(url, autocommit=True) as conn:
        tid, claims = bench_member(root)
        in_chunks = conn.execute(
            "select 1 from pg_attribute where attrelid = 'hipocampo_private.chunks'::regclass"
            " and attname = 'last_accessed_at' and not attisdropped"
        ).fetchone()
        clear = (
            "update hipocampo_private.chunks set last_accessed_at = null where id = any(%s)"
            if in_chunks
            else "delete from hipocampo_private.chunk_access where chunk_id = any(%s)"
        )
        for name in args.sets.split(","):
            ds = load_beir(name)
            service = root.as_actor(Actor.service(tid))
            kb = str(service.kb_id(index_beir(service, ds, embedder, count_tokens)))
            chunks = conn.execute("select count(*) from hipocampo_private.chunks where kb_id = %s", (kb,)).fetchone()
            texts = list(ds.queries.values())[: args.queries]
            vectors = [BinaryVector(embedder.embed_query(t)) for t in texts]
            times: dict[str, list[float]] = {"touch": [], "no touch": []}

            def call(q: str, v: BinaryVector, kb: str = kb) -> tuple[list[int], float]:
                with as_member(conn, claims) as cur:
                    t0 = time.perf_counter()
                    cur.execute(CALL, (q, v, kb))  # type: ignore[arg-type]
                    got = [r[0] for r in cur.fetchall()]
                    return got, (time.perf_counter() - t0) * 1000

            for _ in range(args.rounds):
                for q, v in zip(texts, vectors, strict=True):
                    ids, _ms = call(q, v)
                    conn.execute(clear, (ids,))
                    cold, t_cold = call(q, v)
                    warm, t_warm = call(q, v)
                    if cold != warm:
                        sys.exit(f"{name}: the touch and no-touch calls returned different rows")
                    times["touch"].append(t_cold)
                    times["no touch"].append(t_warm)
            c, w = times["touch"], times["no touch"]
            row = [
                label,
                name,
                chunks[0] if chunks else 0,
                len(c),
                f"{statistics.median(c):.2f} / {pct(c, 95):.2f}",
                f"{statistics.median(w):.2f} / {pct(w, 95):.2f}",
                f"{statistics.median(c) - statistics.median(w):.2f}",
            ]
            print("| " + " | ".join(str(x) for x in row) + " |", flush=True)
            rows.append(row)
    kept[label] = rows
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(json.dumps(kept, indent=1))
    if args.write:
        cmd = "python benchmarks/search_touch.py " + shlex.join(sys.argv[1:])
        lines = [
            "| revision | set | chunks in the KB | calls | touch p50 / p95 ms | no touch p50 / p95 ms "
            "| p50 difference ms |",
            "|---|---|---|---|---|---|---|",
            *(
                "| " + " | ".join(f"{x:,}" if isinstance(x, int) else str(x) for x in r) + " |"
                for rs in kept.values()
                for r in rs
            ),
        ]
        text = "\n".join(
            [
                BEGIN,
                "## The access-time touch of a search",
                "",
                f"Command: `{cmd.strip()}`, once per revision (each revision's rows kept in "
                "`.hipocampo/bench/search_touch.json`). Each question asked as a member (RLS), defaults (k = 5): "
                "`touch` = the call right after its chunks' access times were cleared (it writes them), "
                "`no touch` = the same call at once after (touched under 5 minutes ago: no write).",
                "",
                *lines,
                END,
            ]
        )
        print(f"written to {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
