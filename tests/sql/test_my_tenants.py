"""my_tenants (issue 58 §2): the signed-in user's tenants, their role in each and the current one,
whatever tenant their claims name; nobody else's; not for service_role."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from ..conftest import World

Conn = psycopg.Connection[dict[str, Any]]


def fails(db: Conn, sql: str) -> tuple[str | None, str | None]:
    db.execute("savepoint s")
    with pytest.raises(psycopg.Error) as exc:
        db.execute(sql)
    db.execute("rollback to savepoint s")
    return exc.value.sqlstate, exc.value.diag.message_primary


def test_a_user_of_two_tenants_sees_both_and_which_is_current(db: Conn, world: World) -> None:
    world.act("service_role")
    db.execute("select hipocampo.add_member(%s, %s, 'admin')", (world.tenant_b, world.member_a))
    rows = "select id, role, current from hipocampo.my_tenants() order by name"
    world.act("authenticated", world.member_a, world.tenant_a)
    assert [(r["id"], r["role"], r["current"]) for r in db.execute(rows).fetchall()] == [
        (world.tenant_a, "member", True),
        (world.tenant_b, "admin", False),
    ]
    world.act("authenticated", world.member_a, world.tenant_b)
    assert [(r["id"], r["current"]) for r in db.execute(rows).fetchall()] == [
        (world.tenant_a, False),
        (world.tenant_b, True),
    ]
    # Another user of A sees only their own.
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert [r["id"] for r in db.execute(rows).fetchall()] == [world.tenant_a]


def test_only_a_signed_in_user_lists_tenants(db: Conn, world: World) -> None:
    world.act("service_role")
    assert fails(db, "select * from hipocampo.my_tenants()") == (
        "42501",
        "my_tenants lists a signed-in user's tenants",
    )
    world.act("authenticated", world.outsider, world.tenant_a)  # a tenant claim without a membership
    assert fails(db, "select * from hipocampo.my_tenants()")[0] == "42501"
