"""The documentation site (issue 58 §5) renders what its markdown says: every heading of every page
is a heading in the built HTML. Raw HTML at a line's start (a code span wrapped so that
"<script>" opened a line) once swallowed all of docs/BENCHMARKS.md after its first paragraph, and
`mkdocs build --strict` passed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.any_model

ROOT = Path(__file__).resolve().parents[1]


def _headings(markdown: str) -> int:
    """The ``##`` / ``###`` headings of a markdown page, outside fenced code."""
    body = re.sub(r"^```.*?^```", "", markdown, flags=re.MULTILINE | re.DOTALL)
    return len(re.findall(r"^#{2,3} \S", body, flags=re.MULTILINE))


def test_every_heading_of_every_page_is_rendered(tmp_path: Path) -> None:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    build(load_config(str(ROOT / "mkdocs.yml"), site_dir=str(tmp_path)))
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert pages
    for page in pages:
        html = tmp_path / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        rendered = len(re.findall(r"<h[23][ >]", html.read_text("utf-8")))
        assert rendered >= _headings(page.read_text("utf-8")), page.name  # api.md, cli.md: generated ones too


def test_the_benchmark_sections_do_not_nest() -> None:
    """Each block a benchmark writes (between its begin and end markers) holds no other: a script
    rewriting its block would otherwise delete the one inside (the languages section once sat
    inside the language check's)."""
    doc = (ROOT / "docs" / "BENCHMARKS.md").read_text("utf-8")
    open_name: str | None = None
    seen: set[str] = set()
    for name, which in re.findall(r"<!-- (.+?):\s?(begin|end) -->", doc):
        if which == "begin":
            assert open_name is None, f"{name} begins inside {open_name}"
            assert name not in seen, f"{name} twice"
            open_name = name
            seen.add(name)
        else:
            assert open_name == name, f"{name} ends while {open_name} is open"
            open_name = None
    assert open_name is None and len(seen) > 20
