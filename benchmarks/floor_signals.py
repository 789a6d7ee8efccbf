"""Signals other than the best cosine for the on-topic floor (issue 61 §1, §6), leave-one-dataset-out.

Usage:  .venv/bin/python benchmarks/floor_signals.py [--model multilingual-e5-small]

An experiment (its result is in docs/BENCHMARKS.md §Tried and not kept; the script leaves the
tree after it). The sets and pools are benchmarks/passages_floor.py's (hipocampo.evaluation.on_topic):
each set's knowledge base asked its own questions and every other set's (off-topic); the
Spanish and English regulation held out of every fit, with the regulation's other languages out
of their off-topic pools. Each signal gets the threshold the fitting sets' off-topic pairs are
refused under for ≥ 95% (each set weighing the same), as the floor is fitted; printed for the
two paraphrase sets held out: answerable questions kept, absent kept, their own off-topic
questions refused.

Signals of a (question, knowledge base) pair, from the cosines of the question to the knowledge
base's passages: ``max`` (the floor in force), ``max-mean`` (over the whole knowledge base),
``z`` ((max - mean) / sd), ``max-next10`` (max minus the mean of the 2nd to 11th), ``max+(max-mean)``;
against a background of everyday English conversation (1,500 LoCoMo turns, research data read
from ../shared/datasets, not shipped): ``max-background max``, ``max-background mean``; and a
two-threshold rule, ``max or (max ≥ t2 and a question word the knowledge base has)`` (words as the
knowledge base's text-search configuration stems them).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable

import numpy as np
import psycopg

from hipocampo import db
from hipocampo.config import repo_root
from hipocampo.evaluation.on_topic import load_sets
from models import E5, offline_embedder

FIT = ["faquad", "quati", "scifact", "regulation", "contract"]
HELD = ["regulation", "contract", "spanish", "english"]
LANGUAGE = {"scifact": "english", "english": "english", "spanish": "spanish"}
FAMILY = {"spanish": "regulation", "english": "regulation"}  # the same text in another language


def background(embedder: object) -> np.ndarray:
    data = json.loads((repo_root().parent / "shared/datasets/locomo/locomo10.json").read_text())
    turns = [t["text"] for c in data for v in c["conversation"].values() if isinstance(v, list) for t in v]
    turns = [t for t in turns if len(t) > 40]
    random.Random(1).shuffle(turns)
    return np.asarray(embedder.embed_documents(turns[:1500]), dtype=np.float32)  # type: ignore[attr-defined]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default=E5)
    args = ap.parse_args()
    embedder = offline_embedder(args.model)
    sets = {s.name: s for s in load_sets((*FIT, "spanish", "english"))}
    P = {n: np.asarray(embedder.embed_documents(s.texts), dtype=np.float32) for n, s in sets.items()}
    Q = {n: [np.asarray([embedder.embed_query(q) for q in qs], dtype=np.float32).reshape(-1, P[n].shape[1])
             for qs in (s.on_topic, s.off_topic)] for n, s in sets.items()}  # fmt: skip
    B = background(embedder)
    with psycopg.connect(db.ensure_database()) as conn:

        def lexemes(texts: list[str], config: str) -> list[set[str]]:
            rows = conn.execute(
                "select tsvector_to_array(to_tsvector(%s::regconfig, t)) from unnest(%s::text[]) with ordinality"
                " as u (t, n) order by n",
                (config, texts),
            ).fetchall()
            return [set(r[0] or []) for r in rows]

        vocab = {n: set().union(*lexemes(s.texts, LANGUAGE.get(n, "portuguese"))) for n, s in sets.items()}
        asked = [(n, part, qs) for n, s in sets.items() for part, qs in (("on", s.on_topic), ("off", s.off_topic))]
        words = {(n, k, part): lexemes(qs, LANGUAGE.get(k, "portuguese")) if qs else []
                 for n, part, qs in asked for k in sets}  # fmt: skip

    def signals(qn: str, part: str, kb: str) -> dict[str, np.ndarray]:
        q = Q[qn][0 if part == "on" else 1]
        S, SB = q @ P[kb].T, q @ B.T
        mx, mean, sd = S.max(1), S.mean(1), S.std(1)
        nxt = -np.sort(-S, 1)[:, 1:11].mean(1)
        known = np.asarray([len(w & vocab[kb]) for w in words[(qn, kb, part)]]).reshape(-1)
        return {"max": mx, "max-mean": mx - mean, "z": (mx - mean) / sd, "max-next10": mx - nxt,
                "max+(max-mean)": 2 * mx - mean, "max-background max": mx - SB.max(1),
                "max-background mean": mx - SB.mean(1), "known": known}  # fmt: skip

    def pools(kb: str) -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
        others = [n for n in FIT if n != kb and FAMILY.get(n, n) != FAMILY.get(kb, kb)]
        on = signals(kb, "on", kb)
        answerable = np.asarray([a is not None for a in sets[kb].answers] or [True] * len(sets[kb].on_topic))
        own_off = signals(kb, "off", kb)
        parts = [signals(o, p, kb) for o in others for p in ("on", "off")]
        off = {k: np.concatenate([own_off[k]] + [x[k] for x in parts]) for k in on}
        return on, answerable, own_off, off

    C = {kb: pools(kb) for kb in sets}
    Rule = Callable[[dict[str, np.ndarray], tuple[float, float]], np.ndarray]
    rules: dict[str, tuple[Rule, list[tuple[float, float]]]] = {}
    for name in ("max", "max-mean", "z", "max-next10", "max+(max-mean)", "max-background max", "max-background mean"):
        lo, hi = min(C[n][3][name].min() for n in FIT), max(C[n][3][name].max() for n in FIT)
        rules[name] = ((lambda f, t, name=name: f[name] >= t[0]), [(float(t), 0.0) for t in np.linspace(lo, hi, 400)])
    rules["max or (max ≥ t2 and a known word)"] = (
        lambda f, t: (f["max"] >= t[0]) | ((f["max"] >= t[1]) & (f["known"] >= 1)),
        [(t1, t2) for t1 in np.arange(0.80, 0.92, 0.005) for t2 in np.arange(0.70, t1 + 1e-9, 0.005)],
    )
    print(f"**{args.model}**: held out → answerable kept / absent kept / its off-topic refused\n")
    print("| signal | " + " | ".join(HELD) + " |")
    print("|---|" + "---|" * len(HELD))
    for name, (keep, grid) in rules.items():
        cells = []
        for held in HELD:
            fitting = [n for n in FIT if n != held and FAMILY.get(n, n) != FAMILY.get(held, held)]
            best: tuple[float, tuple[float, float]] | None = None
            for t in grid:
                if np.mean([1 - keep(C[n][3], t).mean() for n in fitting]) < 0.95:
                    continue
                kept = float(np.mean([keep(C[n][0], t).mean() for n in fitting]))
                if best is None or kept > best[0]:
                    best = (kept, t)
            assert best is not None
            on, answerable, own_off, _ = C[held]
            k = keep(on, best[1])
            refused = 1 - keep(own_off, best[1]).mean()
            cells.append(f"{k[answerable].mean():.2f} / {k[~answerable].mean():.2f} / {refused:.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
