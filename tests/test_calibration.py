"""The calibration rules (issue 22 §2) on distributions whose answers are known, and the command's
refusal of an unknown model. The rules on the real datasets are measured by `hipocampo calibrate`
and benchmarks/calibrate_*.py (docs/BENCHMARKS.md, "Thresholds per embedding model")."""

from __future__ import annotations

import json
import os
import tomllib
import uuid
from pathlib import Path
from typing import Any, cast

import psycopg
import pytest
from typer.testing import CliRunner

from hipocampo import Hipocampo
from hipocampo import db as hdb
from hipocampo.cli import app
from hipocampo.config import load_config
from hipocampo.errors import HipocampoError
from hipocampo.evaluation.calibration import (
    FUSION_WEIGHTS,
    HISTORY_WEIGHTS,
    SENTENCE_LOWS,
    SENTENCE_SPANS,
    SENTENCE_WEIGHTS,
    answer_threshold,
    context_threshold,
    distinct_neighbours,
    duplicate_threshold,
    fusion_weight,
    grid,
    grid_step,
    is_copy,
    similarity_floor,
)
from hipocampo.evaluation.calibration import model_calibration as whole_calibration
from hipocampo.evaluation.datasets import BEIR_SETS, datasets_dir, load_locomo

from .conftest import MODEL, model_calibration


def test_a_new_model_does_not_carry_the_lean_of_another() -> None:
    """Issue 61 §3: retrieval.coverage_dense_boost is a model's own (e5 12, MiniLM 1): a model
    without a calibration carries the default model's other keys, and no lean (1)."""
    cal = {"e5": {"retrieval": {"min_similarity": 0.78, "dense_weight": 1.0, "coverage_dense_boost": 12.0}}}
    out, carried = whole_calibration("new-model", [], cal, "e5")
    assert out["retrieval"] == {"min_similarity": 0.78, "dense_weight": 1.0, "coverage_dense_boost": 1.0}
    assert carried == ["retrieval.dense_weight", "retrieval.min_similarity"]
    own, none = whole_calibration("e5", [], cal, "e5")
    assert own["retrieval"]["coverage_dense_boost"] == 12.0 and none == []


def test_the_floor_counts_questions_in_other_words(embedder: Any) -> None:
    """Issue 61 §3: the dense floor's relevant pairs include the paraphrase sets, one per
    answerable question (its best cosine over the chunks of its article or clause)."""
    from hipocampo.evaluation.calibration import SIMILARITY_SETS, relevant_pairs

    assert {"regulation", "contract"} <= set(SIMILARITY_SETS)
    pairs = {name: relevant_pairs(embedder, name) for name in ("regulation", "contract")}
    assert {k: len(v) for k, v in pairs.items()} == {"regulation": 65, "contract": 66}
    assert all(-1 <= x <= 1 for v in pairs.values() for x in v)


def spread(lo: float, hi: float, n: int = 1000) -> list[float]:
    """``n`` cosines evenly spread over [lo, hi)."""
    return [lo + (hi - lo) * i / n for i in range(n)]


def test_the_grid_follows_the_spread_of_the_evidence_cosines() -> None:
    assert grid_step(spread(0.1, 0.7)) == 0.05  # MiniLM-like: wide
    assert grid_step(spread(0.78, 0.88)) == 0.01  # e5-like: crowded
    assert grid(0.05)[:3] == [0.05, 0.1, 0.15] and grid(0.05)[-1] == 0.95 and len(grid(0.01)) == 99


def test_each_rule_picks_the_documented_value() -> None:
    # A floor may drop at most 0.5 % of the relevant pairs of every set: the stricter set decides.
    assert similarity_floor([spread(0.30, 0.90), spread(0.40, 0.90)], grid(0.05)) == 0.3
    assert similarity_floor([spread(0.30, 0.90), spread(0.20, 0.90)], grid(0.05)) == 0.2
    # Context keeps >= 75 % of the evidence: the 25th percentile, rounded down to the grid.
    assert context_threshold(spread(0.2, 0.6), grid(0.05)) == 0.3
    # Answer keeps <= 1.5 % of the other pairs: above their 98.5th percentile, rounded up.
    assert answer_threshold(spread(0.0, 0.5), grid(0.05)) == 0.5
    assert answer_threshold(spread(0.75, 0.85), grid(0.01)) == 0.85


def test_the_duplicate_rules_count_only_neighbours_that_are_not_copies() -> None:
    paragraph = "o coordenador de curso deverá anexar ao processo todos os documentos do período coberto"
    # The same paragraph filed twice, recased, or inside a longer version of itself: a copy.
    assert is_copy(paragraph, paragraph.upper().replace(" ", "  "))
    assert is_copy(paragraph, paragraph + " e as provas aplicadas pelo professor responsável")
    # The in-person rule beside the distance-learning one shares words, not 90 % of its 5-grams.
    assert not is_copy(paragraph, paragraph.replace("todos os documentos", "o guia didático"))
    texts = [paragraph, paragraph.upper(), "um fato diferente sobre a mesma pessoa", "outro assunto qualquer"]
    vectors = [[1.0, 0.0], [1.0, 0.0], [0.96, 0.28], [0.0, 1.0]]
    # Each text's nearest neighbour that is not a copy: the copy (cosine 1) is skipped.
    assert [round(x, 2) for x in distinct_neighbours(texts, vectors)] == [0.96, 0.96, 0.96, 0.28]
    # Grouped (one speaker each): neighbours inside the group only; a text whose group holds
    # nothing but copies of it is left out.
    assert [round(x, 2) for x in distinct_neighbours(texts, vectors, ["a", "a", "b", "b"])] == [0.28, 0.28]
    # The lowest value with at most the allowed share strictly above it, every set counted.
    assert duplicate_threshold([spread(0.5, 0.95)], 0.001, grid(0.005)) == 0.95
    assert duplicate_threshold([spread(0.5, 0.95), spread(0.5, 0.99)], 0.005, grid(0.005)) == 0.99
    assert duplicate_threshold([[0.999]], 0.001, grid(0.005)) == 0.995  # none: the highest candidate


def test_calibrate_refuses_an_unknown_model() -> None:
    res = CliRunner().invoke(app, ["calibrate", "--model", "bert-base"])
    assert res.exit_code == 1 and "unknown local embedding model" in res.output


def _cache_home(tmp_path: Path) -> str:
    """The user cache calibrate keeps its passage vectors in: make test's, which its phases share
    (HIPOCAMPO_TEST_CACHE_HOME: the PostgreSQL 15 phase embeds the same passages with the same
    model as the default phase, issue 60 §6), or the test's own, empty."""
    return os.environ.get("HIPOCAMPO_TEST_CACHE_HOME") or str(tmp_path / "cache")


def _slice_datasets(target: Path, queries_per_set: int = 12, turns: int = 40) -> None:
    """A small copy of the shared datasets the calibration reads: the first questions of FaQuAD
    and Quati with their relevant passages, and each LoCoMo conversation cut to its first turns
    with the questions whose evidence lies in them."""
    for name in ("faquad", "quati", "scifact"):
        rel, _ = BEIR_SETS[name]
        src, dst = datasets_dir() / rel, target / rel
        (dst / "qrels").mkdir(parents=True)
        lines = (src / "qrels" / "test.tsv").read_text("utf-8").splitlines()
        header, rows = lines[0], [line.split("\t") for line in lines[1:] if line.strip()]
        keep_q = list(dict.fromkeys(r[0] for r in rows if int(r[2]) > 0))[:queries_per_set]
        kept = [r for r in rows if r[0] in keep_q]
        (dst / "qrels" / "test.tsv").write_text("\n".join([header, *["\t".join(r) for r in kept]]) + "\n", "utf-8")
        docs = {r[1] for r in kept}
        for file, ids in (("corpus.jsonl", docs), ("queries.jsonl", set(keep_q))):
            with (src / file).open(encoding="utf-8") as fh:
                out = [line for line in fh if line.strip() and str(json.loads(line)["_id"]) in ids]
            (dst / file).write_text("".join(out), "utf-8")
        if name == "faquad":  # the SQuAD files (answer spans, FaQuAD's split), those questions only
            for file in ("dataset.json", "train.json", "dev.json"):
                squad = json.loads((datasets_dir() / "faquad" / file).read_text("utf-8"))
                for article in squad["data"]:
                    for para in article["paragraphs"]:
                        para["qas"] = [qa for qa in para["qas"] if qa["id"] in keep_q]
                    article["paragraphs"] = [para for para in article["paragraphs"] if para["qas"]]
                squad["data"] = [article for article in squad["data"] if article["paragraphs"]]
                (target / "faquad" / file).write_text(json.dumps(squad), "utf-8")
    conversations = []
    for sample in load_locomo():
        conv = {k: v for k, v in sample["conversation"].items() if not k.startswith("session_")}
        conv |= {"session_1": sample["conversation"]["session_1"][:turns]}
        conv["session_1_date_time"] = sample["conversation"]["session_1_date_time"]
        ids = {t["dia_id"] for t in conv["session_1"]}
        qa = [q for q in sample["qa"] if q.get("evidence") and all(e.strip() in ids for e in q["evidence"])]
        observation = {"session_1_observation": sample["observation"]["session_1_observation"]}
        conversations.append({**sample, "conversation": conv, "qa": qa, "observation": observation})
    (target / "locomo").mkdir()
    (target / "locomo" / "locomo10.json").write_text(json.dumps(conversations), "utf-8")


def test_calibrate_write_makes_the_measured_values_the_models_calibration(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--write puts the measured values into the user's config file (its other tables and comments
    kept, the model's keys with no rule kept) and into the database at once."""
    _slice_datasets(tmp_path / "datasets")
    own_weight = model_calibration(MODEL)["retrieval"]["dense_weight"]
    user = tmp_path / "config.toml"
    user.write_text("# my settings\n[retrieval]\nmatch_count = 7  # more hits\n", "utf-8")
    monkeypatch.setenv("HIPOCAMPO_DATASETS", str(tmp_path / "datasets"))
    monkeypatch.setenv("HIPOCAMPO_CONFIG", str(user))
    monkeypatch.setenv("XDG_CACHE_HOME", _cache_home(tmp_path))
    try:
        res = CliRunner().invoke(app, ["calibrate", "--model", MODEL, "--write", "--json"])
        assert res.exit_code == 0, res.output
        out = json.loads(res.output)
        measured = {
            k: out[k]
            for k in (
                "retrieval.min_similarity",
                "retrieval.dedupe_threshold",
                "memory.context_threshold",
                "memory.answer_threshold",
                "memory.duplicate_cosine",
            )
        }
        expected = load_config()["calibration"][MODEL]  # the user's file now holds the measured values
        assert out["carried_over"] == [] and out["written"] == str(user)
        assert {f"{s}.{k}": expected[s][k] for s, k in (key.split(".") for key in measured)} == measured
        assert expected["retrieval"]["dense_weight"] == own_weight  # no rule: the model's own value kept
        text = user.read_text("utf-8")
        assert text.startswith("# my settings\n[retrieval]\nmatch_count = 7  # more hits\n")
        assert tomllib.loads(text)["calibration"][MODEL] == out["calibration"]
        with psycopg.connect(database_url) as conn:
            row = conn.execute(
                "select config, source from hipocampo_private.model_calibrations where embedding_model = %s", (MODEL,)
            ).fetchone()
        assert row == (out["calibration"], "set_model_calibration") and out["calibration"] == expected
    finally:
        monkeypatch.delenv("HIPOCAMPO_CONFIG")
        with psycopg.connect(database_url) as conn:
            hdb.seed_config(conn)  # config.toml's calibrations again, for the tests after this one


def test_calibrate_weights_chooses_the_fusion_weight_in_a_scratch_database(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 22 §2: the command reproduces the keys that need the real searches too (--weights): the
    two dense weights through hybrid_search and search_history, the answer gate's sentence keys
    through answer_evidence, in a database of its own that is dropped afterwards; before, they
    were carried over."""
    _slice_datasets(tmp_path / "datasets", queries_per_set=6, turns=20)
    monkeypatch.setenv("HIPOCAMPO_DATASETS", str(tmp_path / "datasets"))
    monkeypatch.setenv("XDG_CACHE_HOME", _cache_home(tmp_path))
    with psycopg.connect(database_url) as conn:
        tenants = conn.execute("select count(*) from hipocampo_private.tenants").fetchone()
    res = CliRunner().invoke(app, ["calibrate", "--model", MODEL, "--weights", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["retrieval.dense_weight"] in FUSION_WEIGHTS
    assert out["calibration"]["retrieval"]["dense_weight"] == out["retrieval.dense_weight"]
    assert out["conversations.dense_weight"] in HISTORY_WEIGHTS
    assert out["calibration"]["conversations"]["dense_weight"] == out["conversations.dense_weight"]
    assert out["rag.sentence_weight"] in (0.0, *SENTENCE_WEIGHTS)
    low, high = out["rag.sentence_cosine_low"], out["rag.sentence_cosine_high"]
    assert low in SENTENCE_LOWS and round(high - low, 2) in SENTENCE_SPANS
    assert {k: out["calibration"]["rag"][k] for k in ("sentence_weight", "sentence_cosine_low")} == {
        "sentence_weight": out["rag.sentence_weight"],
        "sentence_cosine_low": low,
    }
    assert out["written"] is None
    with psycopg.connect(database_url) as conn:
        left = "select count(*) from pg_database where datname like 'hipocampo\\_calibration\\_%'"
        assert conn.execute(left).fetchone() == (0,)
        assert conn.execute("select count(*) from hipocampo_private.tenants").fetchone() == tenants


def test_fusion_weight_deletes_its_tenant_when_the_search_fails(
    database_url: str, embedder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model without a calibration: ingestion works, hybrid_search refuses it (55000), and the
    scratch tenant with its chunks is gone all the same (on a slice of Quati: the refusal comes at
    the first search, whatever the corpus)."""
    _slice_datasets(tmp_path / "datasets", queries_per_set=3)
    monkeypatch.setenv("HIPOCAMPO_DATASETS", str(tmp_path / "datasets"))

    class Uncalibrated:
        model_name = f"uncalibrated-{uuid.uuid4().hex[:8]}"
        provider, dims, model_version = "local", embedder.dims, "test"

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [list(v) for v in embedder.embed_documents(texts)]

        def embed_query(self, text: str) -> list[float]:
            return list(embedder.embed_query(text))

    model = Uncalibrated()
    with Hipocampo(database_url) as root:
        root.rpc("register_embedding_model", {"name": model.model_name, "provider": "local", "dims": model.dims})
        before = root.list_tenants()
        with pytest.raises(HipocampoError) as err:
            fusion_weight(root, cast(Any, model), 0.25, sets=("quati",), weights=(0.5,))
        assert err.value.sqlstate == "55000"
        assert root.list_tenants() == before
    with psycopg.connect(database_url) as conn:
        assert conn.execute(
            "select count(*) from hipocampo_private.chunks where embedding_model = %s", (model.model_name,)
        ).fetchone() == (0,)
