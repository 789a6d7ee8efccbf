"""``hipocampo kb eval``: a knowledge base measured on its own judged questions (hipocampo.kb_eval),
on real FaQuAD paragraphs and questions, through the real searches and ``ask``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from hipocampo import Actor, Hipocampo
from hipocampo.answer_sets import ingest_paragraphs
from hipocampo.cli import app
from hipocampo.datasets import load_beir

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
