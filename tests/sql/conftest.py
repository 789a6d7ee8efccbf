"""Fixtures of the SQL tests."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from ..conftest import World

Conn = psycopg.Connection[dict[str, Any]]


@pytest.fixture
def user_a(db: Conn, world: World) -> World:
    """member_a of tenant A, acting, with consent given."""
    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    return world
