"""Ingestion jobs hold a lease (issue 16 §1.8): a job whose client stopped
sending heartbeats is marked failed (interrupted) and its knowledge base's status recomputed."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from ..conftest import World

Conn = psycopg.Connection[dict[str, Any]]


def one(db: Conn, sql: str, params: tuple[Any, ...] = ()) -> Any:
    row = db.execute(sql, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row["v"]


def job_and_kb(db: Conn, world: World, job: Any) -> tuple[str, str, list[Any]]:
    db.execute("reset role")
    row = db.execute(
        "select j.status, j.errors, k.status as kb from hipocampo_private.ingestion_jobs as j"
        " join hipocampo_private.knowledge_bases as k on k.id = j.kb_id where j.id = %s",
        (job,),
    ).fetchone()
    assert row is not None
    return row["status"], row["kb"], row["errors"]


def crashed_run(db: Conn, world: World) -> Any:
    """An admin's run that stops without finishing (the client was killed)."""
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select hipocampo.set_knowledge_base_status(%s, 'indexing')", (world.kb_a,))
    return one(db, "select hipocampo.start_ingestion_job(%s, 10) as v", (world.kb_a,))


def test_an_expired_job_is_interrupted_and_the_kb_recovers(db: Conn, world: World) -> None:
    job = crashed_run(db, world)
    world.act("service_role")
    # Within the lease (300 s) nothing happens.
    assert one(db, "select hipocampo.recover_ingestion_jobs(now() + interval '4 minutes') as v") == {
        "interrupted": 0,
        "knowledge_bases": 0,
    }
    assert job_and_kb(db, world, job)[:2] == ("running", "indexing")
    world.act("service_role")
    got = one(db, "select hipocampo.recover_ingestion_jobs(now() + interval '6 minutes') as v")
    assert got == {"interrupted": 1, "knowledge_bases": 1}
    status, kb, errors = job_and_kb(db, world, job)
    assert (status, kb) == ("failed", "ready")  # the KB holds the world's documents
    assert errors[-1]["error"].startswith("interrupted: no heartbeat since")


def test_a_heartbeat_renews_the_lease(db: Conn, world: World) -> None:
    job = crashed_run(db, world)
    db.execute("reset role")
    db.execute(
        "update hipocampo_private.ingestion_jobs set heartbeat_at = now() - interval '1 hour' where id = %s", (job,)
    )
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select hipocampo.heartbeat_ingestion_job(%s)", (job,))
    world.act("service_role")
    assert one(db, "select hipocampo.recover_ingestion_jobs() as v")["interrupted"] == 0


def test_the_next_run_recovers_its_kb_and_a_late_heartbeat_is_refused(db: Conn, world: World) -> None:
    job = crashed_run(db, world)
    db.execute("reset role")
    db.execute(
        "update hipocampo_private.ingestion_jobs set heartbeat_at = now() - interval '1 hour' where id = %s", (job,)
    )
    world.act("authenticated", world.admin_a, world.tenant_a)
    new_job = one(db, "select hipocampo.start_ingestion_job(%s, 3) as v", (world.kb_a,))
    assert job_and_kb(db, world, job)[0] == "failed"
    assert job_and_kb(db, world, new_job)[0] == "running"
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.NoDataFound, match="is not running"), db.transaction():
        db.execute("select hipocampo.heartbeat_ingestion_job(%s)", (job,))


def test_an_empty_kb_recovers_as_error(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    kb = one(db, "select hipocampo.create_knowledge_base('vazia') as v")
    db.execute("select hipocampo.set_knowledge_base_status(%s, 'indexing')", (kb,))
    job = one(db, "select hipocampo.start_ingestion_job(%s, 1) as v", (kb,))
    world.act("service_role")
    one(db, "select hipocampo.recover_ingestion_jobs(now() + interval '1 hour') as v")
    assert job_and_kb(db, world, job)[:2] == ("failed", "error")


def test_users_cannot_move_the_clock_or_reach_another_tenant(db: Conn, world: World) -> None:
    job = crashed_run(db, world)
    world.act("authenticated", world.admin_a, world.tenant_a)  # `now` is the service's alone
    assert one(db, "select hipocampo.recover_ingestion_jobs(now() + interval '1 hour') as v")["interrupted"] == 0
    db.execute("reset role")
    db.execute(
        "update hipocampo_private.ingestion_jobs set heartbeat_at = now() - interval '1 hour' where id = %s", (job,)
    )
    world.act("authenticated", world.admin_b, world.tenant_b)
    assert one(db, "select hipocampo.recover_ingestion_jobs() as v")["interrupted"] == 0
    assert job_and_kb(db, world, job)[0] == "running"
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert one(db, "select hipocampo.recover_ingestion_jobs() as v")["interrupted"] == 1
