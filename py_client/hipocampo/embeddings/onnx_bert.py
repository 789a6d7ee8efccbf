"""Build an ONNX graph of a BERT encoder from its safetensors weights, without torch.

all-MiniLM-L6-v2 is a 6-layer BERT (hidden 384, 12 heads, FFN 1536, absolute positions, GELU
with erf, post-LayerNorm). The graph is written with ``onnx.helper`` straight from
``model.safetensors`` and ``config.json``, using ONNX Runtime's fused CPU kernels
(``com.microsoft`` ``Attention``, ``SkipLayerNormalization``, ``BiasGelu``), so no exporter and
no torch are needed. Inputs ``input_ids`` and ``attention_mask`` are ``int64 [batch, seq]``;
the output ``last_hidden_state`` is ``float32 [batch, seq, hidden]`` (pooling is the caller's:
mean over the attention mask, then L2, as sentence-transformers does). Token type ids are all
0 for single texts, so the type-0 embedding is folded into the position table.

``hipocampo.embeddings.local`` exports once and caches the file (see ``onnx_path``); the
vectors match sentence-transformers on torch to cosine >= 0.9999
(tests/test_embeddings_local.py, reference vectors in tests/data/minilm_reference.json).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["EXPORT_VERSION", "export_bert", "quantize"]

# Bumped whenever the graph written below changes, so a cached file from an older layout is
# rebuilt rather than reused (it is part of the cached file's name).
EXPORT_VERSION = 1

_MS = "com.microsoft"


class _Graph:
    """The nodes and initializers of the graph being written."""

    def __init__(self) -> None:
        self.inits: list[Any] = []
        self.nodes: list[Any] = []

    def init(self, name: str, array: Any) -> str:
        import numpy as np
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs))
        return output


def _embeddings(g: _Graph, w: dict[str, Any], eps: float) -> str:
    """Word + (position + token type 0) embeddings, then LayerNorm; returns the output's name."""
    import numpy as np

    e = "embeddings."
    word = g.init("word_embeddings", w[e + "word_embeddings.weight"])
    pos_table = w[e + "position_embeddings.weight"] + w[e + "token_type_embeddings.weight"][0]
    pos = g.init("position_embeddings", pos_table.astype(np.float32))
    zero = g.init("zero", np.array([0], dtype=np.int64))
    one = g.init("one", np.array([1], dtype=np.int64))
    two = g.init("two", np.array([2], dtype=np.int64))
    tok = g.node("Gather", [word, "input_ids"], "tok_emb")
    seq = g.node("Slice", [g.node("Shape", ["input_ids"], "ids_shape"), one, two], "seq_len")
    pos_rows = g.node("Slice", [pos, zero, seq, zero], "pos_rows")  # positions 0 .. seq-1
    summed = g.node("Add", [tok, g.node("Unsqueeze", [pos_rows, zero], "pos_emb")], "emb_sum")
    gamma = g.init("emb_ln_gamma", w[e + "LayerNorm.weight"])
    beta = g.init("emb_ln_beta", w[e + "LayerNorm.bias"])
    return g.node("LayerNormalization", [summed, gamma, beta], "emb_out", axis=-1, epsilon=eps)


def _layer(g: _Graph, w: dict[str, Any], i: int, x: str, mask: str, heads: int, eps: float, out: str) -> str:
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


def export_bert(model_dir: Path, target: Path) -> Path:
    """Write ``target`` (an ``.onnx`` file) from the BERT in ``model_dir``.

    Args:
        model_dir: a folder with ``config.json`` (``model_type`` bert, absolute positions,
            ``hidden_act`` gelu) and ``model.safetensors``.
        target: where to write the graph; written to a temporary name first and renamed, so
            a concurrent reader never sees half a file.

    Returns:
        ``target``.

    Raises:
        ValueError: the config is not a BERT this builder supports.
        ImportError: the ``onnx`` or ``safetensors`` package is missing.
    """
    import onnx
    from onnx import TensorProto, helper
    from safetensors.numpy import load_file

    cfg = json.loads((model_dir / "config.json").read_text())
    if (
        cfg.get("model_type") != "bert"
        or cfg.get("hidden_act") != "gelu"
        or cfg.get("position_embedding_type", "absolute") != "absolute"
    ):
        raise ValueError(f"not a supported BERT config: {model_dir / 'config.json'}")
    layers = int(cfg["num_hidden_layers"])
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    w: dict[str, Any] = load_file(str(model_dir / "model.safetensors"))

    g = _Graph()
    x = _embeddings(g, w, eps)
    mask = g.node("Cast", ["attention_mask"], "mask_i32", to=TensorProto.INT32)
    for i in range(layers):
        out = f"l{i}_ln2" if i < layers - 1 else "last_hidden_state"
        x = _layer(g, w, i, x, mask, int(cfg["num_attention_heads"]), eps, out)

    ids_type = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"]) for n in ("input_ids", "attention_mask")
    ]
    hidden = helper.make_tensor_value_info(
        "last_hidden_state", TensorProto.FLOAT, ["batch", "seq", int(cfg["hidden_size"])]
    )
    graph = helper.make_graph(g.nodes, "bert_encoder", ids_type, [hidden], g.inits)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(_MS, 1)],
        producer_name="hipocampo",
        producer_version=str(EXPORT_VERSION),
    )
    model.ir_version = 8
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    onnx.save_model(model, str(tmp))
    tmp.replace(target)
    return target


def quantize(source: Path, target: Path) -> Path:
    """Write the int8 variant of ``source`` to ``target`` (kept if it exists) and return it.

    ONNX Runtime's dynamic quantization of the ``MatMul`` weights only, per output channel
    (signed int8; activations quantized per batch at run time). Attention and the embedding
    table stay fp32: quantizing them too, or the weights per tensor, moved the vectors to cosine
    0.90-0.97 of fp32, where per-channel MatMuls alone stay at ~0.99.

    Raises:
        ImportError: ``onnx`` or ONNX Runtime's quantization tools are missing.
    """
    if target.exists():
        return target
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    quantize_dynamic(
        str(source),
        str(tmp),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul"],
        # The fused com.microsoft nodes have no ONNX shape inference: their outputs are float.
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    tmp.replace(target)
    return target
