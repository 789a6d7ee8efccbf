"""The answer gate's signals, read once per question on three Portuguese sets (issue 48 §2).

Usage:  .venv/bin/python benchmarks/gate_features.py [--model NAME]

For each question, answer_evidence's 8 best candidates under GATE_READING (every candidate kept,
the sentence cosine read) with what a gate could weigh, and whether each candidate answers:
- faquad: FaQuAD's 900 questions over its 249 paragraphs (good: the gold paragraph), and the
  questions of the removed articles whose answer is in no remaining paragraph over the reduced
  knowledge base, plus Quati's 24 questions over the full one (good: none);
- quati: Quati's 24 questions over its own 239 passages (good: graded >= 2), and 100 FaQuAD
  questions over them (off-topic);
- regulation: examples/perguntas-regulamento.jsonl over the regulation, ingested as `hipocampo
  ingest --source-type regulation` does (good: the chunks of the answering article).
Written to .hipocampo/cache/gate_features_<model>.json for benchmarks/gate_fit.py.
"""

from __future__ import annotations

import argparse
import json
import uuid
from typing import Any

from hipocampo import Actor, Hipocampo
from hipocampo.config import repo_root
from hipocampo.embeddings import count_tokens
from hipocampo.evaluation.answer_sets import WHOLE, answer_spans, plain
from hipocampo.evaluation.calibration import SENTENCES_READ, gate_reading
from hipocampo.evaluation.datasets import load_beir
from hipocampo.ingest import DocumentInput, ingest_documents
from hipocampo.ingest.loaders import LoadedDocument
from hipocampo.ingest.pipeline import ingest_paths
from models import MINILM, model_database, offline_embedder
from regulation import REGULATION, questions

#: Candidates read per question: more than rag.top_k (4), so that a gate may choose among them.
READ = {**SENTENCES_READ, "top_k": 8}
FIELDS = (
    "chunk_id",
    "source_uri",
    "rank",
    "score",
    "dense_score",
    "lexical_score",
    "lexical_support",
    "sentence_similarity",
    "support",
    "token_count",
)


def _kb(
    client: Hipocampo,
    name: str,
    corpus: dict[str, tuple[str, str]],
    embedder: Any,
    prefix: str,
    source_type: str,
    trust: float | None,
) -> uuid.UUID:
    client.create_kb(name, overrides={"chunking": {source_type: WHOLE}, "rag": READ})
    docs = [
        DocumentInput(LoadedDocument(t or pid, text, f"{prefix}:{pid}"), source_type, trust_score=trust)
        for pid, (t, text) in corpus.items()
    ]
    ingest_documents(client, name, docs, embedder, count_tokens)
    return client.kb_id(name)


# Per candidate, the question's idf mass split by whether the knowledge base knows the term (df > 0):
# coverage over the known terms, and the share of the question's terms that no passage can match.
LEXICAL_SPLIT = """
select ch.id,
       coalesce(sum(q.idf) filter (where q.df > 0 and q.lexeme = any(pg_catalog.tsvector_to_array(ch.fts)))
                / nullif(sum(q.idf) filter (where q.df > 0), 0), 0) as known_coverage,
       coalesce(sum(q.idf) filter (where q.df = 0) / nullif(sum(q.idf), 0), 0) as oov_share
from hipocampo_private.chunks as ch
cross join lateral (
    select l.lexeme, coalesce(ts.doc_freq, 0) as df,
           ln(1 + (coalesce(st.chunk_count, 0) - coalesce(ts.doc_freq, 0) + 0.5) / (coalesce(ts.doc_freq, 0) + 0.5))
           as idf
    from unnest(hipocampo_private._question_lexemes(%(q)s, ch.ts_config,
        (select s.config -> 'rag' -> 'question_stopwords' from hipocampo_private.settings as s
         where s.tenant_id is null))) as l (lexeme)
    left join hipocampo_private.kb_text_stats as st on st.kb_id = ch.kb_id and st.embedding_model = ch.embedding_model
    left join hipocampo_private.kb_term_stats as ts
        on ts.kb_id = ch.kb_id and ts.embedding_model = ch.embedding_model and ts.lexeme = l.lexeme
) as q
where ch.id = any(%(ids)s)
group by ch.id
"""


def _lexical_split(client: Hipocampo, question: str, ids: list[int]) -> dict[int, tuple[float, float]]:
    with client.transaction() as cur:
        cur.execute(LEXICAL_SPLIT, {"q": question, "ids": ids})
        return {r["id"]: (float(r["known_coverage"]), float(r["oov_share"])) for r in cur.fetchall()}


def _article_uris(client: Hipocampo, kb: uuid.UUID) -> dict[int, str]:
    """chunk id -> the article its chunk holds (the regulation's 'source' for judging)."""
    with client.transaction() as cur:
        cur.execute("select id, metadata ->> 'article' as a from hipocampo_private.chunks where kb_id = %s", (kb,))
        return {r["id"]: r["a"] or "" for r in cur.fetchall()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=MINILM)
    args = ap.parse_args()
    embedder = offline_embedder(args.model)
    url = model_database(args.model, embedder.dims)
    fq, qt = load_beir("faquad"), load_beir("quati")
    rows: list[dict[str, Any]] = []
    with Hipocampo(url) as root:
        tid = root.create_tenant("Benchmark (gate features)", f"bench-gate-{uuid.uuid4().hex[:6]}")
        try:
            client = root.as_actor(Actor.service(tid))
            kb_fq = _kb(client, "faquad", fq.corpus, embedder, "faquad", "regulation", 0.9)
            removed = set(sorted({t for t, _ in fq.corpus.values()})[::5])
            kept = {k: v for k, v in fq.corpus.items() if v[0] not in removed}
            kb_held = _kb(client, "faquad-held", kept, embedder, "faquad", "regulation", 0.9)
            kb_qt = _kb(client, "quati", qt.corpus, embedder, "quati", "other", None)
            client.create_kb("regulation", overrides={"rag": READ})
            ingest_paths(client, "regulation", [REGULATION], embedder, count_tokens, source_type="regulation")
            kb_reg = client.kb_id("regulation")
            articles = _article_uris(client, kb_reg)
            spans = answer_spans()
            kept_text = [plain(t) for _, t in kept.values()]
            asks: list[tuple[str, str, str, uuid.UUID, set[str]]] = []  # set, kind, question, kb, good
            for qid, q in fq.queries.items():
                asks.append(("faquad", "answerable", q, kb_fq, {f"faquad:{d}" for d in fq.qrels[qid]}))
                if not set(fq.qrels[qid]) & kept.keys() and not any(
                    plain(s) in t for s in spans.get(qid, []) for t in kept_text
                ):
                    asks.append(("faquad", "absent", q, kb_held, set()))
            for q in qt.queries.values():
                asks.append(("faquad", "off_topic", q, kb_fq, set()))
            for qid, q in qt.queries.items():
                asks.append(
                    ("quati", "answerable", q, kb_qt, {f"quati:{d}" for d, g in qt.qrels[qid].items() if g >= 2})
                )
            for q in list(fq.queries.values())[:100]:
                asks.append(("quati", "off_topic", q, kb_qt, set()))
            for j in questions():
                good = {j["article"]} if "article" in j else set()
                asks.append(("regulation", "answerable" if good else j["kind"], j["question"], kb_reg, good))
            with gate_reading(client, [kb_fq, kb_held, kb_qt, kb_reg]) as read:
                for dataset, kind, q, kb, good in asks:
                    reading = read(q, embedder.embed_query(q), kb)
                    split = _lexical_split(client, q, [e["chunk_id"] for e in reading["evidence"]])
                    cands = []
                    for e in reading["evidence"]:
                        c = {k: e.get(k) for k in FIELDS}
                        uri = articles.get(e["chunk_id"], "") if dataset == "regulation" else e["source_uri"]
                        c["good"] = uri in good
                        c["known_coverage"], c["oov_share"] = split.get(e["chunk_id"], (0.0, 0.0))
                        cands.append(c)
                    rows.append(
                        {
                            "set": dataset,
                            "kind": kind,
                            "question": q,
                            "reason": reading["reason"],
                            "conflicts": bool(reading["conflicts"]),
                            "candidates": cands,
                        }
                    )
        finally:
            root.delete_tenant(tid)
    out = repo_root() / ".hipocampo" / "cache" / f"gate_features_{args.model}.json"
    out.write_text(json.dumps(rows, ensure_ascii=False))
    print(f"{len(rows)} questions -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
