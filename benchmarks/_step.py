"""One step of the harness (benchmarks/bench.py): run ``benchmarks/<script> [args]`` as its own
``__main__``, with benchmarks/ on the import path as when it is run directly.

In an A/B (``HIPOCAMPO_BENCH_FIXED_SCHEMA=1``) the database at ``HIPOCAMPO_DATABASE_URL`` is used
as the harness migrated it: ``hipocampo.db.ensure_database`` returns that URL without applying this
checkout's migrations, so the other commit's schema stays as that commit defines it.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: _step.py <script.py> [args]")
    script = HERE / sys.argv[1]
    sys.path.insert(0, str(HERE))
    from models import fixed_schema

    if fixed_schema():
        from hipocampo import db

        url = os.environ["HIPOCAMPO_DATABASE_URL"]
        db.ensure_database = lambda path=None: url  # type: ignore[assignment]
    sys.argv = [str(script), *sys.argv[2:]]
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
