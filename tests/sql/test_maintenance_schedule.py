"""The periodic jobs with pg_cron (hipocampo.schedule_maintenance).

The embedded server (PostgreSQL 18) has no pg_cron: there the tests check the clear error and
that migrating skipped scheduling. ``make test`` runs the suite again on a PostgreSQL 15 server
with pg_cron enabled before the migrations (tests/scratch_server.py, as a Supabase project that
turned Cron on): there the jobs are checked in ``cron.job``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import psycopg
import pytest

from hipocampo import db as hdb

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]
JOBS = {
    "hipocampo-memory-maintenance": ("17 3 * * *", "select hipocampo.run_memory_maintenance()"),
    "hipocampo-session-purge": ("*/5 * * * *", "select hipocampo.purge_sessions()"),
    "hipocampo-retention-purge": ("37 3 * * *", "select hipocampo.purge_expired()"),
    "hipocampo-transient-purge": ("*/30 * * * *", "select hipocampo.purge_transient_state()"),
    "hipocampo-interrupted-ingestion": ("*/5 * * * *", "select hipocampo.recover_ingestion_jobs()"),
    "hipocampo-read-queue": ("* * * * *", "select hipocampo.drain_read_queue()"),
    "hipocampo-tenant-graphs": ("47 3 * * *", "select hipocampo.build_tenant_graphs()"),
}


def _has_pg_cron(db: Conn) -> bool:
    row = db.execute("select exists (select 1 from pg_extension where extname = 'pg_cron') as v").fetchone()
    return bool(row and row["v"])


@pytest.fixture
def pg_cron(db: Conn) -> None:
    """pg_cron installed on the session's server; the PostgreSQL 15 run must have it."""
    if not _has_pg_cron(db):
        assert not os.environ.get("HIPOCAMPO_TEST_SERVER_URL"), "the PostgreSQL 15 run enables pg_cron"
        pytest.skip("no pg_cron on the embedded PostgreSQL 18; `make test` runs this on PostgreSQL 15")


def _jobs(db: Conn) -> dict[str, tuple[str, str]]:
    rows = db.execute("select jobname, schedule, command from cron.job where jobname like 'hipocampo-%'").fetchall()
    return {r["jobname"]: (r["schedule"], r["command"]) for r in rows}


def test_without_pg_cron_scheduling_is_a_clear_error(db: Conn) -> None:
    if _has_pg_cron(db):
        db.execute("drop extension pg_cron")  # inside the test's transaction, rolled back
    db.execute("savepoint s")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as exc:
        db.execute("select hipocampo.schedule_maintenance()")
    db.execute("rollback to savepoint s")
    assert exc.value.sqlstate == "55000"
    assert exc.value.diag.message_primary == (
        "pg_cron is not installed: enable it (on Supabase: Integrations → Cron), then call"
        " hipocampo.schedule_maintenance() again"
    )
    assert hdb.schedule_maintenance(db) is None  # what `hipocampo db migrate` does: skip cleanly


def test_api_roles_cannot_schedule(db: Conn, act: Any) -> None:
    for role in ("service_role", "authenticated"):
        act(role)
        db.execute("savepoint s")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute("select hipocampo.schedule_maintenance()")
        db.execute("rollback to savepoint s")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute("select hipocampo.schedule_embedding_queue()")
        db.execute("rollback to savepoint s")


@pytest.mark.usefixtures("pg_cron")
def test_migrating_scheduled_the_jobs_from_the_config(db: Conn) -> None:
    assert _jobs(db) == JOBS


@pytest.mark.usefixtures("pg_cron")
def test_rescheduling_follows_the_config_and_keeps_one_job_each(db: Conn) -> None:
    db.execute(
        "update hipocampo_private.settings set config = jsonb_set(config, '{maintenance,memory_cron}', %s)"
        " where tenant_id is null",
        (json.dumps("0 4 * * 0"),),
    )
    row = db.execute("select hipocampo.schedule_maintenance() as v").fetchone()
    assert row is not None and row["v"] == {
        "hipocampo-memory-maintenance": "0 4 * * 0",
        "hipocampo-session-purge": "*/5 * * * *",
        "hipocampo-retention-purge": "37 3 * * *",
        "hipocampo-transient-purge": "*/30 * * * *",
        "hipocampo-interrupted-ingestion": "*/5 * * * *",
        "hipocampo-read-queue": "* * * * *",
        "hipocampo-tenant-graphs": "47 3 * * *",
    }
    assert _jobs(db) == {**JOBS, "hipocampo-memory-maintenance": ("0 4 * * 0", JOBS["hipocampo-memory-maintenance"][1])}


@pytest.mark.usefixtures("pg_cron")
def test_an_incomplete_maintenance_config_is_an_error(db: Conn) -> None:
    db.execute(
        "update hipocampo_private.settings set config = config #- '{maintenance,retention_cron}'"
        " where tenant_id is null"
    )
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as exc:
        db.execute("select hipocampo.schedule_maintenance()")
    assert exc.value.diag.message_primary == (
        "maintenance config is incomplete: seed it from config.toml (hipocampo db migrate)"
    )


def test_tenants_cannot_change_the_schedules(db: Conn, world: Any) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue) as exc:
        db.execute("select hipocampo.set_tenant_config('maintenance', '{\"memory_cron\": \"* * * * *\"}')")
    assert exc.value.diag.message_primary == "maintenance.memory_cron is fixed and cannot be changed per tenant"


def test_the_embed_schedule_needs_pg_cron_pg_net_and_vault(db: Conn) -> None:
    """No server here has pg_net or Supabase Vault: the refusals are what can run (docs/design.md)."""
    db.execute("savepoint s")
    with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as exc:
        db.execute("select hipocampo.schedule_embedding_queue()")
    db.execute("rollback to savepoint s")
    if _has_pg_cron(db):
        assert exc.value.diag.message_primary == (
            "pg_net is not installed: enable it (on Supabase: Database → Extensions → pg_net), then call"
            " hipocampo.schedule_embedding_queue() again"
        )
    else:
        assert exc.value.diag.message_primary == (
            "pg_cron is not installed: enable it (on Supabase: Integrations → Cron), then call"
            " hipocampo.schedule_embedding_queue() again"
        )
    assert exc.value.sqlstate == "55000"
    if _has_pg_cron(db):
        assert "hipocampo-embed-queue" not in _jobs(db)
    row = db.execute(
        "select config -> 'maintenance' ->> 'embed_cron' as cron"
        " from hipocampo_private.settings where tenant_id is null"
    ).fetchone()
    assert row == {"cron": "* * * * *"}
