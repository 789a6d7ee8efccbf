"""Answers on a condominium regulation asked in residents' words (issue 48 §2, §5).

Usage:  .venv/bin/python benchmarks/regulation.py [--model NAME] [--verbose]

The set (examples/regulamento-condominio/regulamento-interno.md, 25 articles in 10 chapters, and
examples/perguntas-regulamento.jsonl): 65 questions a resident would ask, each with the article
that answers it, most sharing no content word with that article ("Posso ter cachorro?" against
"animais domésticos"), 12 on-topic questions the regulation does not answer and 12 off-topic
ones. The regulation is ingested through the real pipeline (`hipocampo ingest --source-type
regulation`) into a knowledge base of its own; every question goes through Orchestrator.ask
(cache and rate limit off).

Reported: answered with the right article (a cited chunk whose metadata names it), answered
citing only other articles (wrong answers), refused; unanswerable refused; the median answer
length; and how many questions share no content word with their article (the stems of the
knowledge base's text-search configuration, stopwords and the question words left out).
"""

from __future__ import annotations

import argparse
import json
import statistics
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from hipocampo import Actor, Hipocampo, Orchestrator
from hipocampo.embeddings import count_tokens
from hipocampo.ingest.pipeline import ingest_paths
from models import MINILM, model_database, offline_embedder

ROOT = Path(__file__).resolve().parent.parent
REGULATION = ROOT / "examples" / "regulamento-condominio"
QUESTIONS = ROOT / "examples" / "perguntas-regulamento.jsonl"


def questions() -> list[dict[str, Any]]:
    """The judged questions: ``article`` for the answerable ones, ``kind`` absent | off_topic for the others."""
    return [json.loads(line) for line in QUESTIONS.read_text("utf-8").splitlines() if line.strip()]


def run(model: str, verbose: bool = False) -> dict[str, Any]:
    embedder = offline_embedder(model)
    url = model_database(model, embedder.dims)
    with Hipocampo(url) as root:
        slug = f"bench-reg-{uuid.uuid4().hex[:6]}"
        tid = root.create_tenant("Benchmark (regulation)", slug)
        try:
            client = root.as_actor(Actor.service(tid))
            client.create_kb("regulamento")
            ingest_paths(client, "regulamento", [REGULATION], embedder, count_tokens, source_type="regulation")
            kb = client.kb_id("regulamento")
            orch = Orchestrator(client, embedder)
            qs = questions()
            counts: Counter[str] = Counter()
            lengths: list[int] = []
            for q in qs:
                a = orch.ask(q["question"], kb_ids=[kb], use_cache=False, rate_limit=False)
                if "article" in q:
                    if a.refused:
                        counts[f"refused:{a.reason}"] += 1
                        outcome = f"refused ({a.reason})"
                    else:
                        lengths.append(len(a.answer))
                        arts = _cited_articles(client, [s.chunk_id for s in a.sources])
                        right = q["article"] in arts
                        counts["right" if right else "wrong"] += 1
                        outcome = "right" if right else f"WRONG {sorted(arts)}"
                else:
                    counts[f"{q['kind']}:{'refused' if a.refused else 'answered'}"] += 1
                    outcome = "refused" if a.refused else "ANSWERED"
                if verbose:
                    shared = shared_words(client, kb, q) if "article" in q else []
                    print(f"{q.get('article', q.get('kind')):>9} {outcome:<28} {q['question']}  {shared}")
            disjoint = _sharing_no_word(client, kb, [q for q in qs if "article" in q])
        finally:
            root.delete_tenant(tid)
    answerable = sum(1 for q in qs if "article" in q)
    absent = sum(1 for q in qs if q.get("kind") == "absent")
    off = sum(1 for q in qs if q.get("kind") == "off_topic")
    return {
        "model": model,
        "answerable": answerable,
        "right": counts["right"] / answerable,
        "wrong": counts["wrong"] / answerable,
        "refused_reasons": {k.split(":", 1)[1]: v for k, v in counts.items() if k.startswith("refused:")},
        "absent_refused": counts["absent:refused"] / absent,
        "off_topic_refused": counts["off_topic:refused"] / off,
        "unanswerable_refused": (counts["absent:refused"] + counts["off_topic:refused"]) / (absent + off),
        "median_answer_chars": statistics.median(lengths) if lengths else 0,
        "sharing_no_content_word": disjoint,
    }


def _cited_articles(client: Hipocampo, chunk_ids: list[int]) -> set[str]:
    with client.transaction() as cur:
        cur.execute(
            "select coalesce(metadata -> 'articles', jsonb_build_array(metadata ->> 'article')) as a"
            " from hipocampo_private.chunks where id = any(%s)",
            (chunk_ids,),
        )
        return {x for r in cur.fetchall() for x in (r["a"] or []) if x}


def shared_words(client: Hipocampo, kb: Any, q: dict[str, Any]) -> list[str]:
    """The stems (portuguese_unaccent, rag.question_stopwords left out) a question shares with the
    text of the article that answers it (its chunks' content, not their headers)."""
    stop = client.rag_config(kb)["question_stopwords"]
    with client.transaction() as cur:
        cur.execute(
            "select coalesce(array_agg(distinct l), '{}') as shared"
            " from hipocampo_private.chunks as c"
            " cross join lateral unnest(tsvector_to_array(to_tsvector(c.ts_config, c.content))) as l"
            " where c.kb_id = %s and c.metadata -> 'articles' ? %s"
            "   and l = any(tsvector_to_array(to_tsvector('hipocampo_private.portuguese_unaccent', %s)))"
            "   and l <> all(%s)",
            (kb, q["article"], q["question"], stop),
        )
        row = cur.fetchone()
    return list(row["shared"]) if row else []


def _sharing_no_word(client: Hipocampo, kb: Any, qs: list[dict[str, Any]]) -> int:
    """How many questions share no content stem with their article (:func:`shared_words`)."""
    return sum(not shared_words(client, kb, q) for q in qs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=MINILM)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    print(json.dumps(run(args.model, args.verbose), indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
