"""Erasure leaves no raw user id anywhere (issue 16 §1.7, §2 "Erasure").

A user (the admin of tenant A, so that every kind of row can name them) uses every part of the
product through the RPCs; the test then reads the catalog and scans every column of every table
in the product's schemas (uuid, text, json, arrays, any type that casts to text) for the raw id:
before erasure it must be found in every table with a column that names a user, after
``erase_user`` nowhere.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from typing import Any

import psycopg
import pytest
from psycopg import sql

from ..conftest import World, unit_vector, vec_text
from .memory_helpers import remember

Conn = psycopg.Connection[dict[str, Any]]

SCHEMAS = ("hipocampo", "hipocampo_private")


def hits(db: Conn, needle: str) -> dict[str, int]:
    """``{"schema.table.column": rows}`` of every column whose text holds ``needle`` (as the owner)."""
    db.execute("reset role")
    columns = db.execute(
        "select n.nspname as s, c.relname as t, a.attname as col"
        " from pg_catalog.pg_attribute as a"
        " join pg_catalog.pg_class as c on c.oid = a.attrelid"
        " join pg_catalog.pg_namespace as n on n.oid = c.relnamespace"
        " where n.nspname = any(%s) and c.relkind in ('r', 'p') and a.attnum > 0 and not a.attisdropped"
        " order by 1, 2, 3",
        (list(SCHEMAS),),
    ).fetchall()
    found: dict[str, int] = {}
    for c in columns:
        q = sql.SQL("select count(*) as n from {}.{} where {}::text like %s").format(
            sql.Identifier(c["s"]), sql.Identifier(c["t"]), sql.Identifier(c["col"])
        )
        row = db.execute(q, (f"%{needle}%",)).fetchone()
        if row and row["n"]:
            found[f"{c['s']}.{c['t']}.{c['col']}"] = row["n"]
    return found


def user_tables(db: Conn) -> set[str]:
    """Tables with a column that names a user (by name: user_id, caller, created_by, bucket)."""
    db.execute("reset role")
    rows = db.execute(
        "select distinct n.nspname || '.' || c.relname as t"
        " from pg_catalog.pg_attribute as a"
        " join pg_catalog.pg_class as c on c.oid = a.attrelid"
        " join pg_catalog.pg_namespace as n on n.oid = c.relnamespace"
        " where n.nspname = any(%s) and c.relkind in ('r', 'p') and a.attnum > 0 and not a.attisdropped"
        " and a.attname in ('user_id', 'caller', 'created_by', 'bucket')",
        (list(SCHEMAS),),
    ).fetchall()
    return {r["t"] for r in rows}


def use_everything(db: Conn, world: World) -> None:
    """The victim uses every part of the product (as PostgREST would call it)."""
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select hipocampo.set_memory_consent(true)")
    remember(db, "prefs.cafe", "preto", "Gosta de café preto", seed=21)
    remember(db, "prefs.cha", "verde", "Gosta de chá verde às vezes", seed=22, intensity=3)
    remember(db, "condominio.regra", "silêncio", "Silêncio depois das 22h", seed=23, scope="tenant_shared")
    conv = uuid.uuid4()
    mid = db.execute("select hipocampo.add_message(%s, 'user', 'Qual o prazo?') as v", (conv,)).fetchone()
    assert mid is not None
    db.execute("select hipocampo.update_conversation_summary(%s, 'Perguntou o prazo', %s)", (conv, mid["v"]))
    s = db.execute("select hipocampo.open_session(%s) as v", (conv,)).fetchone()
    assert s is not None
    sid = s["v"]["session_id"]
    db.execute("select hipocampo.session_add_message(%s, 'user', 'E a multa?')", (sid,))
    db.execute("""select hipocampo.add_pending_confirmation(%s, 'forget', '{"key": "prefs.cafe"}')""", (sid,))
    db.execute("select * from hipocampo.hybrid_search('prazo', %s::extensions.vector)", (vec_text(unit_vector(1)),))
    # That read drained into the access log, a second one still queued (read_queue).
    world.act("service_role")
    db.execute("select hipocampo.drain_read_queue()")
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select * from hipocampo.hybrid_search('multa', %s::extensions.vector)", (vec_text(unit_vector(2)),))
    db.execute("select hipocampo.take_rate_limit()")
    trace = uuid.uuid4()
    db.execute(
        "select hipocampo.record_answer(%s, 'Qual o prazo?', 'REFUSAL', 'low_confidence',"
        " 0.3::real, 4, 3, null, '{}', 12::real, array[%s]::uuid[])",
        (trace, world.kb_a),
    )
    db.execute("select hipocampo.record_feedback(%s, false, 'não respondeu', 'Qual o prazo?')", (trace,))
    job = db.execute("select hipocampo.start_ingestion_job(%s, 1) as v", (world.kb_a,)).fetchone()
    assert job is not None
    db.execute("select hipocampo.export_user_data()")


def test_erasure_leaves_no_raw_user_id(db: Conn, world: World) -> None:
    use_everything(db, world)
    victim = str(world.admin_a)
    db.execute("reset role")
    ref = db.execute("select hipocampo_private._user_ref(%s, %s) as v", (world.tenant_a, world.admin_a)).fetchone()
    assert ref is not None
    before = hits(db, victim)
    pseudonymous = hits(db, ref["v"])  # rate-limit buckets are keyed by the pseudonym
    tables = {k.rsplit(".", 1)[0] for k in {**before, **pseudonymous}}
    missing = user_tables(db) - tables
    assert not missing, f"the test does not write the victim's id into {sorted(missing)}"

    world.act("authenticated", world.admin_a, world.tenant_a)
    counts = db.execute("select hipocampo.erase_user() as v").fetchone()
    assert counts is not None
    after = hits(db, victim)
    assert after == {}, f"raw user id left after erase_user: {after}"
    # What remains is the pseudonymous audit: the user.erased event and the answer audit rows.
    assert hits(db, ref["v"]) == {
        "hipocampo_private.answer_audit.user_ref": 1,
        "hipocampo_private.memory_events.user_ref": 1,
    }


def test_user_ref_is_a_keyed_hmac(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    ref = db.execute("select hipocampo.erase_user() as v").fetchone()
    assert ref is not None
    db.execute("reset role")
    key = db.execute("select value from hipocampo_private.project_secrets where name = 'user_ref_key'").fetchone()
    assert key is not None and len(key["value"]) == 32
    message = f"{world.tenant_a}:{world.member_a}".encode()
    assert ref["v"]["user_ref"] == hmac.new(key["value"], message, hashlib.sha256).hexdigest()
    assert ref["v"]["user_ref"] != hashlib.sha256(message).hexdigest()


@pytest.mark.parametrize(
    ("key", "message"),
    [(b"key", b"The quick brown fox jumps over the lazy dog"), (b"k" * 100, b""), (b"", b"x" * 300)],
)
def test_hmac_matches_the_standard(db: Conn, key: bytes, message: bytes) -> None:
    row = db.execute("select hipocampo_private._hmac_sha256(%s, %s) as v", (key, message)).fetchone()
    assert row == {"v": hmac.new(key, message, hashlib.sha256).digest()}


@pytest.mark.parametrize("role", ["anon", "authenticated"])
def test_the_user_ref_key_is_not_readable_by_clients(db: Conn, world: World, role: str) -> None:
    world.act(role, world.member_a if role == "authenticated" else None, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
        db.execute("select * from hipocampo_private.project_secrets")
    # Nor can a member compute another user's ref (an oracle for re-identification).
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
        db.execute("select hipocampo_private._user_ref(%s, %s)", (world.tenant_a, world.admin_a))
