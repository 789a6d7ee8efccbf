"""The test files that touch what changed (``make check``, issue 60 §6).

``python -m tools.changed_tests [--base REV]`` prints, one a line, the test files of ``tests/``
(not ``tests/sql/``, which ``make check`` runs whole) that touch a file changed since ``REV``
(default: the upstream branch if there is one, else ``HEAD``), the uncommitted and untracked
changes included:

- a changed test file itself;
- for a changed module of the package (``py_client/hipocampo/a/b.py``), every test file that
  names it (``hipocampo.a.b``) or imports from its package (``from hipocampo.a import …``);
- for a changed edge function (``supabase/functions/``), the files that serve them
  (``tests/test_edge_functions.py``, ``tests/test_surfaces_contract.py``);
- for a changed schema file or migration, the catalog, upgrade and migration tests
  (``tests/test_upgrade.py``, ``tests/test_make_migration.py``).

Nothing changed, or nothing maps: nothing printed (``make check`` then runs the SQL tests alone).
"""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
EDGE = ("tests/test_edge_functions.py", "tests/test_surfaces_contract.py")
SCHEMA = ("tests/test_upgrade.py", "tests/test_make_migration.py")


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout


def changed(base: str | None) -> set[str]:
    """Paths (relative to the repository) changed since ``base``, plus the uncommitted and the
    untracked ones."""
    if base is None:
        upstream = _git("rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}").strip()
        base = upstream or "HEAD"
    out = set(_git("diff", "--name-only", base).split())
    out |= set(_git("diff", "--name-only", "HEAD").split())
    out |= set(_git("ls-files", "--others", "--exclude-standard").split())
    return out


def tests_for(paths: set[str]) -> list[str]:
    """The test files of ``tests/`` (not ``tests/sql/``) that touch ``paths``."""
    picked: set[str] = set()
    candidates = sorted(p for p in TESTS.glob("test_*.py"))
    texts = {p: p.read_text("utf-8") for p in candidates}
    for path in paths:
        if path.startswith("tests/test_") and path.endswith(".py") and (ROOT / path).exists():
            picked.add(path)
        elif path.startswith("py_client/hipocampo/") and path.endswith(".py"):
            module = path.removeprefix("py_client/").removesuffix(".py").removesuffix("/__init__").replace("/", ".")
            parent = module.rsplit(".", 1)[0]
            pattern = re.compile(rf"\b{re.escape(module)}\b|from {re.escape(parent)} import ")
            picked |= {str(p.relative_to(ROOT)) for p, text in texts.items() if pattern.search(text)}
        elif path.startswith("supabase/functions/"):
            picked.update(EDGE)
        elif path.startswith(("supabase/schemas/", "supabase/migrations/")):
            picked.update(SCHEMA)
    return sorted(picked)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--base", help="the revision to compare with (default: the upstream branch, else HEAD)")
    args = ap.parse_args()
    for test in tests_for(changed(args.base)):
        print(test)


if __name__ == "__main__":
    main()
