"""supabase/schemas/ is the product's definition; the migrations must build the same database
(issue 17 §1, the guard).

A fresh database on the session's server is built from the schema files (in the order of
supabase/config.toml's [db.migrations] schema_paths) plus supabase/data/, and its normalised
catalog (tools/catalog.py: tables, columns, constraints, indexes with their opclass and
parameters, policies with their expressions, functions with body, volatility, security and
proconfig, views, triggers, privileges, comments) is compared with the session database, which
the migrations built. Any difference fails with a readable diff: a change is a schema edit plus
a new migration, and both must agree.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from hipocampo import db as hdb
from tools.catalog import diff, snapshot
from tools.schema_build import build_from_schemas, schema_files

pytestmark = pytest.mark.any_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def schema_database(database_url: str) -> Iterator[str]:
    with hdb.scratch_database("hipocampo_schema", migrate=False) as url:
        build_from_schemas(url)
        yield url


def test_config_lists_every_schema_file() -> None:
    listed = {p.name for p in schema_files()}
    present = {p.name for p in (ROOT / "supabase" / "schemas").glob("*.sql")}
    assert listed == present and len(listed) >= 10


def test_the_schema_files_build_the_database_the_migrations_build(database_url: str, schema_database: str) -> None:
    difference = diff(snapshot(database_url), snapshot(schema_database))
    assert difference == "", "\n" + difference[:20000]


def test_the_project_secret_is_set_up_by_the_data_files(schema_database: str) -> None:
    with psycopg.connect(schema_database) as conn:
        row = conn.execute("select octet_length(value) from hipocampo_private.project_secrets").fetchone()
    assert row == (32,)
