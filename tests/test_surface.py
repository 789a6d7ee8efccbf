"""Python calls the public RPC surface only (issue 17 §2), and the package's layers import
downwards only (issue 17 §3): surfaces (cli, http) → services (answers, memory, ingest,
embeddings, agents, backfill, evaluation: its kb_eval, datasets, calibration, answer_sets) → the client
(client, rpc, models, errors and the constraints' words, text, config, resources, replication) → the
database bootstrap (db)."""

from __future__ import annotations

import ast
from pathlib import Path

import hipocampo

PACKAGE = Path(hipocampo.__file__).parent
SURFACES = {"cli", "http", "hub", "mcp_server"}
SERVICES = {"answers", "memory", "ingest", "embeddings", "agents", "backfill", "evaluation"}
CLIENT = {
    "client", "transport", "rpc", "models", "errors", "constraints", "config", "resources", "text", "supabase_client",
    "replication", "config_models",
}  # fmt: skip
DB = {"db"}


def layer_of(module: str) -> str:
    part = module.split(".")[1] if module.count(".") else "__init__"
    for name, members in (("surface", SURFACES), ("service", SERVICES), ("client", CLIENT), ("db", DB)):
        if part in members:
            return name
    return "root"


def imports(path: Path) -> set[str]:
    """The hipocampo modules ``path`` imports (relative imports resolved)."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    package = parts[:-1]  # a module's package; an __init__'s own package
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                names = [target] if node.module else [f"{target}.{a.name}" for a in node.names]
            else:
                names = [node.module or ""]
            found |= {n for n in names if n.startswith("hipocampo")}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("hipocampo")}
    return found


def test_no_module_reaches_into_hipocampo_private() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).parts[0] != "db"
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if "hipocampo_private" in line
    ]
    assert offenders == []


ORDER = ["surface", "service", "client", "db"]
ALLOWED = {  # who may import whom: downwards, and the root package re-exports the public API
    "surface": {"surface", "service", "client", "db", "root"},
    "service": {"service", "client", "db", "root"},
    "client": {"client"},
    "db": {"client", "db"},
    "root": {"service", "client", "db", "root"},
}


def test_layers_import_downwards_only() -> None:
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        mine = layer_of(module)
        for target in imports(path):
            theirs = layer_of(target)
            if theirs not in ALLOWED[mine]:
                wrong.append(f"{module} ({mine}) imports {target} ({theirs})")
    assert wrong == []


def test_the_client_and_its_transports_import_no_cycle() -> None:
    """Issue 47 §4: the HTTP client was a subclass of the client in a module the client imported
    back (the package's only import cycle); the client now takes a transport. No two modules of
    the client layer import each other, directly or through others (imports inside functions
    count)."""
    modules = {}
    for path in sorted(PACKAGE.glob("*.py")):
        name = f"hipocampo.{path.stem}"
        if layer_of(name) == "client":
            modules[name] = {t for t in imports(path) if t in {f"hipocampo.{p.stem}" for p in PACKAGE.glob("*.py")}}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in modules.get(start, set()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    assert [m for m in modules if reaches(m, m, {m})] == []


def test_no_function_is_longer_than_100_lines() -> None:
    """Long functions were split (issue 17 §3: create_app 191 lines, ingest_documents 155,
    Orchestrator.ask 135); this keeps new ones readable."""
    long = [
        f"{path.relative_to(PACKAGE)}:{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > 100
    ]
    assert long == []
