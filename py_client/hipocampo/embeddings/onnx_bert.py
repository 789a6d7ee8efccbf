"""The ONNX graph of a BERT encoder, from its safetensors weights, without torch.

all-MiniLM-L6-v2 is a 6-layer BERT (hidden 384, 12 heads, FFN 1536, absolute positions, GELU
with erf, post-LayerNorm). Its graph uses ONNX Runtime's fused CPU kernels (``com.microsoft``
``Attention``, ``SkipLayerNormalization``, ``BiasGelu``), so no exporter and no torch are needed.
Inputs ``input_ids`` and ``attention_mask`` are ``int64 [batch, seq]``; the output
``last_hidden_state`` is ``float32 [batch, seq, hidden]`` (pooling is the caller's: mean over
the attention mask, then L2, as sentence-transformers does). Token type ids are all 0 for
single texts, so the type-0 embedding is folded into the position table. A graph built with
``embeds_input`` reads ``inputs_embeds`` (``float32 [batch, seq, hidden]``, the word embeddings
already looked up) instead of ``input_ids``: multilingual-e5-small's 250k-row table stays 4-bit
outside the graph (``hipocampo.embeddings.e5_q4``).

Two halves (docs/design.md §Embeddings):

- ``build_bert`` reads ``config.json`` and ``model.safetensors`` and returns the nodes and the
  initializer arrays (numpy only);
- the graph's structure, without its weights, ships with hipocampo for the BERT shapes it knows
  (``graphs/<key>.onnx``, ~10 kB, every initializer of 128 bytes or more declared external):
  ``load_session`` hands ONNX Runtime that file and the arrays
  (``SessionOptions.add_external_initializers``). Nothing is written to disk, and the ``onnx``
  package is not needed at run time.

``export_bert`` (needs ``onnx``, the ``int8`` extra) writes a whole graph file: the int8
variant is quantized from it, and ``write_shipped_graph`` regenerates the shipped structure
(tests/test_embeddings_local.py checks that the shipped file equals it). The vectors match
sentence-transformers on torch to cosine >= 0.9999 (tests/test_embeddings_local.py, reference
vectors in tests/data/minilm_reference.json).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = [
    "EXPORT_VERSION",
    "QUANT_VERSION",
    "BertGraph",
    "bert_graph",
    "bert_key",
    "build_bert",
    "export_bert",
    "graph_session",
    "load_session",
    "quantize",
    "shipped_graph",
    "write_shipped_graph",
]

# Bumped whenever the graph built below changes, so a cached file from an older layout is
# rebuilt rather than reused (it is part of the cached and shipped files' names).
EXPORT_VERSION = 1
# Bumped whenever ``quantize`` changes which weights it quantizes (part of the int8 file's name and
# of the int8 model version, so vectors of two layouts are never mixed). 2: the FFN output stays
# fp32 (docs/BENCHMARKS.md §Embedder).
QUANT_VERSION = 2

_MS = "com.microsoft"
# Initializers at least this big are left out of the shipped graph (ONNX Runtime's rule for
# external data: smaller ones, shape constants, stay inline for its shape inference).
_EXTERNAL_MIN_BYTES = 128
# onnx.TensorProto's element types used here.
_FLOAT, _INT32, _INT64 = 1, 6, 7


@dataclass
class BertGraph:
    """A BERT encoder as nodes and initializer arrays (numpy), ready to be written or run.

    ``key`` names its structure (layers, hidden size, heads, LayerNorm epsilon, export version):
    two models with the same key differ only in their weights.
    """

    key: str
    hidden: int
    embeds_input: bool = False
    inits: dict[str, Any] = field(default_factory=dict)
    nodes: list[tuple[str, list[str], str, str, dict[str, Any]]] = field(default_factory=list)

    def init(self, name: str, array: Any) -> str:
        import numpy as np

        self.inits[name] = np.ascontiguousarray(array)
        return name

    def node(self, op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        self.nodes.append((op, inputs, output, domain, attrs))
        return output

    def external(self) -> dict[str, Any]:
        """The initializers the shipped graph leaves out, by name."""
        return {k: v for k, v in self.inits.items() if v.nbytes >= _EXTERNAL_MIN_BYTES}


def _embeddings(g: BertGraph, w: dict[str, Any], eps: float) -> str:
    """Word + (position + token type 0) embeddings, then LayerNorm; returns the output's name.
    With ``g.embeds_input`` the word embeddings are the input ``inputs_embeds``."""
    import numpy as np

    e = "embeddings."
    word = None if g.embeds_input else g.init("word_embeddings", w[e + "word_embeddings.weight"])
    pos_table = w[e + "position_embeddings.weight"] + w[e + "token_type_embeddings.weight"][0]
    pos = g.init("position_embeddings", pos_table.astype(np.float32))
    zero = g.init("zero", np.array([0], dtype=np.int64))
    one = g.init("one", np.array([1], dtype=np.int64))
    two = g.init("two", np.array([2], dtype=np.int64))
    tok = "inputs_embeds" if word is None else g.node("Gather", [word, "input_ids"], "tok_emb")
    shape_of = "attention_mask" if g.embeds_input else "input_ids"
    seq = g.node("Slice", [g.node("Shape", [shape_of], "ids_shape"), one, two], "seq_len")
    pos_rows = g.node("Slice", [pos, zero, seq, zero], "pos_rows")  # positions 0 .. seq-1
    summed = g.node("Add", [tok, g.node("Unsqueeze", [pos_rows, zero], "pos_emb")], "emb_sum")
    gamma = g.init("emb_ln_gamma", w[e + "LayerNorm.weight"])
    beta = g.init("emb_ln_beta", w[e + "LayerNorm.bias"])
    return g.node("LayerNormalization", [summed, gamma, beta], "emb_out", axis=-1, epsilon=eps)


def _layer(g: BertGraph, w: dict[str, Any], i: int, x: str, mask: str, heads: int, eps: float, out: str) -> str:
    """Encoder layer ``i``: fused self-attention, residual + LayerNorm, GELU FFN, residual +
    LayerNorm (post-LN BERT); returns ``out``."""
    import numpy as np

    p = f"encoder.layer.{i}."
    a = p + "attention."
    # [hidden, 3*hidden]: x @ W^T per projection (torch Linear stores W as [out, in]), side by side.
    qkv_w = np.concatenate([w[a + f"self.{k}.weight"].T for k in ("query", "key", "value")], axis=1)
    qkv_b = np.concatenate([w[a + f"self.{k}.bias"] for k in ("query", "key", "value")])
    qkv = [g.init(f"l{i}_qkv_w", qkv_w), g.init(f"l{i}_qkv_b", qkv_b)]
    att = g.node("Attention", [x, *qkv, mask], f"l{i}_att", domain=_MS, num_heads=heads)
    proj = g.node("MatMul", [att, g.init(f"l{i}_att_out_w", w[a + "output.dense.weight"].T)], f"l{i}_att_proj")
    ln1 = [
        g.init(f"l{i}_ln1_g", w[a + "output.LayerNorm.weight"]),
        g.init(f"l{i}_ln1_b", w[a + "output.LayerNorm.bias"]),
        g.init(f"l{i}_att_out_b", w[a + "output.dense.bias"]),
    ]
    x = g.node("SkipLayerNormalization", [proj, x, *ln1], f"l{i}_ln1", domain=_MS, epsilon=eps)
    up = g.node("MatMul", [x, g.init(f"l{i}_ffn_in_w", w[p + "intermediate.dense.weight"].T)], f"l{i}_ffn_in")
    act = g.node("BiasGelu", [up, g.init(f"l{i}_ffn_in_b", w[p + "intermediate.dense.bias"])], f"l{i}_gelu", _MS)
    down = g.node("MatMul", [act, g.init(f"l{i}_ffn_out_w", w[p + "output.dense.weight"].T)], f"l{i}_ffn_out")
    ln2 = [
        g.init(f"l{i}_ln2_g", w[p + "output.LayerNorm.weight"]),
        g.init(f"l{i}_ln2_b", w[p + "output.LayerNorm.bias"]),
        g.init(f"l{i}_ffn_out_b", w[p + "output.dense.bias"]),
    ]
    return g.node("SkipLayerNormalization", [down, x, *ln2], out, domain=_MS, epsilon=eps)


def _config(model_dir: Path) -> dict[str, Any]:
    """``config.json`` of a BERT this builder supports.

    Raises:
        ValueError: it is not one (model type, activation, position embeddings).
    """
    cfg: dict[str, Any] = json.loads((model_dir / "config.json").read_text())
    if (
        cfg.get("model_type") != "bert"
        or cfg.get("hidden_act") != "gelu"
        or cfg.get("position_embedding_type", "absolute") != "absolute"
    ):
        raise ValueError(f"not a supported BERT config: {model_dir / 'config.json'}")
    return cfg


def _key(cfg: dict[str, Any], *, embeds_input: bool = False) -> str:
    layers, heads, hidden = int(cfg["num_hidden_layers"]), int(cfg["num_attention_heads"]), int(cfg["hidden_size"])
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    return f"bert-l{layers}-h{hidden}-a{heads}-eps{eps:g}{'-embeds' if embeds_input else ''}-v{EXPORT_VERSION}"


def bert_key(model_dir: Path) -> str:
    """The structure key (``BertGraph.key``) of the BERT in ``model_dir``, from its config alone.

    Raises:
        ValueError: as ``build_bert``.
    """
    return _key(_config(model_dir))


def build_bert(model_dir: Path) -> BertGraph:
    """The graph of the BERT in ``model_dir``: its nodes and its initializers as numpy arrays.

    Args:
        model_dir: a folder with ``config.json`` (``model_type`` bert, absolute positions,
            ``hidden_act`` gelu) and ``model.safetensors``.

    Raises:
        ValueError: the config is not a BERT this builder supports.
        ImportError: the ``safetensors`` package is missing.
    """
    from safetensors.numpy import load_file

    cfg = _config(model_dir)
    return bert_graph(cfg, load_file(str(model_dir / "model.safetensors")))


def bert_graph(cfg: dict[str, Any], w: dict[str, Any], *, embeds_input: bool = False) -> BertGraph:
    """The graph of a BERT from its config (``num_hidden_layers``, ``num_attention_heads``,
    ``hidden_size``, ``layer_norm_eps``) and its weights as float32 numpy arrays under
    Hugging Face's names (``encoder.layer.<i>.attention.self.query.weight``, …; without
    ``embeddings.word_embeddings.weight`` when ``embeds_input``)."""
    layers, heads = int(cfg["num_hidden_layers"]), int(cfg["num_attention_heads"])
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    g = BertGraph(key=_key(cfg, embeds_input=embeds_input), hidden=int(cfg["hidden_size"]), embeds_input=embeds_input)
    x = _embeddings(g, w, eps)
    mask = g.node("Cast", ["attention_mask"], "mask_i32", to=_INT32)
    for i in range(layers):
        out = f"l{i}_ln2" if i < layers - 1 else "last_hidden_state"
        x = _layer(g, w, i, x, mask, heads, eps, out)
    return g


def _model(g: BertGraph, *, external: bool) -> Any:
    """``g`` as an ``onnx.ModelProto``; ``external``: the big initializers declared external
    (name, type and shape only) instead of carrying their data."""
    from onnx import TensorProto, helper, numpy_helper

    inits = []
    for name, array in g.inits.items():
        if external and array.nbytes >= _EXTERNAL_MIN_BYTES:
            proto = TensorProto(name=name, data_type=helper.np_dtype_to_tensor_dtype(array.dtype), dims=array.shape)
            proto.data_location = TensorProto.EXTERNAL
            for k, v in (("location", "weights"), ("offset", "0"), ("length", str(array.nbytes))):
                entry = proto.external_data.add()
                entry.key, entry.value = k, v
            inits.append(proto)
        else:
            inits.append(numpy_helper.from_array(array, name))
    nodes = [helper.make_node(op, ins, [out], name=out, domain=dom, **attrs) for op, ins, out, dom, attrs in g.nodes]
    ids_type = [helper.make_tensor_value_info(n, _INT64, ["batch", "seq"]) for n in ("input_ids", "attention_mask")]
    if g.embeds_input:
        ids_type[0] = helper.make_tensor_value_info("inputs_embeds", _FLOAT, ["batch", "seq", g.hidden])
    hidden = helper.make_tensor_value_info("last_hidden_state", _FLOAT, ["batch", "seq", g.hidden])
    graph = helper.make_graph(nodes, "bert_encoder", ids_type, [hidden], inits)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(_MS, 1)],
        producer_name="hipocampo",
        producer_version=str(EXPORT_VERSION),
    )
    model.ir_version = 8
    return model


def _write(data: bytes, target: Path) -> Path:
    """Write ``data`` to a temporary name beside ``target``, then rename it (a concurrent
    reader never sees half a file)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
    return target


def export_bert(model_dir: Path, target: Path) -> Path:
    """Write ``target``, a whole ``.onnx`` file (structure and weights), from ``model_dir``.

    Returns:
        ``target``.

    Raises:
        ValueError: the config is not a BERT this builder supports.
        ImportError: the ``onnx`` package (the ``int8`` extra) or ``safetensors`` is missing.
    """
    return _write(_model(build_bert(model_dir), external=False).SerializeToString(), target)


def _graphs_dir() -> Path:
    return Path(str(resources.files("hipocampo.embeddings") / "graphs"))


def shipped_graph(key: str) -> Path | None:
    """The shipped weight-free graph for the structure ``key`` (``BertGraph.key``), or None."""
    path = _graphs_dir() / f"{key}.onnx"
    return path if path.is_file() else None


def write_shipped_graph(model: Path | BertGraph, folder: Path | None = None) -> Path:
    """Regenerate the weight-free graph of a structure into ``folder`` (default: the package's
    ``graphs/``); returns its path. ``model``: a BERT's folder (``build_bert``) or a graph.
    Needs ``onnx``."""
    g = model if isinstance(model, BertGraph) else build_bert(model)
    data = _model(g, external=True).SerializeToString()
    return _write(data, (folder or _graphs_dir()) / f"{g.key}.onnx")


def load_session(model_dir: Path, options: Any, fallback: Callable[[], Path]) -> Any:
    """An ``onnxruntime.InferenceSession`` of the BERT in ``model_dir``.

    The shipped structure with the arrays of ``build_bert`` when hipocampo ships one for this
    model's shape (no file written, no ``onnx`` needed); otherwise the whole graph exported once
    to the path ``fallback()`` gives (cached there; needs ``onnx``).

    Raises:
        ValueError, ImportError: as ``build_bert`` / ``export_bert``;
        onnxruntime's errors: the session cannot be created.
    """
    import onnxruntime as ort

    shipped = shipped_graph(bert_key(model_dir))
    if shipped is None:
        path = fallback()
        if not path.exists():
            export_bert(model_dir, path)
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return graph_session(build_bert(model_dir), options)


def graph_session(g: BertGraph, options: Any) -> Any:
    """An ``onnxruntime.InferenceSession`` of ``g``: its shipped structure with its arrays.

    Raises:
        FileNotFoundError: hipocampo ships no structure for ``g.key``.
        onnxruntime's errors: the session cannot be created.
    """
    import onnxruntime as ort

    shipped = shipped_graph(g.key)
    if shipped is None:
        raise FileNotFoundError(f"no shipped graph for {g.key}")
    external = g.external()
    values = [ort.OrtValue.ortvalue_from_numpy(a) for a in external.values()]
    # ONNX Runtime copies the values into the graph as the session loads: they may go after.
    options.add_external_initializers(list(external), values)
    return ort.InferenceSession(shipped.read_bytes(), options, providers=["CPUExecutionProvider"])


def quantize(model_dir: Path, target: Path) -> Path:
    """Write the int8 variant of the BERT in ``model_dir`` to ``target`` (kept if it exists)
    and return it; the whole fp32 graph it is quantized from is a temporary file.

    ONNX Runtime's dynamic quantization (signed int8 weights per output channel, activations
    quantized per batch at run time) of each layer's attention output projection and FFN input:
    ~60 % of the multiply-adds. The FFN output stays fp32: its input is the GELU's heavy-tailed
    output, whose per-tensor activation scale cost most of the accuracy (all three MatMuls: 1.5x
    fp32 but dense nDCG@10 -0.019 on Quati; these two: 1.24x and no set below fp32, see
    docs/BENCHMARKS.md §Embedder). Attention's fused Q/K/V and the embedding table stay fp32 too
    (quantizing them, or the weights per tensor, moved the vectors to cosine 0.90-0.97 of fp32).

    Raises:
        ImportError: ``onnx`` (the ``int8`` extra) or ONNX Runtime's quantization tools are
            missing.
    """
    if target.exists():
        return target
    import tempfile

    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        g = build_bert(model_dir)
        source = _write(_model(g, external=False).SerializeToString(), Path(scratch) / "fp32.onnx")
        ffn_out = [out for _op, _inputs, out, _domain, _attrs in g.nodes if out.endswith("_ffn_out")]
        tmp = Path(scratch) / "int8.onnx"
        quantize_dynamic(
            str(source),
            str(tmp),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=ffn_out,
            # The fused com.microsoft nodes have no ONNX shape inference: their outputs are float.
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        tmp.replace(target)
    return target
