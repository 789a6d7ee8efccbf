"""hipocampo.build_tenant_graphs: a tenant with many chunks gets an HNSW graph of its own, its
searches walk it, and it is dropped when the tenant shrinks (issue 60 §2)."""

from __future__ import annotations

import json
import re
from typing import Any

import psycopg
import pytest

from ..conftest import MODEL, World
from .test_hybrid_search import explain_nested_statements, logged_plans, search

Conn = psycopg.Connection[dict[str, Any]]


def _graph(tenant: Any) -> str:
    """The tenant graph's name, as _tenant_graph_name gives it."""
    import hashlib

    return f"chunks_hnsw_{hashlib.md5(MODEL.encode()).hexdigest()[:12]}_{str(tenant).replace('-', '')}"


def _min_chunks(db: Conn, n: int | None) -> None:
    """Set (or, with None, remove) the global maintenance.tenant_graph_min_chunks, as the owner."""
    db.execute("reset role")
    if n is None:
        db.execute(
            "update hipocampo_private.settings set config = config #- '{maintenance,tenant_graph_min_chunks}'"
            " where tenant_id is null"
        )
    else:
        db.execute(
            "update hipocampo_private.settings"
            " set config = jsonb_set(config, '{maintenance,tenant_graph_min_chunks}', %s::jsonb)"
            " where tenant_id is null",
            (json.dumps(n),),
        )


def _chunks(db: Conn, tenant: Any) -> int:
    db.execute("reset role")
    row = db.execute(
        "select chunks from hipocampo_private._tenant_model_chunks() where tenant_id = %s and model = %s",
        (tenant, MODEL),
    ).fetchone()
    return int(row["chunks"]) if row else 0


def _graphs(db: Conn) -> set[str]:
    rows = db.execute(
        "select indexname from pg_indexes where schemaname = 'hipocampo_private' and indexname ~ '^chunks_hnsw_'"
    ).fetchall()
    return {r["indexname"] for r in rows}


def _world(db: Conn, world: World) -> None:
    """Tenant A: 60 more chunks in kb_a; tenant B: 500 in kb_b (most of the model's graph). Tenant
    A's searches ask for 2 candidates per leg and set exact_scan_max_rows to 1, so whether the dense
    leg walks or scans is _exact_scan_max's choice alone."""
    world.act("service_role")
    world.ingest(world.kb_a, "many", [f"Artigo {i} do regulamento interno." for i in range(60)], seed=5)
    world.ingest(world.kb_b, "other", [f"Texto {i} de outro inquilino." for i in range(500)], seed=3)
    db.execute(
        "update hipocampo_private.settings set config = %s::jsonb where tenant_id = %s",
        (
            json.dumps({"retrieval": {"exact_scan_max_rows": 1, "candidate_multiplier": 1, "min_candidates": 1}}),
            world.tenant_a,
        ),
    )
    db.execute("reset role")
    db.execute("analyze hipocampo_private.chunks")  # the model graph's reltuples


def _dense_plans(db: Conn, world: World) -> list[str]:
    """The dense leg's plans of one search of tenant A's member (auto_explain)."""
    explain_nested_statements(db)
    plans = logged_plans(db)
    world.act("authenticated", world.member_a, world.tenant_a)
    assert search(db, match_count=2)
    db.execute("reset role")
    dense = [p for p in plans if "with nn as" in p and "document_id" in p]
    assert dense, "the dense leg's statement was not seen"
    return dense


def test_a_large_tenant_gets_a_graph_of_its_own_and_its_search_walks_it(db: Conn, world: World) -> None:
    """Small beside the model's graph, tenant A's scope is scanned exactly (a filtered walk would
    pass B's nodes); once build_tenant_graphs gives A a graph of its own, the scope is measured
    against that graph and the dense leg walks it, not the model's."""
    _world(db, world)
    dense = _dense_plans(db, world)
    assert not any("::extensions.vector(" in p for p in dense), dense
    n_a = _chunks(db, world.tenant_a)
    assert 60 < n_a < _chunks(db, world.tenant_b)
    _min_chunks(db, n_a)
    world.act("service_role")
    out = db.execute("select hipocampo.build_tenant_graphs() as v").fetchone()
    assert out is not None
    built = {(b["tenant_id"], b["model"]): b["chunks"] for b in out["v"]["built"]}
    assert built[(str(world.tenant_a), MODEL)] == n_a and (str(world.tenant_b), MODEL) in built
    assert out["v"]["min_chunks"] == n_a and out["v"]["dropped"] == []
    db.execute("reset role")
    assert {_graph(world.tenant_a), _graph(world.tenant_b)} <= _graphs(db)
    dense = _dense_plans(db, world)
    walked = [p for p in dense if "::extensions.vector(" in p]
    assert walked and all(re.search(rf"Index Scan using {_graph(world.tenant_a)}\b", p) for p in walked), dense
    world.act("service_role")
    again = db.execute("select hipocampo.build_tenant_graphs() as v").fetchone()
    assert again is not None and again["v"]["built"] == [] and again["v"]["dropped"] == []


def test_a_graph_is_dropped_when_its_tenant_holds_less_than_half_the_bound(db: Conn, world: World) -> None:
    _world(db, world)
    n_a, n_b = _chunks(db, world.tenant_a), _chunks(db, world.tenant_b)
    _min_chunks(db, n_a)
    world.act("service_role")
    db.execute("select hipocampo.build_tenant_graphs()")
    _min_chunks(db, min(2 * n_a + 1, 2 * n_b))
    world.act("service_role")
    out = db.execute("select hipocampo.build_tenant_graphs() as v").fetchone()
    assert out is not None and out["v"]["dropped"] == [_graph(world.tenant_a)] and out["v"]["built"] == []
    db.execute("reset role")
    assert _graph(world.tenant_a) not in _graphs(db) and _graph(world.tenant_b) in _graphs(db)
    dense = _dense_plans(db, world)
    assert not any("::extensions.vector(" in p for p in dense), dense


def test_building_needs_the_bound_in_the_config(db: Conn, world: World) -> None:
    _min_chunks(db, None)
    world.act("service_role")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as exc:
        db.execute("select hipocampo.build_tenant_graphs()")
    assert exc.value.diag.message_primary == "maintenance config is incomplete: tenant_graph_min_chunks"


def test_only_a_tenant_graph_is_dropped(db: Conn, world: World) -> None:
    world.act("service_role")
    name = "chunks_embedding_hnsw_" + _graph(world.tenant_a)[12:24]
    with pytest.raises(psycopg.errors.InvalidParameterValue) as exc, db.transaction():
        db.execute("select hipocampo_private._drop_tenant_graph(%s)", (name,))
    assert exc.value.diag.message_primary == f"not a tenant graph: {name}"
    row = db.execute("select hipocampo_private._drop_tenant_graph(%s) as v", (_graph(world.tenant_a),)).fetchone()
    assert row == {"v": False}
