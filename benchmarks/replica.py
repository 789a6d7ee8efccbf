"""A streaming replica on this machine: its lag under bulk ingestion, and searches served by it
(issue 46 §4).

Usage:  .venv/bin/python benchmarks/replica.py [--docs 5183] [--queries 200] [--clients 1,2,4] [--write]

Starts a primary and a hot standby of the embedded server's binaries on loopback
(tools/replica_pair.py: pg_basebackup -R, streaming, asynchronous), both on this 2-core machine.
1. Lag: loads ``--docs`` SciFact abstracts (benchmarks/ingest.py's corpus, vectors from the
   cache) into one tenant through ``ingest_documents`` (250 per call, one writer) while another
   thread samples the standby's lag every 50 ms (WAL bytes not replayed, ms since the last replayed
   commit); reports ingestion chunks/s and the lag's p50 / p95 / max, and how long the standby took
   to catch up after the last commit.
2. Reads: SciFact test queries as the tenant's member (RLS), ``hybrid_search`` k = 5 through the
   Python client, ``--clients`` threads, once with every read on the primary and once with the
   reads routed to the standby (``read_url``): p50 / p95 ms and queries/s. On one machine the
   standby adds no cores; what the comparison shows is the cost of a standby read (its record
   goes to the primary through dblink: one more round trip).
``--write`` puts the tables in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import threading
import time
import uuid
from typing import Any

from hipocampo import Actor, Hipocampo
from hipocampo.config import repo_root
from hipocampo.evaluation.datasets import load_beir
from hipocampo.replication import replica_status
from ingest import Corpus
from report import pct, write_section

sys.path.insert(0, str(repo_root()))
from tools.replica_pair import ReplicaPair

BEGIN, END = "<!-- replica:begin -->", "<!-- replica:end -->"
BATCH = 250


def _lag_sampler(pair: ReplicaPair, stop: threading.Event, out: list[tuple[int, float]]) -> None:
    import psycopg

    with (
        psycopg.connect(pair.primary_url, autocommit=True) as p,
        psycopg.connect(pair.standby_url, autocommit=True) as s,
    ):
        while not stop.is_set():
            lag = replica_status(p, s)
            out.append((lag.lag_bytes, lag.lag_ms))
            time.sleep(0.05)


def load(pair: ReplicaPair, corpus: Corpus, docs: int) -> tuple[Any, Any, Any, dict[str, float]]:
    """The tenant, its member, its knowledge base, and the ingestion / lag figures."""
    with Hipocampo(pair.primary_url) as root:
        tid = root.create_tenant("Replica", f"replica-{uuid.uuid4().hex[:6]}")
        member = uuid.uuid4()
        root.add_member(tid, member, "member")
        client = root.as_actor(Actor.service(tid))
        kb = client.create_kb("scifact", language="english")
        samples: list[tuple[int, float]] = []
        stop = threading.Event()
        sampler = threading.Thread(target=_lag_sampler, args=(pair, stop, samples))
        sampler.start()
        t0 = time.perf_counter()
        for start in range(0, docs, BATCH):
            client.ingest_documents(
                kb, [corpus.item(i) for i in range(start, min(docs, start + BATCH))], "all-MiniLM-L6-v2"
            )
        wall = time.perf_counter() - t0
        t1 = time.perf_counter()
        pair.wait_for_replay(timeout=600)
        catch_up = time.perf_counter() - t1
        stop.set()
        sampler.join()
        client.set_kb_status(kb, "ready")
    kb_bytes = [b for b, _ in samples]
    kb_ms = [m for _, m in samples]
    figures = {
        "chunks_per_s": docs / wall,
        "lag_bytes_p50": statistics.median(kb_bytes),
        "lag_bytes_p95": pct(kb_bytes, 95),
        "lag_bytes_max": max(kb_bytes),
        "lag_ms_p50": statistics.median(kb_ms),
        "lag_ms_p95": pct(kb_ms, 95),
        "lag_ms_max": max(kb_ms),
        "catch_up_ms": catch_up * 1000,
        "samples": len(samples),
    }
    return tid, member, kb, figures


def reads(
    pair: ReplicaPair, scope: tuple[Any, Any, Any], queries: list[tuple[str, list[float]]], clients: int, replica: bool
) -> tuple[list[float], float]:
    tid, member, kb = scope
    lat: list[float] = []
    lock = threading.Lock()
    per_client = len(queries) // clients

    def worker(c: int) -> None:
        read_url = pair.standby_url if replica else None
        with Hipocampo(pair.primary_url, pool_size=1, read_url=read_url) as base:
            me = base.as_actor(Actor.user(member, tid))
            mine = []
            for text, vec in queries[c * per_client : (c + 1) * per_client]:
                t0 = time.perf_counter()
                me.search(text, vec, kb_ids=[kb], match_count=5)
                mine.append((time.perf_counter() - t0) * 1000)
            assert me.read_counts["replica" if replica else "primary"] == per_client
        with lock:
            lat.extend(mine)

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return lat, len(lat) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=5183)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--clients", default="1,2,4")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    corpus = Corpus()
    ds = load_beir("scifact")
    texts = list(ds.queries.values())[: args.queries]
    queries = list(zip(texts, corpus.embedder.embed_documents(texts), strict=True))
    pair = ReplicaPair()
    rows: list[str] = []
    try:
        pair.start()
        tid, member, kb, lag = load(pair, corpus, args.docs)
        print(lag, flush=True)
        for clients in (int(c) for c in args.clients.split(",")):
            for replica in (False, True):
                reads(pair, (tid, member, kb), queries[: clients * 5], clients, replica)  # warm-up
                lat, qps = reads(pair, (tid, member, kb), queries, clients, replica)
                where = "standby (read_url)" if replica else "primary"
                p50, p95 = statistics.median(lat), pct(lat, 95)
                rows.append(f"| {where} | {clients} | {len(lat)} | {p50:.2f} | {p95:.2f} | {qps:.0f} |")
                print(rows[-1], flush=True)
    finally:
        pair.stop()
    if args.write:
        cmd = "python benchmarks/replica.py " + shlex.join(sys.argv[1:])
        text = "\n".join(
            [
                BEGIN,
                "## A streaming replica on this machine (issue 46 §4)",
                "",
                f"Command: `{cmd.strip()}`. A primary and an asynchronous hot standby of the embedded server's "
                "binaries (tools/replica_pair.py, pg_basebackup -R, streaming over loopback), both on this 2-core "
                "machine, fsync off.",
                "",
                f"Lag while {args.docs:,} SciFact abstracts were ingested (`ingest_documents`, 250 per call, one "
                f"writer, {lag['chunks_per_s']:.0f} chunks/s; the standby's lag sampled every 50 ms, "
                f"{lag['samples']:.0f} samples): WAL not replayed p50 {lag['lag_bytes_p50'] / 1024:.0f} kB, p95 "
                f"{lag['lag_bytes_p95'] / 1024:.0f} kB, max {lag['lag_bytes_max'] / 1024:.0f} kB; `lag_ms` (the time "
                "since the last replayed commit, counted while WAL is pending: an upper bound, which during a bulk "
                f"load is about the time between two calls' commits) p50 {lag['lag_ms_p50']:.0f} ms, p95 "
                f"{lag['lag_ms_p95']:.0f} ms, max {lag['lag_ms_max']:.0f} ms. The standby had replayed everything "
                f"{lag['catch_up_ms']:.0f} ms after the last commit. The ingestion rate is one writer with the HNSW "
                "index maintained, beside the standby replaying on the same 2 cores.",
                "",
                "Searches (`hybrid_search`, k = 5, SciFact test queries as the tenant's member, the Python client; "
                "`standby` = the reads routed to `read_url`, their records sent to the primary through dblink):",
                "",
                "| reads on | clients | queries | p50 ms | p95 ms | queries/s |",
                "|---|---|---|---|---|---|",
                *rows,
                END,
            ]
        )
        print(f"written to {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
