"""Ingestion: load -> normalise -> PII scrub -> chunk -> embed -> one transaction per document.

Content-hash dedupe: a document whose scrubbed text (plus title and source_type) hashes as stored
is skipped before embedding, so re-ingesting it makes zero embedding calls and zero writes; a
changed one has its chunks replaced. KB status moves draft -> indexing -> ready (or error when
every document failed), and the run is recorded as an ingestion job.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..client import Hipocampo
from ..embeddings.base import EmbeddingProvider
from ..errors import ConnectionLostError, HipocampoError, LoaderError
from ..models import DocumentResult, IngestSummary
from .chunking import Chunk, ChunkingRule, chunk_text
from .loaders import LoadedDocument, load_path

__all__ = ["DocumentInput", "expand_paths", "ingest_documents", "ingest_paths", "sha256"]

SOURCE_TYPES = (
    "regulation",
    "policy",
    "assembly_minutes",
    "reservation",
    "decision",
    "penalty",
    "metric",
    "faq",
    "manual",
    "other",
)


def sha256(text: str) -> str:
    """Hex SHA-256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class DocumentInput:
    """A loaded document plus its ingestion attributes (source_type, trust 0..1, …)."""

    doc: LoadedDocument
    source_type: str = "other"
    trust_score: float | None = None
    doc_type: str | None = None


def expand_paths(paths: Iterable[Path]) -> list[Path]:
    """Files under ``paths`` (directories walked recursively, sorted)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.is_file()))
        else:
            out.append(p)
    return out


ProgressHook = Callable[[DocumentResult], None]


def ingest_documents(
    client: Hipocampo,
    kb_name: str,
    inputs: Sequence[DocumentInput],
    embedder: EmbeddingProvider,
    count_tokens: Callable[[str], int],
    *,
    failures: Sequence[DocumentResult] = (),
    on_document: ProgressHook | None = None,
    embed_batch: int = 64,
) -> IngestSummary:
    """Ingest already-loaded documents into knowledge base ``kb_name`` (created if missing).

    ``failures`` are documents that failed before this step (e.g. loader errors), counted in the
    summary and the job record. Chunks of several documents are embedded together, about
    ``embed_batch`` per model call. Chunking rules come from the database config rows
    (``chunking.<source_type>``).

    Raises:
        PermissionDeniedError: the actor may not write this tenant's KB.
        HipocampoError: database errors other than per-document ones.
    """
    started = time.perf_counter()
    kb_id = client.create_kb(kb_name)
    cfg = client.effective_config(kb_id)
    rules = cfg.get("chunking", {})
    existing = client.document_hashes(kb_id)
    summary = IngestSummary(kb=kb_name, documents_total=len(inputs) + len(failures))
    summary.documents.extend(failures)
    summary.documents_failed = len(failures)

    for item in inputs:
        if item.source_type not in SOURCE_TYPES:
            raise HipocampoError(f"unknown source_type {item.source_type!r}; one of {', '.join(SOURCE_TYPES)}")
    # Text, title and source_uri go through the database's scrubber before anything is hashed,
    # chunked or embedded (the triggers scrub what is stored again, whatever the client).
    cleaned = client.scrub_pii([s for item in inputs for s in (item.doc.text, item.doc.title, item.doc.source_uri)])
    prepared: list[tuple[DocumentInput, str, str, int]] = []
    for n, item in enumerate(inputs):
        scrubbed, title, uri = cleaned[3 * n : 3 * n + 3]
        item = replace(item, doc=replace(item.doc, title=title.text, source_uri=uri.text))
        pii = scrubbed.total + title.total + uri.total
        digest = sha256(f"{item.doc.title}\n{item.source_type}\n{scrubbed.text}")
        if existing.get(item.doc.source_uri) == digest:
            res = DocumentResult(source_uri=item.doc.source_uri, title=item.doc.title, status="unchanged")
            summary.documents.append(res)
            summary.documents_unchanged += 1
            if on_document:
                on_document(res)
            continue
        prepared.append((item, scrubbed.text, digest, pii))

    if not prepared and not failures:
        summary.seconds = time.perf_counter() - started
        return summary

    client.set_kb_status(kb_id, "indexing")
    job = client.start_job(kb_id, summary.documents_total)
    summary.job_id = job
    errors: list[dict[str, Any]] = [{"source_uri": f.source_uri, "error": f.error} for f in failures]

    def fail(item: DocumentInput, res: DocumentResult, exc: HipocampoError) -> None:
        res.error = exc.message
        summary.documents_failed += 1
        errors.append({"source_uri": item.doc.source_uri, "error": exc.message, "sqlstate": exc.sqlstate})

    def finish(res: DocumentResult) -> None:
        summary.documents.append(res)
        if on_document:
            on_document(res)

    # Documents are chunked, then embedded in batches of about `embed_batch` chunks across
    # documents (small documents would otherwise cost one model call each); each document is
    # still written in its own transaction.
    pending: list[tuple[DocumentInput, str, int, list[Chunk], DocumentResult]] = []

    def flush() -> None:
        if not pending:
            return
        texts = [f"{it.doc.title}\n{c.content}" for it, _, _, chunks, _ in pending for c in chunks]
        client.heartbeat_job(job)  # the lease (migration 004600): alive before a long embedding call
        try:
            # The title is a contextual header of every chunk, for the embedding as for the
            # tsvector (which indexes metadata.title + content).
            vectors = iter(embedder.embed_documents(texts))
            summary.embedding_calls += 1
        except HipocampoError as exc:
            for it, _, _, _, res in pending:
                fail(it, res, exc)
                finish(res)
            pending.clear()
            return
        for it, digest, pii, chunks, res in pending:
            rows = [
                {
                    "chunk_index": i,
                    "content": c.content,
                    "token_count": c.token_count,
                    # Scoped to the KB: the unique (tenant, content_hash, model) then dedupes
                    # within a knowledge base without taking a chunk away from another KB.
                    "content_hash": sha256(f"{kb_id}:{c.content}"),
                    "metadata": {**c.metadata, "title": it.doc.title},
                    "embedding": next(vectors),
                }
                for i, c in enumerate(chunks)
            ]
            document = {
                "title": it.doc.title,
                "source_uri": it.doc.source_uri,
                "content_hash": digest,
                "source_type": it.source_type,
                "doc_type": it.doc_type,
                "trust_score": it.trust_score,
                **{k: v for k, v in it.doc.metadata.items() if v is not None},
            }
            try:
                out = client.ingest_document(kb_id, document, rows, embedder.model_name)
                res.status = str(out["status"])
                res.chunks = int(out["chunks"])
                summary.documents_ingested += 1
                summary.chunks_written += res.chunks
                summary.pii_replaced += pii
            except ConnectionLostError:
                raise  # not this document's fault: stop; the job is recovered by its lease
            except HipocampoError as exc:
                fail(it, res, exc)
            finish(res)
        pending.clear()

    queued = 0
    for item, text, digest, pii in prepared:
        rule = ChunkingRule.from_config(
            rules.get(item.source_type) or rules.get("other") or {"min_tokens": 200, "max_tokens": 400, "overlap": 50}
        )
        res = DocumentResult(source_uri=item.doc.source_uri, title=item.doc.title, status="failed", pii_replaced=pii)
        chunks = chunk_text(text, rule, count_tokens)
        if not chunks:
            fail(item, res, LoaderError(f"{item.doc.source_uri}: no text to index"))
            finish(res)
            continue
        pending.append((item, digest, pii, chunks, res))
        queued += len(chunks)
        if queued >= embed_batch:
            flush()
            queued = 0
    flush()

    ok = summary.documents_ingested + summary.documents_unchanged
    status = "succeeded" if summary.documents_failed == 0 else ("partial" if ok else "failed")
    client.finish_job(
        job,
        status,
        {
            "documents_ingested": summary.documents_ingested,
            "documents_unchanged": summary.documents_unchanged,
            "documents_failed": summary.documents_failed,
            "chunks_written": summary.chunks_written,
        },
        errors,
    )
    client.set_kb_status(kb_id, "ready" if ok else "error")
    summary.seconds = time.perf_counter() - started
    summary.chunks_per_second = summary.chunks_written / summary.seconds if summary.seconds else 0.0
    return summary


def ingest_paths(
    client: Hipocampo,
    kb_name: str,
    paths: Sequence[Path],
    embedder: EmbeddingProvider,
    count_tokens: Callable[[str], int],
    *,
    source_type: str = "other",
    trust_score: float | None = None,
    on_document: ProgressHook | None = None,
) -> IngestSummary:
    """Load files (directories walked) and ingest them; a file that fails to load is recorded
    as a failed document and the others go on."""
    inputs: list[DocumentInput] = []
    failures: list[DocumentResult] = []
    for path in expand_paths(paths):
        try:
            for doc in load_path(path):
                inputs.append(DocumentInput(doc, source_type, trust_score))
        except LoaderError as exc:
            failures.append(DocumentResult(source_uri=str(path), title=path.name, status="failed", error=exc.message))
    return ingest_documents(client, kb_name, inputs, embedder, count_tokens, failures=failures, on_document=on_document)
