"""The answer gate exists twice: in SQL (``answer_evidence`` decides every real answer) and in
Python (``calibration.GateReplay`` replays it over one reading of the evidence, for the
calibration's grids; ``answers.cross_check`` forecasts the cross-check). These tests ask real
FaQuAD questions both ways on the real database and require the same decision at every point,
so a change to the SQL gate that the replay does not follow fails here instead of drifting."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from hipocampo import Actor, Hipocampo
from hipocampo.evaluation.answer_sets import ingest_paragraphs
from hipocampo.evaluation.calibration import GATE_READING, SENTENCES_READ, GateReplay
from hipocampo.evaluation.datasets import load_beir

#: Configured points (rag keys) the SQL gate and the replay must agree on: the defaults, a tight
#: token budget, the sentence similarity on at two strengths, and the cross-check at 1 and 3.
POINTS: list[dict[str, Any]] = [
    {},
    {"evidence_token_budget": 200},
    {
        "min_score": 0.25,
        "min_confidence": 0.5,
        "sentence_weight": 0.4,
        "sentence_cosine_low": 0.5,
        "sentence_cosine_high": 0.8,
    },
    {
        "min_score": 0.1,
        "min_confidence": 0.8,
        "sentence_weight": 1.0,
        "sentence_cosine_low": 0.3,
        "sentence_cosine_high": 0.9,
        "cross_check_min_documents": 1,
        "evidence_token_budget": 400,
    },
    {"min_score": 0.4, "min_confidence": 0.45, "cross_check_min_documents": 3},
]


class Parity:
    """FaQuAD's paragraphs of six articles in one knowledge base: three articles as regulations at
    trust 0.9 (authoritative), three as documents of unknown provenance (type other, trust 0.5),
    so that the cross-check decides; their questions, and 20 of other articles (unanswerable)."""

    def __init__(self, url: str, embedder: Any) -> None:
        self.embedder = embedder
        self.root = Hipocampo(url)
        self.tenant = self.root.create_tenant("Gate replay", f"gate-{uuid.uuid4().hex[:8]}", uuid.uuid4())
        self.client = self.root.as_actor(Actor.service(self.tenant))
        fq = load_beir("faquad")
        titles = sorted({t for t, _ in fq.corpus.values()})
        chosen = titles[:6]
        self.client.set_tenant_config("rag", SENTENCES_READ)
        for i, title in enumerate(chosen):
            part = {k: v for k, v in fq.corpus.items() if v[0] == title}
            kind, trust = ("regulation", 0.9) if i % 2 == 0 else ("other", 0.5)
            self.kb = ingest_paragraphs(self.client, "faquad-part", part, embedder, kind, trust)
        self.client.set_tenant_config("rag", dict.fromkeys(SENTENCES_READ))
        mine = {k for k, v in fq.corpus.items() if v[0] in chosen}
        inside = [q for q, docs in fq.qrels.items() if set(docs) & mine]
        outside = [q for q, docs in fq.qrels.items() if not set(docs) & mine]
        self.questions = [fq.queries[q] for q in inside[::3][:60] + outside[::40][:20]]

    def evidence(self, rag: dict[str, Any]) -> list[dict[str, Any]]:
        """Every question through answer_evidence with the knowledge base's rag override ``rag``."""
        self.client.set_kb_config(self.kb, "rag", rag)
        try:
            return [
                self.client.rpc(
                    "answer_evidence",
                    {
                        "query_text": q,
                        "query_embedding": self.embedder.embed_query(q),
                        "kb_ids": [self.kb],
                        "tenant_id": self.tenant,
                    },
                )
                for q in self.questions
            ]
        finally:
            self.client.set_kb_config(self.kb, "rag", {k: None for k in rag})


@pytest.fixture(scope="module")
def parity(database_url: str, embedder: Any) -> Iterator[Parity]:
    p = Parity(database_url, embedder)
    yield p
    p.root.delete_tenant(p.tenant)
    p.root.close()


@pytest.mark.parametrize("point", POINTS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "defaults")
def test_the_replay_decides_as_answer_evidence(parity: Parity, point: dict[str, Any]) -> None:
    """At each configured point, the replay over one reading (every candidate kept: min_score 0,
    the budget 8,000, the sentence cosine read) answers exactly the questions answer_evidence
    answers at that point, except where the reading saw a conflict (the replay then refuses:
    detect_conflicts runs over the chunks above min_score, which it cannot redo)."""
    readings = parity.evidence(GATE_READING)
    decided = parity.evidence(point)
    configured = decided[0]["config"]
    weight, low, high = (float(configured[f"sentence_{k}"]) for k in ("weight", "cosine_low", "cosine_high"))
    compared, answered, differ = 0, 0, []
    for q, reading, real in zip(parity.questions, readings, decided, strict=True):
        replay = GateReplay.from_reading(reading, set(), configured)
        if reading["conflicts"]:
            assert not replay.answered(weight, low, high, citing=False)
            continue
        compared += 1
        answered += real["decision"] == "answer"
        if replay.answered(weight, low, high, citing=False) != (real["decision"] == "answer"):
            differ.append((q, real["reason"]))
    assert not differ
    assert compared >= 60 and answered > 0
    if not point:  # with the defaults both decisions occur (with e5 a strong sentence bonus answers all)
        assert answered < compared
