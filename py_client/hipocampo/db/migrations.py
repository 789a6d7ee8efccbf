"""Migrations: the local shim, ``supabase/migrations/`` applied and recorded as the Supabase CLI
records them, the baseline a database of the squashed history adopts, and the data files."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg

from ..errors import HipocampoError
from ..resources import sql_dir
from .seeding import schedule_maintenance, seed_config

log = logging.getLogger("hipocampo.db")


# Advisory-lock key serialising concurrent migration runs ("hipocampo" in ASCII, truncated).
_MIGRATION_LOCK = 0x686970_6F63
# The baseline of release 0.1.0 replaced every migration before it, the last of them
# SQUASHED_THROUGH (issue 47 §2, tools/squash.py): a database migrated with all of them already
# holds the baseline's schema.
BASELINE = "20261128154738"
SQUASHED_THROUGH = "20261128143333"


def migrations_dir() -> Path:
    """The migrations: ``supabase/migrations`` of the checkout, or the wheel's copy."""
    return sql_dir("migrations")


@dataclass(frozen=True)
class MigrationResult:
    """Versions applied by one run (``applied``), those found already recorded (``skipped``), and
    the recorded ones whose file no longer matches what was applied (``drifted``: a landed
    migration was edited; the database may lack what the file now defines)."""

    applied: list[str]
    skipped: list[str]
    drifted: list[str] = field(default_factory=list)


def _shim_sql() -> str:
    return resources.files("hipocampo.db").joinpath("shim/supabase_local.sql").read_text("utf-8")


def apply_migrations(url: str, *, shim: bool, directory: Path | None = None, seed: bool = True) -> MigrationResult:
    """Apply the local shim (``shim=True``, embedded server only) and every pending migration of
    ``directory`` (default :func:`migrations_dir`).

    Each migration runs in its own transaction and is recorded in
    ``supabase_migrations.schema_migrations`` (version, name, statements) as the Supabase CLI
    records it; concurrent runs are serialised by an advisory lock. Then the global config row is
    seeded from config.toml, the configured embedding model registered and, where pg_cron is
    installed, the periodic jobs scheduled (:func:`schedule_maintenance`). ``seed=False`` leaves
    out the config seed and the jobs (``make migration``'s database of the applied history, which
    this checkout's config.toml may not fit yet).

    Raises:
        psycopg.Error: a migration failed; it is rolled back and nothing after it runs.
    """
    applied: list[str] = []
    skipped: list[str] = []
    drifted: list[str] = []
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("select pg_advisory_lock(%s)", (_MIGRATION_LOCK,))
        try:
            if shim:
                with conn.transaction():
                    conn.execute(_shim_sql())  # type: ignore[arg-type,unused-ignore]
            with conn.transaction():
                conn.execute("create schema if not exists supabase_migrations")
                conn.execute(
                    "create table if not exists supabase_migrations.schema_migrations "
                    "(version text primary key, statements text[], name text)"
                )
            done: dict[str, list[str] | None] = {
                r[0]: r[1]
                for r in conn.execute("select version, statements from supabase_migrations.schema_migrations")
            }
            _adopt_baseline(conn, done)
            for file in sorted((directory or migrations_dir()).glob("*.sql")):
                version, _, name = file.stem.partition("_")
                sql = file.read_text("utf-8")
                if version in done:
                    skipped.append(version)
                    # Recorded by hipocampo: one statement, the whole file (the Supabase CLI splits
                    # statements its own way; those rows are not compared).
                    recorded = done[version]
                    if recorded is not None and len(recorded) == 1 and recorded[0] != sql:
                        drifted.append(version)
                        log.warning(
                            "migration %s_%s differs from what this database applied: a landed migration"
                            " was edited; add a new migration for the change (a local database:"
                            " `hipocampo db reset`)",
                            version,
                            name,
                        )
                    continue
                with conn.transaction():
                    conn.execute(sql)  # type: ignore[arg-type,unused-ignore]
                    conn.execute(
                        "insert into supabase_migrations.schema_migrations "
                        "(version, statements, name) values (%s, %s, %s)",
                        (version, [sql], name),
                    )
                log.info("applied migration %s_%s", version, name)
                applied.append(version)
            run_data_files(conn)
            if seed:
                seed_config(conn)
                schedule_maintenance(conn)
        finally:
            conn.execute("select pg_advisory_unlock(%s)", (_MIGRATION_LOCK,))
    return MigrationResult(applied, skipped, drifted)


def _adopt_baseline(conn: psycopg.Connection[Any], done: dict[str, list[str] | None]) -> None:
    """Record the baseline as applied on a database the squashed history built (every version up
    to SQUASHED_THROUGH recorded), instead of running it over the objects it already has.

    Raises:
        HipocampoError: the database has part of the squashed history only: it must be migrated
            with hipocampo of the commit before the squash first, or reset (``hipocampo db reset``).
    """
    old = sorted(v for v in done if v < BASELINE)
    if BASELINE in done or not old:
        return
    if old[-1] != SQUASHED_THROUGH:
        raise HipocampoError(
            f"this database was migrated up to {old[-1]} of the history the baseline {BASELINE} replaced "
            f"(through {SQUASHED_THROUGH}): migrate it with hipocampo of the commit before the squash first, "
            "or reset it (hipocampo db reset)"
        )
    sql = next(migrations_dir().glob(f"{BASELINE}_*.sql")).read_text("utf-8")
    with conn.transaction():
        conn.execute(
            "insert into supabase_migrations.schema_migrations (version, statements, name) values (%s, %s, %s)",
            (BASELINE, [sql], "baseline"),
        )
    done[BASELINE] = [sql]
    log.info("recorded the baseline %s: this database has the squashed history through %s", BASELINE, old[-1])


def data_files_dir() -> Path:
    """``supabase/data/``: idempotent SQL files that set up data the schema does not carry (e.g. the
    project's HMAC key), run in name order after the migrations or the schema files."""
    return sql_dir("data")


def run_data_files(conn: psycopg.Connection[Any]) -> None:
    """Run every ``supabase/data/*.sql`` file (idempotent), each in its own transaction."""
    for file in sorted(data_files_dir().glob("*.sql")):
        with conn.transaction():
            conn.execute(file.read_text("utf-8"))  # type: ignore[arg-type,unused-ignore]
