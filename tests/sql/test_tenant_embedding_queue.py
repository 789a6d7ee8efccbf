"""One tenant's embedding queue (issue 45 §6, the hub's page): an admin sees their own rows
waiting, retrying and dead-lettered with the last error, never another tenant's, and requeues
their own dead letters only; a member is refused."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from ..conftest import World

Conn = psycopg.Connection[dict[str, Any]]


def memory_without_vector(db: Conn, world: World, user: Any, tenant: Any) -> str:
    """A memory stored without an embedding (the backfill must embed it)."""
    world.act("authenticated", user, tenant)
    db.execute("select hipocampo.set_memory_consent(true)")
    row = db.execute(
        "select hipocampo.remember('prefs.tone', '\"curto\"'::jsonb, 'Prefere respostas curtas', 'preference') as r"
    ).fetchone()
    assert row is not None and row["r"]["status"] == "created", row
    return str(row["r"]["memory_id"])


def dead_letter(db: Conn, world: World, kind: str, row_id: str) -> None:
    world.act("service_role")
    for _ in range(5):  # maintenance.embedding_max_attempts
        db.execute("select hipocampo.record_embedding_failure(%s, %s, 'HTTP 503 from the provider')", (kind, [row_id]))


def queue(db: Conn, world: World, user: Any, tenant: Any) -> dict[str, Any]:
    world.act("authenticated", user, tenant)
    row = db.execute("select hipocampo.tenant_embedding_queue() as q").fetchone()
    assert row is not None
    return dict(row["q"])


def by_kind(q: dict[str, Any]) -> dict[str, tuple[int, int, int]]:
    return {k["kind"]: (k["waiting"], k["retrying"], k["dead"]) for k in q["kinds"]}


def test_an_admin_sees_their_dead_letters_and_requeues_them(db: Conn, world: World) -> None:
    mine = memory_without_vector(db, world, world.admin_a, world.tenant_a)
    theirs = memory_without_vector(db, world, world.admin_b, world.tenant_b)
    dead_letter(db, world, "memories", mine)
    dead_letter(db, world, "memories", theirs)

    q = queue(db, world, world.admin_a, world.tenant_a)
    assert by_kind(q)["memories"] == (1, 0, 1)
    assert [(d["kind"], d["row_id"], d["attempts"], d["last_error"]) for d in q["dead_letters"]] == [
        ("memories", mine, 5, "HTTP 503 from the provider")
    ]
    assert list(by_kind(q)) == ["chunks", "memories", "memory_staging", "messages"]

    world.act("authenticated", world.admin_b, world.tenant_b)
    assert db.execute("select hipocampo.requeue_tenant_embeddings('memories') as n").fetchone() == {"n": 1}
    assert by_kind(queue(db, world, world.admin_a, world.tenant_a))["memories"] == (1, 0, 1)  # A's stays

    world.act("authenticated", world.admin_a, world.tenant_a)
    assert db.execute("select hipocampo.requeue_tenant_embeddings() as n").fetchone() == {"n": 1}
    q = queue(db, world, world.admin_a, world.tenant_a)
    assert by_kind(q)["memories"] == (1, 0, 0) and q["dead_letters"] == []


def test_members_and_other_tenants_are_refused(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    for sql in ("select hipocampo.tenant_embedding_queue()", "select hipocampo.requeue_tenant_embeddings()"):
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="only tenant admins can"), db.transaction():
            db.execute(sql)
    world.act("authenticated", world.admin_b, world.tenant_b)
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
        db.execute("select hipocampo.tenant_embedding_queue(%s)", (world.tenant_a,))  # a tenant argument


def test_an_unknown_kind_is_refused(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="kind must be"):
        db.execute("select hipocampo.requeue_tenant_embeddings('pdfs')")


def test_service_role_names_the_tenant(db: Conn, world: World) -> None:
    mine = memory_without_vector(db, world, world.admin_a, world.tenant_a)
    dead_letter(db, world, "memories", mine)
    world.act("service_role")
    row = db.execute("select hipocampo.tenant_embedding_queue(%s) as q", (world.tenant_a,)).fetchone()
    assert row is not None and json.dumps(row["q"]).count(mine) == 1
