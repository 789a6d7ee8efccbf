"""The answer gate's sentence similarity, per embedding model, by a rule on FaQuAD's train split
(issue 22 §3-§4): rag.sentence_weight, sentence_cosine_low and sentence_cosine_high.

Usage:  .venv/bin/python benchmarks/calibrate_sentences.py [--model multilingual-e5-small] [--write]

A chunk's support is its lexical support (evidence_support) + sentence_weight * clip((c - low) /
(high - low), 0, 1), c the best cosine between the question and one of the chunk's sentences
(chunks.sentence_embeddings, docs/design.md §answers). The knowledge bases are
hipocampo.evaluation.answer_sets' (as benchmarks/answers.py's)
(FaQuAD's 249 paragraphs as regulations, the same without every fifth article, Quati's 239
passages as type other), ingested again under names ending in "-sentences" with their sentence
embeddings (tenant "bench-answers", in the model's database as benchmarks/models.py gives it).
Every question is asked once through ``answer_evidence`` with every candidate kept (rag.min_score
0, the token budget 8,000, min_confidence at its floor, a sentence weight > 0 so that c is read:
``calibration.gate_reading``, whose overrides are rolled back afterwards);
the gate is then replayed for each point of the grid with the configured rag.min_score,
rag.min_confidence and evidence token budget (``calibration.GateReplay``, held to answer_evidence's
decisions by tests/test_gate_replay.py): evidence = support >= min_score, in order, under the
budget; answered when the best support reaches min_confidence and the cross-check passes
(>= cross_check_min_documents documents at it, or an authoritative one), citing the first two
such chunks in evidence order (the extractive answer's two quotes); a question whose reading
found a conflict stays refused.

Sets as in benchmarks/calibrate_answers.py: FaQuAD's train and dev answerable questions (answered
citing the gold paragraph) and unanswerable ones (article removed, its answer span in no remaining
paragraph: refused); held out, never looked at to choose: Quati over its own passages (answered
citing a passage graded >= 2), Quati over FaQuAD and 100 FaQuAD questions over Quati (refused).

The rule: the (weight, low, high) with the best J = answerable + unanswerable - 1 on the train
split; the model's weight stays 0 unless that point raises J by at least 0.02 over weight 0 (two
questions in a hundred): the sentence embeddings cost an embedding each at ingestion.
``--write`` puts the tables in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from calibrate_answers import question_sets
from hipocampo import Actor, Hipocampo
from hipocampo.config import load_config
from hipocampo.evaluation.answer_sets import faquad_kbs, ingest_paragraphs
from hipocampo.evaluation.calibration import (
    SENTENCE_MIN_GAIN,
    SENTENCE_OFF,
    SENTENCE_WEIGHTS,
    SENTENCES_READ,
    GateReplay,
    gate_reading,
    sentence_point,
)
from hipocampo.evaluation.datasets import load_beir
from models import MINILM, model_database, offline_embedder
from report import write_section


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default=MINILM, help="offline model, active in its own database unless MiniLM")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    rag_defaults = load_config()["rag"]
    configured = {k: rag_defaults[k] for k in ("min_score", "min_confidence", "evidence_token_budget")}
    embedder = offline_embedder(args.model)
    url = model_database(args.model, embedder.dims)
    fq, qt = load_beir("faquad"), load_beir("quati")
    with Hipocampo(url) as root:
        tid = root.tenant_id("bench-answers") or root.create_tenant("Benchmark (answers)", "bench-answers")
        client = root.as_actor(Actor.service(tid))
        client.set_tenant_config("rag", SENTENCES_READ)  # while ingesting: sentences embedded
        try:
            kb_full, kept, kb_held = faquad_kbs(client, fq, embedder, "-sentences")
            kb_quati = ingest_paragraphs(
                client, "quati-passages-sentences", qt.corpus, embedder, "other", None, "quati"
            )
            with gate_reading(client, [kb_full, kb_held, kb_quati]) as read:

                def ask(q: str, kb: Any, good: set[str]) -> GateReplay:
                    ev = read(q, embedder.embed_query(q), kb)
                    return GateReplay.from_reading(ev, good, {**ev["config"], **configured})

                sets = question_sets(ask, fq, qt, kept, (kb_full, kb_held, kb_quati))
        finally:
            client.set_tenant_config("rag", dict.fromkeys(SENTENCES_READ))

    def rate(name: str, p: tuple[float, float, float]) -> float:
        xs = sets[name]
        if name.endswith(": answerable") or name.startswith("Quati over Quati"):
            return sum(x.answered(*p, citing=True) for x in xs) / len(xs)
        return sum(not x.answered(*p, citing=False) for x in xs) / len(xs)

    def j(split: str, p: tuple[float, float, float]) -> float:
        return rate(f"{split}: answerable", p) + rate(f"{split}: unanswerable", p) - 1

    choice = sentence_point(lambda p: j("train", p))
    off, grid, best, best_j, j_off = SENTENCE_OFF, choice.points, choice.best, choice.best_j, choice.j_off
    chosen = best if choice.on else (0.0, best[1], best[2])
    names = list(sets)
    header = "| point | " + " | ".join(f"{n} ({len(sets[n])})" for n in names) + " | J train | J dev |"
    lines = [header, "|" + "---|" * (len(names) + 3)]
    rows = [("weight 0 (lexical support alone)", off)]
    rows += [
        (f"best of weight {w}: low {p[1]:.2f}, high {p[2]:.2f}", p)
        for w in SENTENCE_WEIGHTS
        for p in [max((q for q in grid if q[0] == w), key=lambda q: (round(j("train", q), 6), -q[1]))]
    ]
    for label, p in rows:
        mark = " (rule)" if p == best else ""
        cells = " | ".join(f"{rate(n, p):.3f}" for n in names)
        lines.append(f"| {label}{mark} | {cells} | {j('train', p):.3f} | {j('dev', p):.3f} |")
    verdict = (
        f"rule: sentence_weight {chosen[0]}, sentence_cosine_low {chosen[1]:.2f}, sentence_cosine_high "
        f"{chosen[2]:.2f} (J train {j_off:.3f} at weight 0, {best_j:.3f} at the best point: "
        f"{'on' if chosen[0] else 'off, the gain is below ' + str(SENTENCE_MIN_GAIN)})"
    )
    print("\n".join(lines))
    print(verdict)
    if args.write:
        tag = "" if args.model == MINILM else f":{args.model}"
        begin, end = f"<!-- calibrate-sentences{tag}:begin -->", f"<!-- calibrate-sentences{tag}:end -->"
        cmd = "python benchmarks/calibrate_sentences.py " + shlex.join(sys.argv[1:])
        text = "\n".join(
            [
                begin,
                f"### Sentence similarity in the answer gate: {args.model} (issue 22 §3-§4)",
                "",
                f"Command: `{cmd.strip()}` (offline {args.model}; rag.min_score {rag_defaults['min_score']} and "
                f"min_confidence {rag_defaults['min_confidence']} as configured). Support = lexical support + weight "
                "* clip((c - low) / (high - low), 0, 1), c the best question-sentence cosine of the chunk. Rates: "
                "answerable sets and Quati over its own passages = answered citing a gold passage (Quati: graded "
                ">= 2); the others = refused. Rule: the grid point with the best J on the train split, kept "
                f"only if it raises J by >= {SENTENCE_MIN_GAIN} over weight 0; dev and the Quati rows were not "
                "looked at to choose it. The best point of each weight:",
                "",
                *lines,
                "",
                verdict[0].upper() + verdict[1:] + ".",
                end,
            ]
        )
        print(f"written to {write_section(begin, end, text)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
