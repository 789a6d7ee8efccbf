"""Fixtures of the SQL tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from hipocampo.db import replica

from ..conftest import World

Conn = psycopg.Connection[dict[str, Any]]


@pytest.fixture
def user_a(db: Conn, world: World) -> World:
    """member_a of tenant A, acting, with consent given."""
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    return world


@pytest.fixture(scope="module")
def linked(database_url: str) -> Iterator[str]:
    """The session database linked to itself as its own primary (hipocampo_primary), as a standby
    of it would be; unlinked afterwards."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        replica.link_primary(conn, database_url)
    yield database_url
    with psycopg.connect(database_url, autocommit=True) as conn:
        replica.unlink_primary(conn)
        # What the reads recorded there (committed by the link) about the tests' rolled-back tenants.
        conn.execute(
            "delete from hipocampo_private.read_queue as q"
            " where not exists (select 1 from hipocampo_private.tenants as t where t.id = q.tenant_id)"
        )
