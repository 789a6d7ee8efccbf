"""The ingestion pipeline end to end on the real database and the real offline model."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from hipocampo import Actor, Hipocampo, PermissionDeniedError
from hipocampo.embeddings import count_tokens
from hipocampo.ingest import ingest_paths
from hipocampo.ingest.chunking import chunk_sentences

from .conftest import CountingEmbedder

REG = """# Regimento Interno

Art. 1º O horário de silêncio vai das 22h às 8h. Reclamações vão ao síndico pelo e-mail sindico@condominio.com.br.

Art. 2º A multa por barulho é de 10% da taxa condominial. O morador de CPF 529.982.247-25 foi advertido.
"""


def corpus(tmp_path: Path) -> Path:
    d = tmp_path / "docs"
    d.mkdir()
    (d / "regimento.md").write_text(REG, encoding="utf-8")
    (d / "faq.html").write_text("<title>FAQ</title><p>A piscina abre às 9h e fecha às 21h.</p>", encoding="utf-8")
    (d / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    (d / "planilha.xlsx").write_bytes(b"PK")
    return d


def state(client: Hipocampo, kb: str) -> dict[str, Any]:
    with client.transaction() as cur:
        cur.execute(
            "select (select array_agg(c.id order by c.id) from hipocampo_private.chunks c"
            " where c.kb_id = k.id) as chunks,"
            " (select array_agg(d.updated_at order by d.id) from hipocampo_private.documents d"
            " where d.kb_id = k.id) as docs,"
            " (select count(*) from hipocampo_private.ingestion_jobs j where j.kb_id = k.id) as jobs,"
            " k.updated_at, k.status"
            " from hipocampo_private.knowledge_bases k where k.id = %s",
            (client.kb_id(kb),),
        )
        row = cur.fetchone()
        assert row is not None
        return dict(row)


def test_ingest_scrub_and_dedupe(tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder) -> None:
    d = corpus(tmp_path)
    s1 = ingest_paths(service_client, "regras", [d], counting, count_tokens, source_type="regulation")
    assert (s1.documents_total, s1.documents_ingested, s1.documents_failed) == (4, 2, 2)
    assert s1.pii_replaced == 2 and s1.chunks_written >= 2 and s1.job_id is not None
    errors = sorted(r.error or "" for r in s1.documents if r.status == "failed")
    assert "not a readable PDF" in errors[0] and "unsupported file type .xlsx" in errors[1]
    before = state(service_client, "regras")
    assert before["status"] == "ready" and before["jobs"] == 1

    with service_client.transaction() as cur:
        cur.execute(
            "select content, metadata from hipocampo_private.chunks where kb_id = %s", (service_client.kb_id("regras"),)
        )
        rows = cur.fetchall()
    stored = " ".join(r["content"] for r in rows)
    assert "[EMAIL]" in stored and "[CPF]" in stored and "529.982" not in stored and "sindico@" not in stored
    assert any(r["metadata"].get("article") == "Art. 1º" for r in rows)

    # Unchanged: zero embedding calls and zero writes.
    counting.calls = 0
    (d / "broken.pdf").unlink()
    (d / "planilha.xlsx").unlink()
    s2 = ingest_paths(service_client, "regras", [d], counting, count_tokens, source_type="regulation")
    assert (s2.documents_unchanged, s2.documents_ingested, s2.chunks_written) == (2, 0, 0)
    assert counting.calls == 0 and s2.job_id is None
    assert state(service_client, "regras") == before

    # Changed: its chunks are replaced; the other document is untouched.
    (d / "faq.html").write_text("<title>FAQ</title><p>A piscina abre às 8h e fecha às 22h.</p>", encoding="utf-8")
    s3 = ingest_paths(service_client, "regras", [d], counting, count_tokens, source_type="regulation")
    assert (s3.documents_ingested, s3.documents_unchanged) == (1, 1)
    assert [r.status for r in s3.documents if r.status != "unchanged"] == ["replaced"]
    assert counting.calls == 1
    hits = service_client.search(
        "que horas abre a piscina",
        counting.embed_query("que horas abre a piscina"),
        kb_ids=[service_client.kb_id("regras")],
        match_count=1,
    )
    assert "abre às 8h" in hits[0].content and hits[0].title == "FAQ"


def test_all_documents_failing_sets_kb_error(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    (tmp_path / "bad.docx").write_bytes(b"nope")
    service_client.create_kb("ruim")  # (one this run creates is not kept: tests/test_cli.py)
    summary = ingest_paths(service_client, "ruim", [tmp_path], counting, count_tokens)
    assert summary.documents_failed == 1 and counting.calls == 0 and not summary.kb_deleted
    assert state(service_client, "ruim")["status"] == "error"


def test_unknown_source_type(tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder) -> None:
    (tmp_path / "a.txt").write_text("texto", encoding="utf-8")
    with pytest.raises(Exception, match="unknown source_type 'memo'"):
        ingest_paths(service_client, "x", [tmp_path], counting, count_tokens, source_type="memo")


def test_a_member_cannot_ingest(tmp_path: Path, database_url: str, counting: CountingEmbedder) -> None:
    (tmp_path / "a.txt").write_text("texto", encoding="utf-8")
    with Hipocampo(database_url) as root:
        user = uuid.uuid4()
        tid = root.create_tenant("M", f"m-{uuid.uuid4().hex[:8]}")
        root.add_member(tid, user, "member")
        member = root.as_actor(Actor.user(user, tid))
        with pytest.raises(PermissionDeniedError, match="only tenant admins can create knowledge bases"):
            ingest_paths(member, "kb", [tmp_path], counting, count_tokens)


def test_identical_text_in_two_kbs_of_one_tenant(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    (tmp_path / "a.txt").write_text("O salão de festas fecha à meia-noite.", encoding="utf-8")
    for kb in ("kb-um", "kb-dois"):
        summary = ingest_paths(service_client, kb, [tmp_path], counting, count_tokens)
        assert summary.chunks_written == 1, kb
    for kb in ("kb-um", "kb-dois"):
        hits = service_client.search(
            "salão de festas", counting.embed_query("salão de festas"), kb_ids=[service_client.kb_id(kb)], match_count=1
        )
        assert [h.content for h in hits] == ["O salão de festas fecha à meia-noite."]


def test_documents_with_the_same_text_each_keep_their_chunks(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    """Issue 19 §1.11: the second of two documents with the same text kept no chunk (the chunk
    hash covered the KB and the content only, and the insert skipped the 'duplicate')."""
    text = "Art. 7º O portão da garagem fecha às 23 horas e abre às 6 horas."
    (tmp_path / "regimento_2023.txt").write_text(text, encoding="utf-8")
    (tmp_path / "regimento_2024.txt").write_text(text, encoding="utf-8")
    summary = ingest_paths(service_client, "copias", [tmp_path], counting, count_tokens)
    assert summary.documents_ingested == 2 and summary.chunks_written == 2
    kb = service_client.kb_id("copias")
    docs = service_client.list_documents(kb)
    assert [d.chunk_count for d in docs] == [1, 1]
    hits = service_client.search("quando fecha o portão", counting.embed_query("quando fecha o portão"), kb_ids=[kb])
    assert hits and hits[0].content == text


def test_sentence_embeddings_are_written_when_the_model_weighs_them(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    """rag.sentence_weight > 0 (the model's calibration, here a knowledge base's override): each
    chunk's sentences are embedded in the same model call and stored with the chunk; the answer
    gate reads them (docs/design.md §answers)."""
    (tmp_path / "a.txt").write_text(REG, encoding="utf-8")
    plain_kb = service_client.create_kb("sem-frases")
    service_client.set_kb_config(plain_kb, "rag", {"sentence_weight": 0.0})  # whatever the model's
    plain = ingest_paths(service_client, "sem-frases", [tmp_path], counting, count_tokens)
    kb = service_client.create_kb("frases")
    service_client.set_kb_config(kb, "rag", {"sentence_weight": 0.4})
    counting.calls = counting.texts = 0
    summary = ingest_paths(service_client, "frases", [tmp_path], counting, count_tokens)
    assert summary.chunks_written == plain.chunks_written >= 1
    with service_client.transaction() as cur:
        cur.execute(
            "select k.name, c.content, c.sentence_embeddings::text[] as s from hipocampo_private.chunks c"
            " join hipocampo_private.knowledge_bases k on k.id = c.kb_id"
            " where k.name in ('frases', 'sem-frases') and k.tenant_id = %s order by k.name, c.chunk_index",
            (service_client.actor.tenant_id,),
        )
        rows = cur.fetchall()
    assert [r["s"] for r in rows if r["name"] == "sem-frases"] == [None] * plain.chunks_written
    stored = [r for r in rows if r["name"] == "frases"]
    sentences = [chunk_sentences(r["content"]) for r in stored]
    assert counting.calls == 1 and counting.texts == len(stored) + sum(map(len, sentences))
    for r, ss in zip(stored, sentences, strict=True):
        expected = counting.inner.embed_documents(ss)
        got = [[float(x) for x in v.strip("[]").split(",")] for v in r["s"]]
        assert got == [pytest.approx(v, abs=1e-5) for v in expected]
    q = "Até que horas vai o silêncio?"
    ev = service_client.rpc(
        "answer_evidence",
        {
            "query_text": q,
            "query_embedding": counting.embed_query(q),
            "kb_ids": [kb],
            "tenant_id": service_client.actor.tenant_id,
        },
    )
    assert ev["candidates"] >= 1 and all(e["sentence_similarity"] is not None for e in ev["evidence"])


def test_the_client_pages_through_documents_and_finds_one_by_id(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    """iter_documents reads every document a keyset page at a time; get_document finds one with
    its knowledge base, and None for an id the tenant does not hold."""
    for n in range(5):
        (tmp_path / f"aviso_{n}.txt").write_text(f"Aviso {n}: a piscina fecha às {18 + n} horas.", encoding="utf-8")
    ingest_paths(service_client, "avisos", [tmp_path], counting, count_tokens)
    kb = service_client.kb_id("avisos")
    every = service_client.list_documents(kb)
    assert list(service_client.iter_documents(kb, page=2)) == every and len(every) == 5
    assert service_client.list_documents(kb, after=every[1].source_uri, limit=2) == every[2:4]
    assert service_client.document_page(kb, limit=2) == (every[:2], every[1].source_uri)
    assert service_client.document_page(kb, after=every[2].source_uri, limit=2) == (every[3:], None)
    one = service_client.get_document(every[3].id)
    assert one is not None and (one.kb_id, one.kb_name, one.title) == (kb, "avisos", every[3].title)
    assert service_client.get_document(uuid.uuid4()) is None


def test_progress_knows_the_total_before_the_first_document(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    """Issue 19 §1.8: the progress bar showed '5/?' though the count was known; failed files
    never advanced it."""
    seen: list[str] = []
    totals: list[int] = []
    ingest_paths(
        service_client,
        "progresso",
        [corpus(tmp_path)],
        counting,
        count_tokens,
        on_total=lambda n: totals.append(n) or seen.append("total"),
        on_document=lambda r: seen.append(r.status),
    )
    assert totals == [4] and seen[0] == "total" and len(seen) == 5  # 2 ingested + 2 failed, each once
    assert sorted(seen[1:]) == ["failed", "failed", "inserted", "inserted"]


def test_embedding_overlaps_the_previous_batch_s_writes(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    """Issue 18 §3: the next batch embeds while the previous one is written (one writer thread,
    documents still written and reported in order, each in its own transaction)."""
    import threading
    import time

    calls: list[tuple[float, float]] = []

    class Slow(CountingEmbedder):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            start = time.perf_counter()
            out = super().embed_documents(texts)
            time.sleep(0.4)  # a model call that takes a while (e.g. a remote provider)
            calls.append((start, time.perf_counter()))
            return out

    d = tmp_path / "lote"
    d.mkdir()
    for i in range(6):
        (d / f"artigo{i}.md").write_text(f"Art. {i}º O bloco {i} recolhe o lixo às {i + 7}h.", encoding="utf-8")
    reported: list[tuple[str, float, str]] = []
    from hipocampo.ingest import load_path
    from hipocampo.ingest.pipeline import DocumentInput, ingest_documents

    docs = [DocumentInput(doc, "regulation") for f in sorted(d.iterdir()) for doc in load_path(f)]
    summary = ingest_documents(
        service_client,
        "sobreposto",
        docs,
        Slow(counting.inner),
        count_tokens,
        embed_batch=2,
        on_document=lambda r: reported.append((r.source_uri, time.perf_counter(), threading.current_thread().name)),
    )
    assert summary.documents_ingested == 6 and summary.embedding_calls == 3
    assert [uri for uri, _, _ in reported] == [doc.doc.source_uri for doc in docs]  # in order
    assert all(name.startswith("hipocampo-ingest-writer") for _, _, name in reported)
    first_batch_written = max(t for _, t, _ in reported[:2])
    second_call_start, second_call_end = calls[1]
    assert second_call_start < first_batch_written < second_call_end  # written during the next call


def test_a_batch_goes_in_one_transaction_and_a_bad_document_fails_alone(
    service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    """Issue 18 §3: the documents embedded together are written by one ingest_documents call;
    when the database refuses that batch (one document's date does not parse), its documents are
    written again one by one and only the bad one fails, with the database's message."""
    from hipocampo.ingest import LoadedDocument
    from hipocampo.ingest.pipeline import DocumentInput, ingest_documents

    def doc(i: int, **metadata: Any) -> DocumentInput:
        text = f"Art. {i}º A garagem {i} fecha às {i + 18}h."
        return DocumentInput(LoadedDocument(f"Artigo {i}", text, f"lote://{i}", metadata), "regulation")

    calls: list[str] = []
    original = service_client.rpc

    def spy(name: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(name)
        return original(name, *args, **kwargs)

    service_client.rpc = spy  # type: ignore[method-assign]
    try:
        good = ingest_documents(service_client, "lote-bom", [doc(i) for i in range(4)], counting, count_tokens)
        assert good.documents_ingested == 4 and calls.count("ingest_documents") == 1
        assert calls.count("ingest_document") == 0
        calls.clear()
        docs = [doc(i) for i in range(4)]
        docs[2] = doc(2, published_at="ontem")
        mixed = ingest_documents(service_client, "lote-misto", docs, counting, count_tokens)
    finally:
        del service_client.rpc
    assert (mixed.documents_ingested, mixed.documents_failed) == (3, 1)
    assert calls.count("ingest_documents") == 1 and calls.count("ingest_document") == 4
    failed = [r for r in mixed.documents if r.status == "failed"]
    assert [r.source_uri for r in failed] == ["lote://2"]
    assert failed[0].error is not None and failed[0].error.startswith("invalid document field:")
    listed = service_client.list_documents(service_client.kb_id("lote-misto"))
    assert sorted(d.source_uri for d in listed) == ["lote://0", "lote://1", "lote://3"]


def test_a_contract_given_no_source_type_is_cut_by_its_clauses(
    tmp_path: Path, service_client: Hipocampo, counting: CountingEmbedder
) -> None:
    """Issue 61 §3: a contract ingested without --source-type (type other: paragraphs of 200-400
    tokens with overlap) is still cut a clause a chunk, each chunk naming its clause."""
    from .test_ingest_chunking import CONTRACT

    (tmp_path / "contrato.txt").write_text(CONTRACT, encoding="utf-8")
    summary = ingest_paths(service_client, "contratos", [tmp_path], counting, count_tokens)
    assert summary.documents_ingested == 1
    with service_client.transaction() as cur:
        cur.execute(
            "select c.metadata ->> 'article' as article from hipocampo_private.chunks c"
            " join hipocampo_private.documents d on d.id = c.document_id"
            " where c.kb_id = %s order by c.chunk_index",
            (service_client.kb_id("contratos"),),
        )
        articles = [r["article"] for r in cur.fetchall()]
    assert articles == [None, "CLÁUSULA PRIMEIRA", "CLÁUSULA SEGUNDA", "CLÁUSULA 3ª", "CLÁUSULA DÉCIMA PRIMEIRA"]
