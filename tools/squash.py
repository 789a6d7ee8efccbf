"""``python -m tools.squash --release 0.1.0``: replace every migration by one baseline generated
from ``supabase/schemas/`` (issue 47 §2). Only before a release: nothing deployed may hold a
migration this removes.

The baseline is the schema files in the order :func:`tools.schema_build.schema_files` gives,
each under a ``-- ==== <file> ====`` line, after ``set local check_function_bodies = off``
(a function body may name an object a later file defines). It is written as
``supabase/migrations/<UTC yyyymmddhhmmss>_baseline.sql``; the migrations it replaces are
deleted, and the two constants :mod:`hipocampo.db.migrations` needs to let a database the old
history built adopt the baseline (``BASELINE``, ``SQUASHED_THROUGH``) are printed. The
catalog-comparison test (``tests/sql/test_declarative_schema.py``) then judges the result.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from tools.schema_build import SUPABASE, schema_files

HEADER = """\
-- Baseline of release {release}: the whole schema, generated from supabase/schemas/ by
-- `python -m tools.squash` ({date}). It replaces every migration before it (nothing was deployed;
-- their history is git's). `hipocampo db migrate` records it as applied on a database that
-- history built through its last version (hipocampo.db.migrations.SQUASHED_THROUGH).
-- From here on a change is an edit of supabase/schemas/ plus a migration `make migration` writes,
-- and landed migrations stay frozen; tests/sql/test_declarative_schema.py keeps the two equal.
-- Function bodies may name objects defined further down; they are checked when called.
set local check_function_bodies = off;
"""


def baseline_sql(release: str, date: dt.date, supabase: Path = SUPABASE) -> str:
    """The baseline's text: the header, then each schema file under a line naming it."""
    parts = [HEADER.format(release=release, date=date.isoformat())]
    for file in schema_files(supabase):
        name = file.relative_to(supabase.parent).as_posix()
        parts.append(f"\n-- ==================== {name} ====================\n\n")
        parts.append(file.read_text("utf-8").rstrip("\n") + "\n")
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--release", required=True, help="the release the baseline opens, e.g. 0.1.0")
    args = parser.parse_args(argv)
    migrations = SUPABASE / "migrations"
    old = sorted(migrations.glob("*.sql"))
    now = dt.datetime.now(dt.UTC)
    version = now.strftime("%Y%m%d%H%M%S")
    if old and old[-1].stem.split("_", 1)[0] >= version:
        print(f"the newest migration {old[-1].name} is not older than {version}", file=sys.stderr)
        return 1
    target = migrations / f"{version}_baseline.sql"
    target.write_text(baseline_sql(args.release, now.date()), "utf-8")
    for file in old:
        file.unlink()
    print(target.relative_to(SUPABASE.parent))
    if old:
        print(f'BASELINE = "{version}"\nSQUASHED_THROUGH = "{old[-1].stem.split("_", 1)[0]}"')
    return 0


if __name__ == "__main__":
    sys.exit(main())
