"""Issue 47 §2: a populated database upgraded from an earlier release to this checkout, as an
operator upgrades one (``hipocampo db migrate``, which applies the pending migrations): it keeps
its rows, answers the same reads, and ends with the catalog a fresh database of this checkout has.

The earlier release is ``UPGRADE_FROM``, a git tag of this repository: the migrations of that
revision build the database, a World (two tenants, their knowledge bases, documents, a memory, a
conversation) is written into it with the RPCs, then this checkout's migrations are applied."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from hipocampo import db as hdb
from hipocampo.db.migrations import BASELINE, apply_migrations, migrations_dir
from tools.catalog import diff, snapshot

from .conftest import World
from .reads import READS, TIMELESS, act_on, reader

# The release a deployed database may hold. A clone without tags finds it as the commit that added
# its baseline (hipocampo.db.migrations.BASELINE); the test is skipped where the clone has neither.
UPGRADE_FROM = "0.1.0"
# Columns the migrations after the release remove from a read's rows on purpose (CHANGELOG.md,
# Unreleased): the dead memories.emotional_embedding, which lookup_memories' rows carried.
REMOVED = {"lookup_memories": {"emotional_embedding"}}
# What the newer migrations add to a read's answer on purpose (CHANGELOG.md, Unreleased), as dotted
# paths into its rows: left out of the upgraded answer before it is compared.
ADDED = {
    "answer_evidence": {
        "answer_evidence.top_similarity",
        "answer_evidence.passages",
        "answer_evidence.reply",
        "answer_evidence.config.passages_floor",
        # Each calibrated key's range beside it, as every other key's bound (issue 58 §2's form).
        "answer_evidence.config.passages_floor_range",
        "answer_evidence.config.sentence_cosine_high_range",
        "answer_evidence.config.sentence_cosine_low_range",
        "answer_evidence.config.sentence_weight_range",
    }
}
# Keys the newer migrations remove from a read's answer on purpose (CHANGELOG.md, Unreleased), as
# dotted paths: left out of the release's answer before it is compared (each must be there).
REMOVED_PATHS = {
    "answer_evidence": {
        "answer_evidence.config.language_min_function_share",
        "answer_evidence.config.language_max_odd_transitions",
    }
}
# The release's config keys config.toml no longer has (its rag_config requires them): seeded as the
# release's own config.toml gave them; the migration that replaces them removes them.
RELEASE_ONLY_CONFIG = {"rag": {"language_min_function_share": 0.15, "language_max_odd_transitions": 0.24}}
ROOT = Path(__file__).resolve().parents[1]
TABLES = ("tenants", "knowledge_bases", "documents", "chunks", "kb_postings", "memories", "messages", "sessions")


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def _tagged() -> str | None:
    """The commit UPGRADE_FROM's tag names, None where the clone has no such tag."""
    tag = _git("rev-parse", "--verify", "-q", f"{UPGRADE_FROM}^{{commit}}")
    return tag.stdout.strip() if tag.returncode == 0 else None


def _baseline_added() -> str | None:
    """The commit that added the baseline migration, None where the clone's history lacks it."""
    added = _git("log", "--diff-filter=A", "--format=%H", "--", f"supabase/migrations/{BASELINE}_baseline.sql")
    return added.stdout.split()[-1] if added.returncode == 0 and added.stdout.split() else None


def _release() -> str | None:
    """UPGRADE_FROM's commit: the tag, else the commit that added the baseline; None if neither."""
    return _tagged() or _baseline_added()


def test_the_release_is_the_commit_that_added_its_baseline() -> None:
    """The tag (where the clone has it) and the fallback name one commit."""
    tagged = _tagged()
    if tagged is None:
        pytest.skip(f"this clone has no tag {UPGRADE_FROM}")
    assert _baseline_added() == tagged


@pytest.fixture(scope="module")
def old_migrations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """supabase/migrations/ as UPGRADE_FROM held it, written to a directory of its own."""
    release = _release()
    listing = _git("ls-tree", "--name-only", f"{release}:supabase/migrations") if release else None
    if listing is None or listing.returncode != 0:
        pytest.skip(f"release {UPGRADE_FROM} is not in this clone")
    out = tmp_path_factory.mktemp("migrations")
    for name in listing.stdout.split():
        (out / name).write_text(_git("show", f"{release}:supabase/migrations/{name}").stdout, "utf-8")
    return out


@pytest.fixture(scope="module")
def upgraded(database_url: str, old_migrations: Path) -> Iterator[dict[str, Any]]:
    """A database built by UPGRADE_FROM's migrations, populated, read, then upgraded."""
    with hdb.scratch_database("hipocampo_upgrade", migrations=old_migrations, seed=False) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            # seeded as the release could take it: calibration keys added since are left out
            hdb.seed_config(conn, known_calibration_only=True)
            for section, keys in RELEASE_ONLY_CONFIG.items():
                conn.execute(
                    "update hipocampo_private.settings set config = jsonb_set(config, %s::text[],"
                    " (config -> %s) || %s::jsonb) where tenant_id is null",
                    ([section], section, json.dumps(keys)),
                )
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
    assert new >= old, "a migration of the release is missing: landed migrations are frozen"
    assert sorted(upgraded["result"].applied) == sorted(new - old)
    assert upgraded["result"].drifted == []


def test_an_upgraded_database_keeps_its_rows_and_answers_the_same(upgraded: dict[str, Any]) -> None:
    """Every row stays, and each read answers as before, but for the columns the newer migrations
    remove from its rows on purpose (REMOVED, as CHANGELOG.md says), which it must have had."""
    assert upgraded["counts"]["chunks"] > 0 and upgraded["counts"]["memories"] > 0
    assert _counts(upgraded["url"]) == upgraded["counts"]
    for read in TIMELESS:
        before, gone = upgraded["before"][read], REMOVED.get(read, set())
        assert all(gone <= row.keys() for row in before), f"{read}: REMOVED names a column it never had"
        expected = [{k: v for k, v in row.items() if k not in gone} for row in before]
        got = _read(upgraded["url"], upgraded["world"], read, upgraded["args"])
        for rows, paths, which in ((got, ADDED, "upgraded"), (expected, REMOVED_PATHS, "release's")):
            for path in paths.get(read, set()):
                for row in rows:
                    *parents, leaf = path.split(".")
                    node: Any = row
                    for key in parents:
                        node = node[key]
                    assert leaf in node, f"{read}: {path} is not in the {which} answer"
                    del node[leaf]
        assert got == expected, read


def test_an_upgraded_database_has_the_catalog_of_a_fresh_one(upgraded: dict[str, Any]) -> None:
    # A database of its own (the session's holds the model indexes other tests create).
    with hdb.scratch_database("hipocampo_fresh") as fresh:
        difference = diff(snapshot(fresh), snapshot(upgraded["url"]), ("fresh", "upgraded"))
    assert difference == "", "\n" + difference[:20000]
