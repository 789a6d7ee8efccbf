"""search_history latency on a conversation the planner has not analysed yet, after analyse, and
over all of a user's conversations.

Usage:  .venv/bin/python benchmarks/history_latency.py [--runs 3] [--queries 20] [--write]

A new conversation is the common case: its messages are not in messages' statistics until
autovacuum analyses the table, and even then a conversation outside the most-common values is
estimated at a handful of rows. So the row estimates inside ``hipocampo.search_history`` are
tiny, and a plan that depends on them can run its joins once per message.

Each run stores LoCoMo's first conversation (../shared/datasets/locomo, 419 turns, embedded with
the offline all-MiniLM-L6-v2, cached) as a new conversation of a new user, times ``--queries``
searches of its questions right away (not analysed), runs ``analyze`` on the messages table and
times them again (analysed), stores the other nine LoCoMo conversations for the same user and times
the searches over all of them (no conversation filter; the cost is linear in the user's history),
then erases the user. Reports the medians and p95 of each phase over all runs.
``--write`` puts them in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Sequence

from hipocampo import Actor, Hipocampo, Memory, db
from hipocampo.config import repo_root
from hipocampo.embeddings import CachingEmbedder, LocalMiniLM, TokenVectors
from hipocampo.evaluation.datasets import datasets_dir
from locomo import turns_of
from report import pct, write_section

BEGIN, END = "<!-- history-latency:begin -->", "<!-- history-latency:end -->"


class MemoTokens(CachingEmbedder):
    """The benchmark's embedder: token vectors memoised per (text, context), so that each run
    re-adds the same conversations without re-reading them (the timings are of the searches)."""

    def __init__(self) -> None:
        super().__init__(LocalMiniLM(), repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite")
        self._memo: dict[tuple[str, tuple[str, ...]], TokenVectors] = {}

    def embed_tokens(self, texts: Sequence[str], contexts: Sequence[Sequence[str]] | None = None) -> list[TokenVectors]:
        keys = [(t, tuple(contexts[i]) if contexts else ()) for i, t in enumerate(texts)]
        todo = [k for k in dict.fromkeys(keys) if k not in self._memo]
        if todo:
            got = super().embed_tokens([t for t, _ in todo], [list(c) for _, c in todo])
            self._memo.update(zip(todo, got, strict=True))
        return [self._memo[k] for k in keys]


def bench_tenant(root: Hipocampo) -> uuid.UUID:
    """Tenant ``bench-history-latency`` (created when missing), its conversations in UTC (LoCoMo's
    dates carry no zone); returns its id."""
    tid = root.tenant_id("bench-history-latency") or root.create_tenant(
        "Benchmark (history latency)", "bench-history-latency"
    )
    with root.transaction() as cur:
        cur.execute("select hipocampo.set_tenant_config('conversations', %s::jsonb, %s)", ('{"time_zone": "UTC"}', tid))
    return tid


def timed_searches(
    mem: Memory, conversation: uuid.UUID | None, questions: list[tuple[str, str, TokenVectors]], tokens: bool = True
) -> list[float]:
    """Milliseconds of each ``search_history`` call (k = 10, with the query's embedding and
    tokens, unless ``tokens`` is false: the late-interaction re-rank included) within
    ``conversation`` (None: all of the user's conversations)."""
    out = []
    for text, vec, tv in questions:
        t0 = time.perf_counter()
        with mem.client.transaction() as cur:
            cur.execute(
                "select count(*) from hipocampo.search_history(%s, %s::extensions.vector, %s, 10, "
                "query_token_ids => %s::integer[], query_token_bits => %s::varbit[])",
                (text, vec, conversation, tv.ids if tokens else None, tv.bits if tokens else None),
            )
            cur.fetchall()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    samples = json.loads((datasets_dir() / "locomo" / "locomo10.json").read_text("utf-8"))
    sample = samples[0]
    turns = turns_of(sample["conversation"])
    others = [turns_of(x["conversation"]) for x in samples[1:]]
    embedder = MemoTokens()
    texts = [q["question"] for q in sample["qa"]][: args.queries]
    questions = [
        (t, "[" + ",".join(map(str, v)) + "]", tv)
        for t, v, tv in zip(texts, embedder.embed_documents(texts), embedder.embed_tokens(texts), strict=True)
    ]
    fresh: list[float] = []
    analysed: list[float] = []
    everything: list[float] = []
    analysed_plain: list[float] = []
    everything_plain: list[float] = []
    with Hipocampo(db.ensure_database()) as root:
        tid = bench_tenant(root)
        for _ in range(args.runs):
            user, conversation = uuid.uuid4(), uuid.uuid4()
            root.add_member(tid, user, "member")
            mem = Memory(root.as_actor(Actor.user(user, tid)), embedder)
            mem.add_messages(conversation, turns, language="english")
            try:
                fresh += timed_searches(mem, conversation, questions)
                with root.transaction() as cur:
                    cur.execute("analyze hipocampo_private.messages")
                analysed += timed_searches(mem, conversation, questions)
                analysed_plain += timed_searches(mem, conversation, questions, tokens=False)
                for other in others:
                    mem.add_messages(uuid.uuid4(), other, language="english")
                with root.transaction() as cur:
                    cur.execute("analyze hipocampo_private.messages")
                everything += timed_searches(mem, None, questions)
                everything_plain += timed_searches(mem, None, questions, tokens=False)
            finally:
                mem.erase()
    n_all = len(turns) + sum(len(o) for o in others)
    lines = [
        "| searched | searches | median ms | p95 ms |",
        "|---|---|---|---|",
        f"| one conversation, not analysed yet (a new one) | {len(fresh)} | {statistics.median(fresh):.1f} | "
        f"{pct(fresh, 95):.1f} |",
        f"| the same conversation after `analyze` | {len(analysed)} | {statistics.median(analysed):.1f} | "
        f"{pct(analysed, 95):.1f} |",
        f"| all {1 + len(others)} conversations of the user ({n_all} messages), no conversation filter |"
        f" {len(everything)} | {statistics.median(everything):.1f} | {pct(everything, 95):.1f} |",
        f"| the analysed conversation, without the query's tokens (no re-rank) | {len(analysed_plain)} | "
        f"{statistics.median(analysed_plain):.1f} | {pct(analysed_plain, 95):.1f} |",
        f"| all {1 + len(others)} conversations, without the query's tokens (no re-rank) | {len(everything_plain)} | "
        f"{statistics.median(everything_plain):.1f} | {pct(everything_plain, 95):.1f} |",
    ]
    for line in lines:
        print(line)
    if args.write:
        cmd = "python benchmarks/history_latency.py " + " ".join(sys.argv[1:])
        text = "\n".join(
            [
                BEGIN,
                "## History search: one new conversation, and all of a user's",
                "",
                f"Command: `{cmd.strip()}`. {args.runs} runs; each stores LoCoMo's first conversation "
                f"({len(turns)} turns) as a new conversation and times {len(questions)} searches "
                "(`search_history`, k = 10, with the query embedding, as the user) before and after "
                "`analyze` of the messages table; then stores the other nine conversations for the same "
                "user and times the searches over all of them (no conversation filter). A new "
                "conversation is estimated at a few rows until it is analysed, and analyse keeps few "
                "conversations among its most common values, so a conversation of a long-lived table "
                "stays estimated that way: the function's plan does not depend on those estimates, and it "
                "reads each message's context with window functions instead of joining (message, "
                "neighbour) pairs. The searches send the question's tokens, so the best 50 are re-ranked "
                "by late interaction (the query tokens' idf counted over the newest 2,000 searched "
                "messages); the last two rows time the same searches without the query's tokens, i.e. "
                "without the re-rank.",
                "",
                *lines,
                END,
            ]
        )
        print(f"written to {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
