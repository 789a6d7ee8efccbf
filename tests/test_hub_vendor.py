"""The hub's CSS foundation (issue 58 §2): Pico CSS, classless, pinned in the Makefile and installed
from npm into .pico/ by `make test`; the wheel carries a copy under hub/static/vendor/, and that copy
must be the pinned package's file, byte for byte (`make hub-css` writes it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.any_model

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "py_client" / "hipocampo" / "hub" / "static"
PACKAGE = ROOT / ".pico" / "node_modules" / "@picocss" / "pico"


def pinned_version() -> str:
    found = re.search(r"^PICO_VERSION := (\S+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert found, "the Makefile pins PICO_VERSION"
    return found.group(1)


def test_the_vendored_css_is_the_pinned_npm_package() -> None:
    assert PACKAGE.is_dir(), "run `make .pico/node_modules/@picocss/pico/package.json` (make test does)"
    assert json.loads((PACKAGE / "package.json").read_text())["version"] == pinned_version()
    vendored = STATIC / "vendor" / "pico.classless.min.css"
    assert vendored.read_bytes() == (PACKAGE / "css" / "pico.classless.min.css").read_bytes(), "run `make hub-css`"
    assert (STATIC / "vendor" / "pico-LICENSE.md").read_bytes() == (PACKAGE / "LICENSE.md").read_bytes()
    assert f"v{pinned_version()}" in vendored.read_text(encoding="utf-8")[:200]


def test_every_page_loads_pico_before_the_hubs_own_rules() -> None:
    base = (ROOT / "py_client" / "hipocampo" / "hub" / "templates" / "base.html").read_text()
    pico = base.index('href="/hub/static/vendor/pico.classless.min.css"')
    assert pico < base.index('href="/hub/static/hub.css"')
    assert 'data-theme="light"' in base  # the status colours are chosen for white
    # Every other template extends base.html (none carries a stylesheet of its own).
    for page in (ROOT / "py_client" / "hipocampo" / "hub" / "templates").glob("*.html"):
        if page.name != "base.html":
            text = page.read_text()
            assert text.startswith('{% extends "base.html" %}'), page.name
            assert "<link" not in text and "<style" not in text, page.name
