"""Fusion rules side by side, replayed offline on the candidates hybrid_search fuses (issue 22 §5).

Usage:  .venv/bin/python benchmarks/fusion_study.py [--write]

Needs the knowledge bases of `benchmarks/retrieval.py --models all-MiniLM-L6-v2,multilingual-e5-small`
(eval-<set> and eval-<set>-e5 of tenant "bench"). For every query of FaQuAD, Quati and SciFact it
reads, once, every chunk's cosine to the query (the stored vectors) and its Okapi BM25 score (the
KB's postings and statistics, retrieval.bm25_k1 and bm25_b, as hybrid_search computes them; as
the database owner: this is a study of the SQL, not a client). It then forms hybrid_search's
candidate pool (the best max(20 * candidate_multiplier, min_candidates) of each leg, the dense leg
above the model's min_similarity, as the benchmark's match_count 20 gives) and ranks the pool
under each rule, near-duplicates (cosine > the model's dedupe_threshold) dropped as
hybrid_search's MMR step does. Every value comes from config.toml (the model's calibration). The
z-score rule at the model's calibrated weight reproduces hybrid_search's nDCG@10 to the third
decimal (checked against benchmarks/retrieval.py).

Rules: z-score sum at fixed dense weights (today's); per-query weights from each leg's confidence
(the best candidate's z); per-query weights from the legs' agreement (overlap of their top 10);
bounded z (tanh(z / 2)), which caps how far one leg's outlier can carry a candidate. Each cell is
hybrid - max(dense, lexical) nDCG@10, the margin §5 asks to keep >= -0.005; Quati's row also
gets a paired bootstrap interval (24 queries).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import psycopg

from hipocampo import db
from hipocampo.config import load_config
from hipocampo.embeddings.e5 import E5_MODEL as E5
from hipocampo.evaluation.datasets import load_beir
from models import MINILM, offline_embedder
from report import write_section

BEGIN, END = "<!-- fusion-study:begin -->", "<!-- fusion-study:end -->"
CONFIG = load_config()
RETRIEVAL = CONFIG["retrieval"]
N_CAND = max(20 * RETRIEVAL["candidate_multiplier"], RETRIEVAL["min_candidates"])  # match_count 20


def calibrated(model: str, key: str) -> float:
    """The model's calibrated retrieval value (config.toml ``[calibration."<model>".retrieval]``)."""
    return float(CONFIG["calibration"][model]["retrieval"][key])


BM25 = """
with q as (
    select distinct u.lexeme from hipocampo_private.knowledge_bases as kb
    cross join lateral unnest(to_tsvector(hipocampo_private.text_search_config(kb.language), %(q)s)) as u
    where kb.id = %(kb)s
),
tm as (
    select q.lexeme, ln(1 + (st.chunk_count - ts.doc_freq + 0.5) / (ts.doc_freq + 0.5)) as idf,
        st.token_total::float8 / greatest(st.chunk_count, 1) as avg_len
    from q
    join hipocampo_private.kb_term_stats as ts
        on ts.kb_id = %(kb)s and ts.embedding_model = %(m)s and ts.lexeme = q.lexeme
    join hipocampo_private.kb_text_stats as st on st.kb_id = %(kb)s and st.embedding_model = %(m)s
    where ts.doc_freq > 0
)
select p.chunk_id,
    sum(tm.idf * p.tf * (%(k1)s + 1) / (p.tf + %(k1)s * (1 - %(b)s + %(b)s * p.chunk_length / tm.avg_len)))
from tm join hipocampo_private.kb_postings as p on p.kb_id = %(kb)s and p.lexeme = tm.lexeme
group by p.chunk_id
"""
Fuse = Callable[[np.ndarray, np.ndarray], np.ndarray]


class Study:
    """One set under one model: every query's cosine and BM25 vectors over the whole KB."""

    def __init__(self, conn: psycopg.Connection[Any], name: str, model: str) -> None:
        ds = load_beir(name)
        kb_name = f"eval-{name}" if model == MINILM else f"eval-{name}-e5"
        row = conn.execute("select id from hipocampo_private.knowledge_bases where name = %s", (kb_name,)).fetchone()
        if row is None:
            raise SystemExit(f"no knowledge base {kb_name}: run benchmarks/retrieval.py --models first")
        kb = row[0]
        rows = conn.execute(
            "select c.id, d.source_uri, c.embedding::text from hipocampo_private.chunks as c "
            "join hipocampo_private.documents as d on d.id = c.document_id "
            "where c.kb_id = %s and c.embedding_model = %s order by c.id",
            (kb, model),
        ).fetchall()
        self.docs = [r[1].removeprefix(f"beir:{name}:") for r in rows]
        emb = np.array([np.array(r[2].strip("[]").split(","), dtype=np.float32) for r in rows])
        self.emb = emb / np.linalg.norm(emb, axis=1, keepdims=True)
        pos = {r[0]: i for i, r in enumerate(rows)}
        embedder = offline_embedder(model)
        self.queries: list[tuple[dict[str, int], np.ndarray, np.ndarray]] = []
        for qid, text in ds.queries.items():
            v = np.array(embedder.embed_query(text), dtype=np.float32)
            bm = np.zeros(len(rows))
            params = {"q": text, "kb": kb, "m": model, "k1": RETRIEVAL["bm25_k1"], "b": RETRIEVAL["bm25_b"]}
            for cid, score in conn.execute(BM25, params):
                bm[pos[cid]] = score
            self.queries.append((ds.qrels[qid], self.emb @ (v / np.linalg.norm(v)), bm))
        self.min_sim = calibrated(model, "min_similarity")
        self.dedupe = calibrated(model, "dedupe_threshold")

    def ndcg(self, fuse: Fuse, min_sim: float | None = None) -> list[float]:
        """Per-query nDCG@10 of ``fuse`` over hybrid_search's pool (BEIR's: gain = grade)."""
        floor = self.min_sim if min_sim is None else min_sim
        out = []
        for rel, sims, bm in self.queries:
            ids = np.arange(len(sims))
            dense = [i for i in np.lexsort((ids, -sims)) if sims[i] >= floor][:N_CAND]
            lex = [i for i in np.lexsort((ids, -bm)) if bm[i] > 0][:N_CAND]
            cand = np.array(sorted(set(dense) | set(lex)))
            s = np.where(sims[cand] >= floor, sims[cand], np.nan)
            f = fuse(s, bm[cand])
            picked: list[int] = []
            for i in np.lexsort((cand, -f)):
                c = int(cand[i])
                if picked and float(np.max(self.emb[picked] @ self.emb[c])) > self.dedupe:
                    continue
                picked.append(c)
                if len(picked) == 20:
                    break
            ranked = list(dict.fromkeys(self.docs[c] for c in picked))[:10]
            dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked))
            ideal = sorted(rel.values(), reverse=True)[:10]
            out.append(dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal)))
        return out


def z_legs(s: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """hybrid_search's z-scores over the pool; a candidate under min_similarity gets the lowest dense z."""
    zd = (s - np.nanmean(s)) / (np.nanstd(s) or 1) if np.any(~np.isnan(s)) else np.zeros_like(s)
    zd = np.where(np.isnan(zd), np.nanmin(zd) if np.any(~np.isnan(zd)) else 0, zd)
    return zd, (b - b.mean()) / (b.std() or 1)


def fixed(wd: float) -> Fuse:
    return lambda s, b: wd * z_legs(s, b)[0] + z_legs(s, b)[1]


def confidence(wd: float) -> Fuse:
    def f(s: np.ndarray, b: np.ndarray) -> np.ndarray:
        zd, zl = z_legs(s, b)
        cd, cl = max(zd.max(), 0), max(zl.max(), 0)
        return (wd * cd * zd + cl * zl) / ((cd + cl) or 1)

    return f


def agreement(wd: float, wd_apart: float) -> Fuse:
    def f(s: np.ndarray, b: np.ndarray) -> np.ndarray:
        zd, zl = z_legs(s, b)
        overlap = len(set(np.argsort(-zd, kind="stable")[:10]) & set(np.argsort(-zl, kind="stable")[:10])) / 10
        return (wd + (wd_apart - wd) * (1 - overlap)) * zd + zl

    return f


def bounded(wd: float) -> Fuse:
    return lambda s, b: wd * np.tanh(z_legs(s, b)[0] / 2) + np.tanh(z_legs(s, b)[1] / 2)


def bootstrap(diff: list[float], n: int = 2000) -> tuple[float, float]:
    """95 % paired bootstrap interval of the mean of ``diff`` (seeded)."""
    rng = random.Random(22)
    means = sorted(sum(rng.choice(diff) for _ in diff) / len(diff) for _ in range(n))
    return means[int(0.025 * n)], means[int(0.975 * n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    rules: dict[str, dict[str, Fuse]] = {}
    for model in (MINILM, E5):
        own = calibrated(model, "dense_weight")
        rules[model] = {f"z, dense weight {own} (calibrated)": fixed(own)}
        for wd in (0.3, 0.5, 1.0, 1.5, 2.0, 5.0):
            if wd != own:
                rules[model][f"z, dense weight {wd}"] = fixed(wd)
        rules[model]["confidence (best z) weights"] = confidence(own)
        rules[model]["agreement: weight 1.5, 3 when apart"] = agreement(1.5, 3.0)
        rules[model]["bounded z: tanh(z / 2)"] = bounded(1.0)
    rules[E5]["bounded z, dense weight 0.7 (best grid point)"] = bounded(0.7)
    table = ["| model | rule | FaQuAD | Quati | SciFact | worst |", "|---|---|---|---|---|---|"]
    legs = [
        "| model | set | dense | lexical | hybrid (calibrated) | hybrid - dense, 95 % interval |",
        "|---|---|---|---|---|---|",
    ]
    with psycopg.connect(db.ensure_database()) as conn:
        for model in (MINILM, E5):
            studies = {n: Study(conn, n, model) for n in ("faquad", "quati", "scifact")}
            best = {}
            for n, st in studies.items():
                dense = st.ndcg(fixed(1e6), min_sim=-1.0)
                lexical = st.ndcg(fixed(0.0))
                hybrid = st.ndcg(next(iter(rules[model].values())))
                best[n] = max(np.mean(dense), np.mean(lexical))
                lo, hi = bootstrap([h - d for h, d in zip(hybrid, dense, strict=True)])
                legs.append(
                    f"| {model} | {n} | {np.mean(dense):.3f} | {np.mean(lexical):.3f} | {np.mean(hybrid):.3f} "
                    f"| {np.mean(hybrid) - np.mean(dense):+.3f} [{lo:+.3f}, {hi:+.3f}] |"
                )
                print(legs[-1], flush=True)
            for label, fuse in rules[model].items():
                margins = [float(np.mean(st.ndcg(fuse))) - best[n] for n, st in studies.items()]
                table.append(
                    f"| {model} | {label} | " + " | ".join(f"{m:+.3f}" for m in margins) + f" | {min(margins):+.3f} |"
                )
                print(table[-1], flush=True)
    text = "\n".join(
        [
            BEGIN,
            "### Fusion rules replayed on hybrid_search's candidates (issue 22 §5)",
            "",
            "Command: `python " + " ".join(["benchmarks/fusion_study.py", *sys.argv[1:]]) + "` (one run). "
            "nDCG@10 of each leg, and of each rule as its margin over the better leg (hybrid - max(dense, "
            "lexical); §5 asks >= -0.005); BEIR's nDCG@10 (gain = the qrels grade, first 10 distinct documents).",
            "",
            *legs,
            "",
            *table,
            END,
        ]
    )
    if args.write:
        write_section(BEGIN, END, text)
    print(text)


if __name__ == "__main__":
    main()
