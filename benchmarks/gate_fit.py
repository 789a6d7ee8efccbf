"""The answer gate as a calibrated model, chosen so that it generalizes (issue 48 §2).

Usage:  .venv/bin/python benchmarks/gate_fit.py [--model NAME]   (after benchmarks/gate_features.py)

Each candidate answer_evidence returns gets features that do not depend on sharing the question's
words alone (FEATURES: its dense cosine, its best sentence cosine, the idf-weighted coverage of the
question, its BM25 relative to the best candidate's, its rank, and its margins over the best
other candidate); a logistic regression gives the probability that it answers the question. The
gate answers with the most probable candidate when that probability reaches a threshold, else
refuses. Both the coefficients and the threshold are chosen leave-one-dataset-out over FaQuAD,
Quati over its own passages and the regulation in residents' words: fitted on two sets (each
weighing the same), the threshold maximizing their mean J = answered right + unanswerable
refused - 1 - answered wrong, then reported on the third. The fit on all three is what
config.toml's calibration holds.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

from hipocampo.config import repo_root
from models import MINILM

SETS = ("faquad", "quati", "regulation")
FEATURES = ("dense", "sentence", "coverage", "bm25_share", "inverse_rank", "dense_margin", "sentence_margin")
THRESHOLDS = [round(0.05 + 0.01 * i, 2) for i in range(91)]


def features(cands: Sequence[dict[str, Any]]) -> np.ndarray:
    """One row of FEATURES per candidate (answer_evidence's evidence under GATE_READING, in order)."""
    dense = [float(c["dense_score"]) if c["dense_score"] is not None else 0.0 for c in cands]
    sent = [
        float(c["sentence_similarity"]) if c["sentence_similarity"] is not None else d
        for c, d in zip(cands, dense, strict=True)
    ]
    bm25 = [float(c["lexical_score"] or 0.0) for c in cands]
    top = max(bm25, default=0.0)
    rows = []
    for i, c in enumerate(cands):
        others_d = [d for j, d in enumerate(dense) if j != i] or [0.0]
        others_s = [s for j, s in enumerate(sent) if j != i] or [0.0]
        rows.append(
            [
                dense[i],
                sent[i],
                float(c["lexical_support"] or 0.0),
                bm25[i] / top if top > 0 else 0.0,
                1.0 / (i + 1),
                dense[i] - max(others_d),
                sent[i] - max(others_s),
            ]
        )
    return np.array(rows, dtype=float).reshape(-1, len(FEATURES))


def fit(rows: list[dict[str, Any]]) -> LogisticRegression:
    """The logistic regression over every candidate of ``rows``, each set weighing the same."""
    xs, ys, ws = [], [], []
    per_set = {s: sum(len(r["candidates"]) for r in rows if r["set"] == s) for s in SETS}
    for r in rows:
        if not r["candidates"]:
            continue
        xs.append(features(r["candidates"]))
        ys += [int(c["good"]) for c in r["candidates"]]
        ws += [1.0 / per_set[r["set"]]] * len(r["candidates"])
    model = LogisticRegression(C=1.0, max_iter=1000)
    model.fit(np.vstack(xs), np.array(ys), sample_weight=np.array(ws) * len(ws))
    return model


def best(model: LogisticRegression, r: dict[str, Any]) -> tuple[float, bool]:
    """The most probable candidate's probability and whether it answers (0, False: none)."""
    if not r["candidates"] or r["conflicts"]:
        return 0.0, False
    p = model.predict_proba(features(r["candidates"]))[:, 1]
    i = int(np.argmax(p))
    return float(p[i]), bool(r["candidates"][i]["good"])


def outcomes(scored: list[tuple[dict[str, Any], float, bool]], t: float) -> dict[str, float]:
    """right / wrong / refused over the answerable questions, refused over the unanswerable ones."""
    ans = [(p, g) for r, p, g in scored if r["kind"] == "answerable"]
    una = [p for r, p, _ in scored if r["kind"] != "answerable"]
    right = sum(p >= t and g for p, g in ans) / max(len(ans), 1)
    wrong = sum(p >= t and not g for p, g in ans) / max(len(ans), 1)
    refused = sum(p < t for p in una) / max(len(una), 1)
    return {"right": right, "wrong": wrong, "refused": refused, "J": right + refused - 1 - wrong}


def choose(model: LogisticRegression, rows: list[dict[str, Any]], sets: Sequence[str]) -> float:
    """The threshold with the best mean J over ``sets``."""
    scored = {s: [(r, *best(model, r)) for r in rows if r["set"] == s] for s in sets}
    return max(THRESHOLDS, key=lambda t: (sum(outcomes(scored[s], t)["J"] for s in sets), -t))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=MINILM)
    args = ap.parse_args()
    rows = json.loads((repo_root() / ".hipocampo" / "cache" / f"gate_features_{args.model}.json").read_text())
    print(f"{args.model}: leave one dataset out")
    print("| held out | threshold | answered right | answered wrong | unanswerable refused |")
    print("|---|---|---|---|---|")
    for held in SETS:
        train = [s for s in SETS if s != held]
        model = fit([r for r in rows if r["set"] in train])
        t = choose(model, rows, train)
        o = outcomes([(r, *best(model, r)) for r in rows if r["set"] == held], t)
        print(f"| {held} | {t:.2f} | {o['right']:.3f} | {o['wrong']:.3f} | {o['refused']:.3f} |")
    model = fit(rows)
    t = choose(model, rows, SETS)
    print(
        f"\nall three: threshold {t:.2f}; intercept {model.intercept_[0]:.4f};",
        ", ".join(f"{f} {w:.4f}" for f, w in zip(FEATURES, model.coef_[0], strict=True)),
    )
    for s in SETS:
        o = outcomes([(r, *best(model, r)) for r in rows if r["set"] == s], t)
        print(f"  {s}: right {o['right']:.3f} wrong {o['wrong']:.3f} refused {o['refused']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
