"""Catalog checks of the repository: definer comments in the migrations, the EXECUTE-grant snapshot.

The conventions a deployed database must keep (RLS on every table, no tables in the exposed
schema, search_path on every function, nothing executable by PUBLIC or anon, the HNSW opclass)
are pgTAP tests, supabase/tests/database/catalog.test.sql, so they also run on a Supabase project
(`supabase test db`); tests/sql/test_pgtap.py runs them here.

To accept an intended grant change: ``HIPOCAMPO_UPDATE_SNAPSHOT=1 make pytest`` and commit
tests/sql/grants_snapshot.json.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import psycopg
import pytest

pytestmark = pytest.mark.any_model

SCHEMAS = ("hipocampo", "hipocampo_private")
SNAPSHOT = Path(__file__).with_name("grants_snapshot.json")


def test_definer_functions_are_commented_in_the_migrations() -> None:
    from hipocampo import db as hdb

    for f in hdb.migrations_dir().glob("*.sql"):
        text = f.read_text()
        definers = sum(1 for line in text.splitlines() if line.strip() == "security definer")
        assert text.count("-- definer because") == definers, f.name


def _grants(db: psycopg.Connection[dict[str, Any]]) -> dict[str, list[str]]:
    rows = db.execute(
        """
        select p.oid::regprocedure::text as f, r.rolname
        from pg_proc p
        join pg_namespace n on n.oid = p.pronamespace
        cross join (values ('anon'), ('authenticated'), ('service_role'), ('public')) as r (rolname)
        where n.nspname = any(%s)
          and case when r.rolname = 'public'
                   then exists (select 1 from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                                where a.grantee = 0 and a.privilege_type = 'EXECUTE')
                   else has_function_privilege(r.rolname, p.oid, 'EXECUTE') end
        order by 1, 2
        """,
        (list(SCHEMAS),),
    ).fetchall()
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(r["f"], []).append(r["rolname"])
    return out


def test_execute_grants_match_the_snapshot(db: psycopg.Connection[dict[str, Any]]) -> None:
    current = _grants(db)
    if os.environ.get("HIPOCAMPO_UPDATE_SNAPSHOT") == "1" or not SNAPSHOT.exists():
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    assert current == json.loads(SNAPSHOT.read_text())
