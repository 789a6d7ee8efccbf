"""Shared by the benchmarks: percentiles, writing a marked section of docs/BENCHMARKS.md, and a
function's definition at an earlier git revision (the before / after benchmarks)."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from hipocampo.config import repo_root

if TYPE_CHECKING:
    from hipocampo import Hipocampo

__all__ = ["bench_member", "function_at", "pct", "write_section"]


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


def function_at(ref: str, schema_file: str, name: str) -> str:
    """The ``create or replace function <name>(`` statement of ``supabase/schemas/<schema_file>``
    at git revision ``ref``, through its closing ``$$;``."""
    text = subprocess.run(
        ["git", "show", f"{ref}:supabase/schemas/{schema_file}"],
        cwd=repo_root(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    at = text.index(f"create or replace function {name}(")
    return text[at : text.index("$$;", text.index("as $$", at)) + 3]


def bench_member(root: Hipocampo) -> tuple[uuid.UUID, str]:
    """Tenant ``bench`` (created when missing; benchmarks/retrieval.py's knowledge bases live there)
    and the JWT claims of its benchmark member (added when missing): ``(tenant_id, claims json)``,
    for ``set_config('request.jwt.claims', claims, true)`` under ``set local role authenticated``."""
    tid = root.tenant_id("bench") or root.create_tenant("Benchmarks", "bench")
    member = uuid.uuid5(uuid.NAMESPACE_URL, "hipocampo-bench/search-ab")
    root.add_member(tid, member, "member")
    claims = json.dumps({"sub": str(member), "role": "authenticated", "app_metadata": {"tenant_id": str(tid)}})
    return tid, claims
