"""Seeding: the global config row from config.toml, the configured embedding model, and the pg_cron
schedule of the periodic jobs."""

from __future__ import annotations

import json
import logging
from typing import Any

import psycopg
from psycopg.rows import tuple_row

from ..config import load_config

log = logging.getLogger("hipocampo.db")


# config.toml sections seeded into the global config row (the one place thresholds live).
CONFIG_SECTIONS = (
    "retrieval",
    "chunking",
    "embedding",
    "memory",
    "conversations",
    "sessions",
    "maintenance",
    "rag",
    "context_pack",
    "forbidden_sources",
    # {model: {section: {key: value}}}: each embedding model's calibration, which the seed stores in
    # hipocampo_private.model_calibrations rather than in the global row (issue 22 §2).
    "calibration",
)


def seed_config(conn: psycopg.Connection[Any], *, known_calibration_only: bool = False) -> None:
    """Seed the global config row from config.toml and register the configured embedding model.

    ``known_calibration_only``: leave out the calibration keys the database does not list yet
    (``_calibrated_keys()``): ``make migration``'s database of the applied history, seeded with a
    config.toml that only the migration being written will fit."""
    cfg = load_config()
    defaults = {k: cfg[k] for k in CONFIG_SECTIONS if k in cfg}
    if known_calibration_only and "calibration" in defaults:
        row = conn.execute("select hipocampo_private._calibrated_keys()").fetchone()
        known: dict[str, list[str]] = row[0] if row else {}
        defaults["calibration"] = {
            model: {sec: {k: v for k, v in keys.items() if k in known.get(sec, [])} for sec, keys in sections.items()}
            for model, sections in defaults["calibration"].items()
        }
    emb = cfg.get("embedding", {})
    with conn.transaction():
        conn.execute("select hipocampo_private.seed_default_config(%s::jsonb)", (json.dumps(defaults),))
        has_active = conn.execute(
            "select exists (select 1 from hipocampo_private.embedding_models where active)"
        ).fetchone()
        model, provider = _configured_model(emb)
        conn.execute(
            "select hipocampo.register_embedding_model(%s, %s, %s, %s)",
            (model, provider, int(emb.get("dims", 384)), not (has_active and has_active[0])),
        )


def schedule_maintenance(conn: psycopg.Connection[Any]) -> dict[str, str] | None:
    """Where pg_cron is installed, (re)schedule the periodic jobs from the seeded [maintenance]
    config (``hipocampo.schedule_maintenance()``); returns ``{job name: cron expression}``, or
    None without pg_cron (the embedded server: ``hipocampo worker`` runs the jobs instead).

    Raises:
        psycopg.Error: pg_cron refused a job (e.g. an invalid cron expression in config.toml).
    """
    with conn.transaction(), conn.cursor(row_factory=tuple_row) as cur:
        row = cur.execute("select exists (select 1 from pg_catalog.pg_extension where extname = 'pg_cron')").fetchone()
        if not (row and row[0]):
            return None
        jobs = cur.execute("select hipocampo.schedule_maintenance()").fetchone()
    log.info("pg_cron jobs scheduled: %s", jobs[0] if jobs else {})
    return dict(jobs[0]) if jobs else None


def _configured_model(emb: dict[str, Any]) -> tuple[str, str]:
    provider = str(emb.get("provider", "local"))
    if provider == "local":
        return str(emb.get("model", "all-MiniLM-L6-v2")), provider
    if provider == "azure":
        return str(emb.get("azure_deployment") or emb.get("openai_model")), provider
    return str(emb.get("openai_model", "text-embedding-3-small")), provider
