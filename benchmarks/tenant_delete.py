"""Deleting a whole tenant: ``hipocampo.delete_tenant`` against the foreign keys' cascade alone
(``delete from hipocampo_private.tenants``, what an operator had before it, which leaves the
tenant's config row and audit behind). Both ride the chunks' delete trigger, which drops an
emptied knowledge base's postings and statistics by key range.

    python benchmarks/tenant_delete.py [--per-tenant 20000] [--rounds 2] [--timeout 900] [--write]

Runs in a database of its own on the embedded server (``hipocampo_bench_delete``, created again
for each run): ``2 x --rounds`` tenants with one knowledge base of ``--per-tenant`` SciFact
abstracts each (one chunk per document, ~95 postings each; benchmarks/ingest.py's corpus and bulk
path, HNSW index maintained), vacuumed; then, per round, one tenant deleted each way, which way
first alternating, each in its own transaction as the owner, timed as the client sees it. A
cascade still running after ``--timeout`` seconds is cancelled and reported as such.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hipocampo import Actor, Hipocampo
from ingest import Corpus, bulk_writer, fresh_database, vacuum_analyze, write_tenants
from report import write_section

BEGIN, END = "<!-- tenant-delete:begin -->", "<!-- tenant-delete:end -->"


def timed(url: str, sql: str, tenant: Any, timeout_s: int) -> float | None:
    """Seconds to run ``sql`` (one %s: the tenant) and commit; None when cancelled at the timeout."""
    with psycopg.connect(url) as conn:
        conn.execute(f"set statement_timeout = '{timeout_s}s'")  # type: ignore[arg-type]
        t0 = time.perf_counter()
        try:
            conn.execute(sql, (tenant,))  # type: ignore[arg-type]
            conn.commit()
        except psycopg.errors.QueryCanceled:
            conn.rollback()
            return None
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--per-tenant", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    url = fresh_database("hipocampo_bench_delete")
    corpus = Corpus()
    scopes: list[tuple[Any, Any]] = []
    with Hipocampo(url) as root:
        for n in range(2 * args.rounds):
            tid = root.create_tenant(f"Delete {n}", f"del-{n:02d}")
            scopes.append((tid, root.as_actor(Actor.service(tid)).create_kb("scifact", language="english")))
    # Past the corpus's 5,183 abstracts the items repeat under another source_uri (new documents).
    n_corpus = len(corpus.ids)
    seconds, written = write_tenants(
        url,
        scopes,
        2,
        lambda n: [corpus.item(j, f"beir:scifact:{j // n_corpus}:") for j in range(args.per_tenant)],
        bulk_writer(250),
    )
    print(f"loaded {written} chunks into {len(scopes)} tenants in {seconds:.0f} s")
    vacuum_analyze(url)
    ways = {
        "delete_tenant": "select hipocampo.delete_tenant(%s)",
        "cascade": "delete from hipocampo_private.tenants where id = %s",
    }
    times: dict[str, list[float | None]] = {w: [] for w in ways}
    for r in range(args.rounds):
        order = list(ways) if r % 2 == 0 else list(reversed(ways))
        for i, way in enumerate(order):
            tenant = scopes[2 * r + i][0]
            took = timed(url, ways[way], tenant, args.timeout)
            times[way].append(took)
            print(f"round {r + 1}: {way} {'cancelled' if took is None else f'{took:.1f} s'}")
    with psycopg.connect(url) as conn:
        left = conn.execute("select count(*) from hipocampo_private.kb_postings").fetchone()
    print(f"postings left (the tenants a cancelled cascade kept): {left[0] if left else '?'}")

    def cell(xs: list[float | None]) -> str:
        done = [x for x in xs if x is not None]
        shown = ", ".join("cancelled" if x is None else f"{x:.1f}" for x in xs)
        return f"{shown} (median {statistics.median(done):.1f})" if done else shown

    rows = [f"| {way} | {args.per_tenant:,} | {cell(xs)} |" for way, xs in times.items()]
    text = "\n".join(
        [
            BEGIN,
            "## Deleting a tenant (offboarding)",
            "",
            f"Command: `python benchmarks/tenant_delete.py --per-tenant {args.per_tenant} --rounds {args.rounds} "
            f"--timeout {args.timeout} --write` (2 cores, embedded PostgreSQL 18; {2 * args.rounds} tenants of one "
            "knowledge base each, SciFact abstracts, one chunk per document, ~95 postings per chunk; one tenant "
            "each way per round, which first alternating). `cascade` = `delete from hipocampo_private.tenants` "
            f"(the foreign keys alone), cancelled after {args.timeout} s.",
            "",
            "| way | chunks in the tenant | seconds per tenant |",
            "|---|---|---|",
            *rows,
            END,
        ]
    )
    print(text)
    if args.write:
        print(f"wrote {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
