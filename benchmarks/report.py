"""Shared by the benchmarks: percentiles, writing a marked section of docs/BENCHMARKS.md, and for
the before / after benchmarks functions as they were at an earlier git revision, installed beside
the current ones, and calls as the benchmark tenant's member."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hipocampo.config import repo_root

if TYPE_CHECKING:
    import psycopg

    from hipocampo import Hipocampo

__all__ = ["as_member", "bench_member", "function_at", "install_reference", "pct", "write_section"]


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


def install_reference(conn: psycopg.Connection[Any], ref: str, functions: list[tuple[str, str]]) -> None:
    """Schema ``bench_ref`` (dropped first) with ``functions`` as they were at git revision
    ``ref``: each ``(schema file, qualified name)`` installed as ``bench_ref.<name>``, and the calls
    among them pointed at those copies (the other functions they call are the current ones);
    executable by authenticated. Given in dependency order (callees first)."""
    sources = [function_at(ref, file, name) for file, name in functions]
    conn.execute("drop schema if exists bench_ref cascade")
    conn.execute("create schema bench_ref")
    for src in sources:
        for _, name in functions:
            src = src.replace(f"{name}(", f"bench_ref.{name.split('.', 1)[1]}(")
        conn.execute(src)  # type: ignore[arg-type]
    conn.execute("grant usage on schema bench_ref to authenticated")
    conn.execute("grant execute on all functions in schema bench_ref to authenticated")


@contextmanager
def as_member(conn: psycopg.Connection[Any], claims: str) -> Iterator[psycopg.Cursor[Any]]:
    """A cursor in a transaction of its own as ``authenticated`` with the JWT ``claims`` (RLS and
    the caller model apply), as bench_member's member calls the RPCs."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("set local role authenticated")
        cur.execute("select set_config('request.jwt.claims', %s, true)", (claims,))
        yield cur


def latency_tenants(conn: psycopg.Connection[Any], queries: int) -> tuple[list[str], list[str], str]:
    """benchmarks/latency.py's tenants (``lat-00`` …, 2,000 SciFact chunks each) for ``queries``
    questions: question i goes to the member of tenant i mod n (JWT claims as json) in that
    tenant's knowledge base. Returns the claims and knowledge base of each question and a size
    line ("<chunks in the table> in <n> tenants"). Exits when latency.py has not built them."""
    scopes = conn.execute(
        "select t.id, k.id, t.slug from hipocampo_private.tenants as t"
        " join hipocampo_private.knowledge_bases as k on k.tenant_id = t.id and k.name = 'scifact'"
        " where t.slug like 'lat-%%' order by t.slug"
    ).fetchall()
    if not scopes:
        sys.exit("no lat-NN tenants: run benchmarks/latency.py first")
    total = conn.execute("select count(*) from hipocampo_private.chunks").fetchone()
    who, kbs = [], []
    for i in range(queries):
        tenant, kb, slug = scopes[i % len(scopes)]
        member = uuid.uuid5(uuid.NAMESPACE_URL, f"hipocampo-bench/{slug}")
        claims = {"sub": str(member), "role": "authenticated", "app_metadata": {"tenant_id": str(tenant)}}
        who.append(json.dumps(claims))
        kbs.append(str(kb))
    return who, kbs, f"{(total or [0])[0]:,} chunks in {len(scopes)} tenants"
