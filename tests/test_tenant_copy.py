"""A tenant exported to a file and imported into another database (issue 46 §3, the offline case):
the same rows (the digest of every table, the derived BM25 tables rebuilt by the triggers), the
same answers to the same reads, identity sequences past the source's, and an import that would
collide, or does not check out, leaves nothing behind."""

from __future__ import annotations

import io
import json
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from hipocampo import db as hdb
from hipocampo.db.tenant_copy import TenantCopyError, export_tenant, import_tenant

from .conftest import World
from .reads import READS, TIMELESS, act_on, reader

Conn = psycopg.Connection[dict[str, Any]]
# Tables that hold a tenant's rows but are not copied: a copy starts with an empty answer cache;
# tenant_moves is the source's record of where its tenants went.
NOT_COPIED = {"answer_cache", "tenant_moves"}


_act = act_on


@pytest.fixture(scope="module")
def source(database_url: str) -> Iterator[dict[str, Any]]:
    """Tenant A of a World committed in the session database, with reads queued and drained (the
    access log, chunk_access), a memory, a conversation and a session; deleted afterwards."""
    with psycopg.connect(database_url, row_factory=dict_row) as conn:
        world = World(conn, lambda *a: _act(conn, *a))
        args = reader(conn, world)
        conn.execute(READS["hybrid_search"], args)
        _act(conn, "service_role")
        conn.execute("select hipocampo.drain_read_queue()")
        _act(conn, "authenticated", world.member_a, world.tenant_a)
        conn.execute(READS["search_memories"], args)  # one read still queued
        conn.commit()
    yield {"world": world, "args": args}
    with psycopg.connect(database_url, autocommit=True) as conn:
        for tenant in (world.tenant_a, world.tenant_b):
            conn.execute("select hipocampo.delete_tenant(%s)", (tenant,))


@pytest.fixture
def target() -> Iterator[str]:
    with hdb.scratch_database("hipocampo_tenant_copy") as url:
        yield url


def _read(url: str, who: tuple[Any, ...], sql: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        _act(conn, *who)
        rows = conn.execute(sql, args).fetchall()
        conn.rollback()
    return rows


def test_the_table_list_covers_every_table_that_holds_a_tenant(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        listed = {r[0] for r in conn.execute("select name from hipocampo_private._tenant_tables()")}
        holding = {
            r[0]
            for r in conn.execute(
                "select c.relname from pg_class as c join pg_namespace as n on n.oid = c.relnamespace"
                " join pg_attribute as a on a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped"
                " where n.nspname = 'hipocampo_private' and c.relkind = 'r'"
            )
        }
    assert listed == (holding - NOT_COPIED) | {"tenants"}


def test_a_tenant_copied_to_another_database_holds_and_answers_the_same(
    database_url: str, source: dict[str, Any], target: str, tmp_path: Path
) -> None:
    world: World = source["world"]
    path = tmp_path / "a.tar.gz"
    manifest = export_tenant(database_url, world.tenant_a, path)
    assert manifest["digest"]["chunks"]["rows"] == 2 and manifest["digest"]["read_queue"]["rows"] == 1
    assert manifest["digest"]["kb_postings"]["rows"] > 0 and manifest["digest"]["data_access_log"]["rows"] == 1
    digest = import_tenant(target, path)
    assert digest == manifest["digest"]  # every table, the derived ones rebuilt by the triggers
    member = ("authenticated", world.member_a, world.tenant_a)
    for read in TIMELESS:
        assert _read(target, member, READS[read], source["args"]) == _read(
            database_url, member, READS[read], source["args"]
        ), read
    # The target's sequences are past the source's: its next rows take new ids.
    with psycopg.connect(target, row_factory=dict_row) as conn:
        _act(conn, *member)
        row = conn.execute("select hipocampo.add_message(%s, 'user', 'E a multa?') as v", (source["args"]["conv"],))
        new_id = row.fetchone()
        conn.commit()
    with psycopg.connect(database_url) as conn:
        top = conn.execute("select max(id) from hipocampo_private.messages").fetchone()
    assert new_id is not None and top is not None and new_id["v"] > top[0]


def test_an_import_that_would_collide_or_differs_keeps_nothing(
    database_url: str, source: dict[str, Any], target: str, tmp_path: Path
) -> None:
    world: World = source["world"]
    path = tmp_path / "a.tar.gz"
    export_tenant(database_url, world.tenant_a, path)
    # A copy whose chunk text was changed on the way: the digest differs, nothing stays.
    tampered = tmp_path / "tampered.tar.gz"
    with tarfile.open(path, "r:gz") as src, tarfile.open(tampered, "w:gz") as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read()  # type: ignore[union-attr]
            if m.name.endswith("_chunks.copy"):
                data = data.replace(b"30 dias", b"90 dias")
            m.size = len(data)
            dst.addfile(m, io.BytesIO(data))
    with pytest.raises(TenantCopyError, match=r"the copy differs from the source in .*chunks") as exc:
        import_tenant(target, tampered)
    assert exc.value.sqlstate == "XX000"
    with psycopg.connect(target) as conn:
        assert conn.execute("select count(*) from hipocampo_private.tenants").fetchone() == (0,)
    import_tenant(target, path)
    with pytest.raises(TenantCopyError, match="is already in the target") as exc:
        import_tenant(target, path)
    assert exc.value.sqlstate == "23505"
    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute("select hipocampo.delete_tenant(%s)", (world.tenant_a,))
        conn.execute("delete from supabase_migrations.schema_migrations where version = (select max(version)"
                     " from supabase_migrations.schema_migrations)")  # fmt: skip
    with pytest.raises(TenantCopyError, match="migrate both to the same version first") as exc:
        import_tenant(target, path)
    assert exc.value.sqlstate == "55000"
    (tmp_path / "junk.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(TenantCopyError, match="not a tenant export") as exc:
        import_tenant(target, tmp_path / "junk.tar.gz")
    assert exc.value.sqlstate == "22023"


def test_an_unknown_tenant_is_not_exported(database_url: str, tmp_path: Path) -> None:
    with pytest.raises(TenantCopyError, match="unknown tenant") as exc:
        export_tenant(database_url, uuid.uuid4(), tmp_path / "x.tar.gz")
    assert exc.value.sqlstate == "P0002"


def test_the_cli_exports_and_imports(source: dict[str, Any], target: str, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hipocampo.cli import app

    world: World = source["world"]
    runner = CliRunner()
    path = tmp_path / "cli.tar.gz"
    out = runner.invoke(app, ["tenant", "export", str(world.tenant_a), str(path), "--json"])
    assert out.exit_code == 0, out.output
    exported = json.loads(out.stdout)
    assert exported["tenant"]["id"] == str(world.tenant_a) and exported["rows"]["chunks"] == 2
    back = runner.invoke(app, ["tenant", "import", str(path), "--to", target, "--json"])
    assert back.exit_code == 0, back.output
    assert json.loads(back.stdout)["rows"] == exported["rows"]
    again = runner.invoke(app, ["tenant", "import", str(path), "--to", target])
    assert again.exit_code == 1 and "is already in the target" in again.output
