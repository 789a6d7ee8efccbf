"""Shared by the benchmarks: percentiles and writing a marked section of docs/BENCHMARKS.md."""

from __future__ import annotations

from pathlib import Path

from hipocampo.config import repo_root

__all__ = ["pct", "write_section"]


def pct(xs: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of xs; p in 0..100."""
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def write_section(begin: str, end: str, text: str) -> Path:
    """Replace the text between the markers ``begin`` and ``end`` (inclusive) of
    docs/BENCHMARKS.md with ``text`` (which carries the markers), or append it."""
    path = repo_root() / "docs" / "BENCHMARKS.md"
    doc = path.read_text("utf-8") if path.exists() else "# Benchmarks\n"
    if begin in doc and end in doc:
        doc = doc[: doc.index(begin)] + text + doc[doc.index(end) + len(end) :]
    else:
        doc = doc.rstrip("\n") + "\n\n" + text + "\n"
    path.write_text(doc, "utf-8")
    return path
