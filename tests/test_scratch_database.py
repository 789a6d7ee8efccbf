"""``hipocampo.db.scratch_database`` (what ``hipocampo calibrate --weights`` measures in): each run
gets a database of its own, migrated, dropped afterwards; runs at the same time do not drop each
other's, and one left by a killed run is dropped by the next."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from hipocampo import db as hdb

PREFIX = "hipocampo_scratch_test"


def _names(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("select datname from pg_database where starts_with(datname, %s)", (PREFIX,)).fetchall()
    return {r[0] for r in rows}


def test_two_runs_at_once_each_get_their_own_and_both_are_dropped(database_url: str) -> None:
    with hdb.scratch_database(PREFIX) as first, hdb.scratch_database(PREFIX) as second:
        assert first != second and len(_names(database_url)) == 2
        for url in (first, second):  # migrated: the RPC surface is there
            with psycopg.connect(url) as conn:
                rpc = "select to_regproc('hipocampo.hybrid_search') is not null"
                assert conn.execute(rpc).fetchone() == (True,)
    assert _names(database_url) == set()


def test_a_database_left_by_a_killed_run_is_dropped_by_the_next(database_url: str) -> None:
    left = f"{PREFIX}_deadbeef"  # as a run leaves it when killed: no session holds its lock
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(left)))
    with hdb.scratch_database(PREFIX) as url:
        assert left not in _names(database_url) and len(_names(database_url)) == 1
        assert url
    assert _names(database_url) == set()


def test_its_name_is_not_taken_for_another_prefix_s(database_url: str) -> None:
    other = f"{PREFIX}x_deadbeef"  # another prefix's database is not this prefix's to drop
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("create database {}").format(sql.Identifier(other)))
        try:
            with hdb.scratch_database(PREFIX):
                assert other in _names(database_url)
        finally:
            conn.execute(sql.SQL("drop database {}").format(sql.Identifier(other)))


def test_calibrate_weights_names_createdb_when_the_server_refuses_the_scratch_database(
    database_url: str, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a server whose role may not create databases (a Supabase URL without CREATEDB), --weights
    says what it needs and the way around it (42501), instead of psycopg's bare refusal."""
    from hipocampo.cli.calibrate import _weights
    from hipocampo.config import load_config
    from hipocampo.errors import PermissionDeniedError
    from hipocampo.evaluation.calibration import Finding

    role = f"calib_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("create role {} login nocreatedb").format(sql.Identifier(role)))
    try:
        monkeypatch.setenv("HIPOCAMPO_DATABASE_URL", make_conninfo(database_url, user=role))
        floor = [Finding("retrieval.min_similarity", 0.25, "")]
        with pytest.raises(PermissionDeniedError, match="give the role CREATEDB") as err:
            _weights(embedder, floor, load_config()["calibration"])
        assert err.value.sqlstate == "42501" and "permission denied to create database" in str(err.value)
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))
