"""The configuration methods return typed results (issue 60 §4): each section's values and the
bounds of its keys apart, read as before by key, and nothing lost against the RPC's object."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hipocampo.config_models import ConfigSection, EffectiveConfig, KeyBound, ModelCalibration, RagConfig
from hipocampo.errors import InvalidInputError


def test_effective_config_splits_values_from_bounds_and_loses_nothing(service_client: Any) -> None:
    raw = service_client.rpc("effective_config", {"tenant_id": service_client.actor.tenant_id, "kb_id": None})
    cfg = service_client.effective_config()
    assert isinstance(cfg, EffectiveConfig) and set(cfg.sections) == set(raw)
    retrieval = cfg["retrieval"]
    assert retrieval["match_count"] == raw["retrieval"]["match_count"]
    assert retrieval.bounds["match_count"].range == tuple(raw["retrieval"]["match_count_range"])
    assert "match_count_range" not in retrieval and "match_count_range" not in dict(retrieval.items())
    # A calibrated key's range (not in the global row) is beside it too, as _check_config_patch checks it.
    assert (retrieval.bounds["min_similarity"].range, retrieval.bounds["dense_weight"].range) == ((-1, 1), (0, 100))
    locked = raw["rag"].get("tenant_locked") or []
    assert locked and all(cfg["rag"].bounds[k].tenant_locked for k in locked)
    operator = raw["rag"].get("operator_only") or []
    assert operator and all(cfg["rag"].bounds[k].operator_only for k in operator)
    # The inverse: every value and bound key as the database holds it, 20 still 20 (not 20.0).
    assert json.dumps(cfg.stored(), sort_keys=True) == json.dumps(raw, sort_keys=True)


def test_rag_config_carries_its_knowledge_bases(service_client: Any) -> None:
    kb = service_client.create_kb("typed-config")
    rag = service_client.rag_config(kb)
    assert isinstance(rag, RagConfig) and rag.kb_ids == [kb] and rag.agent is None
    assert isinstance(rag["top_k"], int) and rag.get("no such key", 7) == 7
    raw = service_client.rpc("rag_config", {"kb_id": kb, "agent": None, "tenant_id": service_client.actor.tenant_id})
    assert json.dumps(rag.stored(), sort_keys=True) == json.dumps(raw, sort_keys=True)


def test_overrides_are_values_only(service_client: Any) -> None:
    kb = service_client.create_kb("typed-overrides")
    tenant = service_client.set_tenant_config("rag", {"top_k": 6})
    assert isinstance(tenant, ConfigSection) and tenant.name == "rag" and tenant.values == {"top_k": 6}
    assert tenant.bounds == {}
    assert service_client.set_kb_config(kb, "rag", {"top_k": 3}).values == {"top_k": 3}
    assert service_client.effective_config(kb)["rag"]["top_k"] == 3
    with pytest.raises(InvalidInputError) as exc:
        service_client.set_tenant_config("rag", {"top_k": 10_000})
    assert exc.value.sqlstate == "22003"


def test_a_bound_is_read_only_beside_its_key() -> None:
    """A key that merely ends like a bound key is a value when the section has no key it bounds."""
    section = ConfigSection.parse("x", {"a": 1, "a_range": [0, 2], "b_range": [1, 3], "tenant_locked": ["a"]})
    assert section.values == {"a": 1, "b_range": [1, 3]}
    assert section.bounds == {"a": KeyBound(range=(0, 2), tenant_locked=True)}
    assert section.stored() == {"a": 1, "b_range": [1, 3], "a_range": [0, 2], "tenant_locked": ["a"]}
    assert [type(x) for x in section.bounds["a"].range or ()] == [int, int]  # "0..2" in config show, not 0.0


def test_a_model_calibration_is_typed(database_url: str) -> None:
    """Stored again as it is (a no-op for the session database's other tests)."""
    from hipocampo import Hipocampo

    with Hipocampo(database_url) as root:
        model = root.rpc("active_embedding_model", None, "rows")[0]["name"]
        with root.transaction() as cur:
            row = cur.execute(
                "select config from hipocampo_private.model_calibrations where embedding_model = %s", (model,)
            ).fetchone()
        assert row is not None
        current = row["config"]
        stored = root.set_model_calibration(model, current)
    assert isinstance(stored, ModelCalibration) and stored.model == model and stored.sections == current
