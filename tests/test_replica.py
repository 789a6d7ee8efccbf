"""A real hot standby (issue 46 §2): a streaming replica of the embedded server's binaries, started
with pg_basebackup on loopback. The read RPCs and the dashboard views run on it as users: the same
rows as on the primary, RLS and the caller model intact, and every read recorded on the primary
(through the dblink link) so that the access log misses none of them."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from tools.replica_pair import ReplicaPair

from .conftest import World
from .reads import READS, RECORDED, act_on, reader

# any_model: the reads, not the model, are the subject (make pytest-minilm leaves those tests to the
# default phase; tests/conftest.py); serve's and the edge function's embed the question.
any_model = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]
# Volatile parts of an answer: timestamps the server stamps on reading (a session's expiry).
VOLATILE = {"expires_at", "latency_ms"}


def _actor(conn: Conn) -> Callable[..., None]:
    return lambda *who: act_on(conn, *who)


@pytest.fixture(scope="module")
def pair() -> Iterator[ReplicaPair]:
    servers = ReplicaPair()
    try:
        yield servers.start()
    finally:
        servers.stop()


@pytest.fixture(scope="module")
def data(pair: ReplicaPair) -> dict[str, Any]:
    """Two tenants with data (committed on the primary), tenant A's member with a memory, a
    conversation and a session; replayed on the standby."""
    with psycopg.connect(pair.primary_url, row_factory=dict_row) as conn:
        world = World(conn, _actor(conn))
        args = reader(conn, world)
        conn.commit()
    pair.wait_for_replay()
    return {"world": world, "args": args}


def _read(url: str, who: tuple[Any, ...], sql: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        conn.execute("set transaction_read_only = on")
        _actor(conn)(*who)
        rows = conn.execute(sql, args).fetchall()
        conn.rollback()
    return [_stable(r) for r in rows]


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


@any_model
def test_the_standby_is_a_hot_standby(pair: ReplicaPair, data: dict[str, Any]) -> None:
    with psycopg.connect(pair.standby_url) as conn:
        assert conn.execute("select pg_is_in_recovery()").fetchone() == (True,)
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("select hipocampo.drain_read_queue()")


@any_model
@pytest.mark.parametrize("read", sorted(READS))
def test_a_read_on_the_standby_gives_the_primary_s_rows_and_is_recorded_there(
    pair: ReplicaPair, data: dict[str, Any], read: str
) -> None:
    world: World = data["world"]
    member = ("authenticated", world.member_a, world.tenant_a)
    on_primary = _read(pair.primary_url, member, READS[read], data["args"])
    with psycopg.connect(pair.primary_url, autocommit=True, row_factory=dict_row) as p:
        before = p.execute("select coalesce(max(id), 0) as id from hipocampo_private.read_queue").fetchone()
    assert before is not None
    on_standby = _read(pair.standby_url, member, READS[read], data["args"])
    assert on_standby == on_primary and on_standby
    with psycopg.connect(pair.primary_url, autocommit=True, row_factory=dict_row) as p:
        recorded = p.execute(
            "select rpc, caller, caller_role, tenant_id from hipocampo_private.read_queue where id > %s",
            (before["id"],),
        ).fetchall()
    want = [(RECORDED[read], world.member_a, "authenticated", world.tenant_a)] if read in RECORDED else []
    assert [(r["rpc"], r["caller"], r["caller_role"], r["tenant_id"]) for r in recorded] == want


@any_model
def test_rls_and_the_caller_model_hold_on_the_standby(pair: ReplicaPair, data: dict[str, Any]) -> None:
    world: World = data["world"]
    args = data["args"]
    other = _read(pair.standby_url, ("authenticated", world.member_b, world.tenant_b), READS["hybrid_search"], args)
    assert other and {r["kb_id"] for r in other} == {world.kb_b}
    assert (
        _read(pair.standby_url, ("authenticated", world.member_b, world.tenant_b), READS["lookup_memories"], args) == []
    )
    for who, state in [
        (("authenticated", world.member_b, world.tenant_a), psycopg.errors.InsufficientPrivilege),  # not A's member
        (("anon",), psycopg.errors.InsufficientPrivilege),
    ]:
        with pytest.raises(state):
            _read(pair.standby_url, who, READS["search_memories"], args)


@pytest.mark.parametrize(
    "view",
    ["rag_search_stats", "read_stats", "memory_metrics", "memory_events_daily", "embedding_stats", "rag_answer_stats"],
)
@any_model
def test_the_dashboard_views_read_the_same_on_the_standby(pair: ReplicaPair, data: dict[str, Any], view: str) -> None:
    world: World = data["world"]
    admin = ("authenticated", world.admin_a, world.tenant_a)
    sql = f"select * from hipocampo.{view} order by 1"
    pair.wait_for_replay()
    assert _read(pair.standby_url, admin, sql, {}) == _read(pair.primary_url, admin, sql, {})


@any_model
def test_standby_reads_reach_the_access_log_once_drained(pair: ReplicaPair, data: dict[str, Any]) -> None:
    world: World = data["world"]
    marker = f"prazo {uuid.uuid4().hex[:6]}"
    sql = (
        "select * from hipocampo.hybrid_search(query_text => %(q)s, query_embedding => %(v)s::extensions.vector,"
        " min_similarity => -1)"
    )
    _read(pair.standby_url, ("authenticated", world.member_a, world.tenant_a), sql, {**data["args"], "q": marker})
    with psycopg.connect(pair.primary_url, autocommit=True, row_factory=dict_row) as p:
        p.execute("select hipocampo.drain_read_queue()")
        logged = p.execute(
            "select caller, rpc from hipocampo_private.data_access_log"
            " where query_hash = encode(sha256(convert_to(%s, 'UTF8')), 'hex')",
            (marker,),
        ).fetchall()
    assert logged == [{"caller": world.member_a, "rpc": "hybrid_search"}]


@pytest.fixture(scope="module")
def late_pair() -> Iterator[ReplicaPair]:
    """A standby that applies each transaction 2 s after its commit (recovery_min_apply_delay)."""
    servers = ReplicaPair()
    try:
        yield servers.start("recovery_min_apply_delay=2s")
    finally:
        servers.stop()


@any_model
def test_a_user_reads_their_own_write_from_a_late_replica(late_pair: ReplicaPair) -> None:
    from hipocampo.client import Actor, Hipocampo

    user, other = uuid.uuid4(), uuid.uuid4()
    with Hipocampo(late_pair.primary_url, read_url=late_pair.standby_url, read_your_writes_wait_ms=200) as service:
        tenant = service.create_tenant("Late", f"late-{uuid.uuid4().hex[:6]}", user)
        service.add_member(tenant, other)
        me = service.as_actor(Actor.user(user, tenant))
        me.rpc("set_memory_consent", {"granted": True}, "none")
        late_pair.wait_for_replay()

        def remember(key: str) -> None:
            me.rpc("remember", {"key": key, "value": "1", "description": f"Lembrete {key}", "category": "preference"})

        def keys(client: Hipocampo) -> set[str]:
            return {r["key"] for r in client.rpc("lookup_memories", None, "rows")}

        remember("prefs.a")
        lag = me.replica_status()
        assert lag is not None and lag.in_recovery and lag.lag_bytes > 0  # the write is not replayed yet
        assert keys(me) == {"prefs.a"}  # read from the primary: the replica is 2 s late
        assert me.read_counts == {"replica": 0, "primary": 0, "primary_after_write": 1}
        # Another user, who wrote nothing, reads from the replica at once.
        assert keys(service.as_actor(Actor.user(other, tenant))) == set()
        late_pair.wait_for_replay()
        assert keys(me) == {"prefs.a"}  # replayed: from the replica
        assert me.read_counts == {"replica": 2, "primary": 0, "primary_after_write": 1}


@any_model
def test_a_transaction_that_only_read_does_not_hold_back_the_next_read(late_pair: ReplicaPair) -> None:
    """Only a transaction that wrote (it has an xid) notes an LSN to wait for: one that read does not
    make the actor's next read wait for other users' writes to be replayed."""
    from hipocampo.client import Actor, Hipocampo

    user = uuid.uuid4()
    with Hipocampo(late_pair.primary_url, read_url=late_pair.standby_url, read_your_writes_wait_ms=200) as service:
        tenant = service.create_tenant("Leitor", f"leitor-{uuid.uuid4().hex[:6]}", user)
        late_pair.wait_for_replay()
        me = service.as_actor(Actor.user(user, tenant))
        service.create_tenant("Outro", f"outro-{uuid.uuid4().hex[:6]}", uuid.uuid4())  # WAL the replica lacks
        with me.transaction() as cur:
            cur.execute("select 1")
        me.rpc("lookup_memories", None, "rows")
        assert me.read_counts == {"replica": 1, "primary": 0, "primary_after_write": 0}


@any_model
def test_db_status_shows_the_replica_lag(pair: ReplicaPair, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from hipocampo.cli import app

    monkeypatch.setenv("HIPOCAMPO_DATABASE_URL", pair.primary_url)
    monkeypatch.setenv("HIPOCAMPO_READ_DATABASE_URL", pair.standby_url)
    res = CliRunner().invoke(app, ["db", "status", "--json"])
    assert res.exit_code == 0, res.output
    replica = json.loads(res.output)["replica"]
    assert replica["read_url"] == f"127.0.0.1:{pair.standby_port}/postgres?sslmode=disable"
    assert replica["lag_bytes"] >= 0 and replica["lag_ms"] >= 0


def test_serve_reads_from_the_replica(pair: ReplicaPair, data: dict[str, Any], embedder: Any) -> None:
    from fastapi.testclient import TestClient

    from hipocampo.http import create_app

    from .test_answers import SECRET, token

    world: World = data["world"]
    app = create_app(pair.primary_url, embedder, jwt_secret=SECRET, read_url=pair.standby_url)
    body = {"conversation_id": str(data["args"]["conv"]), "query": "Qual o prazo?", "kb_ids": [str(world.kb_a)]}
    with TestClient(app) as http:
        pack = http.post(
            "/context-pack", json=body, headers={"authorization": "Bearer " + token(world.member_a, world.tenant_a)}
        )
        assert pack.status_code == 200, pack.text
        ready = http.get("/readyz").json()
    assert ready["status"] == "ready" and ready["replica"]["reads"]["replica"] == 1
    assert ready["replica"]["lag_bytes"] >= 0


def test_an_edge_function_reads_from_the_replica_and_its_caller_s_writes_back(
    late_pair: ReplicaPair, embedder: Any
) -> None:
    """memory/lookup reads from the replica (2 s late here); a client that sends back the
    X-Hipocampo-LSN of its write as X-Hipocampo-After-LSN reads that write (from the primary)."""
    import httpx

    from hipocampo.client import Hipocampo

    from .test_edge_functions import EdgeFunction, bearer, token

    user = uuid.uuid4()
    with Hipocampo(late_pair.primary_url) as service:
        tenant = service.create_tenant("Edge", f"edge-{uuid.uuid4().hex[:6]}", user)
    late_pair.wait_for_replay()
    fn = EdgeFunction("memory", late_pair.primary_url, {"HIPOCAMPO_READ_DATABASE_URL": late_pair.standby_url})
    try:
        me = bearer(token("authenticated", user, tenant))
        consent = httpx.post(f"{fn.url}/consent", json={"granted": True}, headers=me)
        assert consent.status_code == 200 and "x-hipocampo-lsn" in consent.headers
        text = "Prefere respostas curtas e diretas"
        body = {"key": "prefs.curtas", "value": True, "description": text, "category": "preference",
                "embedding": list(embedder.embed_query(text))}  # fmt: skip
        written = httpx.post(f"{fn.url}/remember", json=body, headers=me)
        assert written.status_code == 200, written.text
        after = {**me, "X-Hipocampo-After-LSN": written.headers["x-hipocampo-lsn"]}
        stale = httpx.post(f"{fn.url}/lookup", json={}, headers=me).json()["results"]
        fresh = httpx.post(f"{fn.url}/lookup", json={}, headers=after).json()["results"]
        assert ([m["key"] for m in stale], [m["key"] for m in fresh]) == ([], ["prefs.curtas"])
        late_pair.wait_for_replay()
        replayed = httpx.post(f"{fn.url}/lookup", json={}, headers=me).json()["results"]
        assert [m["key"] for m in replayed] == ["prefs.curtas"]
    finally:
        fn.stop()
