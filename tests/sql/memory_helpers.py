"""Helpers shared by the memory SQL tests: call remember with named arguments, read events."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from ..conftest import World, unit_vector, vec_text

Conn = psycopg.Connection[dict[str, Any]]


def remember(
    db: Conn,
    key: str,
    value: Any,
    description: str,
    category: str | None = "preference",
    seed: int | None = None,
    **named: Any,
) -> dict[str, Any]:
    args = {
        "key": key,
        "value": json.dumps(value),
        "description": description,
        "category": category,
        "embedding": vec_text(unit_vector(seed if seed is not None else hash(key) % 10_000)),
        **named,
    }
    casts = {
        "value": "::jsonb",
        "embedding": "::extensions.vector",
        "tags": "::text[]",
        "intensity": "::numeric",
        "expires_at": "::timestamptz",
    }
    sql = ", ".join(f"{k} => %({k})s{casts.get(k, '')}" for k in args)
    row = db.execute(f"select hipocampo.remember({sql}) as r", args).fetchone()
    assert row is not None
    return dict(row["r"])


def events(db: Conn, world: World, event: str) -> list[dict[str, Any]]:
    world.act("service_role")
    rows = db.execute(
        "select * from hipocampo_private.memory_events where tenant_id = %s and event = %s order by id",
        (world.tenant_a, event),
    ).fetchall()
    return rows
