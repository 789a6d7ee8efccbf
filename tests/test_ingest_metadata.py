"""What re-ingesting decides (issue 19 §1.1, §1.2, §1.4): trust defaults per source type, a
metadata-only change applied without re-embedding, a model switch that never leaves search
empty, an answer from one authoritative document, and a KB status that says what it holds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hipocampo import Hipocampo, NotFoundError, Orchestrator
from hipocampo.embeddings import count_tokens
from hipocampo.ingest import ingest_paths

from .conftest import MODEL, CountingEmbedder, model_calibration

REGIMENTO = (
    "Art. 12º O prazo de recurso contra multa aplicada pelo síndico é de 15 dias corridos, "
    "contados da notificação, dirigido ao conselho consultivo."
)
SWITCHED = "other-minilm-384"


def trust_of(client: Hipocampo, kb: str) -> dict[str, tuple[str, float]]:
    return {
        Path(d.source_uri).name: (d.source_type, round(d.trust_score, 3))
        for d in client.list_documents(client.kb_id(kb))
    }


def chunk_ids(client: Hipocampo, kb: str) -> list[int]:
    with client.transaction() as cur:
        cur.execute("select id from hipocampo_private.chunks where kb_id = %s order by id", (client.kb_id(kb),))
        return [int(r["id"]) for r in cur.fetchall()]


def folder(tmp_path: Path) -> Path:
    (tmp_path / "regimento.txt").write_text(REGIMENTO, encoding="utf-8")
    return tmp_path


def test_trust_defaults_come_from_the_source_type(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    """Before: every document without --trust got 0.5, so one regulation could never answer alone."""
    ingest_paths(service_client, "regras", [folder(tmp_path)], counting, count_tokens, source_type="regulation")
    other = tmp_path / "outros"
    other.mkdir()
    (other / "nota.txt").write_text("Nota da portaria: a garagem foi lavada ontem.", encoding="utf-8")
    ingest_paths(service_client, "notas", [other], counting, count_tokens)
    assert trust_of(service_client, "regras") == {"regimento.txt": ("regulation", 0.9)}
    assert trust_of(service_client, "notas") == {"nota.txt": ("other", 0.5)}


def test_a_metadata_change_is_applied_without_reembedding(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    """Before: re-ingesting with --trust 0.9 said "unchanged" and changed nothing."""
    d = folder(tmp_path)
    ingest_paths(service_client, "regras", [d], counting, count_tokens, source_type="decision", trust_score=0.5)
    chunks = chunk_ids(service_client, "regras")
    counting.calls = 0
    s = ingest_paths(service_client, "regras", [d], counting, count_tokens, source_type="decision", trust_score=0.95)
    assert [r.status for r in s.documents] == ["metadata_updated"] and s.documents_updated == 1
    assert counting.calls == 0 and s.job_id is None
    assert trust_of(service_client, "regras") == {"regimento.txt": ("decision", 0.95)}
    # No --trust: the stored trust stands.
    s = ingest_paths(service_client, "regras", [d], counting, count_tokens, source_type="decision")
    assert [r.status for r in s.documents] == ["unchanged"] and counting.calls == 0
    assert trust_of(service_client, "regras") == {"regimento.txt": ("decision", 0.95)}
    # Another source type with the same chunking rule: metadata only, the new type's default trust.
    s = ingest_paths(service_client, "regras", [d], counting, count_tokens, source_type="penalty")
    assert [r.status for r in s.documents] == ["metadata_updated"] and counting.calls == 0
    assert trust_of(service_client, "regras") == {"regimento.txt": ("penalty", 0.8)}
    assert chunk_ids(service_client, "regras") == chunks
    # A source type that chunks differently re-chunks and re-embeds.
    s = ingest_paths(service_client, "regras", [d], counting, count_tokens, source_type="regulation")
    assert [r.status for r in s.documents] == ["replaced"] and counting.calls == 1
    assert trust_of(service_client, "regras") == {"regimento.txt": ("regulation", 0.8)}


def test_set_document_metadata_validates(service_client: Hipocampo, tmp_path: Path, counting: CountingEmbedder) -> None:
    ingest_paths(service_client, "regras", [folder(tmp_path)], counting, count_tokens, source_type="regulation")
    doc = service_client.list_documents(service_client.kb_id("regras"))[0].id
    out = service_client.set_document_metadata(doc, {"trust_score": 0.7, "version": "2024"})
    assert out.updated == ["trust_score", "version"]
    for patch, match in [
        ({"trust_score": 2}, r"trust_score must lie in \[0, 1\] \(got 2\)"),
        ({"title": "x"}, r"unknown document field title"),
        ({"trust_score": None}, r"trust_score must not be null"),
        ({"expires_at": "amanhã"}, r"invalid document field"),
    ]:
        with pytest.raises(Exception, match=match):
            service_client.set_document_metadata(doc, patch)


class Switched(CountingEmbedder):
    """The same vectors under another registered model's name: a model switch without a second
    model's weights (what search sees depends only on which model's chunks it reads)."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.model_name = SWITCHED


@pytest.fixture
def switch_back(database_url: str) -> Iterator[None]:
    """The registry is the session database's: the default model is active again afterwards."""
    yield
    with Hipocampo(database_url) as root:
        root.rpc("activate_embedding_model", {"name": MODEL}, "none")


def test_search_is_never_empty_during_a_model_switch(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder, switch_back: None
) -> None:
    """Before: with a newly registered model, re-ingesting said "unchanged" and wrote nothing, so
    after activation the KB's search was empty."""
    d = folder(tmp_path)
    ingest_paths(service_client, "regras", [d], counting, count_tokens, source_type="regulation")
    kb = service_client.kb_id("regras")
    query = "qual o prazo de recurso contra multa?"

    def found() -> bool:
        hits = service_client.search(query, counting.embed_query(query), kb_ids=[kb], match_count=3)
        return any("prazo de recurso" in h.content for h in hits)

    assert found()  # before
    service_client.rpc("register_embedding_model", {"name": SWITCHED, "provider": "local", "dims": 384}, "none")
    service_client.rpc("set_model_calibration", {"model": SWITCHED, "calibration": model_calibration(MODEL)}, "none")
    assert found()  # registered, nothing re-embedded yet: the old model still serves
    new = Switched(counting.inner)
    s = ingest_paths(service_client, "regras", [d], new, count_tokens, source_type="regulation")
    assert [r.status for r in s.documents] == ["embedded"] and s.chunks_written == 1 and new.calls == 1
    assert found()  # during: both models' chunks, the old one active
    s = ingest_paths(service_client, "regras", [d], new, count_tokens, source_type="regulation")
    assert [r.status for r in s.documents] == ["unchanged"]
    service_client.rpc("activate_embedding_model", {"name": SWITCHED}, "none")
    assert found()  # after
    service_client.rpc("activate_embedding_model", {"name": MODEL}, "none")
    # The text changes: every model's chunks are replaced, none keeps serving the old text.
    (d / "regimento.txt").write_text(REGIMENTO.replace("15 dias", "20 dias"), encoding="utf-8")
    s = ingest_paths(service_client, "regras", [d], counting, count_tokens, source_type="regulation")
    assert [r.status for r in s.documents] == ["replaced"]
    rows = service_client.rpc("document_hashes", {"kb_id": kb, "embedding_model": SWITCHED}, "rows")
    assert [r["embedded"] for r in rows] == [False]
    assert found()


def test_one_authoritative_document_answers_alone(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    """Before: a regulation ingested without --trust had 0.5 and every answer it backed alone was
    refused cross_check_failed (the README's own question)."""
    ingest_paths(service_client, "regras", [folder(tmp_path)], counting, count_tokens, source_type="regulation")
    ans = Orchestrator(service_client, counting).ask(
        "qual o prazo de recurso contra multa?", kb_ids=[service_client.kb_id("regras")], use_cache=False
    )
    assert not ans.refused, (ans.reason, ans.explanation)
    assert "15 dias" in ans.answer and ans.sources[0].document.startswith("regimento")
    # A note backing the same answer alone is no confirmed answer (the cross-check), but its passage,
    # cited (issue 61 §1), with the reason in words.
    ingest_paths(
        service_client, "notas", [folder(tmp_path)], counting, count_tokens, source_type="other", trust_score=0.5
    )
    ans = Orchestrator(service_client, counting).ask(
        "qual o prazo de recurso contra multa?", kb_ids=[service_client.kb_id("notas")], use_cache=False
    )
    assert (ans.refused, ans.answer_source, ans.reason) == (False, "PASSAGES", "cross_check_failed")
    assert "15 dias" in ans.answer and ans.sources
    assert ans.explanation and "only one document supports the answer" in ans.explanation


def test_one_faq_entry_answers_its_question_alone(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    """Issue 22 §4: a FAQ ingested without --trust had 0.7 and was not an authoritative type, so
    every answer one FAQ entry backed alone was refused cross_check_failed."""
    faq = tmp_path / "faq"
    faq.mkdir()
    (faq / "perguntas.md").write_text(
        "# Perguntas frequentes\n\nQual o prazo para entregar a declaração de ajuste anual? "
        "A declaração deve ser entregue até 29 de maio.\n",
        encoding="utf-8",
    )
    ingest_paths(service_client, "faq", [faq], counting, count_tokens, source_type="faq")
    assert trust_of(service_client, "faq") == {"perguntas.md": ("faq", 0.9)}
    question = "qual o prazo para entregar a declaração de ajuste anual?"
    ans = Orchestrator(service_client, counting).ask(question, kb_ids=[service_client.kb_id("faq")], use_cache=False)
    assert not ans.refused, (ans.reason, ans.explanation)
    assert "29 de maio" in ans.answer


def test_kb_status_says_what_it_holds(tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder) -> None:
    """Before: a run in which every file failed marked a KB that held good documents `error`."""
    ingest_paths(service_client, "regras", [folder(tmp_path)], counting, count_tokens, source_type="regulation")
    bad = tmp_path / "ruins"
    bad.mkdir()
    (bad / "quebrado.pdf").write_bytes(b"%PDF-1.4 not really")
    s = ingest_paths(service_client, "regras", [bad], counting, count_tokens)
    assert s.documents_failed == 1
    assert s.documents[0].error and str(bad) not in s.documents[0].error  # the path is said once, by the caller
    assert [k.status for k in service_client.list_kbs() if k.name == "regras"] == ["ready"]


def test_ingest_into_a_missing_kb_without_create(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    with pytest.raises(NotFoundError, match="unknown knowledge base 'regrs'"):
        ingest_paths(service_client, "regrs", [folder(tmp_path)], counting, count_tokens, create_kb=False)
    assert [k.name for k in service_client.list_kbs()] == []


def test_a_scanned_notice_is_ingested_with_its_ocr_record(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    """Issue 59 §1: a photo of a notice is read by OCR, and its chunks record which pages OCR read
    and how sure it was."""
    import pypdfium2
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=16)
    for line in ("AVISO AOS MORADORES", "A piscina estara fechada para limpeza na segunda-feira."):
        pdf.multi_cell(0, 10, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(tmp_path / "aviso.pdf"))
    doc = pypdfium2.PdfDocument(str(tmp_path / "aviso.pdf"))
    (tmp_path / "fotos").mkdir()
    doc[0].render(scale=200 / 72).to_pil().convert("RGB").save(tmp_path / "fotos" / "aviso.png")
    doc.close()
    summary = ingest_paths(service_client, "avisos", [tmp_path / "fotos"], counting, count_tokens)
    assert summary.documents_ingested == 1, summary
    with service_client.transaction() as cur:
        cur.execute(
            "select c.content, c.metadata -> 'ocr' as ocr from hipocampo_private.chunks as c where c.kb_id = %s",
            (service_client.kb_id("avisos"),),
        )
        rows = cur.fetchall()
    assert rows and "piscina" in rows[0]["content"].lower()
    assert rows[0]["ocr"]["pages"] == [1] and rows[0]["ocr"]["confidence"] > 70
