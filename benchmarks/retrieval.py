"""Retrieval quality through the real RPC: nDCG@10 and recall@10 on faquad, quati and scifact.

Usage:  .venv/bin/python benchmarks/retrieval.py [--sets faquad,quati,scifact] [--write]
Runs on the embedded default database (tenant ``bench``), with the offline model; corpus
embeddings are cached in .hipocampo/cache/embeddings.sqlite so reruns do not re-embed.
``--write`` replaces the retrieval section of docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

from hipocampo import Actor, Hipocampo, db
from hipocampo.config import repo_root
from hipocampo.datasets import load_beir
from hipocampo.embeddings import CachingEmbedder, LocalMiniLM, count_tokens
from hipocampo.evaluation import MODES, EvalResult, evaluate, index_beir

# Reference numbers from ../shared/datasets/README.md (MiniLM ONNX + Python Okapi BM25).
REFERENCE = {
    "faquad": {"dense": 0.520, "lexical": 0.891, "hybrid": 0.900},
    "quati": {"dense": 0.595, "lexical": 0.747, "hybrid": 0.766},
    "scifact": {"dense": 0.645, "lexical": 0.660, "hybrid": 0.708},
}
TARGET = {"faquad": 0.90, "quati": 0.77, "scifact": 0.72}
EXTRA_MODES = {
    "hybrid dense_weight=1.0": {"dense_weight": 1.0, "lexical_weight": 1.0},
    "hybrid dense_weight=0.7": {"dense_weight": 0.7, "lexical_weight": 1.0},
    "hybrid dense_weight=0.5": {"dense_weight": 0.5, "lexical_weight": 1.0},
    "hybrid dense_weight=0.3": {"dense_weight": 0.3, "lexical_weight": 1.0},
    "hybrid rrf": {"fusion": "rrf", "dense_weight": 1.0, "lexical_weight": 1.0},
    "hybrid mmr 0.5": {"mmr_lambda": 0.5},
}
BEGIN, END = "<!-- retrieval:begin -->", "<!-- retrieval:end -->"


def markdown(results: list[EvalResult], command: str, seconds: float) -> str:
    lines = [
        BEGIN,
        "## Retrieval quality (nDCG@10, recall@10)",
        "",
        f"Command: `{command}` ({seconds:.0f} s, {platform.machine()}, 2 cores). Offline model all-MiniLM-L6-v2,",
        "queries through `hipocampo.hybrid_search` as service_role on one tenant; `hybrid` = the config defaults.",
        "",
        "| set | mode | nDCG@10 | recall@10 | reference nDCG@10 | target | median ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ref = REFERENCE.get(r.dataset, {}).get(r.mode)
        tgt = f"≥ {TARGET[r.dataset]:.2f}" if r.mode == "hybrid" else ""
        if r.mode == "lexical":
            tgt = f"within 0.02 of {REFERENCE[r.dataset]['lexical']:.3f}"
        lines.append(
            f"| {r.dataset} | {r.mode} | {r.ndcg10:.3f} | {r.recall10:.3f} | "
            f"{'' if ref is None else f'{ref:.3f}'} | {tgt} | {r.median_ms:.1f} |"
        )
    lines.append(END)
    return "\n".join(lines)


def write_section(text: str) -> None:
    path = repo_root() / "docs" / "BENCHMARKS.md"
    doc = path.read_text("utf-8") if path.exists() else "# Benchmarks\n"
    if BEGIN in doc and END in doc:
        doc = doc[: doc.index(BEGIN)] + text + doc[doc.index(END) + len(END) :]
    else:
        doc = doc.rstrip("\n") + "\n\n" + text + "\n"
    path.write_text(doc, "utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="faquad,quati,scifact")
    ap.add_argument("--write", action="store_true", help="update docs/BENCHMARKS.md")
    ap.add_argument("--extra", action="store_true", help="also run the fusion/weight variants")
    args = ap.parse_args()
    started = time.perf_counter()
    url = db.ensure_database()
    embedder = CachingEmbedder(LocalMiniLM(), repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite")
    results: list[EvalResult] = []
    with Hipocampo(url) as root:
        tid = root.tenant_id("bench") or root.create_tenant("Benchmarks", "bench")
        client = root.as_actor(Actor.service(tid))
        for name in args.sets.split(","):
            ds = load_beir(name)
            kb = index_beir(client, ds, embedder, count_tokens)
            modes = {**MODES, **(EXTRA_MODES if args.extra else {})}
            for r in evaluate(client, ds, embedder, kb, modes):
                print(
                    f"{r.dataset:8} {r.mode:26} nDCG@10 {r.ndcg10:.3f} recall@10 {r.recall10:.3f} "
                    f"({r.queries} q, median {r.median_ms:.1f} ms)",
                    flush=True,
                )
                results.append(r)
    if args.write:
        command = "python benchmarks/retrieval.py " + " ".join(sys.argv[1:])
        write_section(markdown(results, command.strip(), time.perf_counter() - started))


if __name__ == "__main__":
    main()
