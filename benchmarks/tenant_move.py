"""A tenant moved online between two servers on this machine: the copy's rate and the cut-over's
pause (issue 46 §3-§4).

Usage:  .venv/bin/python benchmarks/tenant_move.py [--docs 5183] [--write]

Starts two servers of the embedded server's binaries on loopback with ``wal_level = logical``
(tools/replica_pair.py), loads ``--docs`` SciFact abstracts (benchmarks/ingest.py's corpus, vectors
from the cache) into one tenant of the first through ``ingest_documents``, then moves the tenant
to the second with ``hipocampo.db.tenant_move.move_tenant`` while the tenant's member adds a
message every 10 ms (retrying after a refusal). Reports the rows moved, the initial copy's time and
rate, how long the tenant's writes were refused (the freeze, through the cut-over), the writes
acknowledged during the move and whether each is on the target. ``--write`` puts the figures in
docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import threading
import time
import uuid

import psycopg

from hipocampo import Actor, Hipocampo
from hipocampo.config import repo_root
from hipocampo.db.tenant_move import move_tenant
from ingest import Corpus
from report import write_section

sys.path.insert(0, str(repo_root()))
from tools.replica_pair import ReplicaPair

BEGIN, END = "<!-- tenant-move:begin -->", "<!-- tenant-move:end -->"
BATCH = 250


def _writer(url: str, tenant: uuid.UUID, member: uuid.UUID, stop: threading.Event, ids: list[int]) -> None:
    conv = uuid.uuid4()
    with Hipocampo(url, pool_size=1) as base:
        me = base.as_actor(Actor.user(member, tenant))
        n = 0
        while not stop.is_set():
            n += 1
            try:
                ids.append(int(me.rpc("add_message", {"conversation_id": conv, "role": "user", "content": f"m {n}"})))
            except Exception as exc:  # 55000 while frozen, 42501 once moved
                if "no tenant" in str(exc):
                    return
            time.sleep(0.01)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=5183)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    corpus = Corpus()
    pair = ReplicaPair()
    try:
        pair.start_two_primaries("wal_level=logical")
        member = uuid.uuid4()
        with Hipocampo(pair.primary_url) as root:
            tenant = root.create_tenant("Move", "move", member)
            client = root.as_actor(Actor.service(tenant))
            kb = client.create_kb("scifact", language="english")
            for start in range(0, args.docs, BATCH):
                items = [corpus.item(i) for i in range(start, min(args.docs, start + BATCH))]
                client.ingest_documents(kb, items, "all-MiniLM-L6-v2")
        stop, ids = threading.Event(), []
        writer = threading.Thread(target=_writer, args=(pair.primary_url, tenant, member, stop, ids))
        writer.start()
        t0 = time.perf_counter()
        out = move_tenant(pair.primary_url, tenant, pair.standby_url)
        total_s = time.perf_counter() - t0
        stop.set()
        writer.join(30)
        with psycopg.connect(pair.standby_url) as t:
            there = {
                r[0] for r in t.execute("select id from hipocampo_private.messages where tenant_id = %s", (tenant,))
            }
    finally:
        pair.stop()
    rows = sum(int(d["rows"]) for d in out["digest"].values())
    kept = sum(1 for i in ids if i in there)
    line = (
        f"{args.docs:,} SciFact abstracts in one tenant, {rows:,} rows in all (chunks, their BM25 postings and "
        f"statistics, documents, …): initial copy {out['copy_ms'] / 1000:.1f} s "
        f"({rows / (out['copy_ms'] / 1000):,.0f} rows/s); the whole move {total_s:.1f} s; the tenant's writes "
        f"refused for {out['freeze_ms']:.0f} ms (the cut-over); {len(ids)} messages acknowledged during the "
        f"move, {kept} of them on the target."
    )
    print(line)
    if args.write:
        cmd = "python benchmarks/tenant_move.py " + shlex.join(sys.argv[1:])
        text = "\n".join(
            [
                BEGIN,
                "## A tenant moved online (issue 46 §3)",
                "",
                f"Command: `{cmd.strip()}`. Two servers of the embedded server's binaries on this 2-core machine "
                "(loopback, `wal_level = logical`, fsync off); `hipocampo tenant move`'s function, the tenant's member "
                "adding a message every 10 ms throughout (retrying after a refusal).",
                "",
                line,
                END,
            ]
        )
        print(f"written to {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
