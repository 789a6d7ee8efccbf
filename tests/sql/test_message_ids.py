"""Message ids reveal no other tenant's activity (issue 44 §5). With one global sequence, a member
counted every tenant's messages from the gap between two of their own ids. An id is now the
milliseconds since 2026-01-01 (high bits) and a keyed permutation of a private counter (low 10
bits): ids keep the order a session wrote them in, stay below 2^53 (JavaScript's exact integers),
and the gap between two of them is time."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import World

Conn = psycopg.Connection[dict[str, Any]]
EPOCH_MS = "extract(epoch from clock_timestamp() - timestamptz '2026-01-01 00:00:00+00') * 1000"


def add(db: Conn, conversation: uuid.UUID, content: str) -> int:
    row = db.execute(
        "select hipocampo.add_message(conversation_id => %s, role => 'user', content => %s) as id",
        (conversation, content),
    ).fetchone()
    assert row is not None
    return int(row["id"])


def test_the_gap_between_a_member_s_ids_counts_no_other_tenant_s_messages(db: Conn, world: World) -> None:
    mine, theirs = uuid.uuid4(), uuid.uuid4()
    world.act("authenticated", world.member_a, world.tenant_a)
    first = add(db, mine, "primeira")
    world.act("authenticated", world.member_b, world.tenant_b)
    for i in range(200):
        add(db, theirs, f"mensagem {i} do outro condomínio")
    world.act("authenticated", world.member_a, world.tenant_a)
    second = add(db, mine, "segunda")
    assert first < second  # still in order
    assert second - first != 201  # what the global sequence gave: 200 others between
    # Consecutive ids of one member, with nothing between, do not step by a constant either.
    ids = [add(db, mine, f"seguida {i}") for i in range(30)]
    assert ids == sorted(ids) and len(set(ids)) == 30  # in order, also within one millisecond
    steps = {(b - a) % 1024 for a, b in itertools.pairwise(ids)}
    assert len(steps) > 10


def test_an_id_is_the_time_it_was_written(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    got = add(db, uuid.uuid4(), "agora")
    now = db.execute(f"select ({EPOCH_MS})::bigint as ms").fetchone()
    assert now is not None
    assert 0 <= now["ms"] - (got >> 10) < 5_000
    assert got < 2**53  # a JavaScript number holds it exactly


def test_the_low_bits_are_a_permutation_for_each_millisecond(db: Conn) -> None:
    rows = db.execute(
        "select count(distinct hipocampo_private._permuted_low_bits('k', t, n)) as distinct_values,"
        " min(hipocampo_private._permuted_low_bits('k', t, n)) as lo,"
        " max(hipocampo_private._permuted_low_bits('k', t, n)) as hi"
        " from generate_series(0, 1023) as n, (values (1::bigint), (2::bigint)) as v (t) group by t"
    ).fetchall()
    assert rows == [{"distinct_values": 1024, "lo": 0, "hi": 1023}] * 2
    differs = db.execute(
        "select count(*) filter (where hipocampo_private._permuted_low_bits('k', 1, n)"
        " <> hipocampo_private._permuted_low_bits('k', 2, n)) as n from generate_series(0, 1023) as n"
    ).fetchone()
    assert differs is not None and differs["n"] > 900


@pytest.mark.parametrize("role", ["authenticated", "anon"])
def test_nobody_reads_the_permutation_key(db: Conn, world: World, role: str) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    add(db, uuid.uuid4(), "cria a chave")
    world.act(role, world.member_a if role == "authenticated" else None, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute("select key from hipocampo_private.id_keys")


def test_no_id_a_user_can_see_comes_from_a_shared_sequence(db: Conn) -> None:
    """Every bigint id of a table an API role may read is _opaque_id's; the one identity left is the
    read queue's, which no API role reads."""
    identities = db.execute(
        "select c.relname as t from pg_attribute as a join pg_class as c on c.oid = a.attrelid"
        " where c.relnamespace = 'hipocampo_private'::regnamespace and a.attidentity <> '' order by 1"
    ).fetchall()
    assert identities == [{"t": "read_queue"}]
    readable = db.execute(
        "select c.relname as t from pg_class as c where c.relnamespace = 'hipocampo_private'::regnamespace"
        " and c.relname = 'read_queue' and (has_table_privilege('authenticated', c.oid, 'select')"
        " or has_table_privilege('anon', c.oid, 'select'))"
    ).fetchall()
    assert readable == []
    opaque = db.execute(
        "select c.relname as t from pg_attrdef as d join pg_class as c on c.oid = d.adrelid"
        " join pg_attribute as a on a.attrelid = d.adrelid and a.attnum = d.adnum"
        " where a.attname = 'id' and pg_get_expr(d.adbin, d.adrelid) like 'hipocampo_private._opaque_id(%%' order by 1"
    ).fetchall()
    assert [r["t"] for r in opaque] == [
        "chunks",
        "data_access_log",
        "judged_questions",
        "memory_events",
        "messages",
        "settings",
    ]
