"""A normalised snapshot of the product's catalog, to compare two databases (issue 17 §1).

``snapshot(url)`` reads, for the schemas hipocampo and hipocampo_private: tables and their
columns (type, nullability, default, generated expression, identity), storage options and RLS
flags; constraints; indexes (their full definition: method, opclass and parameters, e.g. HNSW
``vector_cosine_ops`` with m / ef_construction); extended statistics; policies (command, roles, USING and WITH CHECK
expressions); functions (identity signature, result, language, body, volatility, strictness,
security, parallel safety, proconfig such as ``search_path``, argument defaults, planner cost and rows); views (their
query and options such as ``security_invoker``); triggers; privileges on schemas, tables, columns
and functions (the extensions schema's functions too); default privileges; comments; text search
configurations; extensions. Each item is one ``"kind name" -> text`` entry; ``diff(a, b)`` says what differs, readably.
"""

from __future__ import annotations

import difflib
from typing import Any

import psycopg

SCHEMAS = ["hipocampo", "hipocampo_private"]

QUERIES: dict[str, str] = {
    "table": """
        select n.nspname || '.' || c.relname as name,
               concat_ws(E'\\n', 'kind ' || c.relkind::text,
                         'rls ' || c.relrowsecurity::text || ' forced ' || c.relforcerowsecurity::text,
                         'options '
                         || coalesce(array_to_string(array(select unnest(c.reloptions) order by 1), ','), ''))
               as body
        from pg_class as c join pg_namespace as n on n.oid = c.relnamespace
        where n.nspname = any(%(schemas)s) and c.relkind in ('r', 'p', 'v', 'm', 'S', 'c')
    """,
    "column": """
        select n.nspname || '.' || c.relname || '.' || a.attname as name,
               concat_ws(' ', format_type(a.atttypid, a.atttypmod), case when a.attnotnull then 'not null' end,
                         'default ' || pg_get_expr(d.adbin, d.adrelid),
                         nullif('generated ' || a.attgenerated::text, 'generated '),
                         nullif('identity ' || a.attidentity::text, 'identity '),
                         -- the order among live columns: a dropped column keeps its attnum
                         'position ' || (select count(*) from pg_attribute as b
                                         where b.attrelid = a.attrelid and b.attnum between 1 and a.attnum
                                           and not b.attisdropped)) as body
        from pg_attribute as a join pg_class as c on c.oid = a.attrelid
        join pg_namespace as n on n.oid = c.relnamespace
        left join pg_attrdef as d on d.adrelid = a.attrelid and d.adnum = a.attnum
        where n.nspname = any(%(schemas)s) and c.relkind in ('r', 'p', 'v', 'm', 'c') and a.attnum > 0
          and not a.attisdropped
    """,
    "constraint": """
        select n.nspname || '.' || c.relname || '.' || k.conname as name, pg_get_constraintdef(k.oid) as body
        from pg_constraint as k join pg_class as c on c.oid = k.conrelid
        join pg_namespace as n on n.oid = c.relnamespace
        where n.nspname = any(%(schemas)s) and k.contype <> 'n'
    """,
    "index": """
        select n.nspname || '.' || i.relname as name, pg_get_indexdef(i.oid) as body
        from pg_index as x join pg_class as i on i.oid = x.indexrelid
        join pg_namespace as n on n.oid = i.relnamespace
        where n.nspname = any(%(schemas)s)
    """,
    "statistics": """
        select n.nspname || '.' || s.stxname as name, pg_get_statisticsobjdef(s.oid) as body
        from pg_statistic_ext as s join pg_namespace as n on n.oid = s.stxnamespace
        where n.nspname = any(%(schemas)s)
    """,
    "policy": """
        select schemaname || '.' || tablename || ' ' || policyname as name,
               concat_ws(E'\\n', permissive, cmd, array_to_string(array(select unnest(roles) order by 1), ','),
                         'using ' || qual, 'check ' || with_check) as body
        from pg_policies where schemaname = any(%(schemas)s)
    """,
    "function": """
        select n.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' as name,
               concat_ws(E'\\n', 'returns ' || pg_get_function_result(p.oid),
                         'arguments ' || pg_get_function_arguments(p.oid), 'language ' || l.lanname,
                         'volatility ' || p.provolatile::text, 'strict ' || p.proisstrict::text,
                         'security definer ' || p.prosecdef::text, 'parallel ' || p.proparallel::text,
                         'config ' || coalesce(array_to_string(p.proconfig, ','), ''),
                         'cost ' || p.procost::text, 'rows ' || p.prorows::text, 'body', p.prosrc) as body
        from pg_proc as p join pg_namespace as n on n.oid = p.pronamespace
        join pg_language as l on l.oid = p.prolang
        where n.nspname = any(%(schemas)s)
    """,
    "view": """
        select n.nspname || '.' || c.relname as name, pg_get_viewdef(c.oid, true) as body
        from pg_class as c join pg_namespace as n on n.oid = c.relnamespace
        where n.nspname = any(%(schemas)s) and c.relkind in ('v', 'm')
    """,
    "trigger": """
        select n.nspname || '.' || c.relname || ' ' || t.tgname as name, pg_get_triggerdef(t.oid, true) as body
        from pg_trigger as t join pg_class as c on c.oid = t.tgrelid
        join pg_namespace as n on n.oid = c.relnamespace
        where n.nspname = any(%(schemas)s) and not t.tgisinternal
    """,
    "grant:schema": """
        select n.nspname as name, array_to_string(array(select unnest(n.nspacl)::text order by 1), E'\\n') as body
        from pg_namespace as n where n.nspname = any(%(schemas)s)
    """,
    "grant:table": """
        select n.nspname || '.' || c.relname as name,
               array_to_string(array(select unnest(c.relacl)::text order by 1), E'\\n') as body
        from pg_class as c join pg_namespace as n on n.oid = c.relnamespace
        where n.nspname = any(%(schemas)s) and c.relkind in ('r', 'p', 'v', 'm', 'S')
    """,
    "grant:column": """
        select n.nspname || '.' || c.relname || '.' || a.attname as name,
               array_to_string(array(select unnest(a.attacl)::text order by 1), E'\\n') as body
        from pg_attribute as a join pg_class as c on c.oid = a.attrelid
        join pg_namespace as n on n.oid = c.relnamespace
        where n.nspname = any(%(schemas)s) and a.attacl is not null
    """,
    "grant:function": """
        select n.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' as name,
               coalesce(array_to_string(array(select unnest(p.proacl)::text order by 1), E'\\n'), 'default') as body
        from pg_proc as p join pg_namespace as n on n.oid = p.pronamespace
        where n.nspname = any(%(schemas)s)
    """,
    # The extensions' functions (issue 57 §1: dblink's are revoked from every API role).
    "grant:extension function": """
        select n.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')' as name,
               coalesce(array_to_string(array(select unnest(p.proacl)::text order by 1), E'\\n'), 'default') as body
        from pg_proc as p join pg_namespace as n on n.oid = p.pronamespace
        where n.nspname = 'extensions'
    """,
    "grant:default": """
        select coalesce(n.nspname, '*') || ' ' || d.defaclobjtype::text || ' ' || pg_get_userbyid(d.defaclrole) as name,
               array_to_string(array(select unnest(d.defaclacl)::text order by 1), E'\\n') as body
        from pg_default_acl as d left join pg_namespace as n on n.oid = d.defaclnamespace
        where n.nspname is null or n.nspname = any(%(schemas)s)
    """,
    "comment": """
        select coalesce(
                   (select n.nspname || '.' || c.relname || coalesce('.' || a.attname, '')
                    from pg_class as c join pg_namespace as n on n.oid = c.relnamespace
                    left join pg_attribute as a on a.attrelid = c.oid and a.attnum = d.objsubid and d.objsubid > 0
                    where d.classoid = 'pg_class'::regclass and c.oid = d.objoid and n.nspname = any(%(schemas)s)),
                   (select n.nspname || '.' || p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')'
                    from pg_proc as p join pg_namespace as n on n.oid = p.pronamespace
                    where d.classoid = 'pg_proc'::regclass and p.oid = d.objoid and n.nspname = any(%(schemas)s)),
                   (select n.nspname from pg_namespace as n
                    where d.classoid = 'pg_namespace'::regclass and n.oid = d.objoid and n.nspname = any(%(schemas)s)),
                   (select c.relname || ' ' || p.polname from pg_policy as p join pg_class as c on c.oid = p.polrelid
                    join pg_namespace as n on n.oid = c.relnamespace
                    where d.classoid = 'pg_policy'::regclass and p.oid = d.objoid and n.nspname = any(%(schemas)s))
               ) as name,
               d.description as body
        from pg_description as d
    """,
    "text search configuration": """
        select n.nspname || '.' || c.cfgname as name,
               (select string_agg(m.maptokentype::text || ':' || m.mapseqno::text || ':'
                                  || m.mapdict::regdictionary::text, ',' order by m.maptokentype, m.mapseqno)
                from pg_ts_config_map as m where m.mapcfg = c.oid) as body
        from pg_ts_config as c join pg_namespace as n on n.oid = c.cfgnamespace
        where n.nspname = any(%(schemas)s)
    """,
    "extension": """
        select e.extname as name, n.nspname as body
        from pg_extension as e join pg_namespace as n on n.oid = e.extnamespace
        where e.extname <> 'pg_cron'  -- the deployment's choice (Supabase: Integrations → Cron)
    """,
}


def snapshot(url: str) -> dict[str, str]:
    """``{"kind name": text}`` of everything the product defines in its schemas (see module doc)."""
    out: dict[str, str] = {}
    with psycopg.connect(url) as conn:
        for kind, query in QUERIES.items():
            for name, body in conn.execute(query, {"schemas": SCHEMAS}).fetchall():  # type: ignore[arg-type,unused-ignore]
                if name is not None:
                    out[f"{kind} {name}"] = "" if body is None else str(body)
    return out


def diff(a: dict[str, Any], b: dict[str, Any], names: tuple[str, str] = ("migrations", "schema")) -> str:
    """A readable account of what differs between two snapshots ("" when equal)."""
    lines: list[str] = []
    for key in sorted(set(a) - set(b)):
        lines.append(f"only in {names[0]}: {key}")
    for key in sorted(set(b) - set(a)):
        lines.append(f"only in {names[1]}: {key}")
    for key in sorted(set(a) & set(b)):
        if a[key] != b[key]:
            lines.append(f"differs: {key}")
            lines.extend(
                "    " + line
                for line in difflib.unified_diff(
                    a[key].splitlines(), b[key].splitlines(), names[0], names[1], lineterm="", n=1
                )
            )
    return "\n".join(lines)
