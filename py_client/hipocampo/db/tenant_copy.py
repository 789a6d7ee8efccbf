"""A tenant copied to a file and from it into another database (issue 46 §3: ``hipocampo tenant
export`` / ``import``, the offline case of moving a tenant).

The tables and the check are the database's: ``hipocampo_private._tenant_tables()`` (every table
that holds a tenant, in writing order, with the columns the target numbers again and the tables
its triggers rebuild) and ``hipocampo.tenant_digest`` (row counts and md5 per table).

The file is a gzipped tar: ``manifest.json`` (format, the last migration of the source, the
tenant, the digest, each identity sequence's last value) and one ``<ord>_<table>.copy`` per table
in PostgreSQL's COPY text format, read in one repeatable-read snapshot. An import runs in one
transaction as the connection's user (the database owner): the target must hold the same
migrations and neither the tenant nor any of the ids it brings; the tables are written in order
(the derived ones are rebuilt by the chunks' triggers), each identity sequence is moved past the
source's, and the tenant's digest on the target must equal the source's, else nothing is kept.
"""

from __future__ import annotations

import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from ..errors import HipocampoError

__all__ = ["FORMAT", "TenantCopyError", "export_tenant", "import_tenant"]

FORMAT = 1


class TenantCopyError(HipocampoError):
    """The copy cannot be made or does not check out (the target keeps nothing of it)."""


@dataclass(frozen=True)
class _Table:
    ord: int
    name: str
    tenant_column: str
    reassigned: list[str]
    derived: bool


def _tables(conn: psycopg.Connection[Any]) -> list[_Table]:
    rows = conn.execute("select * from hipocampo_private._tenant_tables() order by ord").fetchall()
    return [_Table(*(r.values() if isinstance(r, dict) else r)) for r in rows]


def _columns(conn: psycopg.Connection[Any], table: _Table) -> list[str]:
    """The columns a copy carries: not dropped, not generated, not reassigned; in table order."""
    rows = conn.execute(
        "select a.attname from pg_catalog.pg_attribute as a"
        " where a.attrelid = ('hipocampo_private.' || %s)::regclass and a.attnum > 0 and not a.attisdropped"
        " and a.attgenerated = '' order by a.attnum",
        (table.name,),
    ).fetchall()
    names = [str(next(iter(r.values())) if isinstance(r, dict) else r[0]) for r in rows]
    return [n for n in names if n not in table.reassigned]


def _last_migration(conn: psycopg.Connection[Any]) -> str | None:
    row = conn.execute("select max(version) from supabase_migrations.schema_migrations").fetchone()
    return str(next(iter(row.values())) if isinstance(row, dict) else row[0]) if row else None


def _sequences(conn: psycopg.Connection[Any], tables: list[_Table]) -> dict[str, int]:
    """``{"table.column": last value}`` of each identity column the copy keeps."""
    out: dict[str, int] = {}
    for t in tables:
        rows = conn.execute(
            "select a.attname, pg_catalog.pg_sequence_last_value(pg_catalog.pg_get_serial_sequence("
            "'hipocampo_private.' || %s, a.attname)) from pg_catalog.pg_attribute as a"
            " where a.attrelid = ('hipocampo_private.' || %s)::regclass and a.attidentity <> ''",
            (t.name, t.name),
        ).fetchall()
        for r in rows:
            column, last = list(r.values()) if isinstance(r, dict) else list(r)
            if column not in t.reassigned:
                out[f"{t.name}.{column}"] = int(last or 0)
    return out


def find_tenant(
    conn: psycopg.Connection[dict[str, Any]], tenant: UUID | str, error: type[HipocampoError]
) -> dict[str, Any]:
    """The row of tenant ``tenant`` (its id or slug): ``id``, ``slug``, ``name`` and ``moved_at``
    (when it was moved to another database, else None).

    Raises:
        error: no such tenant (``error(message, "P0002")``).
    """
    found = conn.execute(
        "select t.id, t.slug, t.name, m.moved_at from hipocampo_private.tenants as t"
        " left join hipocampo_private.tenant_moves as m on m.tenant_id = t.id"
        " where t.id::text = %s or t.slug = %s",
        (str(tenant), str(tenant)),
    ).fetchone()
    if found is None:
        raise error(f"unknown tenant: {tenant}", "P0002")
    return found


def export_tenant(url: str, tenant: UUID | str, path: Path) -> dict[str, Any]:
    """Write tenant ``tenant`` (its id or slug) of the database at ``url`` to ``path`` (a gzipped
    tar); returns the manifest (``tenant``, ``last_migration``, ``digest``: rows and md5 per table).

    Raises:
        TenantCopyError: no such tenant (P0002).
    """
    with psycopg.connect(url, row_factory=dict_row) as conn:
        conn.execute("set transaction isolation level repeatable read, read only")
        row = find_tenant(conn, tenant, TenantCopyError)
        found = {k: row[k] for k in ("id", "slug", "name")}
        tables = _tables(conn)
        manifest: dict[str, Any] = {
            "format": FORMAT,
            "last_migration": _last_migration(conn),
            "tenant": {k: str(v) for k, v in found.items()},
            "digest": conn.execute("select hipocampo.tenant_digest(%s) as v", (found["id"],)).fetchone()["v"],  # type: ignore[index]
            "sequences": _sequences(conn, tables),
            "tables": [],
        }
        with tarfile.open(path, "w:gz") as tar:
            for t in tables:
                if t.derived:
                    continue
                columns = _columns(conn, t)
                query = sql.SQL("copy (select {} from hipocampo_private.{} where {} = {}) to stdout").format(
                    sql.SQL(", ").join(map(sql.Identifier, columns)),
                    sql.Identifier(t.name),
                    sql.Identifier(t.tenant_column),
                    sql.Literal(str(found["id"])),
                )
                data = io.BytesIO()
                with conn.cursor().copy(query) as copy:
                    for block in copy:
                        data.write(block)
                member = f"{t.ord:02d}_{t.name}.copy"
                _add(tar, member, data.getvalue())
                manifest["tables"].append({"name": t.name, "file": member, "columns": columns})
            _add(tar, "manifest.json", json.dumps(manifest, indent=1).encode())
    return manifest


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _read(path: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    try:
        with tarfile.open(path, "r:gz") as tar:
            files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]
    except (OSError, tarfile.TarError) as exc:
        raise TenantCopyError(f"{path}: not a tenant export ({exc})", "22023") from exc
    if "manifest.json" not in files:
        raise TenantCopyError(f"{path}: not a tenant export (no manifest.json)", "22023")
    manifest = json.loads(files["manifest.json"])
    if manifest.get("format") != FORMAT:
        raise TenantCopyError(f"{path}: export format {manifest.get('format')}, this version reads {FORMAT}", "22023")
    return manifest, files


def import_tenant(url: str, path: Path) -> dict[str, Any]:
    """Write the tenant exported to ``path`` into the database at ``url``, in one transaction;
    returns the digest both sides agree on.

    Raises:
        TenantCopyError: not an export (22023); the target's migrations differ from the source's
            (55000); the tenant (id or slug) is there already (23505); an id the copy brings is
            taken in the target (23505: import into a database of its own, or one whose rows came
            from the same source); the digest on the target differs from the source's (XX000).
    """
    manifest, files = _read(path)
    tenant = manifest["tenant"]
    with psycopg.connect(url, row_factory=dict_row) as conn:
        if _last_migration(conn) != manifest["last_migration"]:
            raise TenantCopyError(
                f"the target's last migration is {_last_migration(conn)}, the export's {manifest['last_migration']}: "
                "migrate both to the same version first",
                "55000",
            )
        taken = conn.execute(
            "select 1 from hipocampo_private.tenants where id = %s or slug = %s", (tenant["id"], tenant["slug"])
        ).fetchone()
        if taken:
            raise TenantCopyError(f"tenant {tenant['slug']} ({tenant['id']}) is already in the target", "23505")
        try:
            with conn.transaction():
                _write_tables(conn, manifest, files)
                _move_sequences(conn, manifest["sequences"])
                digest = conn.execute("select hipocampo.tenant_digest(%s) as v", (tenant["id"],)).fetchone()
        except psycopg.errors.UniqueViolation as exc:
            raise TenantCopyError(
                f"an id of the copy is taken in the target: {exc.diag.message_detail}", "23505"
            ) from exc
        except _DigestMismatch as exc:
            raise TenantCopyError(str(exc), "XX000") from exc
    assert digest is not None
    return dict(digest["v"])


class _DigestMismatch(Exception):
    pass


def _write_tables(conn: psycopg.Connection[Any], manifest: dict[str, Any], files: dict[str, bytes]) -> None:
    for table in manifest["tables"]:
        query = sql.SQL("copy hipocampo_private.{} ({}) from stdin").format(
            sql.Identifier(table["name"]), sql.SQL(", ").join(map(sql.Identifier, table["columns"]))
        )
        with conn.cursor().copy(query) as copy:
            copy.write(files[table["file"]])
    got = conn.execute("select hipocampo.tenant_digest(%s) as v", (manifest["tenant"]["id"],)).fetchone()
    assert got is not None
    differ = sorted(k for k, v in manifest["digest"].items() if got["v"].get(k) != v)
    if differ:
        raise _DigestMismatch(f"the copy differs from the source in {', '.join(differ)}: nothing was imported")


def _move_sequences(conn: psycopg.Connection[Any], sequences: dict[str, int], margin: int = 0) -> None:
    """Each identity's sequence (``{"table.column": the source's last value}``) past both that
    value (plus ``margin``) and the rows the table holds, so that neither side's next rows collide
    with the copied ones."""
    for key, last in sequences.items():
        table, column = key.split(".", 1)
        conn.execute(
            sql.SQL(
                "select pg_catalog.setval(pg_catalog.pg_get_serial_sequence({t}, {c}),"
                " greatest({last}, (select coalesce(max({col}), 1) from hipocampo_private.{tbl})))"
            ).format(
                t=sql.Literal(f"hipocampo_private.{table}"),
                c=sql.Literal(column),
                last=sql.Literal(max(1, last) + margin),
                col=sql.Identifier(column),
                tbl=sql.Identifier(table),
            )
        )
