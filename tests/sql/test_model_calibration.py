"""Calibration belongs to the embedding model (issue 22 §2): the cosine
thresholds and dense weights are stored per model (hipocampo_private.model_calibrations, seeded
from config.toml's [calibration."<model>"]), the active model's are in force, hybrid_search takes
those of the model it searches, and a model without one is refused with 55000."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from hipocampo.config import load_config
from hipocampo.db import readiness_problems

from ..conftest import MINILM, MODEL, World, at_cosine, calibrate, model_calibration, unit_vector, vec_text

Conn = psycopg.Connection[dict[str, Any]]
OTHER = "calibrated-model-384"
KEYS = {
    "retrieval": {"min_similarity", "dense_weight", "dedupe_threshold", "coverage_dense_boost"},
    "memory": {"context_threshold", "answer_threshold", "duplicate_cosine"},
    "conversations": {"dense_weight"},
    "rag": {"sentence_weight", "sentence_cosine_low", "sentence_cosine_high", "passages_floor"},
}


def other_calibration() -> dict[str, dict[str, float]]:
    cal = model_calibration(MODEL)
    return {
        "retrieval": {**cal["retrieval"], "min_similarity": 0.8, "dense_weight": 1.5},
        "memory": {**cal["memory"], "context_threshold": 0.81, "answer_threshold": 0.85},
        "conversations": {**cal["conversations"], "dense_weight": 0.7},
        "rag": {**cal["rag"], "sentence_weight": 0.5},
    }


def raises(db: Conn, sql: str, params: tuple[Any, ...], sqlstate: str, message: str) -> None:
    db.execute("savepoint s")
    with pytest.raises(psycopg.Error) as exc:
        db.execute(sql, params)  # type: ignore[arg-type]
    db.execute("rollback to savepoint s")
    assert (exc.value.sqlstate, exc.value.diag.message_primary) == (sqlstate, message)


def effective(db: Conn, tenant: Any = None) -> dict[str, Any]:
    row = db.execute("select hipocampo.effective_config(%s) as v", (tenant,)).fetchone()
    assert row is not None
    return dict(row["v"])


def calibrated_values(cfg: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {s: {k: cfg[s][k] for k in keys} for s, keys in KEYS.items()}


def test_the_seed_stores_each_models_calibration_and_the_global_row_none_of_its_keys(db: Conn, world: World) -> None:
    rows = db.execute("select embedding_model, config, source from hipocampo_private.model_calibrations").fetchall()
    stored = {r["embedding_model"]: (r["config"], r["source"]) for r in rows}
    for model, cal in load_config()["calibration"].items():
        assert stored[model] == (cal, "config.toml")
    row = db.execute("select config from hipocampo_private.settings where tenant_id is null").fetchone()
    assert row is not None
    assert [f"{s}.{k}" for s, keys in KEYS.items() for k in keys if k in row["config"][s]] == []
    # The active model's values are the ones in force.
    world.act("authenticated", world.member_a, world.tenant_a)
    assert calibrated_values(effective(db)) == load_config()["calibration"][MODEL]


def test_switching_the_active_model_switches_its_calibration(db: Conn, world: World) -> None:
    world.act("service_role")
    db.execute("select hipocampo.register_embedding_model(%s, 'local', 384)", (OTHER,))
    raises(
        db,
        "select hipocampo.activate_embedding_model(%s)",
        (OTHER,),
        "55000",
        f"embedding model {OTHER} has no calibration: run hipocampo calibrate --model {OTHER} --write",
    )
    db.execute("select hipocampo.set_model_calibration(%s, %s::jsonb)", (OTHER, json.dumps(other_calibration())))
    db.execute("select hipocampo.activate_embedding_model(%s)", (OTHER,))
    world.act("authenticated", world.member_a, world.tenant_a)
    assert calibrated_values(effective(db)) == other_calibration()
    world.act("service_role")
    db.execute("select hipocampo.activate_embedding_model(%s)", (MODEL,))
    world.act("authenticated", world.member_a, world.tenant_a)
    assert calibrated_values(effective(db)) == model_calibration(MODEL)


def test_a_tenant_override_of_a_calibrated_key_wins_over_the_models(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("""select hipocampo.set_tenant_config('retrieval', '{"min_similarity": 0.3}')""")
    assert effective(db)["retrieval"]["min_similarity"] == 0.3
    raises(
        db,
        """select hipocampo.set_tenant_config('retrieval', '{"min_similarity": "high"}')""",
        (),
        "22023",
        "retrieval.min_similarity must be a number",
    )
    # A calibrated key takes the calibration's ranges (stored before).
    for section, patch, message in [
        ("memory", '{"answer_threshold": 50}', "memory.answer_threshold must lie in [-1, 1] (got 50)"),
        ("retrieval", '{"dense_weight": -5}', "retrieval.dense_weight must lie in [0, 100] (got -5)"),
    ]:
        raises(db, "select hipocampo.set_tenant_config(%s, %s::jsonb)", (section, patch), "22003", message)
    world.act("authenticated", world.admin_b, world.tenant_b)
    assert effective(db)["retrieval"]["min_similarity"] == model_calibration(MODEL)["retrieval"]["min_similarity"]


def kb_effective(db: Conn, kb: Any) -> dict[str, Any]:
    row = db.execute("select hipocampo.effective_config(null, %s) as v", (kb,)).fetchone()
    assert row is not None
    return dict(row["v"])


def test_a_knowledge_bases_tuning_is_in_force_only_under_its_model(db: Conn, world: World) -> None:
    """`kb eval --tune --write` stores what it chose under the model it ran with: switching the
    active model switches to that model's calibration (and the knowledge base's tuning for it),
    and back again; a plain override stays above both, whatever the model."""
    world.act("service_role")
    db.execute("select hipocampo.register_embedding_model(%s, 'local', 384)", (OTHER,))
    db.execute("select hipocampo.set_model_calibration(%s, %s::jsonb)", (OTHER, json.dumps(other_calibration())))
    world.act("authenticated", world.admin_a, world.tenant_a)
    set_tuning = "select hipocampo.set_knowledge_base_tuning(%s, %s, %s, %s::jsonb) as v"
    tuned = db.execute(set_tuning, (world.kb_a, MODEL, "retrieval", '{"dense_weight": 1.7}')).fetchone()
    assert tuned is not None and tuned["v"] == {"dense_weight": 1.7}
    db.execute(set_tuning, (world.kb_a, MODEL, "rag", '{"min_confidence": 0.45}'))
    cfg = kb_effective(db, world.kb_a)
    assert (cfg["retrieval"]["dense_weight"], cfg["rag"]["min_confidence"]) == (1.7, 0.45)
    rag = db.execute("select hipocampo.rag_config(%s) as v", (world.kb_a,)).fetchone()
    assert rag is not None and rag["v"]["min_confidence"] == 0.45
    # Another knowledge base and the tenant-wide config keep the model's values.
    assert effective(db)["retrieval"]["dense_weight"] == model_calibration(MODEL)["retrieval"]["dense_weight"]
    world.act("service_role")
    db.execute("select hipocampo.activate_embedding_model(%s)", (OTHER,))
    world.act("authenticated", world.admin_a, world.tenant_a)
    cfg = kb_effective(db, world.kb_a)
    assert cfg["retrieval"]["dense_weight"] == other_calibration()["retrieval"]["dense_weight"]
    assert cfg["rag"]["min_confidence"] == load_config()["rag"]["min_confidence"]
    # hybrid_search reads the tuning of the model it searches (_config_section), not the active one's.
    section = "select hipocampo_private._config_section(%s, %s, 'retrieval', %s) -> 'dense_weight' as v"
    for model, weight in ((MODEL, 1.7), (OTHER, other_calibration()["retrieval"]["dense_weight"])):
        row = db.execute(section, (world.tenant_a, world.kb_a, model)).fetchone()
        assert row is not None and row["v"] == weight
    world.act("service_role")
    db.execute("select hipocampo.activate_embedding_model(%s)", (MODEL,))
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert kb_effective(db, world.kb_a)["retrieval"]["dense_weight"] == 1.7
    db.execute(
        """select hipocampo.set_knowledge_base_config(%s, 'retrieval', '{"dense_weight": 0.9}')""", (world.kb_a,)
    )
    assert kb_effective(db, world.kb_a)["retrieval"]["dense_weight"] == 0.9
    # null removes a tuned key; the last key of a model removes the model's entry.
    db.execute(set_tuning, (world.kb_a, MODEL, "retrieval", '{"dense_weight": null}'))
    db.execute(set_tuning, (world.kb_a, MODEL, "rag", '{"min_confidence": null}'))
    row = db.execute("select tuning from hipocampo_private.knowledge_bases where id = %s", (world.kb_a,)).fetchone()
    assert row is not None and row["tuning"] == {}
    # An empty patch for a model without an entry changes nothing (the fuzzer's 23502, fixed).
    empty = db.execute(set_tuning, (world.kb_a, OTHER, "rag", "{}")).fetchone()
    assert empty is not None and empty["v"] == {}


def test_a_tuning_takes_only_the_model_dependent_keys_of_a_registered_model(db: Conn, world: World) -> None:
    set_tuning = "select hipocampo.set_knowledge_base_tuning(%s, %s, %s, %s::jsonb)"
    world.act("authenticated", world.admin_a, world.tenant_a)
    raises(
        db,
        set_tuning,
        (world.kb_a, MODEL, "rag", '{"top_k": 3}'),
        "22023",
        "rag.top_k is not tuned per model (keys: min_score, min_confidence, sentence_weight, "
        "sentence_cosine_low, sentence_cosine_high, passages_floor)",
    )
    raises(
        db, set_tuning, (world.kb_a, MODEL, "chunking", '{"max_tokens": 3}'), "22023", "unknown key chunking.max_tokens"
    )
    raises(
        db, set_tuning, (world.kb_a, "no-such-model", "rag", "{}"), "P0002", "unknown embedding model: no-such-model"
    )
    raises(
        db,
        set_tuning,
        (world.kb_a, MODEL, "rag", '{"min_confidence": 2}'),
        "22003",
        "rag.min_confidence must lie in [0.3, 0.95] (got 2)",
    )
    raises(db, set_tuning, (world.kb_b, MODEL, "rag", "{}"), "P0002", f"unknown knowledge base: {world.kb_b}")
    world.act("authenticated", world.member_a, world.tenant_a)
    raises(
        db,
        set_tuning,
        (world.kb_a, MODEL, "rag", '{"min_confidence": 0.5}'),
        "42501",
        "only tenant admins can change the tenant's configuration",
    )


def test_a_tenants_tuning_is_in_force_only_under_its_model(db: Conn, world: World) -> None:
    """set_tenant_tuning: the tenant's values for one model sit between
    the model's calibration and the tenant's plain row, for the active model (effective_config) or
    the searched one (_config_section); the memory keys too, which a knowledge base does not take;
    a knowledge base's tuning still wins for that knowledge base."""
    world.act("service_role")
    db.execute("select hipocampo.register_embedding_model(%s, 'local', 384)", (OTHER,))
    db.execute("select hipocampo.set_model_calibration(%s, %s::jsonb)", (OTHER, json.dumps(other_calibration())))
    world.act("authenticated", world.admin_a, world.tenant_a)
    set_tuning = "select hipocampo.set_tenant_tuning(%s, %s, %s::jsonb) as v"
    tuned = db.execute(set_tuning, (MODEL, "memory", '{"answer_threshold": 0.66}')).fetchone()
    assert tuned is not None and tuned["v"] == {"answer_threshold": 0.66}
    db.execute(set_tuning, (MODEL, "retrieval", '{"dense_weight": 0.8}'))
    db.execute(set_tuning, (OTHER, "retrieval", '{"dense_weight": 2.5}'))
    cfg = effective(db)
    assert (cfg["memory"]["answer_threshold"], cfg["retrieval"]["dense_weight"]) == (0.66, 0.8)
    db.execute(
        "select hipocampo.set_knowledge_base_tuning(%s, %s, 'retrieval', '{\"dense_weight\": 1.7}')",
        (world.kb_a, MODEL),
    )
    assert kb_effective(db, world.kb_a)["retrieval"]["dense_weight"] == 1.7
    # Tenant B keeps the model's values.
    world.act("authenticated", world.admin_b, world.tenant_b)
    assert effective(db)["memory"]["answer_threshold"] == model_calibration(MODEL)["memory"]["answer_threshold"]
    # After a switch, the other model's entry; hybrid_search's section reads the searched model's.
    world.act("service_role")
    db.execute("select hipocampo.activate_embedding_model(%s)", (OTHER,))
    world.act("authenticated", world.admin_a, world.tenant_a)
    cfg = effective(db)
    assert (cfg["memory"]["answer_threshold"], cfg["retrieval"]["dense_weight"]) == (
        other_calibration()["memory"]["answer_threshold"],
        2.5,
    )
    section = "select hipocampo_private._config_section(%s, null, 'retrieval', %s) -> 'dense_weight' as v"
    db.execute("reset role")
    for model, weight in ((MODEL, 0.8), (OTHER, 2.5)):
        row = db.execute(section, (world.tenant_a, model)).fetchone()
        assert row is not None and row["v"] == weight
    world.act("service_role")
    db.execute("select hipocampo.activate_embedding_model(%s)", (MODEL,))
    # The tenant's plain row wins over its tuning; null removes a tuned key, the last one the entry.
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("""select hipocampo.set_tenant_config('retrieval', '{"dense_weight": 0.4}')""")
    assert effective(db)["retrieval"]["dense_weight"] == 0.4
    db.execute(set_tuning, (MODEL, "memory", '{"answer_threshold": null}'))
    db.execute(set_tuning, (MODEL, "retrieval", '{"dense_weight": null}'))
    db.execute("reset role")
    row = db.execute("select tuning from hipocampo_private.settings where tenant_id = %s", (world.tenant_a,)).fetchone()
    assert row is not None and row["tuning"] == {OTHER: {"retrieval": {"dense_weight": 2.5}}}


def test_a_tenants_tuning_takes_only_the_model_dependent_keys(db: Conn, world: World) -> None:
    set_tuning = "select hipocampo.set_tenant_tuning(%s, %s, %s::jsonb, %s)"
    world.act("authenticated", world.admin_a, world.tenant_a)
    raises(
        db,
        set_tuning,
        (MODEL, "memory", '{"mmr_lambda": 0.3}', None),
        "22023",
        "memory.mmr_lambda is not tuned per model (keys: context_threshold, answer_threshold, duplicate_cosine)",
    )
    raises(db, set_tuning, (" ", "rag", "{}", None), "P0002", "unknown embedding model:  ")
    raises(
        db,
        set_tuning,
        (MODEL, "conversations", '{"dense_weight": 101}', None),
        "22003",
        "conversations.dense_weight must lie in [0, 100] (got 101)",
    )
    raises(
        db,
        set_tuning,
        (MODEL, "rag", "{}", world.tenant_b),
        "42501",
        "tenant mismatch: the JWT claims name another tenant",
    )
    world.act("authenticated", world.member_a, world.tenant_a)
    raises(
        db,
        set_tuning,
        (MODEL, "rag", '{"min_confidence": 0.5}', None),
        "42501",
        "only tenant admins can change the tenant's configuration",
    )


def _dense_scores(db: Conn, world: World, model: str, query: list[float]) -> list[float | None]:
    rows = db.execute(
        "select dense_score from hipocampo.hybrid_search('biblioteca', %s::extensions.vector, "
        "kb_ids => array[%s]::uuid[], match_count => 10, embedding_model => %s)",
        (vec_text(query), world.kb_a, model),
    ).fetchall()
    return [r["dense_score"] for r in rows]


def test_hybrid_search_takes_the_calibration_of_the_model_it_searches(db: Conn, world: World) -> None:
    world.act("service_role")
    db.execute("select hipocampo.register_embedding_model(%s, 'local', 384)", (OTHER,))
    chunks = [
        {
            "chunk_index": 0,
            "content": "A biblioteca abre às oito horas.",
            "token_count": 6,
            "content_hash": "cal-0",
            "embedding": unit_vector(1),
        },
    ]
    doc = {"title": "cal", "source_uri": "test://cal", "content_hash": "cal"}
    db.execute(
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s)",
        (world.kb_a, json.dumps(doc), json.dumps(chunks), OTHER),
    )
    # A query at cosine 0.6 to the chunk: above MiniLM's floor (0.25), below the other model's (0.8).
    query = at_cosine(1, 2, 0.6)
    world.act("authenticated", world.member_a, world.tenant_a)
    raises(
        db,
        "select * from hipocampo.hybrid_search('biblioteca', %s::extensions.vector, embedding_model => %s)",
        (vec_text(query), OTHER),
        "55000",
        f"embedding model {OTHER} has no calibration: run hipocampo calibrate --model {OTHER} --write",
    )
    world.act("service_role")
    calibrate(db, OTHER, like=MINILM)  # MiniLM's values: the chunk passes the dense floor
    world.act("authenticated", world.member_a, world.tenant_a)
    assert [round(s or 0, 3) for s in _dense_scores(db, world, OTHER, query)] == [0.6]
    world.act("service_role")
    db.execute("select hipocampo.set_model_calibration(%s, %s::jsonb)", (OTHER, json.dumps(other_calibration())))
    world.act("authenticated", world.member_a, world.tenant_a)
    assert _dense_scores(db, world, OTHER, query) == [None]  # found by BM25 only: below 0.8
    # The active model's searches keep theirs.
    assert all(s is None or s >= 0.25 for s in _dense_scores(db, world, MODEL, query))


@pytest.mark.parametrize(
    ("change", "sqlstate", "message"),
    [
        (lambda c: c["memory"].pop("duplicate_cosine"), "22023", "calibration of m lacks memory.duplicate_cosine"),
        (
            lambda c: c["retrieval"].update(match_count=5),
            "22023",
            "unknown calibration key retrieval.match_count (calibrated keys: rag.sentence_weight, "
            "rag.sentence_cosine_low, rag.sentence_cosine_high, rag.passages_floor, memory.context_threshold, "
            "memory.answer_threshold, memory.duplicate_cosine, retrieval.min_similarity, "
            "retrieval.dense_weight, retrieval.dedupe_threshold, retrieval.coverage_dense_boost, "
            "conversations.dense_weight)",
        ),
        (lambda c: c["memory"].update(context_threshold="0.3"), "22023", "memory.context_threshold must be a number"),
        (
            lambda c: c["retrieval"].update(min_similarity=1.5),
            "22003",
            "retrieval.min_similarity must lie in [-1, 1] (got 1.5)",
        ),
        (
            lambda c: c["conversations"].update(dense_weight=-1),
            "22003",
            "conversations.dense_weight must lie in [0, 100] (got -1)",
        ),
        (lambda c: c.update(retrieval=0.25), "22023", "calibration of m must be a json object of sections"),
    ],
)
def test_a_calibration_is_complete_and_in_range(
    db: Conn, world: World, change: Any, sqlstate: str, message: str
) -> None:
    cal = model_calibration(MODEL)
    change(cal)
    world.act("service_role")
    raises(db, "select hipocampo.set_model_calibration('m', %s::jsonb)", (json.dumps(cal),), sqlstate, message)


def test_only_service_role_stores_a_calibration(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("savepoint s")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute("select hipocampo.set_model_calibration('m', %s::jsonb)", (json.dumps(model_calibration()),))
    db.execute("rollback to savepoint s")


def test_the_seed_refuses_a_calibrated_key_in_a_global_section(db: Conn) -> None:
    db.execute("reset role")
    raises(
        db,
        "select hipocampo_private.seed_default_config(%s::jsonb)",
        (json.dumps({"memory": {"context_threshold": 0.4}}),),
        "22023",
        "memory.context_threshold belongs to an embedding model's calibration: "
        'set it in [calibration."<model>".memory]',
    )


def test_readiness_reports_a_missing_calibration(db: Conn) -> None:
    db.execute("reset role")
    assert readiness_problems(db) == []
    db.execute("delete from hipocampo_private.model_calibrations where embedding_model = %s", (MODEL,))
    assert readiness_problems(db) == [
        f"config keys not seeded: calibration of {MODEL} (hipocampo db migrate seeds them from config.toml)",
        f"the active embedding model {MODEL} has no calibration (hipocampo calibrate --write)",
    ]


def test_one_section_merged_alone_is_the_effective_configs(db: Conn, world: World) -> None:
    """_effective_section (what rag_config, answer_evidence and _near_duplicates read: one section,
    not the whole merge) gives effective_config's section, every layer in force: the model's
    calibration, the tenant's tuning and row, the knowledge base's tuning and overrides, the
    calibrated keys' bounds; under another active model, that model's."""
    world.act("service_role")
    db.execute("select hipocampo.register_embedding_model(%s, 'local', 384)", (OTHER,))
    db.execute("select hipocampo.set_model_calibration(%s, %s::jsonb)", (OTHER, json.dumps(other_calibration())))
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select hipocampo.set_tenant_tuning(%s, 'rag', '{\"min_score\": 0.3}'::jsonb)", (MODEL,))
    db.execute("select hipocampo.set_tenant_config('rag', '{\"top_k\": 6}'::jsonb)")
    db.execute(
        "select hipocampo.set_knowledge_base_tuning(%s, %s, 'retrieval', '{\"dense_weight\": 1.7}'::jsonb)",
        (world.kb_a, MODEL),
    )
    db.execute("select hipocampo.set_knowledge_base_config(%s, 'rag', '{\"top_k\": 3}'::jsonb)", (world.kb_a,))
    same = """select s.key, e.v -> s.key = hipocampo_private._effective_section(%s, %s, s.key) as same
              from (select hipocampo.effective_config(null, %s) as v) as e, jsonb_object_keys(e.v) as s (key)"""
    for active in (MODEL, OTHER):
        world.act("service_role")
        db.execute("select hipocampo.activate_embedding_model(%s)", (active,))
        world.act("authenticated", world.admin_a, world.tenant_a)
        for kb in (world.kb_a, None):
            rows = db.execute(same, (world.tenant_a, kb, kb)).fetchall()
            assert len(rows) > 5 and all(r["same"] for r in rows), (active, kb, rows)
    rag = db.execute("select hipocampo.rag_config(%s) as v", (world.kb_a,)).fetchone()
    assert rag is not None and (rag["v"]["top_k"], rag["v"]["min_score"]) == (3, load_config()["rag"]["min_score"])
    world.act("service_role")
    db.execute("select hipocampo.activate_embedding_model(%s)", (MODEL,))
    world.act("authenticated", world.admin_a, world.tenant_a)
    rag = db.execute("select hipocampo.rag_config(%s) as v", (world.kb_a,)).fetchone()
    assert rag is not None and (rag["v"]["top_k"], rag["v"]["min_score"]) == (3, 0.3)


def test_one_section_of_another_tenant_reads_nothing_of_it(db: Conn, world: World) -> None:
    """_effective_section and _config_section are granted to members and take a tenant id: they
    run as the caller, so RLS keeps another tenant's row and knowledge base out (docs/SECURITY.md)."""
    world.act("authenticated", world.admin_b, world.tenant_b)
    db.execute("select hipocampo.set_tenant_config('rag', '{\"top_k\": 7}'::jsonb)")
    db.execute("select hipocampo.set_knowledge_base_config(%s, 'rag', '{\"top_k\": 9}'::jsonb)", (world.kb_b,))
    assert db.execute("select (hipocampo.rag_config(%s) ->> 'top_k')::int as v", (world.kb_b,)).fetchone() == {"v": 9}
    world.act("authenticated", world.member_a, world.tenant_a)
    for kb in (world.kb_b, None):
        row = db.execute(
            "select (hipocampo_private._effective_section(%s, %s, 'rag') ->> 'top_k')::int as v", (world.tenant_b, kb)
        ).fetchone()
        assert row == {"v": load_config()["rag"]["top_k"]}
