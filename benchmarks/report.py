"""Shared by the benchmarks: percentiles, writing a marked section of docs/BENCHMARKS.md (or, in
the harness's A/B, capturing it), the benchmark tenant's member and calls as it, and the latency
tenants' scopes."""

from __future__ import annotations

import json
import os
import re
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hipocampo.config import repo_root

if TYPE_CHECKING:
    import psycopg

    from hipocampo import Hipocampo

__all__ = ["as_member", "bench_member", "latency_tenants", "pct", "settle", "write_section"]


def pct(xs: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of xs; p in 0..100."""
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def write_section(begin: str, end: str, text: str) -> Path:
    """Replace the text between the markers ``begin`` and ``end`` (inclusive) of
    docs/BENCHMARKS.md with ``text`` (which carries the markers), or append it.

    Under the harness's A/B (``HIPOCAMPO_BENCH_SECTIONS`` names a folder) the section is written
    to ``<folder>/<name>.md`` instead, its name from the begin marker (benchmarks/bench.py)."""
    capture = os.environ.get("HIPOCAMPO_BENCH_SECTIONS")
    if capture:
        name = re.sub(r"[^a-z0-9]+", "-", begin.lower().removeprefix("<!--").split("begin")[0]).strip("-")
        out = Path(capture) / f"{name}.md"
        out.write_text(text, "utf-8")
        return out
    path = repo_root() / "docs" / "BENCHMARKS.md"
    doc = path.read_text("utf-8") if path.exists() else "# Benchmarks\n"
    if begin in doc and end in doc:
        doc = doc[: doc.index(begin)] + text + doc[doc.index(end) + len(end) :]
    else:
        doc = doc.rstrip("\n") + "\n\n" + text + "\n"
    path.write_text(doc, "utf-8")
    return path


def settle(conn: psycopg.Connection[Any], timeout_s: float = 900) -> None:
    """Vacuum and analyse the database of ``conn`` (autocommit), then wait (at most
    ``timeout_s`` seconds) until no autovacuum worker runs in it: timings taken after a bulk load
    then measure the calls, not the clean-up of the load running beside them (visibility map set,
    so index-only scans read no heap; statistics current)."""
    conn.execute("vacuum (analyze)")
    busy = (
        "select count(*) from pg_stat_activity"
        " where backend_type = 'autovacuum worker' and datname = current_database()"
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        row = conn.execute(busy).fetchone()
        if not row or not row[0]:
            return
        time.sleep(1)


def bench_member(root: Hipocampo) -> tuple[uuid.UUID, str]:
    """Tenant ``bench`` (created when missing; benchmarks/retrieval.py's knowledge bases live there)
    and the JWT claims of its benchmark member (added when missing): ``(tenant_id, claims json)``,
    for ``set_config('request.jwt.claims', claims, true)`` under ``set local role authenticated``."""
    tid = root.tenant_id("bench") or root.create_tenant("Benchmarks", "bench")
    member = uuid.uuid5(uuid.NAMESPACE_URL, "hipocampo-bench/search-ab")
    root.add_member(tid, member, "member")
    claims = json.dumps({"sub": str(member), "role": "authenticated", "app_metadata": {"tenant_id": str(tid)}})
    return tid, claims


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
