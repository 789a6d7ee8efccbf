"""The migrations deployed as an operator deploys them: with the Supabase CLI (issue 47 §3).

Usage:  python tests/supabase_cli.py SUPABASE_CLI   (inside tests/scratch_server.py --tcp, on PostgreSQL 15)

On the scratch server's empty ``postgres`` database: the local shim of what a Supabase project
provides (roles, ``auth.uid()`` / ``auth.jwt()``; a project has them), then

1. ``supabase db push --db-url …`` applies supabase/migrations/ and records them;
2. ``supabase migration list --db-url …`` must show every local migration as applied (remote);
3. ``supabase db lint --db-url … --level warning`` with plpgsql_check (Debian's
   postgresql-15-plpgsql-check, unpacked into .pg15/ by the Makefile) checks every PL/pgSQL
   function body of the two schemas: no error allowed; the warnings are counted and printed by
   kind (a variable assigned only to run the caller check, ``gate := _caller()``, is "never read").

The CLI speaks TCP only (``HIPOCAMPO_TEST_SERVER_TCP_URL``, ``sslmode=disable``). Exits 1 on a
failed step, with the CLI's output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
SHIM = ROOT / "py_client" / "hipocampo" / "db" / "shim" / "supabase_local.sql"


def _cli(cli: str, *args: str) -> str:
    done = subprocess.run([cli, *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"supabase {' '.join(args[:2])} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def main(cli: str) -> int:
    url = os.environ["HIPOCAMPO_TEST_SERVER_TCP_URL"]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(SHIM.read_text("utf-8"))  # type: ignore[arg-type]
    _cli(cli, "db", "push", "--db-url", url, "--yes")
    local = sorted(p.name.split("_", 1)[0] for p in (ROOT / "supabase" / "migrations").glob("*.sql"))
    listed = _cli(cli, "migration", "list", "--db-url", url)
    rows = [[c.strip().strip("`") for c in line.split("|")] for line in listed.splitlines() if line.count("|") >= 2]
    applied = sorted(r[1] for r in rows if r[0] and r[1] and r[1].isdigit())
    missing = sorted(set(local) - set(applied))
    if missing or len(applied) != len(local):
        print(f"supabase migration list: {len(applied)} applied of {len(local)}; not applied: {missing}")
        return 1
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("create extension if not exists plpgsql_check")
    out = _cli(cli, "db", "lint", "--db-url", url, "-s", "hipocampo,hipocampo_private", "--level", "warning")
    issues = [(f["function"], i) for f in json.loads(out or "[]") for i in f["issues"]]
    errors = [(fn, i) for fn, i in issues if i["level"].startswith("error")]
    kinds = Counter(f"{i['level']}: {i['message'].split(chr(34))[0].strip()}" for _, i in issues)
    print(
        f"supabase db push: {len(local)} migrations applied and listed; supabase db lint (plpgsql_check):"
        f" {len(errors)} errors, {len(issues) - len(errors)} warnings ("
        + "; ".join(f"{n} {k}" for k, n in kinds.most_common())
        + ")"
    )
    for fn, i in errors:
        print(f"  error in {fn}: {i['message']} {i.get('statement') or ''}")
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1]))
