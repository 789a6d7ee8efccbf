"""The PII scrub of whole documents in pieces (issue 44 §3): the same result as one call over the
whole text, progress inside a document, and a maximum document size with a clear error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hipocampo.embeddings import count_tokens
from hipocampo.ingest import DocumentInput, ingest_documents
from hipocampo.ingest.loaders import LoadedDocument
from hipocampo.ingest.scrub import scrub_texts, segments

PARAGRAPH = (
    "O condômino João (CPF 529.982.247-25, tel. (11) 98765-4321) escreveu para joao.silva@\n"
    "exemplo.com.br; cartão 4111 1111 1111 1111. Processo 0001234-56.2024.8.26.0100, RG 12.345.678-9."
)


def test_pieces_join_back_to_the_text() -> None:
    text = "\n\n".join(f"Parágrafo {i}: " + "palavra " * (i * 7 % 50) for i in range(200))
    pieces = segments(text, 300)
    assert "".join(pieces) == text and len(pieces) > 10
    assert all(p.endswith("\n\n") for p in pieces[:-1])
    assert all(len(p) <= 300 or "\n\n" not in p[:-2] for p in pieces)
    assert segments("sem quebra " * 100, 50) == ["sem quebra " * 100]  # one long paragraph stays whole


def test_scrubbing_in_pieces_is_scrubbing_the_whole(service_client: Any) -> None:
    texts = ["\n\n".join(PARAGRAPH for _ in range(40)), "curto, sem nada", PARAGRAPH]
    seen: list[tuple[int, int]] = []
    pieces = scrub_texts(service_client, texts, lambda done, total: seen.append((done, total)), size=400, per_call=900)
    whole = service_client.scrub_pii(texts)
    assert [(p.text, p.counts) for p in pieces] == [(w.text, w.counts) for w in whole]
    assert pieces[0].counts == {"CPF": 40, "TELEFONE": 40, "EMAIL": 40, "CARTAO": 40, "RG": 40}
    total = sum(len(t) for t in texts)
    assert len(seen) > 5 and seen[-1] == (total, total) and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_a_document_over_the_size_limit_fails_alone(
    service_client: Any, counting: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[ingest]\nmax_document_mb = 0.001\n", "utf-8")  # 1,000 bytes
    monkeypatch.setenv("HIPOCAMPO_CONFIG", str(config))
    docs = [
        DocumentInput(LoadedDocument("grande", "Texto longo. " * 100, "test://grande"), "other"),
        DocumentInput(LoadedDocument("pequeno", "Texto curto sobre a piscina.", "test://pequeno"), "other"),
    ]
    summary = ingest_documents(service_client, "limites", docs, counting, count_tokens)
    status = {d.source_uri: (d.status, d.error) for d in summary.documents}
    assert status["test://pequeno"] == ("inserted", None)
    assert status["test://grande"] == (
        "failed",
        "test://grande: the text is 0.0013 MB; the limit is 0.001 MB ([ingest] max_document_mb in config.toml)",
    )
    assert summary.documents_failed == 1 and summary.documents_ingested == 1


def test_faquad_quati_and_scifact_scrub_as_before(service_client: Any) -> None:
    """The encodings the scrubber reads (issue 44 §3, and the normalizer of issue 57 §5) add no
    false positive on the shared sets: FaQuAD's 249 paragraphs keep every number, Quati's 239
    passages lose only the one e-mail they hold, SciFact's 5,183 abstracts only their authors'
    11 e-mails and 2 fax numbers (14 replacements before the normalizer: one was "aged 80-89
    compared with those aged 50-59" read as a phone number)."""
    from collections import Counter

    from hipocampo.evaluation.datasets import load_beir

    found = {}
    for name in ("faquad", "quati", "scifact"):
        counts: Counter[str] = Counter()
        for result in scrub_texts(service_client, [t for _, t in load_beir(name).corpus.values()]):
            counts.update(result.counts)
        found[name] = dict(counts)
    assert found == {"faquad": {}, "quati": {"EMAIL": 1}, "scifact": {"EMAIL": 11, "TELEFONE": 2}}
