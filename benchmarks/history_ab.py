"""search_history latency, this version against an earlier one, in the same run.

Usage:  .venv/bin/python benchmarks/history_ab.py [--ref fd1e44f] [--queries 20] [--rounds 3] [--write]

The earlier version is ``hipocampo.search_history`` (with its ranking
``hipocampo_private._search_history`` where the revision has one) as
``supabase/schemas/07_conversations.sql`` defined it at git ``--ref``, installed for the run in
schema ``bench_ref`` (report.install_reference) and dropped afterwards. LoCoMo's ten conversations
(5,882 turns, the offline all-MiniLM-L6-v2, vectors cached) are stored for a new user of tenant
``bench-history-latency`` and analysed; the first ``--queries`` questions of the first conversation
are asked as that user (RLS, JWT claims), k = 10, over the whole history (no conversation filter)
and within the first conversation, each with the query's tokens (the late-interaction re-rank) and
without; the two versions in turn (which first alternates per round), one transaction per call, the
SQL call as the client sees it. Both must return the same messages in the same order, scores within
1e-5; the run fails otherwise. The user is erased at the end. Reports p50 / p95 ms per version and
the ratio of the medians; ``--write`` puts the table in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from typing import Any

import psycopg

from hipocampo import Actor, Hipocampo, Memory, db
from hipocampo.evaluation.datasets import datasets_dir
from history_latency import MemoTokens, bench_tenant
from locomo import turns_of
from report import as_member, function_at, install_reference, pct, write_section

BEGIN, END = "<!-- history-ab:begin -->", "<!-- history-ab:end -->"
SQL = (
    "select message_id, score from {fn}(%s, %s::extensions.vector, %s, 10, "
    "query_token_ids => %s::integer[], query_token_bits => %s::varbit[])"
)


def reference_functions(ref: str) -> list[tuple[str, str]]:
    """What to install from ``ref``: ``search_history``, and its ranking ``_search_history`` where
    ``ref`` has one (the RPC calls it since the reads record themselves; its steps are current)."""
    ranking = ("07_conversations.sql", "hipocampo_private._search_history")
    try:
        function_at(ref, *ranking)
    except ValueError:
        return [("07_conversations.sql", "hipocampo.search_history")]
    return [ranking, ("07_conversations.sql", "hipocampo.search_history")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", default="fd1e44f")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    samples = json.loads((datasets_dir() / "locomo" / "locomo10.json").read_text("utf-8"))
    embedder = MemoTokens()
    texts = [q["question"] for q in samples[0]["qa"]][: args.queries]
    vectors = ["[" + ",".join(map(str, v)) + "]" for v in embedder.embed_documents(texts)]
    questions = list(zip(texts, vectors, embedder.embed_tokens(texts), strict=True))
    url = db.ensure_database()
    with Hipocampo(url) as root:
        tid = bench_tenant(root)
        user = uuid.uuid4()
        root.add_member(tid, user, "member")
        mem = Memory(root.as_actor(Actor.user(user, tid)), embedder)
        conversations = [uuid.uuid4() for _ in samples]
        try:
            for conv, sample in zip(conversations, samples, strict=True):
                mem.add_messages(conv, turns_of(sample["conversation"]), language="english")
            claims = json.dumps({"sub": str(user), "role": "authenticated", "app_metadata": {"tenant_id": str(tid)}})
            cases = [
                ("the whole history (5,882 messages)", None, True),
                ("the whole history, without the query's tokens", None, False),
                ("one conversation (419 messages)", conversations[0], True),
            ]
            times: dict[tuple[str, str], list[float]] = {}
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("analyze hipocampo_private.messages")
                install_reference(conn, args.ref, reference_functions(args.ref))
                try:
                    for r in range(args.rounds):
                        order = ["bench_ref", "hipocampo"] if r % 2 == 0 else ["hipocampo", "bench_ref"]
                        for label, conv, tokens in cases:
                            for text, vec, tv in questions:
                                got: dict[str, list[Any]] = {}
                                for schema in order:
                                    params = (text, vec, conv, tv.ids if tokens else None, tv.bits if tokens else None)
                                    with as_member(conn, claims) as cur:
                                        t0 = time.perf_counter()
                                        cur.execute(SQL.format(fn=f"{schema}.search_history"), params)  # type: ignore[arg-type]
                                        got[schema] = cur.fetchall()
                                        times.setdefault((label, schema), []).append((time.perf_counter() - t0) * 1000)
                                before, after = got["bench_ref"], got["hipocampo"]
                                if [x[0] for x in before] != [x[0] for x in after] or any(
                                    abs(x[1] - y[1]) > 1e-5 for x, y in zip(before, after, strict=True)
                                ):
                                    raise SystemExit(f"results differ: {label}: {text!r}\n{before}\n{after}")
                finally:
                    conn.execute("drop schema if exists bench_ref cascade")
        finally:
            mem.erase()
    lines = [
        f"| searched | searches | {args.ref} p50 / p95 ms | now p50 / p95 ms | ratio of the medians |",
        "|---|---|---|---|---|",
    ]
    for label, _, _ in cases:
        b, a = times[(label, "bench_ref")], times[(label, "hipocampo")]
        lines.append(
            f"| {label} | {len(a)} | {statistics.median(b):.1f} / {pct(b, 95):.1f} | "
            f"{statistics.median(a):.1f} / {pct(a, 95):.1f} | {statistics.median(b) / statistics.median(a):.2f}× |"
        )
    print("\n".join(lines))
    if args.write:
        cmd = "python benchmarks/history_ab.py " + " ".join(a for a in sys.argv[1:] if a != "--write")
        text = "\n".join(
            [
                BEGIN,
                "## History search, before / after (one run)",
                "",
                f"Command: `{cmd.strip()}` ({time.strftime('%Y-%m-%d')}, 2 cores). LoCoMo's ten conversations "
                f"for one user; {len(questions)} questions of the first, {args.rounds} rounds, the two versions "
                "alternating; same messages in the same order, scores within 1e-5 (checked on every call).",
                "",
                *lines,
                END,
            ]
        )
        print(f"written to {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
