"""``hipocampo kb eval``: a knowledge base measured on its own judged questions
(hipocampo.evaluation.kb_eval)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ..errors import HipocampoError, InvalidInputError
from .common import JsonOpt, TenantOpt, _client, _fail, console

__all__ = ["kb_eval"]


def kb_eval(
    name: Annotated[str, typer.Argument(help="Knowledge base name.")],
    questions: Annotated[
        Path | None,
        typer.Option(
            "--questions",
            "-q",
            help='JSON Lines: `{"question": "…", "relevant": ["<source_uri>", …]}` per line '
            "(`relevant` may map each source_uri to a grade; empty = off-topic, to be refused).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    from_feedback: Annotated[
        bool,
        typer.Option(
            "--stored",
            help="Also the knowledge base's judged questions made from feedback (`hipocampo feedback judge`); "
            "alone when no --questions file is given.",
        ),
    ] = False,
    tenant: TenantOpt = "default",
    answers: Annotated[bool, typer.Option("--answers", help="Also ask every question (`hipocampo ask`).")] = False,
    tune: Annotated[
        bool,
        typer.Option(
            "--tune",
            help="Choose the knowledge base's retrieval.dense_weight, and with off-topic questions its "
            "rag.min_confidence, on half the questions.",
        ),
    ] = False,
    write: Annotated[
        bool, typer.Option("--write", help="With --tune: store confirmed values as the KB's tuning for the model.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Measure a knowledge base on its own judged questions: nDCG@10 and recall@10 of dense,
    lexical and hybrid search (BEIR's: 10 distinct documents, gain = grade); with --answers, how
    `ask` answers them (citing a relevant document, or refusing, and why); with --tune, the
    dense weight (0.3-2.0) with the best nDCG@10 on the odd-numbered questions, confirmed when it
    is not worse than the weight in force on the others, and given 4 or more off-topic questions
    the answer gate's min_confidence (0.30-0.90) with the best J (answered citing a relevant
    document + off-topic refused - 1) chosen and confirmed the same way, and never with more wrong
    answers (answered citing no relevant document) than the value in force; --write stores what is
    confirmed as the knowledge base's tuning for the active embedding model, in force while that
    model is searched (docs/design.md §retrieval, §answers and §calibration)."""
    from ..embeddings import active_provider
    from ..evaluation.kb_eval import evaluate_kb, load_judged, store_confirmed, stored_judged

    if questions is None and not from_feedback:
        raise _fail(InvalidInputError("pass --questions <file>, --stored, or both", "22023"))
    try:
        judged = load_judged(questions) if questions else []  # a malformed file is said before anything is read
    except HipocampoError as exc:
        raise _fail(exc) from exc
    with _client(tenant) as client:
        try:
            kb = client.kb_id(name)
            if from_feedback:
                judged += stored_judged(client, kb)
            if not judged:
                raise InvalidInputError(f"no judged questions: knowledge base {name} has none stored", "22023")
            result = evaluate_kb(client, kb, judged, active_provider(client), answers=answers, tune=tune)
            stored = store_confirmed(client, kb, result) if write else {}
        except HipocampoError as exc:
            raise _fail(exc) from exc
    choice, gate = result.dense_weight, result.min_confidence
    out: dict[str, Any] = {"kb": name, **{k: v for k, v in asdict(result).items() if v is not None}}
    if choice:
        by_weight = {str(w): v for w, v in choice.by_weight.items()}
        out["dense_weight"] |= {"by_weight": by_weight, "written": "retrieval.dense_weight" in stored}
    if gate:
        by_value = {str(v): r for v, r in gate.by_value.items()}
        wrong = {str(v): n for v, n in gate.wrong.items()}
        out["min_confidence"] |= {"by_value": by_value, "wrong": wrong, "written": "rag.min_confidence" in stored}
    elif tune:
        out["min_confidence"] = None  # fewer than 4 answerable or 4 off-topic questions
    if as_json:
        console.print_json(json.dumps(out))
        return
    _print(out)


def _print(out: dict[str, Any]) -> None:
    table = Table("mode", "nDCG@10", "recall@10", "questions", title=f"{out['kb']}: {out['questions']} questions")
    for r in out["retrieval"]:
        table.add_row(r["mode"], f"{r['ndcg10']:.3f}", f"{r['recall10']:.3f}", str(r["questions"]))
    console.print(table)
    if "answers" in out:
        a = out["answers"]
        n = max(a["answerable"], 1)
        console.print(
            f"ask: {a['answered_relevant']}/{a['answerable']} answered citing a relevant document "
            f"({a['answered_relevant'] / n:.3f}), {a['answered_other']} citing none (wrong), "
            f"{a['passages_relevant']} passages citing a relevant one, {a['passages_other']} passages citing none, "
            f"{a['refused']} refused; off-topic refused {a['offtopic_refused']}/{a['offtopic']} "
            f"({a['offtopic_passages']} got passages); reasons {a['reasons']}",
            highlight=False,
        )
        for m in a["misses"][:20]:
            cited = f" citing {', '.join(m['cited'])}" if m["cited"] else ""
            console.print(f"  expected {m['expected']}, got {m['got']}{cited}: {m['question']}", highlight=False)
        if len(a["misses"]) > 20:
            console.print(f"  … {len(a['misses']) - 20} more (--json lists them all)", highlight=False)
    if "dense_weight" in out:
        d = out["dense_weight"]
        table = Table(
            "dense weight", f"nDCG@10, {d['chosen_on']} choosing", f"held out ({d['held_out']})", title="fusion"
        )
        for w, (a, b) in d["by_weight"].items():
            table.add_row(f"{float(w):g}{_marks(float(w), d['current'], d['weight'])}", f"{a:.3f}", f"{b:.3f}")
        console.print(table)
        _verdict("retrieval.dense_weight", d["weight"], d, out["model"])
    if "min_confidence" in out:
        _print_gate(out["min_confidence"], out["model"])


def _print_gate(g: dict[str, Any] | None, model: str) -> None:
    if g is None:
        console.print("rag.min_confidence: not tuned (it needs 4 answerable and 4 off-topic questions)")
        return
    table = Table(
        "min_confidence",
        f"J, {g['chosen_on']} choosing",
        f"held out ({g['held_out']})",
        "answered citing relevant",
        "off-topic refused",
        "wrong answers",
        title="answer gate (J = answered citing relevant + off-topic refused - 1)",
    )
    for v, (a, b, answered, refused) in g["by_value"].items():
        mark = _marks(float(v), g["current"], g["value"])
        wrong = str(g.get("wrong", {}).get(v, ""))
        table.add_row(f"{float(v):.2f}{mark}", f"{a:.3f}", f"{b:.3f}", f"{answered:.3f}", f"{refused:.3f}", wrong)
    console.print(table)
    _verdict("rag.min_confidence", g["value"], g, model)


def _marks(value: float, current: float, chosen: float) -> str:
    marks = [m for m, v in (("in force", current), ("chosen", chosen)) if value == v]
    return f" ({', '.join(marks)})" if marks else ""


def _verdict(key: str, chosen: float, d: dict[str, Any], model: str) -> None:
    """What became of a value chosen on half the questions (``d``: its choice's JSON) under ``model``."""
    from ..evaluation.kb_eval import outcome

    current = d["current"]
    kind = outcome(chosen, current, d["confirmed"])
    if kind == "stays":
        verdict = f"{key} {current:g} in force stays the best"
    elif kind == "not_confirmed":
        verdict = (
            f"{key} {chosen:g} is best on the choosing half but worse than {current:g} in force on the "
            f"held-out half: kept {current:g} (more questions would tell)"
        )
    else:
        done = f"stored for {model}" if d["written"] else f"--write stores it for {model}"
        verdict = f"{key} {chosen:g} (in force {current:g}), confirmed: {done}"
    console.print(verdict, highlight=False)
