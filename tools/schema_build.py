"""The database that ``supabase/schemas/`` defines, built on a given (empty) database.

The schema files run in the order of ``supabase/config.toml``'s ``[db.migrations] schema_paths``
(as the Supabase CLI reads them), after the local shim of what Supabase provides and before
``supabase/data/`` and the config seed, so the result is comparable with a database the
migrations built (``hipocampo.db.apply_migrations``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import psycopg

from hipocampo import db as hdb

SUPABASE = Path(__file__).resolve().parents[1] / "supabase"


def schema_files(supabase: Path = SUPABASE) -> list[Path]:
    """The schema files in the order ``<supabase>/config.toml`` lists them."""
    config = tomllib.loads((supabase / "config.toml").read_text("utf-8"))
    files: list[Path] = []
    for pattern in config["db"]["migrations"]["schema_paths"]:
        files.extend(sorted(supabase.glob(pattern.removeprefix("./"))))
    return files


def build_from_schemas(url: str, supabase: Path = SUPABASE) -> None:
    """Run the shim, every schema file (a transaction each), the data files and the config seed on
    the database at ``url``.

    Raises:
        psycopg.Error: a schema file failed (its name is in the exception's notes).
    """
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(hdb.migrations._shim_sql())  # type: ignore[arg-type,unused-ignore]
        for file in schema_files(supabase):
            try:
                with conn.transaction():
                    conn.execute(file.read_text("utf-8"))  # type: ignore[arg-type,unused-ignore]
            except psycopg.Error as exc:
                exc.add_note(f"in {file}")
                raise
        hdb.run_data_files(conn)
        hdb.seed_config(conn)
