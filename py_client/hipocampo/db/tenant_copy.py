"""A tenant copied to a file and from it into another database (issue 46 §3: ``hipocampo tenant
export`` / ``import``, the offline case of moving a tenant).

The tables and the check are the database's: ``hipocampo_private._tenant_tables()`` (every table
that holds a tenant, in writing order, with the columns the target numbers again and the tables
its triggers rebuild) and ``hipocampo.tenant_digest`` (row counts and md5 per table).

The file is a gzipped tar: ``manifest.json`` (format, the last migration of the source, the
tenant, the digest, each identity sequence's last value), one ``<ord>_<table>.copy`` per table
in PostgreSQL's COPY text format, read in one repeatable-read snapshot, and, when the exporter
has the operator's key, ``signature.json``: an HMAC-SHA256 over every other member's name and
SHA-256.

An import trusts nothing of the file (issue 57 §2). It runs in one transaction as the
connection's user (the database owner), and is refused with nothing written when:

- the file is unsigned and the operator did not pass ``trust_unsigned``, or its signature does not
  match the key (42501);
- it names a table that is not one of the target's ``_tenant_tables()`` (or a derived one), or
  columns other than that table's copied columns (22023): the tables and columns written are the
  target's, never the file's;
- a row written names another tenant than the manifest's, a reference leaves the tenant, or the
  configuration sets what a tenant admin may not (42501, the database's
  ``_check_imported_tenant``); the tenant's digest differs from the manifest's (XX000);
- the target's migrations differ (55000), or the tenant or an id it brings is there (23505).

Identity sequences only move forward, for the identity columns the import copies, to at most
1/1024 of the sequence's range (2^53 for bigint); a larger value is refused (22023).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from ..errors import HipocampoError

__all__ = ["FORMAT", "KEY_MIN_BYTES", "TenantCopyError", "export_tenant", "import_tenant"]

FORMAT = 1
# The operator's signing key: at least this many bytes (HMAC-SHA256).
KEY_MIN_BYTES = 16
SIGNATURE = "signature.json"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


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


@dataclass(frozen=True)
class _Identity:
    column: str
    sequence: str
    last: int  # the sequence's last value (0 before its first)
    bound: int  # the highest value an import moves it to: 1/1024 of its range


def _kept_identities(conn: psycopg.Connection[Any], t: _Table) -> list[_Identity]:
    """Each identity column of ``t`` the copy keeps (not reassigned), with its sequence, in one
    catalog query."""
    rows = conn.execute(
        "select a.attname, q.seq, pg_catalog.pg_sequence_last_value(q.seq::regclass), s.seqmax / 1024"
        " from pg_catalog.pg_attribute as a"
        " cross join lateral (select pg_catalog.pg_get_serial_sequence('hipocampo_private.' || %s, a.attname)"
        "   as seq) as q"
        " inner join pg_catalog.pg_sequence as s on s.seqrelid = q.seq::regclass"
        " where a.attrelid = ('hipocampo_private.' || %s)::regclass and a.attidentity <> ''",
        (t.name, t.name),
    ).fetchall()
    found = [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in rows]
    return [
        _Identity(str(c), str(q), int(last or 0), int(bound)) for c, q, last, bound in found if c not in t.reassigned
    ]


def _sequences(conn: psycopg.Connection[Any], tables: list[_Table]) -> dict[str, int]:
    """``{"table.column": last value}`` of each identity column the copy keeps."""
    return {f"{t.name}.{i.column}": i.last for t in tables for i in _kept_identities(conn, t)}


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


def export_tenant(url: str, tenant: UUID | str, path: Path, key: bytes | None = None) -> dict[str, Any]:
    """Write tenant ``tenant`` (its id or slug) of the database at ``url`` to ``path`` (a gzipped
    tar), signed with ``key`` (the operator's, at least 16 bytes) when given; returns the manifest
    (``tenant``, ``last_migration``, ``digest``: rows and md5 per table).

    Raises:
        TenantCopyError: no such tenant (P0002); a key shorter than 16 bytes (22023).
    """
    _check_key(key)
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
        members: dict[str, bytes] = {}
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
                members[member] = data.getvalue()
                _add(tar, member, members[member])
                manifest["tables"].append({"name": t.name, "file": member, "columns": columns})
            members["manifest.json"] = json.dumps(manifest, indent=1).encode()
            _add(tar, "manifest.json", members["manifest.json"])
            if key is not None:
                _add(tar, SIGNATURE, json.dumps({"alg": "HMAC-SHA256", "mac": _mac(key, members)}).encode())
    return manifest


def _check_key(key: bytes | None) -> None:
    if key is not None and len(key) < KEY_MIN_BYTES:
        raise TenantCopyError(f"the signing key must be at least {KEY_MIN_BYTES} bytes (got {len(key)})", "22023")


def _mac(key: bytes, members: dict[str, bytes]) -> str:
    """HMAC-SHA256 (hex) over each member's name and SHA-256, in name order (the signature itself
    excluded)."""
    listing = "".join(
        f"{name}\t{hashlib.sha256(data).hexdigest()}\n" for name, data in sorted(members.items()) if name != SIGNATURE
    )
    return hmac.new(key, listing.encode(), hashlib.sha256).hexdigest()


def _check_signature(path: Path, files: dict[str, bytes], key: bytes | None, trust_unsigned: bool) -> None:
    """The file's signature against ``key``; an unsigned file (or no key to check one) only with
    ``trust_unsigned``."""
    if SIGNATURE in files and key is not None:
        try:
            mac = str(json.loads(files[SIGNATURE])["mac"])
        except (ValueError, KeyError, TypeError) as exc:
            raise TenantCopyError(f"{path}: the signature is unreadable: nothing was imported", "42501") from exc
        if not hmac.compare_digest(mac, _mac(key, files)):
            raise TenantCopyError(
                f"{path}: the signature does not match the key (the file was changed, or signed with another "
                "key): nothing was imported",
                "42501",
            )
        return
    if trust_unsigned:
        return
    if SIGNATURE in files:
        raise TenantCopyError(
            f"{path} is signed, but no key was given to check it: pass the exporting operator's key "
            "(--key-file, HIPOCAMPO_TENANT_COPY_KEY) or --trust-unsigned",
            "42501",
        )
    raise TenantCopyError(
        f"{path} is not signed: import only files you exported yourself, with --trust-unsigned "
        "(docs/SECURITY.md), or export them with a key",
        "42501",
    )


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


def import_tenant(url: str, path: Path, key: bytes | None = None, trust_unsigned: bool = False) -> dict[str, Any]:
    """Write the tenant exported to ``path`` into the database at ``url``, in one transaction;
    returns the digest both sides agree on. ``key`` checks the file's signature; an unsigned file
    is imported only with ``trust_unsigned`` (the operator vouches for it: docs/SECURITY.md).

    Raises:
        TenantCopyError: not an export (22023); unsigned without ``trust_unsigned``, or a signature
            that does not match ``key`` (42501); a table or column the target does not copy, or a
            sequence past its bound (22023); a row of another tenant, a reference that leaves the
            tenant or a configuration a tenant admin may not write (42501, or the config checks'
            22023 / 22003 / P0002); the target's migrations differ from the source's (55000); the
            tenant (id or slug) is there already (23505); an id the copy brings is taken in the
            target (23505: import into a database of its own, or one whose rows came from the same
            source); the digest on the target differs from the source's (XX000). Nothing is
            written in any of these cases.
    """
    _check_key(key)
    manifest, files = _read(path)
    _check_signature(path, files, key, trust_unsigned)
    tenant = manifest.get("tenant")
    if not isinstance(tenant, dict) or not _UUID.fullmatch(str(tenant.get("id", ""))):
        raise TenantCopyError(f"{path}: the manifest names no tenant id", "22023")
    with psycopg.connect(url, row_factory=dict_row) as conn:
        if _last_migration(conn) != manifest["last_migration"]:
            raise TenantCopyError(
                f"the target's last migration is {_last_migration(conn)}, the export's {manifest['last_migration']}: "
                "migrate both to the same version first",
                "55000",
            )
        taken = conn.execute(
            "select 1 from hipocampo_private.tenants where id = %s or slug = %s", (tenant["id"], tenant.get("slug"))
        ).fetchone()
        if taken:
            raise TenantCopyError(f"tenant {tenant.get('slug')} ({tenant['id']}) is already in the target", "23505")
        plan = _import_plan(conn, manifest, files)
        try:
            with conn.transaction():
                before = _scalar(conn, "select hipocampo_private._tenant_row_counts(%s) as v", tenant["id"])
                written = _write_tables(conn, plan, files)
                conn.execute(
                    "select hipocampo_private._check_imported_tenant(%s, %s::jsonb, %s::jsonb)",
                    (tenant["id"], json.dumps(written), json.dumps(before)),
                )
                digest = _check_digest(conn, manifest)
                _advance_sequences(conn, _tables(conn), manifest.get("sequences"))
        except psycopg.errors.UniqueViolation as exc:
            raise TenantCopyError(
                f"an id of the copy is taken in the target: {exc.diag.message_detail}", "23505"
            ) from exc
        except psycopg.Error as exc:
            raise TenantCopyError(f"{exc.diag.message_primary}: nothing was imported", exc.sqlstate) from exc
        except _DigestMismatch as exc:
            raise TenantCopyError(str(exc), "XX000") from exc
    return dict(digest)


class _DigestMismatch(Exception):
    pass


def _scalar(conn: psycopg.Connection[Any], query: str, *args: Any) -> Any:
    row = conn.execute(query, args).fetchone()
    assert row is not None
    return row["v"]


def _import_plan(
    conn: psycopg.Connection[Any], manifest: dict[str, Any], files: dict[str, bytes]
) -> list[dict[str, Any]]:
    """The file's tables as the target will write them: each a non-derived table of the target's
    ``_tenant_tables()``, at most once, with exactly that table's copied columns, in the target's
    order; the columns are the target's, the data the file's member."""
    tables = {t.name: t for t in _tables(conn) if not t.derived}
    entries = manifest.get("tables")
    if not isinstance(entries, list):
        raise TenantCopyError("the manifest lists no tables", "22023")
    plan: dict[str, dict[str, Any]] = {}
    for entry in entries:
        name = entry.get("name") if isinstance(entry, dict) else None
        if name not in tables:
            raise TenantCopyError(f"the export names table {name!r}, which an import does not write", "22023")
        if name in plan:
            raise TenantCopyError(f"the export names table {name} twice", "22023")
        columns = _columns(conn, tables[name])
        if entry.get("columns") != columns:
            raise TenantCopyError(
                f"the export's columns of {name} are not the target's ({', '.join(columns)})", "22023"
            )
        if entry.get("file") not in files:
            raise TenantCopyError(f"the export has no data for {name}", "22023")
        plan[name] = {"name": name, "columns": columns, "file": entry["file"], "ord": tables[name].ord}
    return sorted(plan.values(), key=lambda e: int(e["ord"]))


def _write_tables(conn: psycopg.Connection[Any], plan: list[dict[str, Any]], files: dict[str, bytes]) -> dict[str, int]:
    """COPY each planned table's rows; ``{"table": rows written}``."""
    written: dict[str, int] = {}
    for table in plan:
        query = sql.SQL("copy hipocampo_private.{} ({}) from stdin").format(
            sql.Identifier(table["name"]), sql.SQL(", ").join(map(sql.Identifier, table["columns"]))
        )
        cur = conn.cursor()
        with cur.copy(query) as copy:
            copy.write(files[table["file"]])
        written[table["name"]] = max(cur.rowcount, 0)
    return written


def _check_digest(conn: psycopg.Connection[Any], manifest: dict[str, Any]) -> dict[str, Any]:
    """The tenant's digest on the target (``hipocampo.tenant_digest``), which must equal the
    manifest's (moving sequences after it changes no row)."""
    got: dict[str, Any] = _scalar(conn, "select hipocampo.tenant_digest(%s) as v", manifest["tenant"]["id"])
    found = manifest.get("digest")
    want: dict[str, Any] = found if isinstance(found, dict) else {}
    differ = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
    if differ:
        raise _DigestMismatch(f"the copy differs from the source in {', '.join(differ)}: nothing was imported")
    return got


def _advance_sequences(conn: psycopg.Connection[Any], tables: list[_Table], sequences: Any) -> None:
    """Each identity sequence of a column the import copies moves forward only: past the rows its
    table holds and past the source's last value (the manifest's ``sequences``, so that later
    copies from the same source do not collide), which must stay within 1/1024 of the sequence's
    range (2^53 for bigint). Other entries of ``sequences`` are ignored."""
    wanted = sequences if isinstance(sequences, dict) else {}
    for t in tables:
        for i in _kept_identities(conn, t):
            source = wanted.get(f"{t.name}.{i.column}", 0)
            if not isinstance(source, int) or isinstance(source, bool) or source < 0:
                raise TenantCopyError(f"the export's sequence {t.name}.{i.column} is not a whole number >= 0", "22023")
            if source > i.bound:
                raise TenantCopyError(
                    f"the export's sequence {t.name}.{i.column} ({source}) is past the bound an import accepts"
                    f" ({i.bound})",
                    "22023",
                )
            conn.execute(
                sql.SQL(
                    "select pg_catalog.setval({seq}, greatest({source}, {last},"
                    " (select coalesce(max({col}), 1) from hipocampo_private.{tbl})))"
                ).format(
                    seq=sql.Literal(i.sequence),
                    source=sql.Literal(max(1, source)),
                    last=sql.Literal(max(1, i.last)),
                    col=sql.Identifier(i.column),
                    tbl=sql.Identifier(t.name),
                )
            )


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
