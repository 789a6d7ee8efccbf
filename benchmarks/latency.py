"""Latency of hipocampo.hybrid_search under RLS at scale, and ingestion throughput.

Usage:  .venv/bin/python benchmarks/latency.py [--tenants 50] [--per-tenant 2000] [--queries 300] [--write]

Builds >= 100k chunks of real text (SciFact abstracts, replicated across tenants: tenant i holds
a window of 2,000 of the 5,183 abstracts; benchmarks/ingest.py's corpus, so every copy past the
first has a vector of its own, see its docstring) through the real ingest RPC, then runs SciFact test
queries as authenticated members (JWT claims, RLS) at 1 and 4 concurrent clients, on the exact
path (the tenants' exact_scan_max_rows at 1,000,000) and on the HNSW path (exact_scan_max_rows
= 0: iterative index scan). Reports p50/p95/p99 in ms and checks that every query returned k rows.
Also: DB-side ingestion throughput (chunks/s through ingest_documents, 250 documents per call,
embedding excluded) and
the offline embedder's throughput (texts/s). ``--write`` replaces the latency section of
docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import uuid
from typing import Any

import psycopg

from hipocampo import Actor, Hipocampo
from hipocampo.embeddings import EmbeddingProvider
from hipocampo.evaluation.datasets import load_beir
from ingest import Corpus, Item
from models import with_model
from report import pct, settle, write_section

BEGIN, END = "<!-- latency:begin -->", "<!-- latency:end -->"
K = 5
BATCH = 250  # documents per ingest_documents call (benchmarks/ingest.py)
CLIENTS = (1, 4)


def build(
    root: Hipocampo, embedder: EmbeddingProvider, tenants: int, per_tenant: int
) -> tuple[list[tuple[Any, Any, Any]], dict[str, float]]:
    corpus = Corpus(embedder)  # benchmarks/ingest.py's items: a distinct vector per copy
    out: list[tuple[Any, Any, Any]] = []
    written = 0
    seconds = 0.0
    lock = threading.Lock()

    def load_tenant(n: int) -> None:
        nonlocal written, seconds
        slug = f"lat-{n:02d}"
        tid = root.tenant_id(slug) or root.create_tenant(f"Latency {n}", slug)
        member = uuid.uuid5(uuid.NAMESPACE_URL, f"hipocampo-bench/{slug}")
        root.add_member(tid, member, "member")
        client = root.as_actor(Actor.service(tid))
        kb = client.create_kb("scifact", language="english")
        have = client.document_hashes(kb)
        t_db = 0.0
        n_written = 0
        batch: list[Item] = []

        def flush() -> None:
            nonlocal t_db, n_written
            if batch:
                t0 = time.perf_counter()
                out = client.ingest_documents(kb, batch, embedder.model_name)  # the bulk path
                t_db += time.perf_counter() - t0
                n_written += sum(r.chunks for r in out)
                batch.clear()

        for j in range(per_tenant):
            doc, chunks = corpus.item(n * per_tenant + j)
            stored = have.get(doc["source_uri"])
            if stored is not None and stored.content_hash == doc["content_hash"]:
                continue
            batch.append((doc, chunks))
            if len(batch) >= BATCH:
                flush()
        flush()
        client.set_kb_status(kb, "ready")
        with lock:
            out.append((tid, member, kb))
            written += n_written
            seconds += t_db

    threads: list[threading.Thread] = []
    wall = time.perf_counter()
    for n in range(tenants):
        t = threading.Thread(target=load_tenant, args=(n,))
        threads.append(t)
        t.start()
        if len(threads) >= 2:  # two writers: one per core
            threads.pop(0).join()
    for t in threads:
        t.join()
    wall = time.perf_counter() - wall
    stats = {"chunks_written": written, "wall_s": wall, "chunks_per_s_wall": written / wall if written else 0.0}
    return sorted(out, key=lambda r: str(r[0])), stats


def run_queries(
    url: str, scopes: list[tuple[Any, Any, Any]], queries: list[tuple[str, list[float]]], clients: int, per_client: int
) -> dict[str, Any]:
    lat: list[float] = []
    short: list[int] = []
    lock = threading.Lock()

    def worker(c: int) -> None:
        with Hipocampo(url, pool_size=1) as base:
            mine: list[float] = []
            bad: list[int] = []
            for i in range(per_client):
                tid, member, kb = scopes[(c * 7 + i) % len(scopes)]
                client = base.as_actor(Actor.user(member, tid))
                text, vec = queries[(c * per_client + i) % len(queries)]
                t0 = time.perf_counter()
                hits = client.search(text, vec, kb_ids=[kb], match_count=K)
                mine.append((time.perf_counter() - t0) * 1000)
                if len(hits) != K:
                    bad.append(len(hits))
            with lock:
                lat.extend(mine)
                short.extend(bad)

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {
        "clients": clients,
        "queries": len(lat),
        "p50": statistics.median(lat),
        "p95": pct(lat, 95),
        "p99": pct(lat, 99),
        "qps": len(lat) / wall,
        "short": len(short),
    }


def set_exact_max(root: Hipocampo, scopes: list[tuple[Any, Any, Any]], value: int | None) -> None:
    with root.transaction() as cur:
        for tid, _, _ in scopes:
            # hnsw_visit_cost 0: the path asked for, even for a scope small beside the graph.
            cfg = {} if value is None else {"retrieval": {"exact_scan_max_rows": value, "hnsw_visit_cost": 0}}
            cur.execute(
                "update hipocampo_private.settings set config = %s::jsonb where tenant_id = %s", (json.dumps(cfg), tid)
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tenants", type=int, default=50)
    ap.add_argument("--per-tenant", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=300, help="queries per client")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--model", help="an offline embedding model (default: config.toml's, the one a new database has)")
    args = ap.parse_args()
    url, embedder = with_model(args.model)
    with Hipocampo(url, pool_size=4) as root:
        scopes, ingest = build(root, embedder, args.tenants, args.per_tenant)
        with root.transaction() as cur:
            cur.execute(
                "select count(*) as n from hipocampo_private.chunks c join hipocampo_private.tenants t "
                "on t.id = c.tenant_id where t.slug like 'lat-%%'"
            )
            row = cur.fetchone()
            total = int(row["n"]) if row else 0
        print(f"chunks in {len(scopes)} tenants: {total}; ingest {ingest}", flush=True)
        with psycopg.connect(url, autocommit=True) as conn:
            settle(conn)  # the load's clean-up (vacuum, analyze) done before any timing

        ds = load_beir("scifact")
        qtexts = list(ds.queries.values())
        qvecs = [embedder.embed_query(q) for q in qtexts]
        queries = list(zip(qtexts, qvecs, strict=True))
        results: list[tuple[str, dict[str, Any]]] = []
        for path, value in (("exact", 1_000_000), ("hnsw", 0)):
            set_exact_max(root, scopes, value)
            run_queries(url, scopes, queries, 1, 2 * len(scopes))  # warm-up: every tenant twice
            for clients in CLIENTS:
                r = run_queries(url, scopes, queries, clients, args.queries)
                print(f"{path:5} clients={clients} {r}", flush=True)
                results.append((path, r))
        set_exact_max(root, scopes, None)

    fresh = [f"{t} {x}"[:1000] for t, x in list(ds.corpus.values())[:256]]
    model = embedder.inner
    model.embed_documents(fresh[:8])
    t0 = time.perf_counter()
    model.embed_documents(fresh)
    emb_rate = len(fresh) / (time.perf_counter() - t0)
    print(f"embedder: {emb_rate:.1f} abstracts/s", flush=True)

    if args.write:
        cmd = "python benchmarks/latency.py " + " ".join(sys.argv[1:])
        lines = [
            BEGIN,
            "## Latency and throughput",
            "",
            f"Command: `{cmd.strip()}`. {total} chunks (SciFact abstracts) in {len(scopes)} tenants "
            f"(~{args.per_tenant} each), HNSW m=16 ef_construction=64, queries as authenticated members "
            f"(RLS) with k = {K}, SciFact test queries; 2-core machine, client and server on it.",
            "",
            "| path | clients | queries | p50 ms | p95 ms | p99 ms | queries/s | queries with < k rows |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for path, r in results:
            lines.append(
                f"| {path} | {r['clients']} | {r['queries']} | {r['p50']:.1f} | {r['p95']:.1f} | "
                f"{r['p99']:.1f} | {r['qps']:.0f} | {r['short']} |"
            )
        ingest_line = (
            f"Ingestion, DB side (ingest_documents RPC, {BATCH} documents per call, 2 writers, HNSW maintained,"
            " embedding excluded): "
            f"{ingest['chunks_written']} chunks in {ingest['wall_s']:.0f} s = "
            f"{ingest['chunks_per_s_wall']:.0f} chunks/s."
            if ingest["chunks_written"]
            else "Ingestion: the data was already loaded by an earlier run (its figure is below)."
        )
        lines += [
            "",
            ingest_line,
            f"Embedder ({embedder.model_name}, {model.model_version}, 2 cores): {emb_rate:.0f} abstracts/s "
            "(SciFact abstracts, truncated at 256 word pieces).",
            END,
        ]
        write_section(BEGIN, END, "\n".join(lines))


if __name__ == "__main__":
    main()
