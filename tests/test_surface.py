"""Python calls the public RPC surface only (issue 17 §2): no module of the package reads or
writes hipocampo_private, except the database bootstrap (db.py: migrations runner and shim)."""

from __future__ import annotations

from pathlib import Path

import hipocampo

PACKAGE = Path(hipocampo.__file__).parent
BOOTSTRAP = {"db.py"}


def test_no_module_reaches_into_hipocampo_private() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name not in BOOTSTRAP
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if "hipocampo_private" in line
    ]
    assert offenders == []
