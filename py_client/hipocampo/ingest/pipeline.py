"""Ingestion: load -> normalise -> PII scrub -> chunk -> embed -> one transaction per document.

Embedding and writing overlap (issue 18 §3): the chunks of about ``embed_batch`` at a time are
embedded on the caller's thread while the previous batch's documents are written by one writer
thread, in order, in one transaction per batch (``ingest_documents``, the set-based bulk path;
a batch the database refuses is written again one document per transaction, so only a bad
document fails); everything that counts or reports a document runs on that thread, so the
summary and the progress hook see one document at a time.

Forbidden sources (issue 45 §4): a file that is a credential store, a chat transcript, an
individual financial statement or a biometric record is refused or quarantined before its scrub
(:mod:`hipocampo.ingest.forbidden`, config section ``forbidden_sources``).

Content-hash dedupe: a document's hash covers its scrubbed text, its title and the chunking
rule of its source type. One whose hash is stored and that has chunks of the embedding model is
skipped before embedding (zero embedding calls, zero writes), or, when only its source type or
trust changed, updated in place (``metadata_updated``, no embedding call). One whose hash is
stored but that the model does not embed yet (a model switch) gets that model's chunks beside the
old model's (``embedded``); a changed one has every model's chunks replaced. KB status moves
draft -> indexing -> ready (error only when the KB holds no document after a run in which every
document failed), and the run is recorded as an ingestion job.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any
from uuid import UUID

from ..client import Hipocampo
from ..config import load_config
from ..embeddings.base import EmbeddingProvider
from ..errors import ConnectionLostError, HipocampoError, InvalidInputError, LoaderError, NotFoundError
from ..models import DocumentResult, DocumentWrite, IngestSummary, StoredDocument
from .chunking import Chunk, ChunkingRule, chunk_sentences, chunk_text, rule_for
from .forbidden import Finding, action_for, find_forbidden
from .language import detect_language
from .loaders import LoadedDocument, load_path
from .scrub import ScrubProgress, scrub_texts

__all__ = [
    "DocumentInput",
    "default_trust",
    "expand_paths",
    "ingest_documents",
    "ingest_paths",
    "prune_missing",
    "sha256",
]

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


def default_trust(table: Mapping[str, Any], source_type: str) -> float:
    """The trust (0..1) a document of ``source_type`` gets without one of its own: ``table`` is the
    config's retrieval.default_trust; a type it does not name gets 0.5, as ingest_document does."""
    return float(table.get(source_type, 0.5))


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


def prune_missing(client: Hipocampo, kb_name: str, paths: Sequence[Path], summary: IngestSummary) -> list[str]:
    """Delete the documents of ``kb_name`` that came from under the directories in ``paths``
    (their ``file://`` URI, a document of a JSON / JSONL file included) and that this run
    (``summary``) did not read: their files are gone, or no longer hold them (``hipocampo ingest
    --prune``, never by default; issue 44 §6). Nothing is deleted when a file of the run failed
    to load: its documents would look gone.

    Returns:
        The source URIs deleted, sorted.

    Raises:
        NotFoundError: unknown knowledge base. PermissionDeniedError: the actor may not delete.
    """
    if any(d.status == "failed" and not d.source_uri.startswith("file:") for d in summary.documents):
        return []
    roots = [p.resolve().as_uri().rstrip("/") + "/" for p in paths if p.is_dir()]
    read = {d.source_uri for d in summary.documents}
    kb = client.kb_id(kb_name)
    gone = [
        d
        for d in client.list_documents(kb)
        if any(d.source_uri.startswith(r) for r in roots) and d.source_uri not in read
    ]
    for d in gone:
        client.delete_document(d.id)
    return sorted(d.source_uri for d in gone)


ProgressHook = Callable[[DocumentResult], None]


@dataclass
class _Pending:
    """A chunked document waiting for its batch's embeddings."""

    item: DocumentInput
    digest: str
    pii: int
    chunks: list[Chunk]
    result: DocumentResult
    # Per chunk, its sentences' embeddings (rag.sentence_weight > 0), else None.
    sentence_vectors: list[list[list[float]]] | None = None
    # The language its text is in (detect_language), or None: the knowledge base's.
    language: str | None = None


class _Run:
    """One ingestion run into one knowledge base: its summary, job record and embedding batches."""

    def __init__(
        self,
        client: Hipocampo,
        kb_name: str,
        embedder: EmbeddingProvider,
        on_document: ProgressHook | None,
        total: int,
        create_kb: bool = True,
        on_scrub: ScrubProgress | None = None,
    ) -> None:
        self.client = client
        self.embedder = embedder
        self.on_document = on_document
        self.on_scrub = on_scrub
        self.max_document_bytes = int(float(load_config().get("ingest", {}).get("max_document_mb", 20)) * 1_000_000)
        self.started = time.perf_counter()
        # Created by this run: dropped again when the run writes nothing (issue 44 §5: a run whose
        # every file failed left an empty knowledge base behind).
        self.created = False
        if create_kb:
            try:
                self.kb_id = client.kb_id(kb_name)
            except NotFoundError:
                self.kb_id = client.create_kb(kb_name)
                self.created = True
        else:
            try:
                self.kb_id = client.kb_id(kb_name)
            except NotFoundError:
                raise NotFoundError(
                    f"unknown knowledge base {kb_name!r}: create it with `hipocampo kb create {kb_name}`"
                    " (or pass --create-kb)",
                    "P0002",
                ) from None
        cfg = client.effective_config_json(self.kb_id)
        self.rules: dict[str, Any] = cfg.get("chunking", {})
        self.default_trust: dict[str, Any] = cfg.get("retrieval", {}).get("default_trust", {})
        self.forbidden: dict[str, Any] = cfg.get("forbidden_sources", {})
        # The answer gate reads the chunks' sentence embeddings when the active model's calibration
        # weighs them (rag.sentence_weight > 0, docs/design.md §answers): embedded with the chunks.
        # Chunks of a model not yet active get theirs from the sentence backfill once it is.
        self.sentences = float(cfg.get("rag", {}).get("sentence_weight") or 0) > 0
        self.stored = 0
        self.summary = IngestSummary(kb=kb_name, documents_total=total)
        self.errors: list[dict[str, Any]] = []
        self.pending: list[_Pending] = []
        self.job: UUID | None = None
        # The writer: one thread, so documents are written (and reported) in order, one at a time.
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hipocampo-ingest-writer")
        self._written: Future[None] | None = None

    def later(self, work: Callable[[], None]) -> None:
        """Queue ``work`` on the writer thread, after what is queued already; a failure of earlier
        work (the database went away) is raised here, on the caller's thread."""
        self.wait()
        self._written = self._writer.submit(work)

    def wait(self) -> None:
        """Wait for the queued writes; raise what they raised."""
        if self._written is not None:
            done, self._written = self._written, None
            done.result()

    def finish(self, res: DocumentResult) -> None:
        self.summary.documents.append(res)
        if self.on_document:
            self.on_document(res)

    def fail(self, item: DocumentInput, res: DocumentResult, exc: HipocampoError) -> None:
        res.error = exc.message
        self.summary.documents_failed += 1
        self.errors.append({"source_uri": item.doc.source_uri, "error": exc.message, "sqlstate": exc.sqlstate})

    def rule(self, source_type: str) -> ChunkingRule:
        """The chunking rule of a source type (config rows ``chunking.<source_type>``)."""
        return ChunkingRule.from_config(
            self.rules.get(source_type)
            or self.rules.get("other")
            or {"min_tokens": 200, "max_tokens": 400, "overlap": 50}
        )

    def prepare(self, inputs: Sequence[DocumentInput]) -> list[tuple[DocumentInput, str, str, int]]:
        """Scrub text, title and source_uri with the database's scrubber before anything is
        hashed, chunked or embedded (the triggers scrub what is stored again, whatever the
        client); documents whose hash is stored and that the model embeds are reported
        unchanged, or metadata_updated when their source type or trust differ."""
        for item in inputs:
            if item.source_type not in SOURCE_TYPES:
                raise HipocampoError(f"unknown source_type {item.source_type!r}; one of {', '.join(SOURCE_TYPES)}")
        existing = self.client.document_hashes(self.kb_id, self.embedder.model_name)
        self.stored = len(existing)
        inputs = self.admissible([item for item in inputs if self.within_size(item)])
        texts = [s for item in inputs for s in (item.doc.text, item.doc.title, item.doc.source_uri)]
        cleaned = scrub_texts(self.client, texts, self.on_scrub)
        prepared: list[tuple[DocumentInput, str, str, int]] = []
        for n, item in enumerate(inputs):
            scrubbed, title, uri = cleaned[3 * n : 3 * n + 3]
            item = replace(item, doc=replace(item.doc, title=title.text, source_uri=uri.text))
            rule = json.dumps(asdict(self.rule(item.source_type)), sort_keys=True)
            digest = sha256(f"{item.doc.title}\n{rule}\n{scrubbed.text}")
            stored = existing.get(item.doc.source_uri)
            if stored is not None and stored.content_hash == digest and stored.embedded:
                self.keep(item, stored)
                continue
            prepared.append((item, scrubbed.text, digest, scrubbed.total + title.total + uri.total))
        return prepared

    def admissible(self, inputs: list[DocumentInput]) -> list[DocumentInput]:
        """The documents of no forbidden kind, or of one this source type allows (issue 45 §4,
        :mod:`hipocampo.ingest.forbidden`); the others are refused (status ``refused``, counted
        as failed, nothing written) or quarantined (``quarantine_document``: status
        ``quarantined``, no text kept), each with its reason as ``error``."""
        found = find_forbidden(self.client, self.kb_id, [item.doc.text for item in inputs])
        kept: list[DocumentInput] = []
        for item, finding in zip(inputs, found, strict=True):
            action = "allow" if finding is None else action_for(self.forbidden, item.source_type, finding.kind)
            if finding is None or action == "allow":
                kept.append(item)
                continue
            res = DocumentResult(
                source_uri=item.doc.source_uri, title=item.doc.title, status=f"{action}d", forbidden=finding.kind
            )
            if action == "quarantine":
                self.quarantine(item, finding, res)
            else:
                self.fail(item, res, InvalidInputError(f"refused: {finding.reason} ({finding.kind})", "22023"))
                self.summary.documents_refused += 1
            self.finish(res)
        return kept

    def quarantine(self, item: DocumentInput, finding: Finding, res: DocumentResult) -> None:
        """Record ``item`` as quarantined (``hipocampo.quarantine_document``); a database refusal
        fails the document instead."""
        args = {
            "kb_id": self.kb_id,
            "source_uri": item.doc.source_uri,
            "title": item.doc.title,
            "source_type": item.source_type,
            "kind": finding.kind,
            "reason": finding.reason[:500],
            "content_hash": sha256(item.doc.text),
        }
        try:
            self.client.rpc("quarantine_document", args, "value")
        except ConnectionLostError:
            raise
        except HipocampoError as exc:
            self.fail(item, res, exc)
            res.status = "failed"
            return
        res.error = f"quarantined: {finding.reason} ({finding.kind})"
        self.summary.documents_quarantined += 1

    def within_size(self, item: DocumentInput) -> bool:
        """Whether the document's text fits ``[ingest] max_document_mb`` of config.toml (20 MB);
        one that does not fails with 22023 and the others go on (issue 44 §3)."""
        size = len(item.doc.text.encode("utf-8"))
        if size <= self.max_document_bytes:
            return True
        res = DocumentResult(source_uri=item.doc.source_uri, title=item.doc.title, status="failed")
        limit = self.max_document_bytes / 1_000_000
        error = InvalidInputError(
            f"{item.doc.source_uri}: the text is {size / 1_000_000:.3g} MB; the limit is {limit:g} MB"
            " ([ingest] max_document_mb in config.toml)",
            "22023",
        )
        self.fail(item, res, error)
        res.status = "failed"
        self.finish(res)
        return False

    def keep(self, item: DocumentInput, stored: StoredDocument) -> None:
        """A document whose text and chunks stand: unchanged, or its new source type / trust
        applied in place (no embedding call)."""
        res = DocumentResult(source_uri=item.doc.source_uri, title=item.doc.title, status="unchanged")
        patch: dict[str, Any] = {}
        if item.source_type != stored.source_type:
            patch["source_type"] = item.source_type
        trust = item.trust_score
        if trust is None and patch:  # a new type without --trust takes the new type's default
            trust = default_trust(self.default_trust, item.source_type)
        if trust is not None and abs(stored.trust_score - trust) > 1e-6:
            patch["trust_score"] = trust
        version = item.doc.metadata.get("version")
        if version is not None and version != stored.version:  # a page's new validator, same text
            patch["version"] = version
        if patch:
            try:
                self.client.set_document_metadata(stored.document_id, patch)
                res.status = "metadata_updated"
                self.summary.documents_updated += 1
            except ConnectionLostError:
                raise
            except HipocampoError as exc:
                self.fail(item, res, exc)
                res.status = "failed"
        else:
            self.summary.documents_unchanged += 1
        self.finish(res)

    def flush(self) -> None:
        """Embed the pending documents' chunks in one model call (while the previous batch is
        still being written), then queue each document's write, in its own transaction."""
        if not self.pending:
            return
        assert self.job is not None
        batch, self.pending = self.pending, []
        # The title (with the chunk's heading path) is a contextual header of every chunk, for the
        # embedding as for the tsvector (which indexes metadata.title + content).
        texts = [f"{context_header(p.item.doc.title, c)}\n{c.content}" for p in batch for c in p.chunks]
        if self.sentences:  # then each chunk's sentences, in the same model call
            texts += [s for p in batch for c in p.chunks for s in chunk_sentences(c.content)]
        self.client.heartbeat_job(self.job)  # the job's lease: alive before a long embedding call
        try:
            vectors = iter(self.embedder.embed_documents(texts))
            self.summary.embedding_calls += 1
        except HipocampoError as exc:
            failed = exc

            def fail_all() -> None:
                for p in batch:
                    self.fail(p.item, p.result, failed)
                    self.finish(p.result)

            self.later(fail_all)
            return
        ready = [(p, [next(vectors) for _ in p.chunks]) for p in batch]
        if self.sentences:
            for p in batch:
                p.sentence_vectors = [[next(vectors) for _ in chunk_sentences(c.content)] for c in p.chunks]
        self.later(lambda: self.write_batch(ready))

    def rows(self, p: _Pending, vectors: list[list[float]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """A pending document as ``ingest_document`` takes it: (document, chunks)."""
        it = p.item
        # which pages OCR read and its confidence, on every chunk of the document (issue 59 §1)
        ocr = {"ocr": it.doc.metadata["ocr"]} if it.doc.metadata.get("ocr") else {}
        chunks = [
            {
                "chunk_index": i,
                "content": c.content,
                "token_count": c.token_count,
                # Scoped to the document and the chunk's position: every document keeps its own
                # chunks, also when another one in the KB has the same text (search's
                # near-duplicate dedupe then shows one of them); see issue 19 §1.11.
                "content_hash": sha256(f"{self.kb_id}:{it.doc.source_uri}:{i}:{c.content}"),
                "metadata": {**c.metadata, "title": context_header(it.doc.title, c), **ocr},
                "embedding": v,
                **({"sentence_embeddings": p.sentence_vectors[i]} if p.sentence_vectors else {}),
            }
            for i, (c, v) in enumerate(zip(p.chunks, vectors, strict=True))
        ]
        document = {
            "title": it.doc.title,
            "source_uri": it.doc.source_uri,
            "content_hash": p.digest,
            "source_type": it.source_type,
            "doc_type": it.doc_type,
            "trust_score": it.trust_score,
            "pii_replacements": p.pii,
            **({"language": p.language} if p.language else {}),
            **{k: v for k, v in it.doc.metadata.items() if v is not None and k != "ocr"},
        }
        return document, chunks

    def write_batch(self, ready: list[tuple[_Pending, list[list[float]]]]) -> None:
        """Write a batch of embedded documents in one transaction (``ingest_documents``, the bulk
        path); when the database refuses the batch (one bad document refuses all of it), write
        its documents one by one, so that only the bad one fails."""
        if len(ready) == 1:
            self.write(*ready[0])
            return
        try:
            out = self.client.ingest_documents(
                self.kb_id,
                [self.rows(p, vecs) for p, vecs in ready],
                self.embedder.model_name,
            )
        except ConnectionLostError:
            raise  # not a document's fault: stop; the job is recovered by its lease
        except HipocampoError:
            for p, vecs in ready:
                self.write(p, vecs)
            return
        for (p, _), r in zip(ready, out, strict=True):
            self.written(p, r)

    def written(self, p: _Pending, out: DocumentWrite) -> None:
        res = p.result
        res.status = out.status
        res.chunks = out.chunks
        if out.quarantine is not None:  # the database's own check found what this one did not
            res.forbidden = out.quarantine["kind"]
            res.error = f"quarantined: {out.quarantine['reason']} ({out.quarantine['kind']})"
            self.summary.documents_quarantined += 1
            self.finish(res)
            return
        self.summary.documents_ingested += 1
        self.summary.chunks_written += res.chunks
        self.summary.pii_replaced += p.pii
        self.finish(res)

    def write(self, p: _Pending, vectors: list[list[float]]) -> None:
        """Write one document in its own transaction (``ingest_document``)."""
        document, chunks = self.rows(p, vectors)
        try:
            out = self.client.ingest_document(self.kb_id, document, chunks, self.embedder.model_name)
        except ConnectionLostError:
            raise  # not this document's fault: stop; the job is recovered by its lease
        except HipocampoError as exc:
            self.fail(p.item, p.result, exc)
            self.finish(p.result)
            return
        self.written(p, out)

    def close(self) -> IngestSummary:
        try:
            self.wait()
        finally:
            self._writer.shutdown(wait=True)
        sm = self.summary
        ok = sm.documents_ingested + sm.documents_unchanged + sm.documents_updated
        if self.job is not None:
            status = "succeeded" if sm.documents_failed == 0 else ("partial" if ok else "failed")
            counts = {
                "documents_ingested": sm.documents_ingested,
                "documents_unchanged": sm.documents_unchanged,
                "documents_updated": sm.documents_updated,
                "documents_failed": sm.documents_failed,
                "chunks_written": sm.chunks_written,
            }
            self.client.finish_job(self.job, status, counts, self.errors)
            # The KB's status says what it can serve: ready while it holds documents, error only
            # when this run failed and it holds none (issue 19 §1.4).
            self.client.set_kb_status(self.kb_id, "ready" if ok or self.stored else "error")
        if self.created and not ok and not sm.documents_quarantined and sm.documents_failed:
            self.client.delete_kb(self.kb_id)  # created here, and nothing went into it
            sm.kb_deleted = True
        self.summary.seconds = time.perf_counter() - self.started
        if self.summary.seconds:
            self.summary.chunks_per_second = self.summary.chunks_written / self.summary.seconds
        return self.summary


def ingest_documents(
    client: Hipocampo,
    kb_name: str,
    inputs: Sequence[DocumentInput],
    embedder: EmbeddingProvider,
    count_tokens: Callable[[str], int],
    *,
    failures: Sequence[DocumentResult] = (),
    unchanged: Sequence[DocumentResult] = (),
    on_document: ProgressHook | None = None,
    embed_batch: int = 64,
    create_kb: bool = True,
    on_scrub: ScrubProgress | None = None,
) -> IngestSummary:
    """Ingest already-loaded documents into knowledge base ``kb_name`` (created if missing, or,
    with ``create_kb=False``, NotFoundError when it does not exist).

    ``failures`` are documents that failed before this step (e.g. loader errors), counted in the
    summary and the job record; ``unchanged`` ones known unchanged before loading (a web page that
    answered 304 Not Modified), counted as unchanged. Chunks of several documents are embedded together, about
    ``embed_batch`` per model call, and written together in one transaction (a batch the database
    refuses is written again one document per transaction).
    Chunking rules come from the database config rows (``chunking.<source_type>``). The PII scrub
    runs in pieces (:mod:`hipocampo.ingest.scrub`), ``on_scrub(characters done, characters in
    all)`` after each round trip; a document over ``[ingest] max_document_mb`` (config.toml, 20)
    fails with 22023 and the others go on.

    Raises:
        PermissionDeniedError: the actor may not write this tenant's KB.
        ConnectionLostError: the database went away (the run stops; its job is recovered by
            the lease, docs/SECURITY.md §Crash recovery).
        HipocampoError: database errors other than per-document ones.
    """
    total = len(inputs) + len(failures) + len(unchanged)
    run = _Run(client, kb_name, embedder, on_document, total, create_kb, on_scrub)
    run.summary.documents_failed = len(failures)
    run.summary.documents_unchanged = len(unchanged)
    run.errors.extend({"source_uri": f.source_uri, "error": f.error} for f in failures)
    for f in [*failures, *unchanged]:
        run.finish(f)
    prepared = run.prepare(inputs)
    if not prepared and not failures:
        return run.close()
    try:
        client.set_kb_status(run.kb_id, "indexing")
        run.job = run.summary.job_id = client.start_job(run.kb_id, run.summary.documents_total)
        _chunk_and_flush(run, prepared, count_tokens, embed_batch)
        return run.close()
    finally:
        run._writer.shutdown(wait=True)  # also when the run stops on an error
        if run.job is not None:
            client.end_job_session(run.job)  # a run that stopped on an error: interrupted now


def context_header(title: str, chunk: Chunk) -> str:
    """A chunk's contextual header: the document's title and, below it, the heading path of the
    chunk's section (``Regulamento Interno › Capítulo III – Dos animais``), stored as
    ``metadata.title`` (indexed with the content) and embedded before the content; a section
    that is the title itself adds nothing."""
    section = str(chunk.metadata.get("section") or "")
    return f"{title} › {section}" if section and section != title else title


def _chunk_and_flush(
    run: _Run,
    prepared: list[tuple[DocumentInput, str, str, int]],
    count_tokens: Callable[[str], int],
    embed_batch: int,
) -> None:
    """Chunk each prepared document and flush about ``embed_batch`` chunks at a time."""
    queued = 0
    for item, text, digest, pii in prepared:
        rule = rule_for(text, run.rule(item.source_type), run.rule("regulation"))
        res = DocumentResult(source_uri=item.doc.source_uri, title=item.doc.title, status="failed", pii_replaced=pii)
        chunks = chunk_text(text, rule, count_tokens)
        if not chunks:

            def empty(item: DocumentInput = item, res: DocumentResult = res) -> None:
                run.fail(item, res, LoaderError("no text to index"))
                run.finish(res)

            run.later(empty)
            continue
        run.pending.append(_Pending(item, digest, pii, chunks, res, language=detect_language(text)))
        queued += len(chunks)
        if queued >= embed_batch:
            run.flush()
            queued = 0
    run.flush()


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
    create_kb: bool = True,
    on_total: Callable[[int], None] | None = None,
    on_scrub: ScrubProgress | None = None,
) -> IngestSummary:
    """Load files (directories walked) and ingest them; a file that fails to load is recorded
    as a failed document (its error without the path) and the others go on. ``on_total`` gets
    the number of documents once the files are loaded (a file may hold several), before any is
    ingested; ``on_scrub`` the PII scrub's progress in characters (done, all); ``on_document``
    then gets each one's result, failures included."""
    inputs: list[DocumentInput] = []
    failures: list[DocumentResult] = []
    for path in expand_paths(paths):
        try:
            for doc in load_path(path):
                inputs.append(DocumentInput(doc, source_type, trust_score))
        except LoaderError as exc:
            error = exc.message.removeprefix(f"{path}: ")
            failures.append(DocumentResult(source_uri=str(path), title=path.name, status="failed", error=error))
    if on_total is not None:
        on_total(len(inputs) + len(failures))
    return ingest_documents(
        client,
        kb_name,
        inputs,
        embedder,
        count_tokens,
        failures=failures,
        on_document=on_document,
        create_kb=create_kb,
        on_scrub=on_scrub,
    )
