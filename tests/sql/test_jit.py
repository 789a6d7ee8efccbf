"""hipocampo's RPCs run without JIT compilation (``set jit = off`` on every function of the
hipocampo schema; docs/design.md §SQL conventions). Their statements are short, but the planner's
estimates over arrays and set-returning functions are large enough to cross ``jit_above_cost``
on a server built with LLVM (Debian's PostgreSQL 15 here): history search's lexical leg then spent
about 0.5 s compiling a plan that runs in milliseconds, and the PostgreSQL 15 phase of ``make
test`` took 3.4 times as long on the calibration test. PostgreSQL 19 turns JIT off by default.

The behaviour test needs a server with JIT (``pg_jit_available()``): it runs in ``make
pytest-pg15`` and is skipped on the embedded server, which is built without LLVM; the catalog
test runs everywhere."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from ..conftest import World, unit_vector, vec_text
from .test_conversations import Conn, add

pytestmark = pytest.mark.any_model


def test_every_rpc_sets_jit_off(db: Conn) -> None:
    rows = db.execute(
        "select p.proname from pg_catalog.pg_proc as p"
        " where p.pronamespace = 'hipocampo'::regnamespace"
        " and not coalesce('jit=off' = any(p.proconfig), false) order by 1"
    ).fetchall()
    assert [r["proname"] for r in rows] == []


@pytest.fixture
def notices(db: Conn, world: World) -> Iterator[list[str]]:
    """Every plan the session runs from here, nested statements included, as notices (auto_explain),
    with JIT forced for any plan that allows it (jit_above_cost 0)."""
    row = db.execute("select pg_catalog.pg_jit_available() as v").fetchone()
    if not (row and row["v"]):
        pytest.skip("this server is built without JIT (LLVM): make pytest-pg15 runs this test")
    db.execute("reset role")
    db.execute("load 'auto_explain'")
    for name, value in (
        ("auto_explain.log_min_duration", "0"),
        ("auto_explain.log_nested_statements", "on"),
        ("auto_explain.log_level", "notice"),
        ("jit_above_cost", "0"),
        ("client_min_messages", "notice"),
    ):
        db.execute("select set_config(%s, %s, true)", (name, value))
    seen: list[str] = []
    db.add_notice_handler(lambda d: seen.append(d.message_primary or ""))
    yield seen


TOP = "/* top-level */ "


def compiled_inside(notices: list[str]) -> list[str]:
    """The plans auto_explain logged with a JIT section, but for the statements the test itself
    sent (tagged TOP, or the claims and role the world sets), which run with the session's
    settings and not the function's."""
    mine = ("Query Text: " + TOP, "Query Text: select set_config('request.jwt.claims'", "Query Text: set ")
    return [n[:300] for n in notices if "JIT:" in n and not any(m in n for m in mine)]


def test_history_search_and_hybrid_search_compile_no_plan(db: Conn, world: World, notices: list[str]) -> None:
    # The detector works: a statement outside hipocampo's functions is compiled.
    db.execute(TOP + "select count(*) from hipocampo_private.chunks where id > 0")
    db.execute(TOP + "select 1")  # (a statement's plan reaches the client with the next one)
    assert any("JIT:" in n and "count(*)" in n for n in notices)

    world.act("authenticated", world.member_a, world.tenant_a)
    db.execute(TOP + "select hipocampo.set_memory_consent(true)")
    conv = uuid.uuid4()
    for i, text in enumerate(("Prefiro pintar a sala de azul", "Combinado, azul claro", "E a cozinha?")):
        add(db, conv, "user" if i % 2 == 0 else "assistant", text, embedding=vec_text(unit_vector(40 + i)))
    db.execute(TOP + "select 1")
    notices.clear()
    db.execute(
        TOP + "select * from hipocampo.search_history('qual cor para a sala?', %s::extensions.vector, %s)",
        (vec_text(unit_vector(41)), conv),
    ).fetchall()
    db.execute(
        TOP + "select * from hipocampo.hybrid_search('qual o prazo?', %s::extensions.vector, array[%s]::uuid[])",
        (vec_text(unit_vector(7)), world.kb_a),
    ).fetchall()
    db.execute(TOP + "select 1")
    assert any("_history_contexts" in n for n in notices), "auto_explain logged the functions' statements"
    assert compiled_inside(notices) == []
