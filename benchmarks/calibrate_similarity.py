"""Calibrate retrieval.min_similarity for the offline model: the cosine between each query and
its relevant passages, per dataset, and the share of relevant pairs a floor would cut.

Usage:  .venv/bin/python benchmarks/calibrate_similarity.py [--sets faquad,quati,scifact]
Reads embeddings through the cache in .hipocampo/cache (computes the missing ones).
"""

from __future__ import annotations

import argparse

from hipocampo.config import repo_root
from hipocampo.datasets import load_beir
from hipocampo.embeddings import CachingEmbedder, LocalMiniLM


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="faquad,quati,scifact")
    args = ap.parse_args()
    emb = CachingEmbedder(LocalMiniLM(), repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite")
    floors = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75)
    print(
        "set      pairs  p01   p05   median | share of relevant pairs below floor: "
        + " ".join(f"{f:.2f}" for f in floors)
    )
    for name in args.sets.split(","):
        ds = load_beir(name)
        qids = list(ds.queries)
        qv = dict(zip(qids, emb.embed_documents([ds.queries[q] for q in qids]), strict=True))
        docs = sorted({d for q in qids for d in ds.qrels[q]})
        dv = dict(
            zip(
                docs,
                emb.embed_documents(
                    [f"{ds.corpus[d][0]}\n{ds.corpus[d][1]}" if ds.corpus[d][0] else ds.corpus[d][1] for d in docs]
                ),
                strict=True,
            )
        )
        sims = sorted(
            sum(a * b for a, b in zip(qv[q], dv[d], strict=True)) for q in qids for d in ds.qrels[q] if d in dv
        )
        n = len(sims)
        below = " ".join(f"{sum(s < f for s in sims) / n:.3f}" for f in floors)
        print(f"{name:8} {n:5}  {sims[n // 100]:.3f} {sims[n // 20]:.3f} {sims[n // 2]:.3f} | {below}")


if __name__ == "__main__":
    main()
