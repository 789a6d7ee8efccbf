"""LoCoMo: can the history search find the evidence turns of a question?

Usage:  .venv/bin/python benchmarks/locomo.py [--k 10] [--write]

For each of the 10 LoCoMo conversations (../shared/datasets/locomo/locomo10.json) a fresh
tenant and user store every dialogue turn as a message (``Memory.add_messages``: content
"Speaker: text", a shared photo's caption appended; language english; embedded with the offline
all-MiniLM-L6-v2). Then every question with evidence is asked through ``hipocampo.search_history``
(BM25 + cosine, z-scored, config section ``conversations``) within its conversation, as that
user (RLS). Reports recall@k (share of a question's evidence turns in the top k, averaged),
"all evidence in top k" and "any evidence in top k", per category and overall.

Also measures, for threshold calibration of memory search with the local model, the cosine
similarity of each question to its evidence turns versus to the other turns of its
conversation (``--write`` puts both in docs/BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections import defaultdict
from typing import Any

from hipocampo import Actor, Hipocampo, Memory, db
from hipocampo.config import repo_root
from hipocampo.datasets import datasets_dir
from hipocampo.embeddings import CachingEmbedder, LocalMiniLM
from report import pct, write_section

BEGIN, END = "<!-- locomo:begin -->", "<!-- locomo:end -->"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def turns_of(conversation: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    n = 1
    while f"session_{n}" in conversation:
        date = conversation.get(f"session_{n}_date_time", "")
        for t in conversation[f"session_{n}"]:
            text = f"{t['speaker']}: {t['text']}"
            if t.get("blip_caption"):
                text += f" [shares a photo: {t['blip_caption']}]"
            out.append({"role": "user", "content": text, "metadata": {"dia_id": t["dia_id"], "session_date": date}})
        n += 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--dense-weight", type=float, default=None, help="override conversations.dense_weight")
    ap.add_argument("--lexical-weight", type=float, default=None, help="override conversations.lexical_weight")
    ap.add_argument("--candidates", type=int, default=None, help="override conversations.candidate_count")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    data = json.loads((datasets_dir() / "locomo" / "locomo10.json").read_text("utf-8"))
    embedder = CachingEmbedder(LocalMiniLM(), repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite")
    url = db.ensure_database()
    per_cat: dict[int, list[tuple[float, bool, bool]]] = defaultdict(list)
    latencies: list[float] = []
    pos_sims: list[float] = []
    neg_sims: list[float] = []
    with Hipocampo(url) as root:
        for sample in data:
            slug = f"locomo-{sample['sample_id']}".lower().replace("_", "-")
            user = uuid.uuid5(uuid.NAMESPACE_URL, f"hipocampo-bench/{slug}")
            conv = uuid.uuid5(uuid.NAMESPACE_URL, f"hipocampo-bench/{slug}/conversation")
            tid = root.tenant_id(slug) or root.create_tenant(f"LoCoMo {sample['sample_id']}", slug)
            root.add_member(tid, user, "member")
            patch = {
                "dense_weight": args.dense_weight,
                "lexical_weight": args.lexical_weight,
                "candidate_count": args.candidates,
            }
            with root.transaction() as cur:
                cur.execute(
                    "select hipocampo.set_tenant_config('conversations', %s::jsonb, %s)", (json.dumps(patch), tid)
                )
            mem = Memory(root.as_actor(Actor.user(user, tid)), embedder)
            turns = turns_of(sample["conversation"])
            with mem.client.transaction() as cur:
                cur.execute("select count(*) as n from hipocampo_private.messages where conversation_id = %s", (conv,))
                row = cur.fetchone()
            if not row or row["n"] != len(turns):
                mem.erase()
                for i in range(0, len(turns), 256):
                    mem.add_messages(conv, turns[i : i + 256], language="english")
            turn_vecs = dict(
                zip(
                    [t["metadata"]["dia_id"] for t in turns],
                    embedder.embed_documents([t["content"] for t in turns]),
                    strict=True,
                )
            )
            questions = [q for q in sample["qa"] if q.get("evidence")]
            qvecs = embedder.embed_documents([q["question"] for q in questions])
            for q, qv in zip(questions, qvecs, strict=True):
                gold = {e.strip() for e in q["evidence"] if e.strip() in turn_vecs}
                if not gold:
                    continue
                t0 = time.perf_counter()
                with mem.client.transaction() as cur:
                    cur.execute(
                        "select metadata ->> 'dia_id' as d from hipocampo.search_history(%s, %s::extensions.vector, "
                        "%s, %s)",
                        (q["question"], "[" + ",".join(map(str, qv)) + "]", conv, args.k),
                    )
                    got = [r["d"] for r in cur.fetchall()]
                latencies.append((time.perf_counter() - t0) * 1000)
                found = len(gold & set(got))
                per_cat[int(q["category"])].append((found / len(gold), found == len(gold), found > 0))
                for d, v in turn_vecs.items():
                    sim = sum(a * b for a, b in zip(qv, v, strict=True))
                    (pos_sims if d in gold else neg_sims).append(sim)
            n_q = sum(len(v) for v in per_cat.values())
            print(f"{sample['sample_id']}: {len(turns)} turns, {n_q} questions so far", flush=True)

    def row(name: str, xs: list[tuple[float, bool, bool]]) -> str:
        r = statistics.fmean(x[0] for x in xs)
        a = statistics.fmean(float(x[1]) for x in xs)
        y = statistics.fmean(float(x[2]) for x in xs)
        return f"| {name} | {len(xs)} | {r:.3f} | {a:.3f} | {y:.3f} |"

    everything = [x for xs in per_cat.values() for x in xs]
    lines = [
        f"| category | questions | recall@{args.k} | all evidence in top {args.k} | any evidence in top {args.k} |",
        "|---|---|---|---|---|",
    ]
    lines += [row(f"{c} {CATEGORIES[c]}", per_cat[c]) for c in sorted(per_cat)]
    lines.append(row("**all**", everything))
    for line in lines:
        print(line)
    print(f"search_history latency: median {statistics.median(latencies):.1f} ms, p95 {pct(latencies, 95):.1f} ms")
    cal = [
        f"cosine(question, evidence turn): median {statistics.median(pos_sims):.3f}, "
        f"p10 {pct(pos_sims, 10):.3f}, p90 {pct(pos_sims, 90):.3f} ({len(pos_sims)} pairs)",
        f"cosine(question, other turn): median {statistics.median(neg_sims):.3f}, "
        f"p90 {pct(neg_sims, 90):.3f}, p99 {pct(neg_sims, 99):.3f}, p99.9 {pct(neg_sims, 99.9):.3f} "
        f"({len(neg_sims)} pairs)",
    ]
    for t in (0.3, 0.35, 0.4, 0.5, 0.55, 0.6, 0.7, 0.78, 0.85):
        keep_pos = sum(s >= t for s in pos_sims) / len(pos_sims)
        keep_neg = sum(s >= t for s in neg_sims) / len(neg_sims)
        cal.append(f"threshold {t:.2f}: keeps {keep_pos:.1%} of evidence pairs, {keep_neg:.2%} of other pairs")
    for line in cal:
        print(line)

    if args.write:
        cmd = "python benchmarks/locomo.py " + " ".join(sys.argv[1:])
        text = "\n".join(
            [
                BEGIN,
                "## Conversation memory: LoCoMo evidence recall",
                "",
                f"Command: `{cmd.strip()}`. 10 conversations, {len(everything)} questions with evidence; each "
                "turn stored as a message (`Speaker: text`, photo caption appended), searched with "
                f"`hipocampo.search_history` (BM25 + cosine, z-scored) within the conversation, k = {args.k}, "
                "as the conversation's user (RLS); offline all-MiniLM-L6-v2.",
                "",
                *lines,
                "",
                f"Latency of search_history (~590 turns per conversation, 1 client): median "
                f"{statistics.median(latencies):.1f} ms, p95 {pct(latencies, 95):.1f} ms.",
                "",
                "Cosine similarity of questions to turns with the local model (memory-search threshold "
                "calibration, see §memory thresholds):",
                "",
                *[f"- {c}" for c in cal],
                "",
                "Reading: the target recall@10 >= 0.85 is not reached with the offline model. MiniLM alone finds "
                "0.42 of the evidence (an English 384-d model, 256 word pieces, on casual dialogue); BM25 alone "
                "0.63; the fused default (dense 0.5, lexical 1.0) 0.67 — single-hop and adversarial questions "
                "~0.73-0.75, multi-hop (evidence spread over sessions) 0.38. Embedding a turn with its neighbour "
                "as context raised MiniLM alone from 0.42 to 0.47 in an offline check, not enough to close the "
                "gap; a stronger embedding model (the OpenAI provider) is the expected lever.",
                END,
            ]
        )
        write_section(BEGIN, END, text)


if __name__ == "__main__":
    main()
