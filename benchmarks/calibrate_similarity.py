"""Calibrate retrieval.min_similarity for an offline model: the cosine between each query and its
relevant passages, per dataset, the share of relevant pairs a floor would cut, and the cosine of
unrelated pairs (each query against passages relevant to other queries) for scale.

Usage:  .venv/bin/python benchmarks/calibrate_similarity.py [--sets faquad,quati,scifact]
        [--model all-MiniLM-L6-v2 | multilingual-e5-small]
Queries are embedded as queries (e5: ``query: ``), passages as title + text. Passage embeddings
go through the cache in .hipocampo/cache (computes the missing ones). The suggested floor is the
rule of ``hipocampo.evaluation.calibration.similarity_floor`` (the one behind the MiniLM value): the largest
multiple of 0.05 that drops at most 0.5 % of the relevant pairs on every set.
"""

from __future__ import annotations

import argparse
import random

from hipocampo.evaluation.calibration import grid, similarity_floor
from hipocampo.evaluation.datasets import load_beir
from models import offline_embedder

FLOORS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8)


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="faquad,quati,scifact")
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    args = ap.parse_args()
    emb = offline_embedder(args.model)
    rng = random.Random(7)
    print(f"model {args.model}")
    print(
        "set      pairs  p01   p05   median | unrelated p50 p95 p99 | share of relevant pairs below: "
        + " ".join(f"{f:.2f}" for f in FLOORS)
    )
    relevant: list[list[float]] = []
    for name in args.sets.split(","):
        ds = load_beir(name)
        qids = list(ds.queries)
        qv = {q: emb.embed_query(ds.queries[q]) for q in qids}
        docs = sorted({d for q in qids for d in ds.qrels[q]})
        texts = [f"{ds.corpus[d][0]}\n{ds.corpus[d][1]}" if ds.corpus[d][0] else ds.corpus[d][1] for d in docs]
        dv = dict(zip(docs, emb.embed_documents(texts), strict=True))
        sims = sorted(_dot(qv[q], dv[d]) for q in qids for d in ds.qrels[q] if d in dv)
        others = sorted(
            _dot(qv[q], dv[d]) for q in qids for d in rng.sample(docs, min(5, len(docs))) if d not in ds.qrels[q]
        )
        n, m = len(sims), len(others)
        below = [sum(s < f for s in sims) / n for f in FLOORS]
        relevant.append(sims)
        print(
            f"{name:8} {n:5}  {sims[n // 100]:.3f} {sims[n // 20]:.3f} {sims[n // 2]:.3f} | "
            f"{others[m // 2]:.3f} {others[m * 95 // 100]:.3f} {others[m * 99 // 100]:.3f} | "
            + " ".join(f"{b:.3f}" for b in below)
        )
    print(f"suggested retrieval.min_similarity for {args.model}: {similarity_floor(relevant, grid(0.05)):.2f}")


if __name__ == "__main__":
    main()
