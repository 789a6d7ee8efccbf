"""``make migration`` (tools/make_migration.py, issue 47 §2): a schema edit becomes a migration that
a tool writes, and the catalog comparison accepts it.

The checkout's schema files and migrations agree, so the tool finds nothing to write. On a copy of
``supabase/`` edited the way a change is made (a function's body, a new column with a comment, a
new security definer RPC with its grants and comment, a view with ``security_invoker``, an
extension, a table granted whole to a role), the tool
writes one migration: DDL only, lowercase outside the bodies, no docblock, the definer reason
line; the migrations plus it build the catalog the edited schema files build; and a second run
finds nothing left.
"""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from hipocampo import db as hdb
from tools import make_migration as mm
from tools.catalog import diff, snapshot
from tools.schema_build import SUPABASE, build_from_schemas

pytestmark = [pytest.mark.usefixtures("database_url"), pytest.mark.any_model]
SQLFLUFF = str(SUPABASE.parent / ".sqlfluff")

NEW_RPC = """
/*
Purpose: counts the tenants (a test of the migration writer).
Returns: bigint.
*/
-- definer because the tenants table is under RLS and this counts all of them.
create or replace function hipocampo.count_tenants_for_test()
returns bigint
language sql
stable
security definer
set search_path = ''
as $$
    select count(*) from hipocampo_private.tenants;
$$;

revoke all on function hipocampo.count_tenants_for_test() from public, anon, authenticated;
grant execute on function hipocampo.count_tenants_for_test() to service_role;
comment on function hipocampo.count_tenants_for_test() is 'Counts the tenants (test).';

create view hipocampo.tenant_names_for_test with (security_invoker = true) as
select t.name from hipocampo_private.tenants as t;

create extension if not exists fuzzystrmatch with schema extensions;

create text search configuration hipocampo_private.catalan_for_test (copy = pg_catalog.simple);
alter text search configuration hipocampo_private.catalan_for_test
alter mapping for hword, hword_part, word with extensions.unaccent, pg_catalog.simple;

create table hipocampo_private.notes_for_test (id bigint primary key);
alter table hipocampo_private.notes_for_test enable row level security;
grant all on hipocampo_private.notes_for_test to service_role;
"""


@pytest.fixture
def edited(tmp_path: Path) -> Path:
    """A copy of supabase/ (config, schemas, migrations) with a change made to its schema files."""
    root = tmp_path / "supabase"
    root.mkdir()
    shutil.copy(SUPABASE / "config.toml", root / "config.toml")
    shutil.copytree(SUPABASE / "schemas", root / "schemas")
    shutil.copytree(SUPABASE / "migrations", root / "migrations")
    tenancy = root / "schemas" / "01_tenancy_and_callers.sql"
    text = tenancy.read_text("utf-8")
    column = "    created_at timestamptz not null default now(),\n"
    assert column in text
    tenancy.write_text(text.replace(column, column + "    note_for_test text,\n", 1), "utf-8")
    config = root / "schemas" / "03_models_and_embeddings.sql"
    text = config.read_text("utf-8")
    body = "where e.active;\nend;"
    assert text.count(body) == 1
    config.write_text(text.replace(body, "where e.active\n    order by e.name;\nend;"), "utf-8")
    # A function's settings alone (migra compares definitions without them).
    head = "create or replace function hipocampo.add_member("
    text = tenancy.read_text("utf-8")
    start = text.index(head)
    setting = text.index("set jit = off\n", start)
    tenancy.write_text(text[:setting] + "set work_mem = '8MB'\n" + text[setting + len("set jit = off\n") :], "utf-8")
    # A function's planner estimate alone (migra compares definitions without it either).
    search = root / "schemas" / "05_hybrid_search.sql"
    text = search.read_text("utf-8")
    assert text.count("rows 8\n") == 1
    search.write_text(text.replace("rows 8\n", "rows 12\n"), "utf-8")
    observability = root / "schemas" / "11_observability.sql"
    observability.write_text(
        observability.read_text("utf-8")
        + NEW_RPC
        + "\ncomment on column hipocampo_private.tenants.note_for_test is 'A note (test).';\n",
        "utf-8",
    )
    return root


def test_the_checkout_has_nothing_to_write() -> None:
    assert mm.generate() == ""


def test_a_schema_edit_becomes_a_migration_the_catalog_comparison_accepts(edited: Path) -> None:
    path = mm.write("add_test_things", "Because a test asks.", supabase=edited, now=dt.datetime(2100, 1, 1))
    assert path is not None and path.name == "21000101000000_add_test_things.sql"
    text = path.read_text("utf-8")
    assert text.startswith("-- add test things.\n-- Because a test asks.\n-- Written by `make migration`")
    assert text.endswith(";\n") and not text.endswith("\n\n")
    assert "/*" not in text and "Purpose:" not in text, "no docblock is copied"
    assert "CREATE" not in text and "create or replace function hipocampo.active_embedding_model()" in text
    assert "-- definer because the tenants table is under RLS" in text
    assert "add column note_for_test text" in text.replace('"', "")
    assert "grant execute on function hipocampo.count_tenants_for_test() to service_role;" in text
    assert "comment on column hipocampo_private.tenants.note_for_test is 'A note (test).';" in text
    assert "security_invoker" in text
    member = "alter function hipocampo.add_member(tenant_id uuid, user_id uuid, role text)"
    assert f"{member} reset jit;" in text and f"{member} set work_mem = '8MB';" in text
    words = "alter function hipocampo_private._question_words("
    words += "language text, document_languages text[], query_text text)"
    assert f"{words} rows 12;" in text
    # The extension once (not its functions, types), and "all" rather than each privilege: PostgreSQL
    # 15 has no maintain.
    assert "\n\ncreate extension if not exists fuzzystrmatch with schema extensions;\n" in text
    assert "levenshtein" not in text
    assert "grant all on table hipocampo_private.notes_for_test to service_role;" in text and "maintain" not in text
    # A text search configuration (migra leaves them out): created, with each token type's dictionaries.
    assert "create text search configuration hipocampo_private.catalan_for_test (copy = pg_catalog.simple);" in text
    assert "alter mapping for word, hword_part, hword with extensions.unaccent, simple;" in text

    # Independently of the tool's own check: the migrations with the new one build the catalog
    # the edited schema files build.
    with (
        hdb.scratch_database("hipocampo_mm_test_a", migrations=edited / "migrations") as built,
        hdb.scratch_database("hipocampo_mm_test_b", migrate=False) as wanted,
    ):
        build_from_schemas(wanted, edited)
        assert diff(snapshot(built), snapshot(wanted)) == ""
        with psycopg.connect(built) as conn:
            row = conn.execute("select prosecdef from pg_proc where proname = 'count_tenants_for_test'").fetchone()
        assert row == (True,)
    assert mm.generate(edited) == "", "a second run finds nothing left"
    lint = subprocess.run(
        [sys.executable, "-m", "sqlfluff", "lint", "--disable-progress-bar", "--config", SQLFLUFF, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout


def test_a_definer_function_without_its_reason_is_refused(edited: Path) -> None:
    observability = edited / "schemas" / "11_observability.sql"
    text = observability.read_text("utf-8")
    observability.write_text(text.replace("-- definer because the tenants table", "-- the tenants table"), "utf-8")
    before = sorted(p.name for p in (edited / "migrations").iterdir())
    with pytest.raises(mm.MigrationError, match="count_tenants_for_test is security definer without"):
        mm.write("add_test_things", supabase=edited)
    assert sorted(p.name for p in (edited / "migrations").iterdir()) == before


def test_a_name_that_is_not_snake_case_is_refused() -> None:
    with pytest.raises(ValueError, match="snake_case"):
        mm.write("Add Things")
