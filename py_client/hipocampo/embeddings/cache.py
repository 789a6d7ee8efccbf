"""An on-disk cache of document embeddings (SQLite), for benchmarks and repeated demos.

Keyed by (model_version, sha256(text)); vectors stored as float32. Never used for queries in
production paths: it exists so evaluation runs do not re-embed the same corpus.
"""

from __future__ import annotations

import hashlib
import sqlite3
import struct
import threading
from collections.abc import Sequence
from pathlib import Path

from .base import EmbeddingProvider, TokenVectors, token_embedder

__all__ = ["CachingEmbedder"]


class CachingEmbedder:
    """Wraps a provider; ``embed_documents`` reads/writes ``path`` (SQLite), ``embed_query`` passes through.

    Attributes mirror the wrapped provider (model_name, provider, dims, model_version);
    ``hits`` / ``misses`` count texts served from the cache / embedded.
    """

    def __init__(self, inner: EmbeddingProvider, path: Path) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.provider = inner.provider
        self.dims = inner.dims
        self.model_version = inner.model_version
        self.tokens_supported = token_embedder(inner) is not None
        self.hits = 0
        self.misses = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        # Processes share the file (parallel test phases, benchmark steps): wait for a writer's lock.
        self._db = sqlite3.connect(str(path), timeout=60, check_same_thread=False)
        self._db.execute("create table if not exists emb (k text primary key, v blob)")
        self._lock = threading.Lock()

    def embed_tokens(self, texts: Sequence[str], contexts: Sequence[Sequence[str]] | None = None) -> list[TokenVectors]:
        """The wrapped provider's token vectors (not cached). Raises TypeError when it has none."""
        inner = token_embedder(self.inner)
        if inner is None:
            raise TypeError(f"{self.model_name} gives no token vectors")
        return inner.embed_tokens(texts, contexts)

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.model_version}\0{text}".encode()).hexdigest()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """As the wrapped provider; cached texts are not embedded again."""
        keys = [self._key(t) for t in texts]
        found: dict[str, list[float]] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                rows = self._db.execute(
                    f"select k, v from emb where k in ({','.join('?' * len(part))})", part
                ).fetchall()
                found.update({k: list(struct.unpack(f"<{len(v) // 4}f", v)) for k, v in rows})
        todo = [i for i, k in enumerate(keys) if k not in found]
        self.hits += len(texts) - len(todo)
        self.misses += len(todo)
        if todo:
            vecs = self.inner.embed_documents([texts[i] for i in todo])
            with self._lock, self._db:
                for i, v in zip(todo, vecs, strict=True):
                    found[keys[i]] = v
                    self._db.execute(
                        "insert or replace into emb values (?, ?)", (keys[i], struct.pack(f"<{len(v)}f", *v))
                    )
        return [found[k] for k in keys]

    def embed_query(self, text: str) -> list[float]:
        """Not cached: as the wrapped provider."""
        return self.inner.embed_query(text)
