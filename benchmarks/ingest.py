"""Ingestion throughput (issue 18 §3): the bulk path against one document per transaction, the
first load of a model's chunks with its HNSW index maintained row by row or built after the
load, incremental ingestion into large knowledge bases, and end to end with the embedder.

    python benchmarks/ingest.py [--tenants 50] [--per-tenant 2000] [--batch 250] [--writers 2]
                                [--single 4000] [--incremental 40] [--end-to-end 500] [--write]

Runs in a database of its own on the embedded server (``hipocampo_bench_ingest``, dropped and
created again for each load), migrated and seeded like `hipocampo db migrate`. The chunks are
SciFact abstracts (one per document, ~95 postings each), replicated over ``--tenants`` tenants
as benchmarks/latency.py does (tenant i holds a window of ``--per-tenant`` of the 5,183
abstracts), with their all-MiniLM-L6-v2 vectors from the corpus cache (the database side alone:
no model runs). Past the corpus's 5,183 abstracts each copy of an abstract gets its vector moved
by a seeded random unit perturbation (cosine ~0.97 to the original): pgvector keeps identical
vectors in one HNSW element, so exact copies made the graph ~10x smaller than the table and
the HNSW rows optimistic (before 2026-11-26). Each writer is a thread with its own connection,
loading one tenant at a time as service_role through the RPCs the Python client calls:

- bulk: ``ingest_documents``, ``--batch`` documents per call (one transaction each);
- single: ``ingest_document``, one document per call (the path before the bulk path), on the
  first ``--single`` documents of a fresh database, for the ratio;
- first load, HNSW maintained: the model's HNSW index exists during the load (each chunk is
  added to the graph as it is written);
- first load, HNSW after: ``hipocampo.defer_model_index`` drops the index before the load and
  ``hipocampo.build_model_index`` builds it after (parallel maintenance workers,
  maintenance_work_mem from config.toml [maintenance]); chunks/s counts the build;
- incremental: ``--incremental`` new documents into each of the loaded tenants' knowledge bases
  (HNSW present), in one ``ingest_documents`` call per tenant, and the same count one document
  per call;
- end to end: ``--end-to-end`` SciFact abstracts not embedded before through
  ``hipocampo.ingest.ingest_documents`` (the pipeline `hipocampo ingest` runs: PII scrub,
  chunking, the offline model, the writer overlapping the next batch's embedding), beside the
  embedder alone on the same texts; with each offline model, multilingual-e5-small (the default)
  in a database of its own (``hipocampo_bench_ingest_e5``) where it is the active model.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg.conninfo import make_conninfo

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hipocampo import Actor, Hipocampo, db
from hipocampo.config import load_config, repo_root
from hipocampo.embeddings import CachingEmbedder, EmbeddingProvider, LocalE5, LocalMiniLM, count_tokens
from hipocampo.embeddings.e5 import E5_MODEL
from hipocampo.evaluation.datasets import load_beir
from hipocampo.ingest import LoadedDocument, sha256
from hipocampo.ingest.pipeline import DocumentInput, ingest_documents
from report import write_section

BEGIN, END = "<!-- ingest:begin -->", "<!-- ingest:end -->"
DBNAME = "hipocampo_bench_ingest"
MODEL = "all-MiniLM-L6-v2"

Item = tuple[dict[str, Any], list[dict[str, Any]]]


def fresh_database(name: str = DBNAME, model: str = MODEL) -> str:
    """Drop and create the benchmark's database ``name``; migrate and seed it, ``model`` its active
    embedding model. Returns its URL."""
    url = db.ensure_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'drop database if exists "{name}" with (force)')  # type: ignore[arg-type]
        conn.execute(f'create database "{name}"')  # type: ignore[arg-type]
    bench = make_conninfo(url, dbname=name)
    db.apply_migrations(bench, shim=db.external_url() is None)
    with Hipocampo(bench) as root:
        root.rpc("register_embedding_model", {"name": model, "provider": "local", "dims": 384, "activate": True})
    return bench


class Corpus:
    """SciFact abstracts as (document, chunks) pairs, with cached vectors."""

    def __init__(self, embedder: EmbeddingProvider | None = None) -> None:
        """``embedder``: the model whose vectors the chunks carry (default all-MiniLM-L6-v2, this
        script's own database's model); benchmarks/latency.py passes the active model's."""
        ds = load_beir("scifact")
        self.ids = list(ds.corpus)
        self.corpus = ds.corpus
        texts = [f"{t}\n{x}" for t, x in (ds.corpus[i] for i in self.ids)]
        self.embedder = embedder or CachingEmbedder(
            LocalMiniLM(), repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite"
        )
        self.vectors = self.embedder.embed_documents(texts)  # from the cache after the first run
        self.texts = texts

    def vector(self, idx: int) -> list[float]:
        """The vector of item ``idx``: the abstract's own for the first copy, then a seeded
        perturbation of it (a distinct vector per copy, cosine ~0.97 to the original)."""
        base = self.vectors[idx % len(self.ids)]
        if idx < len(self.ids):
            return base
        noise = np.random.default_rng(idx).standard_normal(len(base))
        v = np.asarray(base) + 0.25 * noise / np.linalg.norm(noise)
        return [float(x) for x in v / np.linalg.norm(v)]

    def item(self, idx: int, uri_prefix: str = "beir:scifact:") -> Item:
        vector = self.vector(idx)
        idx %= len(self.ids)
        title, text = self.corpus[self.ids[idx]]
        digest = sha256(f"{uri_prefix}{self.texts[idx]}")
        document = {
            "title": title or self.ids[idx],
            "source_uri": f"{uri_prefix}{self.ids[idx]}",
            "content_hash": digest,
            "source_type": "other",
        }
        chunk = {
            "chunk_index": 0,
            "content": text,
            "token_count": len(text.split()),
            "content_hash": digest,
            "metadata": {"title": title},
            "embedding": vector,
        }
        return document, [chunk]


def write_tenants(
    url: str,
    scopes: list[tuple[Any, Any]],
    writers: int,
    items_for: Callable[[int], list[Item]],
    write: Callable[[Hipocampo, Any, list[Item]], None],
) -> tuple[float, int]:
    """Write ``items_for(n)`` into the knowledge base of ``scopes[n]`` for every n, ``writers``
    tenants at a time (a thread and a connection each, as service_role); returns the wall
    seconds and the documents written."""
    with Hipocampo(url, pool_size=writers + 1) as root:

        def one(n: int) -> int:
            tid, kb = scopes[n]
            items = items_for(n)
            write(root.as_actor(Actor.service(tid)), kb, items)
            return len(items)

        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=writers) as pool:
            count = sum(pool.map(one, range(len(scopes))))
        return time.perf_counter() - t0, count


def load(
    url: str,
    corpus: Corpus,
    tenants: int,
    per_tenant: int,
    writers: int,
    write: Callable[[Hipocampo, Any, list[Item]], None],
    slug: str = "ing",
) -> tuple[float, int, list[tuple[Any, Any]]]:
    """Create ``tenants`` tenants with a knowledge base each and load ``per_tenant`` chunks into
    each with ``writers`` threads; returns the wall seconds of the writes, the chunks written and
    the (tenant, kb) pairs."""
    scopes: list[tuple[Any, Any]] = []
    with Hipocampo(url) as root:
        for n in range(tenants):
            tid = root.create_tenant(f"Ingest {n}", f"{slug}-{n:02d}")
            scopes.append((tid, root.as_actor(Actor.service(tid)).create_kb("scifact", language="english")))
    seconds, written = write_tenants(
        url, scopes, writers, lambda n: [corpus.item(n * per_tenant + j) for j in range(per_tenant)], write
    )
    return seconds, written, scopes


def bulk_writer(batch: int) -> Callable[[Hipocampo, Any, list[Item]], None]:
    def write(client: Hipocampo, kb: Any, items: list[Item]) -> None:
        for s in range(0, len(items), batch):
            out = client.ingest_documents(kb, items[s : s + batch], MODEL)
            assert all(r.status == "inserted" for r in out), out[:3]

    return write


def single_writer(client: Hipocampo, kb: Any, items: list[Item]) -> None:
    for document, chunks in items:
        client.ingest_document(kb, document, chunks, MODEL)


def vacuum_analyze(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for t in ("chunks", "kb_postings", "kb_term_stats", "documents"):
            conn.execute(f"vacuum analyze hipocampo_private.{t}")  # type: ignore[arg-type]


def end_to_end(url: str, corpus: Corpus, n: int, model: EmbeddingProvider) -> tuple[str, str, int, float, str]:
    """The last ``n`` SciFact abstracts through ``hipocampo.ingest.ingest_documents`` with
    ``model`` (uncached; the database's active model), then the model alone on the same texts.
    Returns the table's row: label, path, chunks written, seconds, note (the model's texts/s)."""
    picks = corpus.ids[len(corpus.ids) - n :]
    docs = [
        DocumentInput(LoadedDocument(corpus.corpus[i][0] or i, corpus.corpus[i][1], f"e2e:{uuid.uuid4()}"), "other")
        for i in picks
    ]
    model.embed_documents(["aquecimento"])  # load the model before timing
    with Hipocampo(url) as root:
        tid = root.create_tenant("End to end", "e2e")
        client = root.as_actor(Actor.service(tid))
        t0 = time.perf_counter()
        summary = ingest_documents(client, "e2e", docs, model, count_tokens)
        s = time.perf_counter() - t0
    texts = [f"{d.doc.title}\n{d.doc.text}" for d in docs]
    t0 = time.perf_counter()
    for k in range(0, len(texts), 64):
        model.embed_documents(texts[k : k + 64])
    alone = time.perf_counter() - t0
    label = f"end to end (pipeline + {model.model_name})"
    note = f"(the model alone: {len(texts) / alone:.0f} texts/s)"
    return label, "hipocampo.ingest.ingest_documents", summary.chunks_written, s, note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tenants", type=int, default=50)
    ap.add_argument("--per-tenant", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=250, help="documents per ingest_documents call")
    ap.add_argument("--writers", type=int, default=2)
    ap.add_argument("--single", type=int, default=4000, help="chunks through ingest_document, for the ratio")
    ap.add_argument("--incremental", type=int, default=40, help="new documents per loaded tenant")
    ap.add_argument("--end-to-end", type=int, default=500, help="abstracts through the pipeline with the model")
    ap.add_argument("--skip-maintained", action="store_true", help="skip the load with HNSW maintained")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    corpus = Corpus()
    rows: list[tuple[str, str, int, float, str]] = []
    total = args.tenants * args.per_tenant

    def row(label: str, path: str, chunks: int, seconds: float, note: str = "") -> None:
        rows.append((label, path, chunks, seconds, note))
        print(f"{label:45} {path:32} {chunks:7d} chunks {seconds:8.1f} s {chunks / seconds:8.0f} chunks/s {note}")

    # One document per transaction, then the bulk path, on the same chunks of a fresh database.
    per = max(1, args.single // 2)
    url = fresh_database()
    s, n, _ = load(url, corpus, 2, per, args.writers, single_writer, "one")
    row("same chunks, fresh database", "ingest_document (1 per call)", n, s)
    url = fresh_database()
    s, n, _ = load(url, corpus, 2, per, args.writers, bulk_writer(args.batch), "one")
    row("same chunks, fresh database", f"ingest_documents ({args.batch} per call)", n, s)

    if not args.skip_maintained:
        url = fresh_database()
        s, n, _ = load(url, corpus, args.tenants, args.per_tenant, args.writers, bulk_writer(args.batch))
        row("first load, HNSW maintained row by row", f"ingest_documents ({args.batch} per call)", n, s)

    url = fresh_database()
    with Hipocampo(url) as root:
        t0 = time.perf_counter()
        root.rpc("defer_model_index", {"embedding_model": MODEL})
        s, n, scopes = load(url, corpus, args.tenants, args.per_tenant, args.writers, bulk_writer(args.batch))
        t1 = time.perf_counter()
        root.rpc("build_model_index", {"embedding_model": MODEL})
        build = time.perf_counter() - t1
        whole = time.perf_counter() - t0
    row("first load, HNSW built after", f"ingest_documents ({args.batch} per call)", n, whole,
        f"(writes {s:.0f} s = {n / s:.0f} chunks/s, index build {build:.0f} s)")  # fmt: skip
    vacuum_analyze(url)

    # Incremental: new documents into the loaded knowledge bases (HNSW present).
    def incremental(prefix: str, write: Callable[[Hipocampo, Any, list[Item]], None]) -> tuple[float, int]:
        first = args.per_tenant  # past the tenant's window of loaded abstracts
        return write_tenants(
            url,
            scopes,
            args.writers,
            lambda n: [corpus.item(n * args.per_tenant + first + j, prefix) for j in range(args.incremental)],
            write,
        )

    s, n = incremental("inc-bulk:", bulk_writer(args.batch))
    row(f"incremental, {args.incremental} documents into each KB of {args.per_tenant:,}",
        "ingest_documents (1 call per KB)", n, s)  # fmt: skip
    s, n = incremental("inc-one:", single_writer)
    row(f"incremental, {args.incremental} documents into each KB of {args.per_tenant:,}",
        "ingest_document (1 per call)", n, s)  # fmt: skip

    # End to end: the pipeline with each offline model (uncached), and the model alone; e5 (the
    # default) in a fresh database of its own, where it is the active model.
    e2e_note = ""
    if args.end_to_end:
        for model, e2e_url in ((LocalMiniLM(), url), (LocalE5(), fresh_database(DBNAME + "_e5", E5_MODEL))):
            row(*end_to_end(e2e_url, corpus, args.end_to_end, model))
        e2e_note = f"{args.end_to_end} abstracts"

    if args.write:
        cfg = load_config()["maintenance"]
        cmd = "python benchmarks/ingest.py " + " ".join(sys.argv[1:])
        lines = [
            BEGIN,
            "## Bulk ingestion (issue 18 §3)",
            "",
            f"Command: `{cmd}` ({time.strftime('%Y-%m-%d')}, 2 cores, embedded PostgreSQL 18 + pgvector 0.8,"
            f" client and server on the machine). {total:,} SciFact chunks in {args.tenants} tenants, "
            f"{args.writers} writers, the database side alone (vectors from the corpus cache) except the end-to-end"
            f" row ({e2e_note}). HNSW m=16, ef_construction=64; the build after the load with"
            f" maintenance_work_mem {cfg['index_build_maintenance_work_mem_mb']} MB and"
            f" {cfg['index_build_parallel_workers']} parallel worker(s) (config.toml [maintenance]).",
            "",
            "| load | path | chunks | seconds | chunks/s | note |",
            "|---|---|---|---|---|---|",
        ]
        for label, path, chunks, seconds, note in rows:
            lines.append(f"| {label} | {path} | {chunks:,} | {seconds:.1f} | {chunks / seconds:,.0f} | {note} |")
        lines.append(END)
        print(f"wrote {write_section(BEGIN, END, chr(10).join(lines))}")
    print(f"median chunks/s: {statistics.median(r[2] / r[3] for r in rows):.0f}")


if __name__ == "__main__":
    main()
