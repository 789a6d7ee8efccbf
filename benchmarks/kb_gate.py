"""A knowledge base's own answer gate (issue 22 §4): `hipocampo kb eval --tune` on Quati.

    python benchmarks/kb_gate.py [--model NAME] [--offtopic 100]

Quati's 24 questions over Quati's own 239 passages (web text: source type "other", its default
trust; the knowledge base benchmarks/answers.py uses, ingested if missing), judged by Quati's human
grades (a passage graded >= 2 answers its question), and ``--offtopic`` FaQuAD questions (every
ninth) judged off-topic, through ``kb_eval.evaluate_kb`` with answers and tuning, as the command
runs it. Prints the gate's table (rag.min_confidence: J on the choosing and the held-out half,
answered citing a graded >= 2 passage and off-topic refused over all) and what ask answered at
the value in force. Nothing is written. Tenant "bench-answers" of the model's database
(benchmarks/models.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hipocampo import Actor, Hipocampo
from hipocampo.evaluation.answer_sets import ingest_paragraphs
from hipocampo.evaluation.datasets import load_beir
from hipocampo.evaluation.kb_eval import Judged, evaluate_kb
from models import MINILM, model_database, offline_embedder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=MINILM)
    ap.add_argument("--offtopic", type=int, default=100, help="FaQuAD questions judged off-topic")
    args = ap.parse_args()
    embedder = offline_embedder(args.model)
    url = model_database(args.model, embedder.dims)
    qt, fq = load_beir("quati"), load_beir("faquad")
    judged = [Judged(q, {f"quati:{d}": g for d, g in qt.qrels[qid].items() if g >= 2}) for qid, q in qt.queries.items()]
    judged += [Judged(q, {}) for q in list(fq.queries.values())[::9][: args.offtopic]]
    with Hipocampo(url) as root:
        tid = root.tenant_id("bench-answers") or root.create_tenant("Benchmark (answers)", "bench-answers")
        client = root.as_actor(Actor.service(tid))
        kb = ingest_paragraphs(client, "quati-passages", qt.corpus, embedder, "other", None, "quati")
        result = evaluate_kb(client, kb, judged, embedder, answers=True, tune=True)
    gate, answers = result.min_confidence, result.answers
    assert gate is not None and answers is not None
    print(f"{args.model}: {len(judged)} questions ({answers.answerable} answerable, {answers.offtopic} off-topic)")
    print(
        f"ask at the value in force: answered citing a graded >= 2 passage {answers.answered_relevant}/"
        f"{answers.answerable}, off-topic refused {answers.offtopic_refused}/{answers.offtopic}, {answers.reasons}"
    )
    print(f"| rag.min_confidence | J, {gate.chosen_on} choosing | J, {gate.held_out} held out | answered | refused |")
    print("|---|---|---|---|---|")
    for value, (j_choose, j_held, answered, refused) in gate.by_value.items():
        marks = [m for m, v in (("in force", gate.current), ("chosen", gate.value)) if v == value]
        label = f"{value:.2f}" + (f" ({', '.join(marks)})" if marks else "")
        print(f"| {label} | {j_choose:.3f} | {j_held:.3f} | {answered:.3f} | {refused:.3f} |")
    print(f"confirmed: {gate.confirmed}")


if __name__ == "__main__":
    main()
