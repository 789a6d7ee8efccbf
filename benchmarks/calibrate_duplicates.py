"""The duplicate thresholds of each offline model (issue 22 §2): ``memory.duplicate_cosine`` and
``retrieval.dedupe_threshold``, with the detail behind ``hipocampo calibrate``.

For each model, the cosine of every LoCoMo observation (a short fact about one speaker) to the
nearest other fact of that speaker that is not a copy of it, and of every FaQuAD / Quati /
SciFact passage to the nearest passage of its corpus that is not a copy of it
(``hipocampo.evaluation.calibration.is_copy``: 90 % of the shorter text's word 5-grams inside the other):
the share of them above each threshold is what the threshold would merge or hide. What a
threshold should still catch: the observations rewritten in lower case without their final full
stop (a copy as a user would retype it), and the pairs of passages that are copies in their
corpus (FaQuAD files several paragraphs in two documents; Quati holds repeated web passages).

Usage:  .venv/bin/python benchmarks/calibrate_duplicates.py [--models all-MiniLM-L6-v2,multilingual-e5-small]
        [--sets faquad,quati,scifact] [--write]
Vectors go through the corpus cache in .hipocampo/cache (e5 on SciFact's 5,183 abstracts takes
about 25 minutes the first time).
"""

from __future__ import annotations

import argparse

import numpy as np

from hipocampo.evaluation.calibration import (
    DUPLICATE_SETS,
    DUPLICATE_STEP,
    MAX_FACTS_MERGED,
    MAX_PASSAGES_HIDDEN,
    distinct_neighbours,
    duplicate_threshold,
    grid,
    is_copy,
    locomo_observations,
)
from hipocampo.evaluation.datasets import load_beir, load_locomo
from models import offline_embedder
from report import write_section

BEGIN, END = "<!-- duplicates:begin -->", "<!-- duplicates:end -->"
SHOWN = (0.945, 0.955, 0.97, 0.985, 0.995)


def _above(xs: list[float], t: float) -> str:
    return f"{sum(x > t for x in xs) / len(xs):.2%}" if xs else "-"


def _retyped(text: str) -> str:
    return text.lower().rstrip(".!")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", default="all-MiniLM-L6-v2,multilingual-e5-small")
    ap.add_argument("--sets", default="faquad,quati,scifact")
    ap.add_argument("--write", action="store_true", help="replace its section of docs/BENCHMARKS.md")
    args = ap.parse_args()
    data = load_locomo()
    rows: list[str] = []
    chosen: list[str] = []
    for name in args.models.split(","):
        emb = offline_embedder(name)
        facts: dict[str, list[float]] = {}
        retyped: list[float] = []
        for label, samples in (("LoCoMo facts 1-5 (choose)", data[:5]), ("LoCoMo facts 6-10 (held out)", data[5:])):
            texts, speakers = locomo_observations(samples)
            vecs = emb.embed_documents(texts)
            facts[label] = distinct_neighbours(texts, vecs, speakers)
            copies = emb.embed_documents([_retyped(t) for t in texts])
            retyped += [float(np.dot(a, b)) for a, b in zip(vecs, copies, strict=True)]
        passages: dict[str, list[float]] = {}
        copies_caught: dict[str, list[float]] = {}
        for s in args.sets.split(","):
            ds = load_beir(s)
            ids = sorted(ds.corpus)
            bodies = [ds.corpus[d][1] for d in ids]
            v = np.asarray(
                emb.embed_documents(
                    [f"{ds.corpus[d][0]}\n{b}" if ds.corpus[d][0] else b for d, b in zip(ids, bodies, strict=True)]
                ),
                dtype=np.float32,
            )
            passages[s] = distinct_neighbours(bodies, v.tolist())
            sims = v @ v.T
            pairs = np.argwhere(np.triu(sims, 1) > 0.8)
            copies_caught[s] = [float(sims[i, j]) for i, j in pairs if is_copy(bodies[i], bodies[j])]
        dedupe = duplicate_threshold(
            [passages[s] for s in DUPLICATE_SETS if s in passages], MAX_PASSAGES_HIDDEN, grid(DUPLICATE_STEP)
        )
        duplicate = duplicate_threshold([facts["LoCoMo facts 1-5 (choose)"]], MAX_FACTS_MERGED, grid(DUPLICATE_STEP))
        chosen.append(f"{name}: retrieval.dedupe_threshold {dedupe}, memory.duplicate_cosine {duplicate}")
        for label, xs in facts.items():
            rows.append(
                f"| {name} | {label}: a distinct fact above (merged) | {len(xs)} | "
                + " | ".join(_above(xs, t) for t in SHOWN)
                + " |"
            )
        rows.append(
            f"| {name} | LoCoMo facts retyped (lower case, no full stop): caught | {len(retyped)} | "
            + " | ".join(_above(retyped, t) for t in SHOWN)
            + " |"
        )
        for s, xs in passages.items():
            rows.append(
                f"| {name} | {s} passages: a distinct neighbour above (hidden) | {len(xs)} | "
                + " | ".join(_above(xs, t) for t in SHOWN)
                + " |"
            )
            cs = copies_caught[s]
            rows.append(
                f"| {name} | {s} pairs of copies: caught | {len(cs)} | "
                + " | ".join(_above(cs, t) for t in SHOWN)
                + " |"
            )
    head = "| model | what | n | " + " | ".join(f"> {t}" for t in SHOWN) + " |"
    text = "\n".join(
        [
            BEGIN,
            "### Duplicate thresholds per model (issue 22 §2)",
            "",
            f"Command: `python benchmarks/calibrate_duplicates.py --models {args.models} --sets {args.sets} --write` "
            "(one run, 2 cores). Rules (hipocampo.evaluation.calibration, also applied by `hipocampo calibrate`): "
            f"`memory.duplicate_cosine` = the lowest multiple of {DUPLICATE_STEP} above which at most "
            f"{MAX_FACTS_MERGED:.1%} of LoCoMo's facts (observations, conversations 1-5) have a distinct fact of "
            f"their speaker; `retrieval.dedupe_threshold` = the lowest above which at most {MAX_PASSAGES_HIDDEN:.1%} "
            f"of the passages of {' and '.join(DUPLICATE_SETS)} have a distinct neighbour. Distinct = not a copy "
            "(copy: 90 % of the shorter text's word 5-grams inside the other, case and spacing ignored).",
            "",
            head,
            "|" + "---|" * (3 + len(SHOWN)),
            *rows,
            "",
            "Chosen: " + "; ".join(chosen) + ".",
            END,
        ]
    )
    print(text)
    if args.write:
        print(f"wrote {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
