"""Issue 47 §2: a populated database upgraded from an earlier release to this checkout, as an
operator upgrades one (``hipocampo db migrate``, which applies the pending migrations): it keeps
its rows, answers the same reads, and ends with the catalog a fresh database of this checkout has.

The earlier release is ``UPGRADE_FROM``, a git revision of this repository: the migrations of that
revision build the database, a World (two tenants, their knowledge bases, documents, a memory, a
conversation) is written into it with the RPCs, then this checkout's migrations are applied."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from hipocampo import db as hdb
from hipocampo.db.migrations import apply_migrations, migrations_dir
from tools.catalog import diff, snapshot

from .conftest import World
from .reads import READS, TIMELESS, act_on, reader

# The last landed state before the migrations of 2026-11-28 (issue 47 §1's named steps); it
# becomes the 0.1.0 tag once the release is cut. The test is skipped where the clone lacks it.
UPGRADE_FROM = "122e87d"
ROOT = Path(__file__).resolve().parents[1]
TABLES = ("tenants", "knowledge_bases", "documents", "chunks", "kb_postings", "memories", "messages", "sessions")


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def old_migrations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """supabase/migrations/ as UPGRADE_FROM held it, written to a directory of its own."""
    listing = _git("ls-tree", "--name-only", f"{UPGRADE_FROM}:supabase/migrations")
    if listing.returncode != 0:
        pytest.skip(f"git revision {UPGRADE_FROM} is not in this clone")
    out = tmp_path_factory.mktemp("migrations")
    for name in listing.stdout.split():
        (out / name).write_text(_git("show", f"{UPGRADE_FROM}:supabase/migrations/{name}").stdout, "utf-8")
    return out


@pytest.fixture(scope="module")
def upgraded(database_url: str, old_migrations: Path) -> Iterator[dict[str, Any]]:
    """A database built by UPGRADE_FROM's migrations, populated, read, then upgraded."""
    with hdb.scratch_database("hipocampo_upgrade", migrations=old_migrations) as url:
        with psycopg.connect(url, row_factory=dict_row) as conn:
            world = World(conn, lambda *a: act_on(conn, *a))
            args = reader(conn, world)
            conn.commit()
        before = {read: _read(url, world, read, args) for read in TIMELESS}
        counts = _counts(url)
        result = apply_migrations(url, shim=True)
        yield {"url": url, "world": world, "args": args, "before": before, "counts": counts, "result": result}


def _read(url: str, world: World, read: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    with psycopg.connect(url, row_factory=dict_row) as conn:
        act_on(conn, "authenticated", world.member_a, world.tenant_a)
        rows = conn.execute(READS[read], args).fetchall()
        conn.rollback()
    return rows


def _counts(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return {t: conn.execute(f"select count(*) from hipocampo_private.{t}").fetchone()[0] for t in TABLES}  # type: ignore[index]


def test_the_upgrade_applies_exactly_the_newer_migrations(upgraded: dict[str, Any], old_migrations: Path) -> None:
    old = {p.name.split("_", 1)[0] for p in old_migrations.glob("*.sql")}
    new = {p.name.split("_", 1)[0] for p in migrations_dir().glob("*.sql")}
    assert new > old, "this checkout has no migration newer than the release: nothing to upgrade"
    assert sorted(upgraded["result"].applied) == sorted(new - old)
    assert upgraded["result"].drifted == []


def test_an_upgraded_database_keeps_its_rows_and_answers_the_same(upgraded: dict[str, Any]) -> None:
    assert upgraded["counts"]["chunks"] > 0 and upgraded["counts"]["memories"] > 0
    assert _counts(upgraded["url"]) == upgraded["counts"]
    for read in TIMELESS:
        assert _read(upgraded["url"], upgraded["world"], read, upgraded["args"]) == upgraded["before"][read], read


def test_an_upgraded_database_has_the_catalog_of_a_fresh_one(upgraded: dict[str, Any]) -> None:
    # A database of its own (the session's holds the model indexes other tests create).
    with hdb.scratch_database("hipocampo_fresh") as fresh:
        difference = diff(snapshot(fresh), snapshot(upgraded["url"]), ("fresh", "upgraded"))
    assert difference == "", "\n" + difference[:20000]
