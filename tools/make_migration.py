"""``make migration name=<what> [why="<one line>"]``: the next migration, written by a tool
(issue 47 §2).

Two scratch databases on the server hipocampo uses (the embedded one, or ``HIPOCAMPO_DATABASE_URL``'s,
whose role needs CREATEDB): one built from ``supabase/migrations/`` (what a deployed database is),
one from ``supabase/schemas/`` (the definition, :mod:`tools.schema_build`). Then:

1. **migra** (the schema differ behind the Supabase CLI's ``db diff``) writes the DDL that turns
   the first into the second: tables, columns, constraints, indexes, views, functions (whole, as
   ``pg_get_functiondef`` prints them: no docblocks), triggers, policies;
2. this module adds what migra leaves out (:func:`supplement`): privileges on functions,
   tables, columns and schemas; comments; view options such as ``security_invoker``; the
   ``-- definer because …`` line a ``security definer`` function carries in the schema files;
3. the result is applied to a fresh database built from the migrations and its catalog compared
   with the schema database's (:mod:`tools.catalog`, the judge the catalog-comparison test uses).
   Any difference left: printed, nothing written, exit 1.

Then ``supabase/migrations/<UTC yyyymmddhhmmss>_<name>.sql`` is written with a short header (the
why), formatted by ``sqlfluff fix`` (lowercase keywords; function bodies are left as they are),
and its path printed. No difference: says so, writes nothing, exit 0. Data changes (a backfill,
emptying a cache) are not DDL: add them by hand below the generated part.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import tuple_row

from hipocampo import db as hdb
from tools.catalog import SCHEMAS, diff, snapshot
from tools.schema_build import SUPABASE, build_from_schemas, schema_files

NAME = re.compile(r"[a-z][a-z0-9_]{2,80}")

# One row per (object, grantee, privilege); the owner's own rights are left out (both databases
# are built by the same role). Functions of the extensions schema too (dblink's are revoked from
# every API role); a role a grant names must exist already (create it by hand above the grants).
PRIVILEGES = """
select 'function' as kind, format('%%I.%%I(%%s)', n.nspname, p.proname,
                                  pg_get_function_identity_arguments(p.oid)) as object,
       case when a.grantee = 0 then 'public' else quote_ident(pg_get_userbyid(a.grantee)) end as grantee,
       a.privilege_type
from pg_proc as p join pg_namespace as n on n.oid = p.pronamespace,
     aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) as a
where (n.nspname = any(%(schemas)s) or n.nspname = 'extensions') and a.grantee <> p.proowner
union all
select case c.relkind when 'S' then 'sequence' else 'table' end, format('%%I.%%I', n.nspname, c.relname),
       case when a.grantee = 0 then 'public' else quote_ident(pg_get_userbyid(a.grantee)) end,
       a.privilege_type
from pg_class as c join pg_namespace as n on n.oid = c.relnamespace,
     aclexplode(coalesce(c.relacl,
                         acldefault((case c.relkind when 'S' then 's' else 'r' end)::"char", c.relowner))) as a
where n.nspname = any(%(schemas)s) and c.relkind in ('r', 'p', 'v', 'm', 'S') and a.grantee <> c.relowner
union all
select 'column', format('(%%I) on table %%I.%%I', t.attname, n.nspname, c.relname),
       case when a.grantee = 0 then 'public' else quote_ident(pg_get_userbyid(a.grantee)) end,
       a.privilege_type
from pg_attribute as t join pg_class as c on c.oid = t.attrelid join pg_namespace as n on n.oid = c.relnamespace,
     aclexplode(t.attacl) as a
where n.nspname = any(%(schemas)s) and t.attacl is not null and a.grantee <> c.relowner
union all
select 'schema', quote_ident(n.nspname),
       case when a.grantee = 0 then 'public' else quote_ident(pg_get_userbyid(a.grantee)) end,
       a.privilege_type
from pg_namespace as n, aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) as a
where n.nspname = any(%(schemas)s) and a.grantee <> n.nspowner
"""

# Comments on the product's objects, by pg_identify_object's type and identity.
# The extensions (but plpgsql) and their schemas.
EXTENSIONS = """
select e.extname, n.nspname from pg_extension as e inner join pg_namespace as n on e.extnamespace = n.oid
where e.extname <> 'plpgsql'
"""
COMMENTS = """
select o.type, o.identity, d.description
from pg_description as d, pg_identify_object(d.classoid, d.objoid, d.objsubid) as o
where o.schema = any(%(schemas)s) or (o.type = 'schema' and o.identity = any(%(schemas)s))
   or o.identity ~ (' on (' || array_to_string(%(schemas)s, '|') || ')\\.')
"""

VIEW_OPTIONS = """
select format('%%I.%%I', n.nspname, c.relname), coalesce(c.reloptions, '{}')
from pg_class as c join pg_namespace as n on n.oid = c.relnamespace
where n.nspname = any(%(schemas)s) and c.relkind = 'v'
"""

# A function's own settings (``set jit = off``) and planner estimates (``rows 8``, ``cost``): migra
# compares definitions without them.
FUNCTION_SETTINGS = """
select format('%%I.%%I(%%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid)),
       coalesce(p.proconfig, '{}'), p.procost, p.prorows
from pg_proc as p join pg_namespace as n on n.oid = p.pronamespace
where n.nspname = any(%(schemas)s)
"""

# pg_identify_object's type → the word COMMENT ON takes.
COMMENT_KIND = {"table column": "column", "view column": "column", "table constraint": "constraint"}


class MigrationError(RuntimeError):
    """The generated DDL does not build the schema files' database (the difference is the message)."""


def _rows(url: str, query: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, row_factory=tuple_row) as conn:
        return list(conn.execute(query, {"schemas": list(SCHEMAS)}).fetchall())  # type: ignore[arg-type,unused-ignore]


def _literal(text: str | None) -> str:
    return "null" if text is None else "'" + text.replace("'", "''") + "'"


def _sqlalchemy_url(url: str) -> str:
    """migra connects through SQLAlchemy (its psycopg 3 dialect): the same server and database."""
    parts = conninfo_to_dict(url)
    user = parts.get("user", "postgres")
    password = f":{parts['password']}" if parts.get("password") else ""
    host = str(parts.get("host", ""))
    port = parts.get("port")
    query = f"?host={host}" if host.startswith("/") else ""
    where = "" if query else host + (f":{port}" if port else "")
    if query and port:
        query += f"&port={port}"
    return f"postgresql+psycopg://{user}{password}@{where}/{parts['dbname']}{query}"


def migra_sql(source: str, target: str) -> str:
    """migra's DDL from ``source`` to ``target`` (privileges are :func:`supplement`'s)."""
    from migra import Migration
    from sqlbag import S

    # The extensions schema is the extensions' own: migra would restate an extension's members
    # (dblink's types) beside its create extension; the extensions themselves are compared here.
    with S(_sqlalchemy_url(source)) as a, S(_sqlalchemy_url(target)) as b:
        migration = Migration(a, b, exclude_schema="extensions")
        migration.set_safety(False)
        migration.add_all_changes(privileges=False)
        ddl = _with_identity_changes_in_order(str(migration.sql).strip())
    have = {name: schema for name, schema in _rows(source, EXTENSIONS)}
    want = {name: schema for name, schema in _rows(target, EXTENSIONS)}
    added = [f"create extension if not exists {n} with schema {want[n]};" for n in sorted(set(want) - set(have))]
    dropped = [f"drop extension if exists {n};" for n in sorted(set(have) - set(want))]
    return "\n".join([*added, *([ddl] if ddl else []), *dropped]).strip()


_DROP_IDENTITY = re.compile(r"^alter table .+ alter column .+ drop identity;$")
_SET_DEFAULT = re.compile(r"^alter table .+ alter column .+ set default .+;$")


def _with_identity_changes_in_order(ddl: str) -> str:
    """migra's statements with an identity column turned into one with a default put in an order
    PostgreSQL takes: each ``drop identity`` first (a column cannot have both), each ``set
    default`` last (its function may be created by the statements between)."""
    statements = [part for part in ddl.split("\n\n") if part.strip()]
    drops = [p for p in statements if _DROP_IDENTITY.match(p.strip())]
    defaults = [p for p in statements if _SET_DEFAULT.match(p.strip())]
    if not drops:
        return ddl
    rest = [p for p in statements if p not in drops and p not in defaults]
    return "\n\n".join([*drops, *rest, *defaults])


# Every privilege a table may hold, up to PostgreSQL 17's maintain: a grant of all of them is
# written "all", which PostgreSQL 15 (without maintain) also reads.
TABLE_ALL = {"SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"}


def _collapsed(rows: set[tuple[Any, ...]]) -> set[tuple[Any, ...]]:
    """Rows with every table privilege of one grantee on one table folded into one ALL row."""
    out = set(rows)
    tables = {(k, o, g) for k, o, g, _ in rows if k == "table"}
    for kind, obj, grantee in tables:
        held = {str(p) for k, o, g, p in rows if (k, o, g) == (kind, obj, grantee)}
        if held >= TABLE_ALL:
            out -= {(kind, obj, grantee, p) for p in held}
            out.add((kind, obj, grantee, "ALL"))
    return out


def _privilege_statements(have: set[tuple[Any, ...]], want: set[tuple[Any, ...]]) -> list[str]:
    out: list[str] = []
    for verb, rows, word in (("revoke", _collapsed(have - want), "from"), ("grant", _collapsed(want - have), "to")):
        for kind, obj, grantee, privilege in sorted(rows, key=str):
            if kind == "column":
                out.append(f"{verb} {str(privilege).lower()} {obj} {word} {grantee};")
            else:
                out.append(f"{verb} {str(privilege).lower()} on {kind} {obj} {word} {grantee};")
    return out


def supplement(source: str, target: str) -> list[str]:
    """The statements migra leaves out, from the catalogs of ``source`` (after migra's DDL) and
    ``target``: privileges, comments, view options, functions' settings and planner estimates,
    extended statistics."""
    out = _privilege_statements(set(_rows(source, PRIVILEGES)), set(_rows(target, PRIVILEGES)))
    have = {(t, i): d for t, i, d in _rows(source, COMMENTS)}
    want = {(t, i): d for t, i, d in _rows(target, COMMENTS)}
    for kind, identity in sorted(set(have) | set(want), key=str):
        if have.get((kind, identity)) != want.get((kind, identity)):
            word = COMMENT_KIND.get(str(kind), str(kind))
            out.append(f"comment on {word} {identity} is {_literal(want.get((kind, identity)))};")
    views: dict[str, list[str]] = {view: options for view, options in _rows(source, VIEW_OPTIONS)}
    for view, options in _rows(target, VIEW_OPTIONS):
        old, new = set(views.get(view) or []), set(options)
        if old != new:
            dropped = {o.split("=", 1)[0] for o in old} - {o.split("=", 1)[0] for o in new}
            if dropped:
                out.append(f"alter view {view} reset ({', '.join(sorted(dropped))});")
            if new:
                out.append(f"alter view {view} set ({', '.join(sorted(new))});")
    return out + _function_setting_statements(source, target) + _statistics_statements(source, target)


def _function_setting_statements(source: str, target: str) -> list[str]:
    """``alter function … set`` / ``reset`` / ``cost`` / ``rows`` for each function both databases
    have whose settings or planner estimates differ (a new or replaced function is migra's, and
    pg_get_functiondef carries them)."""
    have = {
        f: (dict(c.split("=", 1) for c in config), cost, rows)
        for f, config, cost, rows in _rows(source, FUNCTION_SETTINGS)
    }
    out = []
    for function, config, cost, rows in sorted(_rows(target, FUNCTION_SETTINGS)):
        if function not in have:
            continue
        had, had_cost, had_rows = have[function]
        want = dict(c.split("=", 1) for c in config)
        for name in sorted(set(had) - set(want)):
            out.append(f"alter function {function} reset {name};")
        for name, value in sorted(want.items()):
            if had.get(name) != value:
                plain = re.fullmatch(r"[a-z_][a-z0-9_]*|\d+(?:\.\d+)?", value)
                shown = value if plain else _literal(value.strip('"'))
                out.append(f"alter function {function} set {name} = {shown};")
        if had_cost != cost:
            out.append(f"alter function {function} cost {cost:g};")
        if had_rows != rows and rows:
            out.append(f"alter function {function} rows {rows:g};")
    return out


STATISTICS = """
select format('%%I.%%I', n.nspname, s.stxname), pg_get_statisticsobjdef(s.oid)
from pg_statistic_ext as s join pg_namespace as n on n.oid = s.stxnamespace
where n.nspname = any(%(schemas)s)
"""


def _statistics_statements(source: str, target: str) -> list[str]:
    """``create statistics`` / ``drop statistics`` for the extended statistics objects that differ
    (migra leaves them out)."""
    have = dict(_rows(source, STATISTICS))
    want = dict(_rows(target, STATISTICS))
    out = [f"drop statistics if exists {name};" for name in sorted(have) if have[name] != want.get(name)]
    return out + [f"{want[name]};" for name in sorted(want) if have.get(name) != want[name]]


TEXT_SEARCH_CONFIGS = """
select n.nspname || '.' || c.cfgname,
       pn.nspname || '.' || p.prsname,
       coalesce((
           select json_agg(json_build_object('token', t.alias, 'dicts', d.dicts) order by t.tokid)
           from pg_catalog.ts_token_type(c.cfgparser) as t
           cross join lateral (
               select array_agg(m.mapdict::regdictionary::text order by m.mapseqno) as dicts
               from pg_catalog.pg_ts_config_map as m where m.mapcfg = c.oid and m.maptokentype = t.tokid
           ) as d
           where d.dicts is not null
       ), '[]'),
       (select array_agg(t.alias order by t.tokid) from pg_catalog.ts_token_type(c.cfgparser) as t
        where not exists (
            select 1 from pg_catalog.pg_ts_config_map as m where m.mapcfg = c.oid and m.maptokentype = t.tokid
        ))
from pg_catalog.pg_ts_config as c
join pg_catalog.pg_namespace as n on n.oid = c.cfgnamespace
join pg_catalog.pg_ts_parser as p on p.oid = c.cfgparser
join pg_catalog.pg_namespace as pn on pn.oid = p.prsnamespace
where n.nspname in ('hipocampo', 'hipocampo_private')
"""


def _text_search_statements(source: str, target: str) -> list[str]:
    """Text search configurations migra does not diff: ``create`` for one only ``target`` has, as
    a copy of pg_catalog.simple (the default parser's; sqlfluff does not parse ``parser =``) whose
    mappings are then set to the target's, each token type's dictionaries (token types of one list
    together), and the types it leaves unmapped dropped; ``drop`` for one only ``source`` has. A
    configuration both have is left as it is."""
    have = {row[0] for row in _rows(source, TEXT_SEARCH_CONFIGS)}
    want = {name: (parser, maps, unmapped) for name, parser, maps, unmapped in _rows(target, TEXT_SEARCH_CONFIGS)}
    out = [f"drop text search configuration {name};" for name in sorted(have - set(want))]
    for name in sorted(set(want) - have):
        parser, maps, unmapped = want[name]
        if parser != "pg_catalog.default":
            raise MigrationError(f"text search configuration {name}: parser {parser}; write its migration by hand")
        out.append(f"create text search configuration {name} (copy = pg_catalog.simple);")
        groups: dict[tuple[str, ...], list[str]] = {}
        for m in maps:
            groups.setdefault(tuple(m["dicts"]), []).append(m["token"])
        for dicts, tokens in groups.items():
            out.append(
                f"alter text search configuration {name} alter mapping for {', '.join(tokens)} with {', '.join(dicts)};"
            )
        if unmapped:
            out.append(f"alter text search configuration {name} drop mapping if exists for {', '.join(unmapped)};")
    return out


def _definer_reasons(supabase: Path) -> dict[str, str]:
    """``schema.name`` → the ``-- definer because …`` lines above its definition in the schema files."""
    reasons: dict[str, str] = {}
    for file in schema_files(supabase):
        lines = file.read_text("utf-8").splitlines()
        for i, line in enumerate(lines):
            found = re.match(r"create or replace function ([a-z_]+\.[a-z_0-9]+)\(", line)
            if not found:
                continue
            j = i
            while j > 0 and lines[j - 1].startswith("--"):
                j -= 1
            block = lines[j:i]
            start = next((k for k, text in enumerate(block) if text.startswith("-- definer because")), None)
            if start is not None:
                reasons.setdefault(found.group(1), "\n".join(block[start:]))
    return reasons


def _with_definer_reasons(ddl: str, reasons: dict[str, str]) -> str:
    """Put each security definer function's reason line(s) above its definition."""
    out: list[str] = []
    for statement in re.split(r"(?=^CREATE OR REPLACE FUNCTION )", ddl, flags=re.MULTILINE):
        head = re.match(r"CREATE OR REPLACE FUNCTION ([a-z_]+\.[a-z_0-9]+)\(", statement)
        header, dollar, body = statement.partition("$function$")
        if head and " SECURITY DEFINER" in header:
            reason = reasons.get(head.group(1))
            if reason is None:
                raise MigrationError(f"{head.group(1)} is security definer without a '-- definer because' comment")
            # on a line of its own, as the schema files write it (and the definer test counts it)
            header = re.sub(r" *\bSECURITY DEFINER\b *", "\n SECURITY DEFINER\n", header).replace("\n\n", "\n")
            statement = reason + "\n" + header + dollar + body
        out.append(statement)
    return "".join(out)


def _with_views_kept(ddl: str) -> str:
    """Views as pg_get_viewdef prints them, out of sqlfluff's reach: its alias rule would drop an
    unused table alias, which the catalog keeps (``from t x`` and ``from t`` differ there)."""
    return re.sub(
        r"^(create (?:or replace )?view .*?;)$",
        r"-- noqa: disable=all\n\1\n-- noqa: enable=all",
        ddl,
        flags=re.MULTILINE | re.DOTALL,
    )


def _config(root: Path) -> list[str]:
    return ["--config", str(root / ".sqlfluff")]


def _sqlfluff_fix(text: str) -> str:
    """``sqlfluff fix`` with the project's .sqlfluff (lowercase keywords outside the bodies)."""
    root = SUPABASE.parent
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "migration.sql"
        path.write_text(text, "utf-8")
        subprocess.run(
            [sys.executable, "-m", "sqlfluff", "fix", "--quiet", "--disable-progress-bar", *_config(root), str(path)],
            check=False,
            capture_output=True,
        )
        return path.read_text("utf-8")


def _seed_known(url: str) -> None:
    """Seed a database of the applied history as `hipocampo db migrate` would, but with the
    calibration keys it does not list yet left out (the migration being written adds them)."""
    with psycopg.connect(url, autocommit=True) as conn:
        hdb.seed_config(conn, known_calibration_only=True)


def _verify(ddl: str, schema_url: str, migrations: Path) -> None:
    with hdb.scratch_database("hipocampo_migration_check", migrations=migrations, seed=False) as url:
        _seed_known(url)
        with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
            conn.execute(ddl)  # type: ignore[arg-type,unused-ignore]
        left = diff(snapshot(url), snapshot(schema_url), names=("migrations + new", "schema"))
    if left:
        raise MigrationError(left)


def generate(supabase: Path = SUPABASE, migrations: Path | None = None) -> str:
    """The DDL (without header) that brings a database built from ``migrations`` to the one
    ``supabase``'s schema files define; "" when they agree.

    Raises:
        MigrationError: the DDL does not reproduce the schema files' catalog (the message lists
            what still differs), or a security definer function has no reason comment.
        psycopg.Error: a schema file or a migration failed to run.
    """
    migrations = migrations or (supabase / "migrations")
    with (
        # (seeded below: this checkout's config.toml may hold calibration keys only the new migration accepts)
        hdb.scratch_database("hipocampo_migration_from", migrations=migrations, seed=False) as source,
        hdb.scratch_database("hipocampo_migration_to", migrate=False) as target,
    ):
        _seed_known(source)
        build_from_schemas(target, supabase)
        configs = "\n".join(_text_search_statements(source, target))  # before what may use them
        if configs:
            with psycopg.connect(source, autocommit=True) as conn, conn.transaction():
                conn.execute(configs)  # type: ignore[arg-type,unused-ignore]
        ddl = migra_sql(source, target)
        if ddl:
            with psycopg.connect(source, autocommit=True) as conn, conn.transaction():
                conn.execute(ddl)  # type: ignore[arg-type,unused-ignore]
        extra = supplement(source, target)
        if not configs and not ddl and not extra:
            return ""
        text = _with_views_kept(_with_definer_reasons(ddl, _definer_reasons(supabase)))
        parts = (configs, text, "\n".join(extra))
        text = _sqlfluff_fix("\n\n".join(part for part in parts if part) + "\n")
        _verify(text, target, migrations)
        return text


def _header(name: str, why: Iterable[str]) -> str:
    lines = [f"-- {name.replace('_', ' ')}."] + [f"-- {line}" for line in why]
    lines.append("-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.")
    return "\n".join(lines) + "\n\n"


def write(name: str, why: str = "", supabase: Path = SUPABASE, now: dt.datetime | None = None) -> Path | None:
    """Write ``<supabase>/migrations/<timestamp>_<name>.sql``; ``None`` when there is nothing to write.

    Raises:
        ValueError: ``name`` is not snake_case of 3–81 characters starting with a letter.
        MigrationError: see :func:`generate`.
    """
    if not NAME.fullmatch(name):
        raise ValueError(f"migration name must be snake_case (3-81 characters, [a-z0-9_]): {name!r}")
    directory = supabase / "migrations"
    ddl = generate(supabase, directory)
    if not ddl:
        return None
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%d%H%M%S")
    latest = max((p.name[:14] for p in directory.glob("*.sql")), default="0")
    if stamp <= latest:  # a hand-made migration may carry a later timestamp: stay after it
        stamp = str(int(latest) + 1)
    path = directory / f"{stamp}_{name}.sql"
    path.write_text(_header(name, [line for line in why.splitlines() if line.strip()]) + ddl.rstrip() + "\n", "utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make migration", description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="snake_case, what the migration does (e.g. add_article_index)")
    parser.add_argument("--why", default="", help="the header's reason line(s)")
    args = parser.parse_args(argv)
    try:
        path = write(args.name, args.why)
    except (ValueError, MigrationError) as exc:
        print(f"make migration: {exc}", file=sys.stderr)
        return 1
    if path is None:
        print("nothing to write: supabase/schemas/ and supabase/migrations/ build the same database")
        return 0
    print(path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
