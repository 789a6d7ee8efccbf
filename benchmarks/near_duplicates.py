"""answer_evidence with its near-duplicate lookup scanned exactly vs through the HNSW index.

Usage:  .venv/bin/python benchmarks/near_duplicates.py [--questions 80] [--write]

One tenant holding the 5,183 SciFact abstracts (latency.py's build, real MiniLM vectors), SciFact
test questions through ``hipocampo.answer_evidence`` as service_role, alternately with
retrieval.exact_scan_max_rows at 10,000 (the whole scope scanned exactly, retrieval and
near-duplicates) and at 1,000 (both through the model's partial HNSW index, iterative scan). Two
rounds each; reports p50/p95 in ms and whether both paths gave the same decision, candidate count
and evidence chunks. ``--write`` replaces its section of
docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from hipocampo import Actor, Hipocampo
from hipocampo.evaluation.datasets import load_beir
from latency import build
from models import with_model
from report import pct, write_section

BEGIN, END = "<!-- near-duplicates:begin -->", "<!-- near-duplicates:end -->"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=80)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--model", help="an offline embedding model (default: config.toml's, the one a new database has)")
    args = ap.parse_args()
    url, embedder = with_model(args.model)
    with Hipocampo(url) as root:
        ((tenant, _, kb),), _ = build(root, embedder, 1, 5183)
        client = root.as_actor(Actor.service(tenant))
        questions = list(load_beir("scifact").queries.values())[: args.questions]
        vectors = ["[" + ",".join(f"{x:.6f}" for x in embedder.embed_query(q)) + "]" for q in questions]
        times: dict[str, list[float]] = {"exact": [], "hnsw": []}
        outcomes: dict[str, list[Any]] = {}
        for _round in range(2):
            for path, exact_max in (("exact", 10_000), ("hnsw", 1000)):
                with client.transaction() as cur:
                    patch = json.dumps({"exact_scan_max_rows": exact_max, "hnsw_visit_cost": 0})
                    cur.execute(
                        "select hipocampo.set_tenant_config('retrieval', %s::jsonb, tenant_id => %s)", (patch, tenant)
                    )
                outcomes[path] = []
                for q, vec in zip(questions, vectors, strict=True):
                    with client.transaction() as cur:
                        t0 = time.perf_counter()
                        cur.execute(
                            "select hipocampo.answer_evidence(%s, %s::extensions.vector, array[%s]::uuid[],"
                            " tenant_id => %s) as v",
                            (q, vec, kb, tenant),
                        )
                        row = cur.fetchone()
                        times[path].append((time.perf_counter() - t0) * 1000)
                    v = row["v"] if row else {}
                    outcomes[path].append((v["decision"], v["candidates"], [e["chunk_id"] for e in v["evidence"]]))
        with client.transaction() as cur:
            cur.execute(
                """select hipocampo.set_tenant_config('retrieval', '{"exact_scan_max_rows": null}', tenant_id => %s)""",
                (tenant,),
            )
    same = sum(a == b for a, b in zip(outcomes["exact"], outcomes["hnsw"], strict=True))
    lines = [
        BEGIN,
        "## Near-duplicate lookup of answer_evidence: exact scan vs HNSW",
        "",
        f"Command: `.venv/bin/python benchmarks/near_duplicates.py --write`. One tenant, 5,183 SciFact abstracts,"
        f" {len(questions)} SciFact questions through `hipocampo.answer_evidence` (service_role), two rounds per"
        " path; exact = retrieval.exact_scan_max_rows 10,000 (the scope scanned exactly), hnsw = 1,000 (retrieval"
        " and the near-duplicate lookup through the model's HNSW index, iterative scan).",
        "",
        "| path | calls | p50 ms | p95 ms |",
        "|---|---|---|---|",
        *[f"| {p} | {len(t)} | {statistics.median(t):.1f} | {pct(t, 95):.1f} |" for p, t in times.items()],
        "",
        f"Same decision, candidate count and evidence chunks on both paths: {same} of {len(questions)}.",
        END,
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        print(f"written to {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
