"""A tenant moved online to another database (issue 46 §3): two servers of the embedded binaries
with wal_level = logical, the tenant's member writing (messages, memories) all through the copy;
after the move every write that succeeded is on the target once, the digests agree table by table,
the same reads answer the same, the target's ids do not collide, the source refuses the moved
tenant's users and still serves the other tenant, and --finish deletes what stayed behind."""

from __future__ import annotations

import json
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from hipocampo.db.tenant_move import TenantMoveError, finish_move, move_tenant
from tools.replica_pair import ReplicaPair

from .conftest import World
from .reads import READS, TIMELESS, reader
from .test_tenant_copy import _act, _read

pytestmark = pytest.mark.any_model


@pytest.fixture(scope="module")
def servers() -> Iterator[ReplicaPair]:
    pair = ReplicaPair()
    try:
        yield pair.start_two_primaries("wal_level=logical")
    finally:
        pair.stop()


@pytest.fixture(scope="module")
def data(servers: ReplicaPair) -> dict[str, Any]:
    with psycopg.connect(servers.primary_url, row_factory=dict_row) as conn:
        world = World(conn, lambda *a: _act(conn, *a))
        args = reader(conn, world)
        conn.commit()
    return {"world": world, "args": args}


class Writer(threading.Thread):
    """Tenant A's member adding messages and memories on the source until stopped; keeps the ids
    of the writes that succeeded and the errors of those refused."""

    def __init__(self, url: str, world: World, conv: Any) -> None:
        super().__init__()
        self.url, self.world, self.conv = url, world, conv
        self.stop = threading.Event()
        self.messages: list[int] = []
        self.refused: list[str] = []

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            n = 0
            while not self.stop.is_set():
                n += 1
                try:
                    with conn.transaction():
                        _act(conn, "authenticated", self.world.member_a, self.world.tenant_a)  # type: ignore[arg-type]
                        row = conn.execute(
                            "select hipocampo.add_message(%s, 'user', %s)", (self.conv, f"mensagem {n}")
                        ).fetchone()
                    assert row is not None
                    self.messages.append(int(row[0]))
                except psycopg.Error as exc:
                    self.refused.append(f"{exc.sqlstate} {exc.diag.message_primary}")
                    if exc.sqlstate == "42501":  # the membership is gone: moved
                        return
                    time.sleep(0.01)  # 55000: moving, retry in a moment


def test_a_tenant_moves_online_with_writes_during_the_copy(servers: ReplicaPair, data: dict[str, Any]) -> None:
    world: World = data["world"]
    args = data["args"]
    member = ("authenticated", world.member_a, world.tenant_a)
    before = {r: _read(servers.primary_url, member, READS[r], args) for r in TIMELESS}
    writer = Writer(servers.primary_url, world, args["conv"])
    writer.start()
    try:
        out = move_tenant(servers.primary_url, world.tenant_a, servers.standby_url)
    finally:
        writer.stop.set()
        writer.join(30)
    assert writer.messages, "the member wrote during the copy"
    wrote, refused = len(writer.messages), len(writer.refused)
    print(f"moved: {wrote} writes during the copy, {refused} refused, writes paused {out['freeze_ms']:.0f} ms")
    with psycopg.connect(servers.standby_url) as t:
        moved = {r[0] for r in t.execute("select id from hipocampo_private.messages where tenant_id = %s",
                                         (world.tenant_a,))}  # fmt: skip
        assert set(writer.messages) <= moved  # every write that succeeded, on the target
        digest = t.execute("select hipocampo.tenant_digest(%s)", (world.tenant_a,)).fetchone()
    assert digest is not None and digest[0] == out["digest"] and out["freeze_ms"] < 30_000
    # Refused only with the freeze's 55000 or, after the cut-over, the gone membership's 42501.
    assert all(r.startswith(("55000 tenant", "42501 no tenant")) for r in writer.refused), writer.refused
    # The same reads answer the same on the target (the writer's messages aside: history read first).
    for r in TIMELESS:
        if r not in ("search_history", "conversation_context"):
            assert _read(servers.standby_url, member, READS[r], args) == before[r], r
    # The target's next ids are past the source's.
    with psycopg.connect(servers.standby_url, row_factory=dict_row) as t:
        _act(t, *member)
        new = t.execute("select hipocampo.add_message(%s, 'user', 'no destino') as v", (args["conv"],)).fetchone()
        t.commit()
    assert new is not None and new["v"] > max(writer.messages)
    # The source refuses the moved tenant's users, and still serves the other tenant.
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        _read(servers.primary_url, member, READS["search_memories"], args)
    other = ("authenticated", world.member_b, world.tenant_b)
    assert _read(servers.primary_url, other, READS["hybrid_search"], args)
    with psycopg.connect(servers.primary_url) as s:
        _act(s, *other)  # type: ignore[arg-type]
        s.execute("select hipocampo.add_message(%s, 'user', 'outro inquilino')", (uuid.uuid4(),))
        s.commit()
        left = s.execute("select count(*) from pg_publication").fetchone()
    assert left == (0,)
    _the_cli_serves_the_moved_tenant_from_its_database(servers, world)
    deleted = finish_move(servers.primary_url, world.tenant_a)
    assert deleted["tenant_id"] == str(world.tenant_a)
    with psycopg.connect(servers.primary_url) as s:
        assert s.execute("select count(*) from pg_trigger where tgname = 'hipocampo_moving'").fetchone() == (0,)


def test_a_move_that_cannot_start_or_fails_changes_nothing(servers: ReplicaPair, data: dict[str, Any]) -> None:
    world: World = data["world"]
    with pytest.raises(TenantMoveError, match="is already in the target") as exc:
        move_tenant(servers.standby_url, world.tenant_a, servers.standby_url)
    assert exc.value.sqlstate == "23505"
    with pytest.raises(TenantMoveError, match="unknown tenant"):
        move_tenant(servers.primary_url, uuid.uuid4(), servers.standby_url)
    with pytest.raises(TenantMoveError, match="has not been moved"):
        finish_move(servers.primary_url, world.tenant_b)
    # A move that fails midway (here: no time to copy) is undone on both sides.
    with pytest.raises(TenantMoveError, match="timed out waiting for the initial copy") as exc:
        move_tenant(servers.primary_url, world.tenant_b, servers.standby_url, timeout_s=0)
    assert exc.value.sqlstate == "57014"
    with psycopg.connect(servers.primary_url) as s:
        assert s.execute("select count(*) from pg_publication").fetchone() == (0,)
        assert s.execute("select count(*) from pg_replication_slots").fetchone() == (0,)
        full = s.execute(
            "select count(*) from pg_class"
            " where relnamespace = 'hipocampo_private'::regnamespace and relreplident = 'f'"
        )
        assert full.fetchone() == (0,)
        assert s.execute("select count(*) from pg_trigger where tgname = 'hipocampo_moving'").fetchone() == (0,)
    with psycopg.connect(servers.standby_url) as t:
        assert t.execute("select count(*) from pg_subscription").fetchone() == (0,)
        assert t.execute(
            "select count(*) from hipocampo_private.tenants where id = %s", (world.tenant_b,)
        ).fetchone() == (0,)
    with psycopg.connect(servers.primary_url) as s:
        assert s.execute("select count(*) from hipocampo_private.tenant_moves where moved_at is null").fetchone() == (
            0,
        )


def _the_cli_serves_the_moved_tenant_from_its_database(servers: ReplicaPair, world: World) -> None:
    """[database.tenants] names the tenant's new database: the CLI reads and writes it there."""
    from typer.testing import CliRunner

    from hipocampo.cli import app

    with psycopg.connect(servers.primary_url) as s:
        row = s.execute("select slug from hipocampo_private.tenants where id = %s", (world.tenant_a,)).fetchone()
    assert row is not None
    slug = row[0]
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "config.toml"
        config.write_text(f'[database.tenants]\n"{slug}" = "{servers.standby_url}"\n', "utf-8")
        env = {"HIPOCAMPO_CONFIG": str(config), "HIPOCAMPO_DATABASE_URL": servers.primary_url}
        runner = CliRunner()
        made = runner.invoke(app, ["kb", "create", "so-no-destino", "--tenant", slug, "--json"], env=env)
        assert made.exit_code == 0, made.output
        listed = runner.invoke(app, ["kb", "list", "--tenant", slug, "--json"], env=env)
    assert "so-no-destino" in {k["name"] for k in json.loads(listed.stdout)}
    with psycopg.connect(servers.primary_url) as s:
        here = s.execute("select count(*) from hipocampo_private.knowledge_bases where name = 'so-no-destino'")
        assert here.fetchone() == (0,)
