"""Migrations apply from zero, are recorded as the Supabase CLI records them, and stay portable."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import psycopg
import pytest

from hipocampo import db as hdb
from hipocampo.errors import HipocampoError

from ..conftest import MODEL


def test_every_migration_is_recorded(db: psycopg.Connection[dict[str, Any]]) -> None:
    files = sorted(hdb.migrations_dir().glob("*.sql"))
    rows = db.execute("select version, name from supabase_migrations.schema_migrations order by version").fetchall()
    assert [(r["version"], r["name"]) for r in rows] == [tuple(f.stem.split("_", 1)) for f in files]


def test_reapplying_is_a_no_op(database_url: str) -> None:
    res = hdb.apply_migrations(database_url, shim=True)
    assert res.applied == []
    assert len(res.skipped) == len(list(hdb.migrations_dir().glob("*.sql")))


def test_an_edited_landed_migration_is_reported(database_url: str, caplog: pytest.LogCaptureFixture) -> None:
    first = sorted(hdb.migrations_dir().glob("*.sql"))[0].stem.split("_", 1)[0]
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "update supabase_migrations.schema_migrations set statements = array['-- the applied text']"
            " where version = %s",
            (first,),
        )
        try:
            with caplog.at_level("WARNING", logger="hipocampo.db"):
                res = hdb.apply_migrations(database_url, shim=True)
        finally:
            text = next(hdb.migrations_dir().glob(f"{first}_*.sql")).read_text("utf-8")
            conn.execute(
                "update supabase_migrations.schema_migrations set statements = array[%s] where version = %s",
                (text, first),
            )
    assert (res.applied, res.drifted) == ([], [first])
    name = next(hdb.migrations_dir().glob(f"{first}_*.sql")).stem
    assert f"migration {name} differs from what this database applied" in caplog.text
    assert hdb.apply_migrations(database_url, shim=True).drifted == []


def test_migration_names_follow_the_convention() -> None:
    for f in hdb.migrations_dir().glob("*"):
        assert re.fullmatch(r"\d{14}_[a-z0-9_]+\.sql", f.name), f.name


def test_shim_is_not_in_the_migrations() -> None:
    for f in hdb.migrations_dir().glob("*.sql"):
        text = f.read_text().lower()
        # Supabase's roles are the platform's (the product's own, hipocampo_read_recorder, is created)
        assert not re.search(r"create role (anon|authenticated|service_role|authenticator)\b", text), f.name
        assert "create schema if not exists auth" not in text, f.name
        assert not re.search(r"create (or replace )?function auth\.", text), f.name


# Functions and syntax newer than PostgreSQL 15 (Supabase runs 15 and 17): version they came in.
NEWER_THAN_15 = {
    r"\bany_value\s*\(": 16,
    r"\barray_(sample|shuffle)\s*\(": 16,
    r"\bpg_input_(is_valid|error_info)\s*\(": 16,
    r"\bjson_(object|array|arrayagg|objectagg)\s*\(": 16,
    r"\bis\s+json\b": 16,
    r"\bsystem_user\b": 16,
    r"\bdate_(add|subtract)\s*\(": 16,
    r"\brandom_normal\s*\(": 16,
    r"\bjson_(table|exists|query|value)\s*\(": 17,
    r"\buuid_extract_(timestamp|version)\s*\(": 17,
    r"\bto_(bin|oct)\s*\(": 17,
    r"\brandom\s*\(\s*[^)\s]": 17,
    r"\bmerge\s+into\b[^;]*\breturning\b": 17,
    r"\bgrant\s+maintain\b": 17,
    r"\buuidv[47]\s*\(": 18,
    r"\b(casefold|array_reverse|array_sort|crc32c?)\s*\(": 18,
    r"\bvirtual\b": 18,
}


def test_nothing_newer_than_postgres_15() -> None:
    for f in hdb.migrations_dir().glob("*.sql"):
        text = f.read_text().lower()
        for pattern, version in NEWER_THAN_15.items():
            match = re.search(pattern, text)
            assert match is None, f"{f.name}: {match.group(0)!r} needs PostgreSQL {version}"


def test_no_pg18_only_features() -> None:
    # uuidv7() and virtual generated columns are PG18-only; Supabase runs 15/17.
    for f in hdb.migrations_dir().glob("*.sql"):
        text = f.read_text().lower()
        assert "uuidv7" not in text and " virtual" not in text, f.name
        for ext in re.findall(r"create extension[^;]*;", text):
            assert "with schema extensions" in ext, (f.name, ext)


def test_extensions_live_in_the_extensions_schema(db: psycopg.Connection[dict[str, Any]]) -> None:
    rows = db.execute(
        "select e.extname, n.nspname from pg_extension e join pg_namespace n on n.oid = e.extnamespace "
        "where e.extname in ('vector', 'pg_trgm', 'unaccent')"
    ).fetchall()
    assert {r["extname"]: r["nspname"] for r in rows} == {
        "vector": "extensions",
        "pg_trgm": "extensions",
        "unaccent": "extensions",
    }


def test_global_config_is_seeded_from_config_toml(db: psycopg.Connection[dict[str, Any]]) -> None:
    from hipocampo.config import load_config

    row = db.execute("select config from hipocampo_private.settings where tenant_id is null").fetchone()
    assert row is not None
    assert row["config"]["retrieval"] == load_config()["retrieval"]
    model = db.execute("select name, dims, active from hipocampo_private.embedding_models where active").fetchone()
    assert model == {"name": MODEL, "dims": 384, "active": True}


def test_a_configured_url_replaces_the_embedded_server(
    database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With HIPOCAMPO_DATABASE_URL set, nothing is started and only migrations are applied."""
    monkeypatch.setenv("HIPOCAMPO_DATABASE_URL", database_url)
    monkeypatch.setenv("HIPOCAMPO_DATA_DIR", str(tmp_path / "never-created"))
    calls: list[bool] = []
    real = hdb.apply_migrations

    def spy(url: str, *, shim: bool) -> hdb.MigrationResult:
        calls.append(shim)
        return real(url, shim=shim)

    monkeypatch.setattr(hdb, "apply_migrations", spy)
    assert hdb.ensure_database() == database_url
    assert calls == [False]
    assert not (tmp_path / "never-created").exists()


# A version of the squashed history before its last one.
OLDER = str(int(hdb.SQUASHED_THROUGH) - 100)


def test_a_database_the_squashed_history_built_adopts_the_baseline(database_url: str) -> None:
    """A database migrated with the squashed history through SQUASHED_THROUGH is recorded as having the
    baseline instead of having it run over its objects; a partial old history is refused. (A
    scratch database holds what the old history built, the baseline's objects, with the old
    versions recorded: the later migrations then run on it once, as on a deployed database.)"""
    baseline = next(hdb.migrations_dir().glob(f"{hdb.BASELINE}_*.sql")).read_text("utf-8")
    with hdb.scratch_database("hipocampo_adopt_test", migrate=False) as url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(hdb.migrations._shim_sql())  # type: ignore[arg-type,unused-ignore]
            conn.execute(baseline)  # type: ignore[arg-type,unused-ignore]
            conn.execute("create schema if not exists supabase_migrations")
            conn.execute(
                "create table if not exists supabase_migrations.schema_migrations"
                " (version text primary key, statements text[], name text)"
            )
            conn.execute(
                "insert into supabase_migrations.schema_migrations (version, name) values"
                " (%s, 'an_older_one'), (%s, 'the_last_squashed')",
                (OLDER, hdb.SQUASHED_THROUGH),
            )
        res = hdb.apply_migrations(url, shim=True)
        later = sorted(f.stem.split("_", 1)[0] for f in hdb.migrations_dir().glob("*.sql"))[1:]
        assert res.skipped == [hdb.BASELINE] and res.applied == later  # adopted, not run
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "delete from supabase_migrations.schema_migrations where version >= %s", (hdb.SQUASHED_THROUGH,)
            )
        with pytest.raises(HipocampoError, match=f"migrated up to {OLDER}"):
            hdb.apply_migrations(url, shim=True)
