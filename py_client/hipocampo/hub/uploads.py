"""Uploads of the hub: files saved to a private temporary directory, ingested on a background
thread as the uploading user (the same ``ingest_documents`` as ``hipocampo ingest``: PII scrub,
chunking, embedding, one transaction per document), with live progress per file that the page
polls (``GET /hub/uploads/{id}/progress``).

Progress lives in this process's memory (one entry per upload, readable only by the user who
started it) and is kept for an hour after the upload ends; the durable record is the ingestion
job row the run writes.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..client import Hipocampo
from ..embeddings import EmbeddingProvider, count_tokens
from ..errors import HipocampoError, LoaderError
from ..ingest import DocumentInput, ingest_documents, load_path
from ..models import DocumentResult

__all__ = ["FileProgress", "Upload", "UploadRegistry", "safe_name"]

KEEP_S = 3600  # seconds a finished upload's progress stays readable


def safe_name(name: str) -> str:
    """A client's file name reduced to its last path part, without control characters (at most
    200 characters, suffix kept); 'arquivo' when nothing is left."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(ch for ch in base if ch.isprintable()).strip().lstrip(".")
    if len(base) > 200:
        stem, dot, suffix = base.rpartition(".")
        base = (stem[:190] + dot + suffix[:9]) if dot else base[:200]
    return base or "arquivo"


@dataclass
class FileProgress:
    """One uploaded file: state queued | indexing | done | failed | refused | quarantined, its
    documents, chunks written, personal data replaced (count), the error in words and, refused or
    quarantined, the forbidden kind (issue 45 §4)."""

    name: str
    state: str = "queued"
    documents: int = 0
    documents_done: int = 0
    chunks: int = 0
    pii_replaced: int = 0
    error: str | None = None
    forbidden: str | None = None


@dataclass
class Upload:
    """One upload: its files, who started it, and its totals (chunks/s over the elapsed time);
    ``cross_check``: when its documents cannot back an answer alone under the knowledge base's
    rag config (``answers.cross_check.cross_check_gap`` as a dict), what the page tells the admin."""

    id: str
    kb_id: str
    user: str
    files: list[FileProgress]
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    error: str | None = None
    cross_check: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        """The progress the page shows: files (and how many failed or were refused), chunks,
        chunks/s, elapsed and remaining (s)."""
        end = self.finished or time.monotonic()
        elapsed = max(end - self.started, 1e-6)
        chunks = sum(f.chunks for f in self.files)
        total = sum(f.documents for f in self.files)
        done = sum(f.documents_done for f in self.files)
        eta = None
        if self.finished is None and done and total > done:
            eta = round(elapsed / done * (total - done), 1)
        return {
            "id": self.id,
            "kb_id": self.kb_id,
            "finished": self.finished is not None,
            "error": self.error,
            "elapsed_s": round(elapsed, 1),
            "chunks": chunks,
            "chunks_per_s": round(chunks / elapsed, 1),
            "documents": total,
            "documents_done": done,
            "eta_s": eta,
            "files": [vars(f) for f in self.files],
            "files_failed": sum(f.state in ("failed", "refused") for f in self.files),
            "cross_check": self.cross_check,
        }


class UploadRegistry:
    """The uploads of this process (thread-safe); ``start`` runs one on a background thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._uploads: dict[str, Upload] = {}

    def get(self, upload_id: str, user: str) -> Upload | None:
        """The upload, if ``user`` started it (else None, as for an unknown id)."""
        with self._lock:
            up = self._uploads.get(upload_id)
            return up if up is not None and up.user == user else None

    def start(
        self,
        client: Hipocampo,
        kb_id: str,
        kb_name: str,
        user: str,
        files: list[tuple[str, bytes]],
        embedder: Callable[[], EmbeddingProvider],
        source_type: str,
        trust_score: float | None,
        cross_check: dict[str, Any] | None = None,
    ) -> Upload:
        """Save ``files`` (name, bytes) and ingest them into ``kb_name`` as ``client``'s actor;
        ``cross_check``: what the page says about the documents' cross-check (``Upload``)."""
        folder = Path(tempfile.mkdtemp(prefix="hipocampo-upload-"))
        saved: list[tuple[FileProgress, Path]] = []
        for i, (name, data) in enumerate(files):
            clean = safe_name(name)
            path = folder / str(i) / clean
            path.parent.mkdir()
            path.write_bytes(data)
            saved.append((FileProgress(clean), path))
        up = Upload(str(uuid.uuid4()), kb_id, user, [p for p, _ in saved], cross_check=cross_check)
        with self._lock:
            self._forget_old()
            self._uploads[up.id] = up
        run = _Run(client, kb_name, up, saved, embedder, source_type, trust_score)
        threading.Thread(target=run.run, args=(folder,), name=f"hub-upload-{up.id[:8]}", daemon=True).start()
        return up

    def _forget_old(self) -> None:
        now = time.monotonic()
        for key in [k for k, u in self._uploads.items() if u.finished and now - u.finished > KEEP_S]:
            del self._uploads[key]


@dataclass
class _Run:
    client: Hipocampo
    kb_name: str
    upload: Upload
    saved: list[tuple[FileProgress, Path]]
    embedder: Callable[[], EmbeddingProvider]
    source_type: str
    trust_score: float | None

    def run(self, folder: Path) -> None:
        try:
            inputs, failures, owner = self._load()
            for f in self.upload.files:
                if f.state == "queued":
                    f.state = "indexing"

            kept_out: dict[str, str] = {}

            def hook(res: DocumentResult) -> None:
                f = owner[res.source_uri]
                f.documents_done += 1
                f.chunks += res.chunks
                f.pii_replaced += res.pii_replaced
                if res.status == "failed":
                    f.error = f.error or res.error
                if res.forbidden is not None:  # refused or quarantined (issue 45 §4)
                    f.forbidden, f.error = res.forbidden, f.error or res.error
                    kept_out[f.name] = res.status
                if f.documents_done >= f.documents:
                    f.state = "failed" if f.error and not f.chunks else "done"
                    if f.name in kept_out and not f.chunks:
                        f.state = kept_out[f.name]

            ingest_documents(
                self.client,
                self.kb_name,
                inputs,
                self.embedder(),
                count_tokens,
                failures=failures,
                on_document=hook,
                create_kb=False,
            )
        except (HipocampoError, OSError) as exc:
            self.upload.error = getattr(exc, "message", None) or str(exc)
            for f in self.upload.files:
                if f.state != "done":
                    f.state, f.error = "failed", f.error or self.upload.error
        finally:
            self.upload.finished = time.monotonic()
            shutil.rmtree(folder, ignore_errors=True)

    def _load(self) -> tuple[list[DocumentInput], list[DocumentResult], dict[str, FileProgress]]:
        """Each file's documents, with the temporary path replaced by ``upload:<file name>`` in
        their source_uri; a file that fails to load is one failed document."""
        inputs: list[DocumentInput] = []
        failures: list[DocumentResult] = []
        owner: dict[str, FileProgress] = {}
        for progress, path in self.saved:
            uri = f"upload:{progress.name}"
            try:
                docs = load_path(path)
            except LoaderError as exc:
                progress.documents = 1
                owner[uri] = progress
                error = exc.message.replace(str(path), progress.name)
                failures.append(DocumentResult(source_uri=uri, title=progress.name, status="failed", error=error))
                continue
            for doc in docs:
                suffix = doc.source_uri.partition("#")[2]
                doc.source_uri = uri + (f"#{suffix}" if suffix else "")
                owner[doc.source_uri] = progress
                inputs.append(DocumentInput(doc, self.source_type, self.trust_score))
            progress.documents = len(docs)
        return inputs, failures, owner
