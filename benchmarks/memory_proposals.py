"""Memories from the conversation (issue 59 §6): what the offline rules propose, against what a
person would keep.

Usage:  .venv/bin/python benchmarks/memory_proposals.py [--write]

The rules are ``hipocampo_private._memory_proposals`` (name, unit, preference, allergy), run in
the database on each message as it is (the gate after them is not run: what it refuses is
another question, answered by the memory tests). Two sets:

- **LoCoMo** (../shared/datasets/locomo/locomo10.json, English): every dialogue turn is a user's
  message; its speaker's ``observation`` facts with that turn as evidence are what a careful
  annotator kept of it. A proposal is right when its value appears in one of those facts (case
  ignored), wrong otherwise; a fact is caught when a right proposal of its turn matched it.
- **Residents' messages** (benchmarks/data/memoria/dialogos.json, Portuguese and a few English,
  made for this): 40 messages, 35 facts about the speaker labelled by kind (name, unit,
  preference, allergy, other). A proposal is right when its kind's fact of that message has its
  value (case ignored; for preferences and allergies the fact's words inside the proposal's or
  the other way round), wrong otherwise.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import psycopg

from hipocampo import db
from hipocampo.evaluation.datasets import datasets_dir
from report import write_section

BEGIN, END = "<!-- memory-proposals:begin -->", "<!-- memory-proposals:end -->"
HERE = Path(__file__).resolve().parent
KINDS = {"identity.name": "name", "identity.unit": "unit", "health.allergy": "allergy"}


def kind_of(key: str) -> str:
    return KINDS.get(key, "preference" if key.startswith("preference.") else "other")


def propose(conn: psycopg.Connection[tuple[object, ...]], texts: list[str]) -> list[list[tuple[str, str]]]:
    """Each text's proposals as (kind, value)."""
    rows = conn.execute(
        "select t.n, p.key, p.value #>> '{}' from unnest(%s::text[]) with ordinality as t(body, n)"
        " cross join lateral hipocampo_private._memory_proposals(t.body) as p order by t.n",
        (texts,),
    ).fetchall()
    out: list[list[tuple[str, str]]] = [[] for _ in texts]
    for n, key, value in rows:
        out[int(str(n)) - 1].append((kind_of(str(key)), str(value)))
    return out


def locomo(conn: psycopg.Connection[tuple[object, ...]]) -> dict[str, float]:
    data = json.loads((datasets_dir() / "locomo" / "locomo10.json").read_text("utf-8"))
    texts: list[str] = []
    facts: list[list[str]] = []
    for sample in data:
        by_turn: dict[tuple[str, str], list[str]] = {}
        for session in sample["observation"].values():
            for speaker, items in session.items():
                for fact, evidence in items:
                    for turn in [evidence] if isinstance(evidence, str) else evidence:
                        by_turn.setdefault((speaker, turn), []).append(fact)
        conv = sample["conversation"]
        for key in sorted(k for k in conv if k.startswith("session_") and not k.endswith("date_time")):
            for turn in conv[key]:
                texts.append(turn["text"])
                facts.append(by_turn.get((turn["speaker"], turn["dia_id"]), []))
    got = propose(conn, texts)
    right = wrong = caught = 0
    for props, kept in zip(got, facts, strict=True):
        matched: set[int] = set()
        for _, value in props:
            hits = [i for i, f in enumerate(kept) if value.lower() in f.lower()]
            right += bool(hits)
            wrong += not hits
            matched.update(hits)
        caught += len(matched)
    return {
        "turns": len(texts),
        "facts": sum(len(f) for f in facts),
        "proposals": right + wrong,
        "right": right,
        "wrong": wrong,
        "caught": caught,
    }


def residents(conn: psycopg.Connection[tuple[object, ...]]) -> tuple[dict[str, float], Counter[str], Counter[str]]:
    data = json.loads((HERE / "data" / "memoria" / "dialogos.json").read_text("utf-8"))["messages"]
    got = propose(conn, [m["text"] for m in data])
    right = wrong = 0
    caught: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    for m, props in zip(data, got, strict=True):
        facts = [(k, v.lower()) for k, v in m["facts"]]
        kept.update(k for k, _ in facts)
        for kind, value in props:
            v = value.lower()
            ok = any(k == kind and (f == v or f in v or v in f) for k, f in facts)
            right += ok
            wrong += not ok
            if ok:
                caught[kind] += 1
    totals = {"messages": len(data), "facts": sum(kept.values()), "proposals": right + wrong, "right": right}
    totals["wrong"] = wrong
    return totals, caught, kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    with psycopg.connect(db.ensure_database()) as conn:
        lo = locomo(conn)
        pt, caught, kept = residents(conn)
    lines = [
        BEGIN,
        "",
        "| set | messages | facts kept by a person | proposals | right | wrong | facts caught |",
        "|---|---|---|---|---|---|---|",
        f"| LoCoMo (English dialogue turns) | {lo['turns']:,} | {lo['facts']:,} | {lo['proposals']} | {lo['right']} "
        f"| {lo['wrong']} | {lo['caught']} ({lo['caught'] / lo['facts']:.3f}) |",
        f"| residents' messages (benchmarks/data/memoria) | {pt['messages']} | {pt['facts']} | {pt['proposals']} "
        f"| {pt['right']} | {pt['wrong']} | {sum(caught.values())} ({sum(caught.values()) / pt['facts']:.3f}) |",
        "",
        "Residents' facts caught by kind: "
        + ", ".join(f"{k} {caught[k]} of {kept[k]}" for k in ("name", "unit", "preference", "allergy", "other"))
        + ".",
        "",
        END,
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        print(f"wrote {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
