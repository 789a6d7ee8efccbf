"""An ingestion job held by its client's session (issue 44 §5): the Python client starts a job on a
session of its own; once that session ends (the process was killed, or the run stopped on an
error) the job is interrupted at once, without waiting for its 300 s lease; a job started without
hold_session (PostgREST's pooled sessions) keeps the lease alone."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg.rows import dict_row

from hipocampo import Hipocampo
from hipocampo.client import Actor


@pytest.fixture
def admin(database_url: str) -> Iterator[tuple[Hipocampo, UUID]]:
    user = uuid.uuid4()
    with Hipocampo(database_url) as root:
        tenant = root.create_tenant("Sessão", f"sessao-{uuid.uuid4().hex[:8]}", user)
        me = root.as_actor(Actor.user(user, tenant))
        kb = me.create_kb("regras")
        try:
            yield me, kb
        finally:
            root.rpc("delete_tenant", {"tenant_id": tenant}, "none")


def job(url: str, job_id: UUID) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        deadline = time.monotonic() + 10  # the ended backend lets its lock go as it exits
        while (
            conn.execute("select hipocampo_private._job_session_alive(%s) as v", (job_id,)).fetchone() == {"v": True}
            and time.monotonic() < deadline
        ):
            time.sleep(0.02)
        conn.execute("select hipocampo.recover_ingestion_jobs()")
        row = conn.execute(
            "select status, session_bound, errors -> -1 ->> 'error' as error,"
            " hipocampo_private._job_session_alive(id) as alive"
            " from hipocampo_private.ingestion_jobs where id = %s",
            (job_id,),
        ).fetchone()
    assert row is not None
    return dict(row)


def test_a_running_job_s_session_keeps_it_running(database_url: str, admin: tuple[Hipocampo, UUID]) -> None:
    me, kb = admin
    j = me.start_job(kb, 3)
    try:
        with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as conn:
            conn.execute("select hipocampo.recover_ingestion_jobs()")
            row = conn.execute(
                "select status, hipocampo_private._job_session_alive(id) as alive"
                " from hipocampo_private.ingestion_jobs where id = %s",
                (j,),
            ).fetchone()
        assert row == {"status": "running", "alive": True}
    finally:
        me.finish_job(j, "succeeded", {"documents_ingested": 3}, [])
    assert job(database_url, j) == {"status": "succeeded", "session_bound": True, "error": None, "alive": False}


def test_a_job_whose_session_ended_is_interrupted_at_once(database_url: str, admin: tuple[Hipocampo, UUID]) -> None:
    me, kb = admin
    j = me.start_job(kb, 3)
    me.end_job_session(j)  # what a killed process's socket does
    got = job(database_url, j)
    assert (got["status"], got["alive"]) == ("failed", False)
    assert got["error"].startswith("interrupted: the session that ran it ended")


def test_a_job_not_held_by_a_session_waits_for_its_lease(database_url: str, admin: tuple[Hipocampo, UUID]) -> None:
    me, kb = admin
    j = UUID(str(me.rpc("start_ingestion_job", {"kb_id": kb, "documents_total": 3})))
    assert job(database_url, j) == {"status": "running", "session_bound": False, "error": None, "alive": False}
    me.rpc("finish_ingestion_job", {"job_id": j, "status": "failed"}, "none")
