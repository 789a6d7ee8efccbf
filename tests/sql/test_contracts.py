"""Contracts that cannot drift (issue 17 §1 and §2): what the docs and the edge functions say about
the RPC surface is checked against the catalog of the database the migrations built."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ROOT / "supabase" / "functions"
SCHEMAS = ROOT / "supabase" / "schemas"

Conn = psycopg.Connection[dict[str, Any]]


def rpc_arguments(db: Conn) -> dict[str, dict[str, str]]:
    """``{rpc: {argument: type}}`` of every function in the exposed schema."""
    rows = db.execute(
        "select p.proname, a.name, format_type(a.type, null) as type"
        " from pg_proc as p cross join lateral unnest(p.proargnames, p.proargtypes::oid[]) as a (name, type)"
        " where p.pronamespace = 'hipocampo'::regnamespace and p.proargmodes is null"
        " union all"
        " select p.proname, a.name, format_type(a.type, null)"
        " from pg_proc as p cross join lateral unnest(p.proargnames, p.proallargtypes, p.proargmodes)"
        "   as a (name, type, mode)"
        " where p.pronamespace = 'hipocampo'::regnamespace and p.proargmodes is not null and a.mode in ('i', 'b')"
    ).fetchall()
    out: dict[str, dict[str, str]] = {}
    for r in rows:
        out.setdefault(r["proname"], {})[r["name"]] = r["type"]
    for r in db.execute("select proname from pg_proc where pronamespace = 'hipocampo'::regnamespace").fetchall():
        out.setdefault(r["proname"], {})
    return out


def edge_rpcs() -> list[tuple[str, str, dict[str, str]]]:
    """(file, rpc name, {param: type}) of every ``Rpc`` object literal in the edge functions."""
    found = []
    for path in sorted(FUNCTIONS.glob("*/index.ts")):
        text = path.read_text("utf-8")
        for m in re.finditer(r'name:\s*"(\w+)",\s*params:\s*\{([^}]*)\}', text):
            params = dict(re.findall(r'(\w+):\s*"([^"]+)"', m.group(2)))
            found.append((path.parent.name, m.group(1), params))
    return found


def normalise(t: str) -> str:
    return (
        t.replace("extensions.", "").replace("bit varying", "varbit").replace("timestamp with time zone", "timestamptz")
    )


def test_edge_functions_declare_the_rpcs_arguments(db: Conn) -> None:
    catalog = rpc_arguments(db)
    rpcs = edge_rpcs()
    assert len(rpcs) >= 10
    problems = []
    for fn, name, params in rpcs:
        if name not in catalog:
            problems.append(f"{fn}: {name} is not an RPC")
            continue
        for param, type_ in params.items():
            want = catalog[name].get(param)
            if want is None:
                problems.append(f"{fn}: {name} has no argument {param}")
            elif normalise(want) != normalise(type_):
                problems.append(f"{fn}: {name}.{param} is {want}, declared {type_}")
    assert problems == []


@pytest.mark.parametrize("function", ["search", "context-pack"])
def test_documented_body_fields_are_the_declared_parameters(function: str) -> None:
    text = (FUNCTIONS / function / "index.ts").read_text("utf-8")
    body = text[text.index("Body: {") : text.index("Returns")]
    documented = set(re.findall(r'"(\w+)"(?:\?[:,}]|:)', body))
    declared = next(p for fn, _, p in edge_rpcs() if fn == function)
    assert documented == set(declared) - {"user_id"}


def test_design_md_lists_every_rpc_and_no_other(db: Conn) -> None:
    text = (ROOT / "docs" / "design.md").read_text("utf-8")
    start = text.index("## RPC surface (schema hipocampo)")
    section = text[start : text.index("\n## ", start + 5)]
    listed = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            listed |= set(re.findall(r"`(\w+)\(", first)) | set(re.findall(r"`(\w+)`", first))
    functions = {
        r["proname"] for r in db.execute("select proname from pg_proc where pronamespace = 'hipocampo'::regnamespace")
    }
    views = {
        r["relname"]
        for r in db.execute(
            "select relname from pg_class where relnamespace = 'hipocampo'::regnamespace and relkind = 'v'"
        )
    }
    assert functions - listed == set(), "RPCs missing from design.md"
    assert listed - functions - views == set(), "design.md lists what is not an RPC"


def test_each_function_is_defined_once_in_the_schema_files(db: Conn) -> None:
    definitions = [
        line
        for path in sorted(SCHEMAS.glob("*.sql"))
        for line in path.read_text("utf-8").splitlines()
        if "create or replace function" in line
    ]
    row = db.execute(
        "select count(*) as n from pg_proc"
        " where pronamespace in ('hipocampo'::regnamespace, 'hipocampo_private'::regnamespace)"
    ).fetchone()
    assert row is not None and len(definitions) == row["n"]


def test_no_schema_comment_refers_to_a_migration() -> None:
    found = [
        f"{path.name}:{n}"
        for path in sorted(SCHEMAS.glob("*.sql"))
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if re.search(r"\bmigration \d|\b00[0-4]\d00\b|as in migration", line)
    ]
    assert found == []


# A migration named by six digits alone (the first squash's numbering, 0000xx00 shortened) or
# "migration 0…", or by a full version (yyyymmddhhmmss) no file of supabase/migrations/ has: the
# squashed history, which a reader finds in git only.
SQUASHED = re.compile(r"(?<![0-9])00[0-4][0-9]00(?![0-9])|\bmigrations? 00")
VERSION = re.compile(r"(?<![0-9])20[2-9][0-9](?:0[1-9]|1[0-2])[0-3][0-9][0-2][0-9][0-5][0-9][0-5][0-9](?![0-9])")


def test_no_document_refers_to_a_squashed_migration() -> None:
    """Issue 47 §5: README, CHANGELOG, docs, config.toml, the schema files, the Python package,
    tools, tests, benchmarks and the edge functions name no migration the release's baseline
    squashed (the one constant that must, ``SQUASHED_THROUGH``, aside)."""
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "config.toml", *sorted((ROOT / "docs").glob("*.md"))]
    for folder in ("py_client/hipocampo", "tools", "tests", "benchmarks"):
        files += sorted((ROOT / folder).rglob("*.py"))
    files += sorted((ROOT / "supabase" / "schemas").glob("*.sql"))
    files += sorted((ROOT / "supabase" / "functions").rglob("*.ts"))
    versions = {p.name.split("_", 1)[0] for p in (ROOT / "supabase" / "migrations").glob("*.sql")}
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()[:80]}"
        for path in files
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if SQUASHED.search(line) or ("SQUASHED_THROUGH =" not in line and set(VERSION.findall(line)) - versions)
    ]
    assert found == []


def python_rpc_calls() -> list[tuple[str, str, set[str]]]:
    """(module, rpc, argument names) of every call of the RPC caller with a literal dict in the
    package (``client.rpc("x", {...})``, ``rpc_in(cur, "x", {...})``, ``Memory._call("x", {...})``)."""
    package = ROOT / "py_client" / "hipocampo"
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text("utf-8")
        for m in re.finditer(r'(?:\.rpc|\.rpc_in|\._call)\(\s*(?:cur,\s*)?"(\w+)",\s*(\{[^{}]*\}|None)', text):
            keys = set(re.findall(r'"(\w+)":', m.group(2)))
            if "**self._subject()" in m.group(2):
                keys |= {"user_id", "tenant_id"}
            found.append((path.name, m.group(1), keys))
    return found


def test_python_calls_name_real_rpcs_and_arguments(db: Conn) -> None:
    catalog = rpc_arguments(db)
    calls = python_rpc_calls()
    assert len(calls) >= 20
    problems = [
        f"{module}: {rpc}({', '.join(sorted(keys - set(catalog.get(rpc, {}))))})"
        for module, rpc, keys in calls
        if rpc not in catalog or keys - set(catalog[rpc])
    ]
    assert problems == []


def rpc_columns(db: Conn, rpc: str) -> set[str]:
    """The columns an RPC returns (its OUT / TABLE arguments)."""
    row = db.execute(
        "select array(select a.name from unnest(p.proargnames, p.proargmodes) as a (name, mode)"
        " where a.mode in ('o', 't', 'b')) as cols,"
        " array(select a.attname from pg_type as t join pg_attribute as a on a.attrelid = t.typrelid"
        "       where t.oid = p.prorettype and a.attnum > 0 and not a.attisdropped) as row_cols"
        " from pg_proc as p where p.pronamespace = 'hipocampo'::regnamespace and p.proname = %s",
        (rpc,),
    ).fetchone()
    assert row is not None, rpc
    return set(row["cols"] or []) | set(row["row_cols"] or [])


@pytest.mark.parametrize(
    ("rpc", "model", "python_only"),
    [
        ("hybrid_search", "SearchHit", set()),
        ("list_knowledge_bases", "KnowledgeBase", set()),
        ("search_memories", "MemoryHit", set()),
        ("search_history", "HistoryHit", set()),
        ("scrub_pii", "ScrubResult", set()),
        ("lookup_memories", "MemoryRecord", {"tier"}),
    ],
)
def test_result_models_match_the_rpcs_columns(db: Conn, rpc: str, model: str, python_only: set[str]) -> None:
    """Every field of the pydantic result model is a column the RPC returns (or one Python adds)."""
    import hipocampo.models as models

    fields = set(getattr(models, model).model_fields)
    assert fields - python_only <= rpc_columns(db, rpc), sorted(fields - python_only - rpc_columns(db, rpc))


def test_every_function_has_a_complete_docblock() -> None:
    """Purpose, returns and errors above every function of the schema files (issue 17 §1)."""
    incomplete = []
    for path in sorted(SCHEMAS.glob("*.sql")):
        text = path.read_text("utf-8")
        for m in re.finditer(r"^create or replace function ([\w.]+)\(", text, re.M):
            before = text[: m.start()]
            start, end = before.rfind("/*"), before.rfind("*/")
            between = before[end + 2 :].strip().splitlines() if end >= 0 else ["x"]
            doc = before[start:end] if all(line.startswith("--") for line in between) else ""
            missing = [part for part in ("Purpose", "Returns", "Errors") if part not in doc]
            if missing:
                incomplete.append(f"{path.name}: {m.group(1)} lacks {', '.join(missing)}")
    assert incomplete == []


def test_the_readme_s_postgrest_examples_match_the_catalog(db: Conn) -> None:
    """Issue 20 §2: the ``POST /rest/v1/rpc/...`` examples of docs/interfaces.md stay exact: each names an RPC
    of the exposed schema that ``authenticated`` may execute, sends ``Content-Profile: hipocampo``,
    the apikey and a bearer token, and a JSON body whose keys are the RPC's arguments."""
    import json

    text = (ROOT / "docs" / "interfaces.md").read_text("utf-8")
    calls = re.findall(r'curl -X POST "\$SUPABASE_URL/rest/v1/rpc/(\w+)" \\\n(.*?)-d \'(\{.*?\})\'', text, re.S)
    assert len(calls) >= 3
    catalog = rpc_arguments(db)
    for name, headers, body in calls:
        assert name in catalog, name
        assert '-H "Content-Profile: hipocampo"' in headers and '-H "apikey: $SUPABASE_ANON_KEY"' in headers
        assert '-H "Authorization: Bearer $USER_JWT"' in headers
        keys = set(json.loads(body))
        assert keys <= set(catalog[name]), (name, keys - set(catalog[name]))
        row = db.execute(
            "select bool_or(has_function_privilege('authenticated', p.oid, 'execute')) as ok from pg_proc as p"
            " where p.pronamespace = 'hipocampo'::regnamespace and p.proname = %s",
            (name,),
        ).fetchone()
        assert row is not None and row["ok"], name


def schema_functions() -> list[tuple[str, str, str, str]]:
    """(file, name, docblock, definition through its closing $$) of every function in the schema files."""
    out = []
    for path in sorted(SCHEMAS.glob("*.sql")):
        text = path.read_text("utf-8")
        for m in re.finditer(r"^create or replace function ([\w.]+)\(", text, re.M):
            before = text[: m.start()]
            doc = before[before.rfind("/*") : before.rfind("*/")]
            opening = text.index("$$", m.end())
            out.append((path.name, m.group(1), doc, text[m.start() : text.index("$$", opening + 2) + 2]))
    return out


def test_every_sqlstate_a_function_raises_is_in_its_docblock() -> None:
    """Issue 47 §1: a caller reads the errors from the docblock, so each ``raise … using errcode``
    of a function appears in its Errors (errors of the functions it calls are named by reference,
    e.g. "as hybrid_search")."""
    lacking = []
    for file, name, doc, definition in schema_functions():
        errors = doc[doc.find("Errors") :] if "Errors" in doc else ""
        codes = set(re.findall(r"errcode\s*=\s*'([0-9A-Z]{5})'", definition))
        lacking += [f"{file}: {name} raises {code}" for code in sorted(codes) if code not in errors]
    assert lacking == []


def test_an_argument_out_of_its_range_is_22023_everywhere() -> None:
    """Issue 47 §1: one SQLSTATE per kind of error. An argument out of its range, "x must be / lie
    in <range> (got v)", is an invalid parameter value (22023) in every function (promote_memory's
    intensity was 23514 and set_document_metadata's trust_score 22003); a config value outside its
    bounds, "<section>.<key> must lie in …", is 22003 (numeric value out of range: the config RPCs)."""
    raises = re.findall(
        r"raise exception '([^']*\bmust (?:be|lie in) [^']*\(got %\))'(?:[^;]|;(?!\s*$))*?errcode\s*=\s*'(\w{5})'",
        "\n".join(d for *_, d in schema_functions()),
        re.M,
    )
    assert len(raises) >= 10
    kind = {True: "22003", False: "22023"}  # a config key's bounds / an argument's range
    assert [(m, code) for m, code in raises if code != kind[m.startswith("%.% must lie in")]] == []


# SQL functions longer than this many lines (definition through the closing $$) are split into
# named steps (issue 47 §1). The allowlist only shrinks: a listed function may not grow past its
# size here, and one that fits the limit leaves the list. It is empty: every function fits.
SQL_FUNCTION_LINES = 100
SQL_TOO_LONG: dict[str, int] = {}


def test_no_sql_function_grows_past_the_limit() -> None:
    sizes = {name: definition.count("\n") + 1 for _, name, _, definition in schema_functions()}
    too_long = {name: n for name, n in sizes.items() if n > SQL_FUNCTION_LINES}
    grown = {name: n for name, n in too_long.items() if n > SQL_TOO_LONG.get(name, SQL_FUNCTION_LINES)}
    shrunk = sorted(name for name in SQL_TOO_LONG if sizes.get(name, 0) <= SQL_FUNCTION_LINES)
    assert grown == {}, "split these into named steps (or, for a listed one, do not grow it)"
    assert shrunk == [], "these now fit the limit: remove them from SQL_TOO_LONG"


@pytest.mark.parametrize(
    ("constraint", "values"),
    [
        ("memories_category_check", "CATEGORIES"),
        ("memories_emotion_check", "EMOTIONS"),
        ("memories_life_domain_check", "LIFE_DOMAINS"),
    ],
)
def test_the_memory_vocabularies_are_the_schema_s(db: Conn, constraint: str, values: str) -> None:
    """Issue 45 §5: the MCP remember tool suggested categories the gate refused (23514); the CLI
    help and the MCP tools' schemas now take their values from hipocampo.memory.vocabulary, which
    must list exactly what the check constraint allows."""
    from hipocampo.memory import vocabulary

    row = db.execute(
        "select pg_get_constraintdef(oid) as d from pg_constraint where conname = %s", (constraint,)
    ).fetchone()
    assert row is not None
    allowed = set(re.findall(r"'([a-z_]+)'::text", row["d"]))
    assert allowed == set(getattr(vocabulary, values))
