"""The read link to the primary holds no power a caller can borrow (issue 57 §1).

Before: after `hipocampo db link-primary`, one read in a read-only transaction left the named
dblink connection ``hipocampo_primary`` open as the owner (a superuser here); dblink's functions were
executable by anon and authenticated, so a member reused it (``select current_user`` answered
``postgres``; ``dblink_exec`` made the member an admin). Now no API role executes any dblink
function, the link logs in as ``hipocampo_read_recorder`` (which may execute
``_enqueue_standby_read`` and nothing else), and the connection lives for one call."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from hipocampo.db import replica

from ..conftest import World
from ..reads import READS, reader

Conn = psycopg.Connection[dict[str, Any]]

ATTACKS = {
    "dblink": "select * from extensions.dblink('hipocampo_primary', 'select current_user') as r (u text)",
    "dblink_exec": "select extensions.dblink_exec('hipocampo_primary',"
    " 'update hipocampo_private.memberships set role = ''admin''')",
    "dblink_connect": "select extensions.dblink_connect('mine', 'hipocampo_primary')",
    "dblink_get_connections": "select extensions.dblink_get_connections()",
}


def _read_only_read(db: Conn, world: World) -> None:
    args = reader(db, world)
    db.execute("set transaction_read_only = on")
    db.execute(READS["search_memories"], args)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("role", ["anon", "authenticated", "service_role"])
def test_no_api_role_reuses_the_link_after_a_read(db: Conn, world: World, linked: str, attack: str, role: str) -> None:
    _read_only_read(db, world)
    who = ("authenticated", world.member_a, world.tenant_a) if role == "authenticated" else (role,)
    world.act(*who)
    with pytest.raises(psycopg.errors.InsufficientPrivilege) as exc:
        db.execute(ATTACKS[attack])
    assert exc.value.diag.message_primary is not None
    assert exc.value.diag.message_primary.startswith("permission denied for function dblink")


def test_no_connection_outlives_the_read(db: Conn, world: World, linked: str) -> None:
    _read_only_read(db, world)
    db.execute("reset role")
    row = db.execute("select extensions.dblink_get_connections() as open").fetchone()
    assert row == {"open": None}


def test_the_link_logs_in_as_the_recorder_not_the_owner(db: Conn, linked: str) -> None:
    db.execute("reset role")
    row = db.execute(
        "select * from extensions.dblink('hipocampo_primary', 'select current_user::text, session_user::text')"
        " as r (cur text, ses text)"
    ).fetchone()
    assert row == {"cur": "hipocampo_read_recorder", "ses": "hipocampo_read_recorder"}
    mapping = db.execute(
        "select umoptions from pg_catalog.pg_user_mappings where srvname = 'hipocampo_primary'"
    ).fetchone()
    assert mapping is not None
    assert "user=hipocampo_read_recorder" in mapping["umoptions"]


@pytest.mark.parametrize(
    "statement",
    [
        "update hipocampo_private.memberships set role = 'admin'",
        "select count(*) from hipocampo_private.chunks",
        "select count(*) from hipocampo_private.read_queue",
        "select hipocampo_private._record_read(null, 'forged', 1, null, 1)",
        "select * from hipocampo.tenant_digest(gen_random_uuid())",
        "select * from extensions.dblink('hipocampo_primary', 'select 1') as r (x integer)",
    ],
)
def test_the_recorder_can_do_nothing_but_append_a_read(db: Conn, statement: str) -> None:
    db.execute("reset role")
    db.execute("set local role hipocampo_read_recorder")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        db.execute(statement)


def test_the_recorder_appends_a_bounded_read(db: Conn, world: World) -> None:
    db.execute("reset role")
    db.execute("set local role hipocampo_read_recorder")
    call = (
        "select hipocampo_private._enqueue_standby_read(%s, %s, 1, null, %s, '{}', '{}', %s, %s, 'authenticated',"
        " null, null) as ok"
    )
    ok = db.execute(call, (world.tenant_a, "search_memories", 1.5, "now", world.member_a)).fetchone()
    assert ok == {"ok": 1}
    for rpc, latency, at in [
        ("search_memories", 1e12, "now"),  # a latency of 31 years
        ("DROP TABLE", 1.0, "now"),
        ("search_memories", 1.0, "2000-01-01"),
    ]:
        with pytest.raises(psycopg.errors.InvalidParameterValue), db.transaction():
            db.execute(call, (world.tenant_a, rpc, latency, at, world.member_a))
    db.execute("reset role")
    queued = db.execute(
        "select rpc, caller from hipocampo_private.read_queue where tenant_id = %s", (world.tenant_a,)
    ).fetchall()
    assert queued == [{"rpc": "search_memories", "caller": world.member_a}]


def test_unlinking_takes_the_recorder_s_login(database_url: str) -> None:
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        replica.link_primary(conn, database_url)
        login = conn.execute("select rolcanlogin from pg_roles where rolname = 'hipocampo_read_recorder'").fetchone()
        assert login == {"rolcanlogin": True}
        replica.unlink_primary(conn)
        login = conn.execute(
            "select rolcanlogin, rolpassword is null as nopass from pg_authid where rolname = 'hipocampo_read_recorder'"
        ).fetchone()
        assert login == {"rolcanlogin": False, "nopass": True}
        conn.rollback()
