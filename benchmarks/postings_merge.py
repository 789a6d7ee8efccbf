"""Would a pending list make incremental ingestion faster? (issue 18 §3, a measurement, not built)

    python benchmarks/postings_merge.py [--tenants 20] [--per-tenant 2000] [--incremental 40]
                                        [--pending 1,5] [--rounds 2]

The BM25 postings and document frequencies cost ~0.76 ms of the ~2.1 ms an incremental chunk
costs (docs/BENCHMARKS.md §Bulk ingestion). GIN's fastupdate takes such work off the write path:
new entries go to a pending list, merged into the index later in key order. This measures both
halves of that design before building it, in a database of its own
(``hipocampo_bench_postings_merge``): ``--tenants`` knowledge bases of ``--per-tenant`` SciFact
chunks (benchmarks/ingest.py's corpus and writers, HNSW present), then in turn:

- ``inline``: a round of ``--incremental`` new documents into every knowledge base, two writers,
  with the statistics trigger as shipped;
- ``pending N``: N such rounds with the trigger disabled (the chunks' postings and statistics
  pending), then the merge: the trigger's own statement (read from the function's source, so
  it cannot drift from it) over the pending chunks, on two connections (the knowledge bases
  split between them), in one transaction each.

A checkpoint precedes each variant. Prints chunks/s of the writes, ms per chunk of the merge
(wall, two connections), and chunks/s of both together against inline.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hipocampo import Hipocampo
from ingest import MODEL, Corpus, bulk_writer, fresh_database, load, vacuum_analyze, write_tenants

DBNAME = "hipocampo_bench_postings_merge"


def merge_statement(url: str) -> str:
    """The statistics trigger's statement, reading the chunks above ``%(watermark)s`` of the
    knowledge bases ``%(kbs)s`` in place of its transition table."""
    with psycopg.connect(url) as conn:
        row = conn.execute("select prosrc from pg_proc where proname = '_chunks_stats_after_insert'").fetchone()
    assert row is not None
    body = re.search(r"begin\s+(with .*?);\s+return null;", row[0], re.S)
    assert body is not None, "the trigger's body changed shape"
    source = (
        "new_rows as materialized (select * from hipocampo_private.chunks"
        " where id > %(watermark)s and kb_id = any(%(kbs)s)),\n"
    )
    return "with " + source + body.group(1).removeprefix("with ")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tenants", type=int, default=20)
    ap.add_argument("--per-tenant", type=int, default=2000)
    ap.add_argument("--incremental", type=int, default=40)
    ap.add_argument("--pending", default="1,5", help="rounds left pending before a merge, comma-separated")
    ap.add_argument("--rounds", type=int, default=2, help="times each variant runs, alternating")
    args = ap.parse_args()
    corpus = Corpus()
    url = fresh_database(DBNAME)
    with Hipocampo(url) as root:
        root.rpc("defer_model_index", {"embedding_model": MODEL})
        _, _, scopes = load(url, corpus, args.tenants, args.per_tenant, 2, bulk_writer(250))
        root.rpc("build_model_index", {"embedding_model": MODEL})
    vacuum_analyze(url)
    merge = merge_statement(url)
    halves = [[kb for _, kb in scopes[i::2]] for i in range(2)]
    next_item = [args.per_tenant]

    def write_round() -> tuple[float, int]:
        first = next_item[0]
        next_item[0] += args.incremental
        return write_tenants(
            url,
            scopes,
            2,
            lambda n: [corpus.item(n * args.per_tenant + first + j, f"r{first}:") for j in range(args.incremental)],
            bulk_writer(250),
        )

    def trigger(enabled: bool) -> None:
        verb = "enable" if enabled else "disable"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"alter table hipocampo_private.chunks {verb} trigger chunks_stats_after_insert")  # type: ignore[arg-type]

    def pending(rounds: int) -> tuple[float, float, int]:
        with psycopg.connect(url) as conn:
            watermark = conn.execute("select max(id) from hipocampo_private.chunks").fetchone()[0]  # type: ignore[index]
        trigger(False)
        try:
            writes = [write_round() for _ in range(rounds)]
        finally:
            trigger(True)

        def merge_half(kbs: list[Any]) -> None:
            with psycopg.connect(url) as conn:
                conn.execute(merge, {"watermark": watermark, "kbs": kbs})  # type: ignore[arg-type]

        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(merge_half, halves))
        return sum(s for s, _ in writes), time.perf_counter() - t0, sum(n for _, n in writes)

    write_round()  # warm-up, not counted
    results: dict[str, list[tuple[float, float, int]]] = {}
    for _ in range(args.rounds):
        for variant in ["inline", *(f"pending {k}" for k in args.pending.split(","))]:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("checkpoint")
            if variant == "inline":
                s, n = write_round()
                result = (s, 0.0, n)
            else:
                result = pending(int(variant.split()[1]))
            results.setdefault(variant, []).append(result)
            s, m, n = result
            print(f"{variant:10} {n:6d} chunks  writes {n / s:6.0f}/s  merge {m / n * 1000:5.2f} ms/chunk"
                  f"  both {n / (s + m):6.0f}/s", flush=True)  # fmt: skip
    print("\nmedians (chunks/s of the writes, ms per chunk of the merge, chunks/s of both):")
    for variant, rows in results.items():
        print(
            f"| {variant} | {statistics.median(n / s for s, _, n in rows):.0f}"
            f" | {statistics.median(m / n * 1000 for _, m, n in rows):.2f}"
            f" | {statistics.median(n / (s + m) for s, m, n in rows):.0f} |"
        )


if __name__ == "__main__":
    main()
