"""Readiness: what keeps a migrated database from serving (config not seeded, no calibrated model)."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from ..config import load_config
from .seeding import CONFIG_SECTIONS

log = logging.getLogger("hipocampo.db")


def readiness_problems(conn: psycopg.Connection[Any]) -> list[str]:
    """What keeps this database from serving: an empty list when it is ready.

    Checks that the global config row holds every key of config.toml's seeded sections and every
    model calibration config.toml holds is stored (what :func:`seed_config` writes; a database
    migrated with ``supabase db push`` alone, or migrated by a newer release without re-seeding,
    lacks them and its readers raise 55000), and that an embedding model is active and calibrated.
    Reads ``hipocampo_private`` directly: call it as the owner or service_role (which may read
    it), not as ``authenticated``.

    Returns:
        ``list[str]``: one human line per problem, e.g. ``"config keys not seeded: rag.top_k
        (hipocampo db migrate)"``.

    Raises:
        psycopg.Error: the database cannot be queried.
    """
    cfg = load_config()
    with conn.cursor(row_factory=tuple_row) as cur:
        cur.execute(
            "select (select s.config from hipocampo_private.settings as s where s.tenant_id is null), "
            "(select m.name from hipocampo_private.embedding_models as m where m.active), "
            "(select coalesce(array_agg(c.embedding_model), '{}') from hipocampo_private.model_calibrations as c)"
        )
        row = cur.fetchone()
    seeded: dict[str, Any] = (row[0] if row else None) or {}
    active: str | None = row[1] if row else None
    calibrated: list[str] = list(row[2]) if row else []
    missing = [
        f"{section}.{key}"
        for section in CONFIG_SECTIONS
        if section != "calibration" and isinstance(cfg.get(section), dict)
        for key in cfg[section]
        if not isinstance(seeded.get(section), dict) or key not in seeded[section]
    ] + [f"calibration of {model}" for model in cfg.get("calibration", {}) if model not in calibrated]
    problems = []
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        problems.append(f"config keys not seeded: {shown} (hipocampo db migrate seeds them from config.toml)")
    if active is None:
        problems.append("no active embedding model (hipocampo db migrate registers the configured one)")
    elif active not in calibrated:
        problems.append(f"the active embedding model {active} has no calibration (hipocampo calibrate --write)")
    return problems
