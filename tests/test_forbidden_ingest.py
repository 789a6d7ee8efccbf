"""Forbidden sources at ingestion (issue 45 §4): each forbidden file is refused or quarantined with
its reason per file, per the config's action for its kind and source type; detect-secrets finds
the credentials the database's patterns do not know; the shared datasets ingest untouched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hipocampo.embeddings import count_tokens
from hipocampo.ingest import DocumentInput, ingest_documents
from hipocampo.ingest.forbidden import action_for, find_forbidden, secret_found
from hipocampo.ingest.loaders import LoadedDocument

CORPUS = Path(__file__).resolve().parent / "data" / "forbidden"
DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def inputs(pattern: str, source_type: str = "other") -> list[DocumentInput]:
    return [
        DocumentInput(LoadedDocument(p.stem, p.read_text("utf-8"), f"test://{p.name}"), source_type)
        for p in sorted(CORPUS.glob(pattern))
    ]


def kind_of(uri: str) -> str:
    return uri.removeprefix("test://kind_").split("__")[0]


def test_each_forbidden_file_is_kept_out_with_its_reason(service_client: Any, counting: Any) -> None:
    """Default actions: credentials quarantined, the other kinds refused; the ordinary files that
    only resemble them are ingested."""
    docs = inputs("kind_*") + inputs("allowed_*")
    summary = ingest_documents(service_client, "proibidos", docs, counting, count_tokens)
    by_uri = {d.source_uri: d for d in summary.documents}
    for d in docs:
        res = by_uri[d.doc.source_uri]
        if d.doc.source_uri.startswith("test://allowed_"):
            assert (res.status, res.error) == ("inserted", None), d.doc.source_uri
            continue
        kind = kind_of(d.doc.source_uri)
        expected = "quarantined" if kind == "credentials" else "refused"
        assert (res.status, res.forbidden) == (expected, kind), d.doc.source_uri
        assert res.error and res.error.startswith(f"{expected}: ") and res.error.endswith(f"({kind})")
    credentials = len(list(CORPUS.glob("kind_credentials__*")))
    assert summary.documents_quarantined == credentials
    assert summary.documents_refused == summary.documents_failed == len(list(CORPUS.glob("kind_*"))) - credentials
    rows = {r.source_uri: r for r in service_client.list_documents(service_client.kb_id("proibidos"))}
    quarantined = {u: r for u, r in rows.items() if r.status == "quarantined"}
    assert sorted(quarantined) == sorted(f"test://{p.name}" for p in CORPUS.glob("kind_credentials__*"))
    assert all(r.chunk_count == 0 and (r.quarantine or {}).get("kind") == "credentials" for r in quarantined.values())
    assert not any(u.startswith("test://kind_") and u not in quarantined for u in rows)  # refused: nothing stored


def test_a_source_type_s_own_action_and_the_switch(service_client: Any, counting: Any) -> None:
    """A bank statement ingested as a metric document is allowed (by_source_type); with every
    kind allowed for the tenant, the transcript goes in too (the check is the config's)."""
    statement = inputs("kind_financial_statement__extrato*", "metric")
    summary = ingest_documents(service_client, "metricas", statement, counting, count_tokens)
    assert [d.status for d in summary.documents] == ["inserted"]
    chat = inputs("kind_transcript__chat.txt")
    assert [d.status for d in ingest_documents(service_client, "chat", chat, counting, count_tokens).documents] == [
        "refused"
    ]
    service_client.set_tenant_config("forbidden_sources", {"transcript": "allow"})
    chat = [DocumentInput(LoadedDocument("chat2", chat[0].doc.text, "test://chat2"), "other")]
    assert [d.status for d in ingest_documents(service_client, "chat", chat, counting, count_tokens).documents] == [
        "inserted"
    ]


def test_action_for_reads_the_source_type_first() -> None:
    cfg = {"credentials": "quarantine", "by_source_type": {"metric": {"financial_statement": "allow"}}}
    assert action_for(cfg, "metric", "financial_statement") == "allow"
    assert action_for(cfg, "faq", "financial_statement") == "refuse"  # unnamed: refused
    assert action_for(cfg, "metric", "credentials") == "quarantine"


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AWS Access Key"),
        ("token: ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", "GitHub Token"),
        ("-----BEGIN RSA PRIVATE KEY-----", "Private Key"),
        ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "Slack Token"),
        ("postgres://admin:S3cr3tPass@db.example.com:5432/app", "Basic Auth Credentials"),
    ],
)
def test_detect_secrets_rules(line: str, kind: str) -> None:
    assert secret_found(f"linha um\n{line}\n") == f"a credential ({kind}) on line 2"


def _dataset_texts(name: str) -> list[str]:
    paths = {
        "faquad": DATASETS / "faquad" / "beir_derived" / "corpus.jsonl",
        "quati": DATASETS / "quati" / "beir_derived_human" / "corpus.jsonl",
    }
    if not paths[name].exists():
        pytest.skip(f"{paths[name]} is not here (../shared/datasets)")
    rows = [json.loads(line) for line in paths[name].read_text("utf-8").splitlines() if line.strip()]
    return [f"{r.get('title', '')}\n{r['text']}" for r in rows]


@pytest.mark.parametrize("name", ["faquad", "quati"])
def test_the_shared_datasets_ingest_untouched(service_client: Any, name: str) -> None:
    """No paragraph of FaQuAD (249) or Quati (239) is of a forbidden kind: zero false positives,
    by the database's checks and by detect-secrets (docs/SECURITY.md §Forbidden sources)."""
    texts = _dataset_texts(name)
    kb = service_client.create_kb(f"fp-{name}")
    assert [f for f in find_forbidden(service_client, kb, texts) if f is not None] == []
