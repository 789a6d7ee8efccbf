"""Memory search's thresholds for an offline model on LoCoMo (issue 22 §2), with the detail behind
``hipocampo calibrate``: the cosine of each question to its evidence turns versus to the other
turns of its conversation, and what the rules of ``hipocampo.evaluation.calibration`` choose (conversations
1-5) and keep on the held-out ones (6-10).

Usage:  .venv/bin/python benchmarks/calibrate_memory.py [--model all-MiniLM-L6-v2 | multilingual-e5-small]
        [--step 0.05 | 0.01]  (default: the rule's own step)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hipocampo.evaluation.calibration import answer_threshold, context_threshold, grid, grid_step, locomo_pairs
from hipocampo.evaluation.datasets import load_locomo
from models import offline_embedder
from report import pct


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="all-MiniLM-L6-v2")
    ap.add_argument("--step", type=float, default=None, help="threshold grid step")
    args = ap.parse_args()
    data = load_locomo()
    emb = offline_embedder(args.model)
    halves = {"conversations 1-5 (choose)": locomo_pairs(emb, data[:5])}
    halves["conversations 6-10 (held out)"] = locomo_pairs(emb, data[5:])
    pos, neg = halves["conversations 1-5 (choose)"]
    candidates = grid(args.step or grid_step(pos))
    chosen = {
        "context_threshold": context_threshold(pos, candidates),
        "answer_threshold": answer_threshold(neg, candidates),
    }
    for label, (pos, neg) in halves.items():
        print(f"\n{args.model}, {label}:")
        print(f"  evidence pairs {len(pos)}: p10 {pct(pos, 10):.3f} median {pct(pos, 50):.3f} p90 {pct(pos, 90):.3f}")
        print(f"  other pairs {len(neg)}: median {pct(neg, 50):.3f} p99 {pct(neg, 99):.3f} p99.9 {pct(neg, 99.9):.3f}")
        for name, t in chosen.items():
            kp = sum(s >= t for s in pos) / len(pos)
            kn = sum(s >= t for s in neg) / len(neg)
            print(f"  {name} {t:.2f}: keeps {kp:.1%} of evidence pairs, {kn:.2%} of other pairs")
    print(f"\nsuggested for {args.model}: " + ", ".join(f"memory.{k} = {v:.2f}" for k, v in chosen.items()))


if __name__ == "__main__":
    main()
