"""``hipocampo kb eval``: a knowledge base measured on its own judged questions (hipocampo.evaluation.kb_eval),
on real FaQuAD paragraphs and questions, through the real searches and ``ask``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from hipocampo import Actor, Hipocampo
from hipocampo.cli import app
from hipocampo.errors import PermissionDeniedError
from hipocampo.evaluation.answer_sets import ingest_paragraphs
from hipocampo.evaluation.calibration import GateReplay
from hipocampo.evaluation.datasets import load_beir
from hipocampo.evaluation.kb_eval import GATE_CONFIDENCES, Judged, evaluate_kb, gate_choice, load_judged

runner = CliRunner()


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def test_kb_eval_measures_retrieval_and_answers_and_tunes_the_dense_weight(
    database_url: str, embedder: Any, tmp_path: Path
) -> None:
    """Three FaQuAD articles as FAQ entries; 16 of their questions judged by their gold paragraph
    and 3 of Quati's as off-topic: every mode is scored over the 16, ask answers or refuses each
    question once, and --tune --write stores the weight only when the held-out half confirms it."""
    fq, qt = load_beir("faquad"), load_beir("quati")
    titles = sorted({t for t, _ in fq.corpus.values()})[:3]
    part = {k: v for k, v in fq.corpus.items() if v[0] in titles}
    slug = f"kb-eval-{uuid.uuid4().hex[:8]}"
    with Hipocampo(database_url) as root:
        tid = root.create_tenant("KB eval", slug, uuid.uuid4())
        kb = ingest_paragraphs(root.as_actor(Actor.service(tid)), "faq", part, embedder, "faq", None)
        asked = [q for q, docs in fq.qrels.items() if set(docs) & part.keys()][:16]
        rows: list[Any] = [{"question": fq.queries[q], "relevant": [f"faquad:{d}" for d in fq.qrels[q]]} for q in asked]
        rows += [{"question": text, "relevant": []} for text in list(qt.queries.values())[:3]]
        file = str(_write(tmp_path / "q.jsonl", rows))
        res = runner.invoke(
            app, ["kb", "eval", "faq", "-t", slug, "-q", file, "--answers", "--tune", "--write", "--json"]
        )
        assert res.exit_code == 0, res.output
        out = json.loads(res.output)
        assert out["questions"] == 19
        assert [(r["mode"], r["questions"]) for r in out["retrieval"]] == [
            ("dense", 16),
            ("lexical", 16),
            ("hybrid", 16),
        ]
        assert next(r for r in out["retrieval"] if r["mode"] == "hybrid")["ndcg10"] > 0.7
        a = out["answers"]
        assert a["answered_relevant"] + a["answered_other"] + a["refused"] == a["answerable"] == 16
        assert (a["offtopic"], a["offtopic_refused"]) == (3, 3) and a["answered_relevant"] >= 10
        assert sum(a["reasons"].values()) == a["refused"] + a["offtopic_refused"]
        # Every question not handled as judged is listed, with what it got.
        assert len(a["misses"]) == a["answered_other"] + a["refused"] + a["offtopic"] - a["offtopic_refused"]
        assert all((m["expected"] == "answer" and m["got"] != "answered") or m["cited"] for m in a["misses"])
        d = out["dense_weight"]
        assert (d["chosen_on"], d["held_out"]) == (8, 8) and d["written"] == d["confirmed"]
        assert d["confirmed"] == (
            d["weight"] != d["current"] and d["by_weight"][str(d["weight"])][1] >= d["by_weight"][str(d["current"])][1]
        )
        stored = root.as_actor(Actor.service(tid)).effective_config(kb)["retrieval"]["dense_weight"]
        assert stored == (d["weight"] if d["written"] else d["current"])
        # Three off-topic questions are too few to choose the gate's confidence on.
        assert out["min_confidence"] is None
        root.delete_tenant(tid)


def test_kb_eval_tunes_the_answer_gate_when_off_topic_questions_are_judged(
    database_url: str, embedder: Any, tmp_path: Path
) -> None:
    """Three FaQuAD articles as FAQ entries; 12 of their questions judged and 8 of Quati's
    off-topic: --tune reads answer_evidence once per question and replays the gate at each
    min_confidence. At the value in force (0.85 here, stricter than these questions need) the
    replay gives what ask gave in the same run; a lower value is chosen, confirmed and stored by
    --write; the reading's override is rolled back; a member, who may not change the knowledge
    base's settings, gets 42501."""
    fq, qt = load_beir("faquad"), load_beir("quati")
    titles = sorted({t for t, _ in fq.corpus.values()})[3:6]
    part = {k: v for k, v in fq.corpus.items() if v[0] in titles}
    slug, member = f"kb-eval-{uuid.uuid4().hex[:8]}", uuid.uuid4()
    with Hipocampo(database_url) as root:
        tid = root.create_tenant("KB eval", slug, uuid.uuid4())
        service = root.as_actor(Actor.service(tid))
        kb = ingest_paragraphs(service, "faq", part, embedder, "faq", None)
        # A stricter gate than the default, which these questions do not need.
        service.set_kb_config(kb, "rag", {"min_confidence": 0.85})
        before = service.rag_config(kb)
        asked = [q for q, docs in fq.qrels.items() if set(docs) & part.keys()][:12]
        rows: list[Any] = [{"question": fq.queries[q], "relevant": [f"faquad:{d}" for d in fq.qrels[q]]} for q in asked]
        rows += [{"question": text, "relevant": []} for text in list(qt.queries.values())[:8]]
        file = _write(tmp_path / "q.jsonl", rows)
        res = runner.invoke(
            app, ["kb", "eval", "faq", "-t", slug, "-q", str(file), "--answers", "--tune", "--write", "--json"]
        )
        assert res.exit_code == 0, res.output
        out = json.loads(res.output)
        g, a = out["min_confidence"], out["answers"]
        assert (g["chosen_on"], g["held_out"]) == (10, 10) and g["current"] == before["min_confidence"]
        assert [float(v) for v in g["by_value"]] == sorted(
            {*(v for v in GATE_CONFIDENCES if v >= before["min_score"]), before["min_confidence"]}
        )
        answered, refused = g["by_value"][str(g["current"])][2:]
        assert answered == a["answered_relevant"] / a["answerable"]
        # (the replay reads the gate: passages are not an answer, as a refusal is not)
        assert refused == (a["offtopic_refused"] + a["offtopic_passages"]) / a["offtopic"]
        assert g["confirmed"] == (
            g["value"] != g["current"]
            and g["by_value"][str(g["value"])][1] >= g["by_value"][str(g["current"])][1]
            and g["wrong"][str(g["value"])] <= g["wrong"][str(g["current"])]
        )
        assert g["value"] < 0.85 and g["confirmed"] and g["written"]
        after = service.rag_config(kb)
        assert after["min_confidence"] == g["value"]
        # Stored as the tuning of the model it was chosen under, the plain override (0.85) removed.
        assert out["model"] == embedder.model_name
        with psycopg.connect(database_url) as conn:
            row = conn.execute(
                "select overrides, tuning from hipocampo_private.knowledge_bases where id = %s", (kb,)
            ).fetchone()
        assert row is not None and "min_confidence" not in row[0].get("rag", {})
        assert list(row[1]) == [embedder.model_name]
        assert row[1][embedder.model_name]["rag"] == {"min_confidence": g["value"]}
        assert {k: after[k] for k in ("min_score", "evidence_token_budget", "sentence_weight")} == {
            k: before[k] for k in ("min_score", "evidence_token_budget", "sentence_weight")
        }
        root.add_member(tid, member, "member")
        judged = load_judged(file)
        with pytest.raises(PermissionDeniedError):
            evaluate_kb(root.as_actor(Actor.user(member, tid)), kb, judged, embedder, tune=True)
        root.delete_tenant(tid)


def test_kb_eval_says_which_line_is_wrong(database_url: str, tmp_path: Path) -> None:
    """A malformed line is refused with its number before any search; --tune needs 4 answerable
    questions."""
    bad = _write(tmp_path / "bad.jsonl", [{"question": "Qual o prazo?", "relevant": ["a"]}, {"relevant": ["b"]}])
    res = runner.invoke(app, ["kb", "eval", "faq", "-q", str(bad)])
    assert res.exit_code == 1
    assert f"error [22023]: {bad}:2: expected" in " ".join(res.output.split())
    grades = _write(tmp_path / "grades.jsonl", [{"question": "Qual o prazo?", "relevant": {"a": 0}}])
    assert f"{grades}:1: expected" in " ".join(
        runner.invoke(app, ["kb", "eval", "faq", "-q", str(grades)]).output.split()
    )
    slug = f"kb-eval-{uuid.uuid4().hex[:8]}"
    with Hipocampo(database_url) as root:
        tid = root.create_tenant("KB eval", slug, uuid.uuid4())
        root.as_actor(Actor.service(tid)).create_kb("faq")
        few = _write(tmp_path / "few.jsonl", [{"question": "Qual o prazo?", "relevant": ["a"]}] * 3)
        res = runner.invoke(app, ["kb", "eval", "faq", "-t", slug, "-q", str(few), "--tune"])
        assert res.exit_code == 1
        assert "error [22023]: choosing a dense weight needs at least 4 answerable questions" in res.output
        root.delete_tenant(tid)


def _reading(support: float, uri: str, good: str) -> GateReplay:
    item = {
        "sentence_similarity": None, "lexical_support": support, "token_count": 10, "document_id": uri,
        "source_type": "regulation", "trust_score": 0.9, "source_uri": uri,
    }  # fmt: skip
    rag = {
        "min_score": 0.1, "min_confidence": 0.8, "evidence_token_budget": 1000, "sentence_weight": 0.0,
        "sentence_cosine_low": 0.0, "sentence_cosine_high": 1.0, "cross_check_min_documents": 1,
        "authoritative_trust": 0.8, "authoritative_source_types": ["regulation"],
    }  # fmt: skip
    return GateReplay(False, {good} if good else set(), [item], rag)


def test_tune_never_confirms_a_value_that_answers_more_questions_wrongly() -> None:
    """Issue 61 §1: at 0.60 eight questions are answered citing their document (J 0.8 on both
    halves, against 0 at the 0.80 in force), but two are answered citing another document (a
    chunk scoring 0.65): the value is chosen on J, and not confirmed, so --write stores nothing."""
    judged = [Judged(f"q{i}", {"a.md": 1}) for i in range(10)] + [Judged(f"off{i}", {}) for i in range(4)]
    readings = [_reading(0.6, "a.md", "a.md") for _ in range(8)]
    readings += [_reading(0.65, "b.md", "a.md") for _ in range(2)]  # a wrong document, scored higher
    readings += [_reading(0.2, "c.md", "") for _ in range(4)]
    choice = gate_choice(readings, judged)
    assert (choice.value, choice.current) == (0.6, 0.8)
    assert choice.by_value[0.6][0] > choice.by_value[0.8][0] and choice.by_value[0.6][1] >= choice.by_value[0.8][1]
    assert (choice.wrong[0.6], choice.wrong[0.8]) == (2, 0)
    assert not choice.confirmed
    # without the wrong answers the same value is confirmed
    clean = gate_choice(readings[:8] + readings[10:], judged[:8] + judged[10:])
    assert clean.value == 0.6 and clean.wrong[0.6] == 0 and clean.confirmed
