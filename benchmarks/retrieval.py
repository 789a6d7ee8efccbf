"""Retrieval quality through the real RPC: nDCG@10 and recall@10 on faquad, quati and scifact.

Usage:  .venv/bin/python benchmarks/retrieval.py [--sets faquad,quati,scifact] [--write]
        .venv/bin/python benchmarks/retrieval.py --models all-MiniLM-L6-v2,multilingual-e5-small [--write]
Runs on the embedded default database (tenant ``bench``) with all-MiniLM-L6-v2, registered beside
the active model and searched by name, in knowledge bases ``eval-<set>-minilm``; corpus
embeddings are cached in .hipocampo/cache/embeddings.sqlite so reruns do not re-embed.
``--write`` replaces the retrieval section of docs/BENCHMARKS.md.

``--models`` (issue 22 §3) runs every set with each offline model in one run, side by side: each
model's chunks in a knowledge base of its own (``eval-<set>`` for MiniLM, ``eval-<set>-e5``), the
same text, so the lexical leg is the same; the model is registered beside the active one (not
activated) and searched by name. Modes: dense, lexical, hybrid (the config defaults) and hybrid
with dense_weight 0.3 / 0.5 / 1.0 / 1.5 / 2.0 (lexical 1.0), the curve a per-model fusion weight
is chosen on. ``--write`` then replaces the side-by-side section.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

from hipocampo import Actor, Hipocampo, db
from hipocampo.config import load_config
from hipocampo.embeddings import count_tokens
from hipocampo.evaluation import MODES, EvalResult, evaluate, index_beir
from hipocampo.evaluation.datasets import load_beir
from models import MINILM, offline_embedder
from report import write_section

# Reference numbers from ../shared/datasets/README.md (MiniLM ONNX + Python Okapi BM25).
REFERENCE = {
    "faquad": {"dense": 0.520, "lexical": 0.891, "hybrid": 0.900},
    "quati": {"dense": 0.595, "lexical": 0.747, "hybrid": 0.766},
    "scifact": {"dense": 0.645, "lexical": 0.660, "hybrid": 0.708},
}
TARGET = {"faquad": 0.90, "quati": 0.77, "scifact": 0.72}
EXTRA_MODES = {
    "hybrid dense_weight=1.0": {"dense_weight": 1.0, "lexical_weight": 1.0},
    "hybrid dense_weight=0.7": {"dense_weight": 0.7, "lexical_weight": 1.0},
    "hybrid dense_weight=0.5": {"dense_weight": 0.5, "lexical_weight": 1.0},
    "hybrid dense_weight=0.3": {"dense_weight": 0.3, "lexical_weight": 1.0},
    "hybrid rrf": {"fusion": "rrf", "dense_weight": 1.0, "lexical_weight": 1.0},
    "hybrid mmr 0.5": {"mmr_lambda": 0.5},
}
BEGIN, END = "<!-- retrieval:begin -->", "<!-- retrieval:end -->"
SIDE_BEGIN, SIDE_END = "<!-- retrieval-models:begin -->", "<!-- retrieval-models:end -->"
SIDE_MODES = {
    "hybrid dense_weight=0.3": {"dense_weight": 0.3, "lexical_weight": 1.0},
    "hybrid dense_weight=0.5": {"dense_weight": 0.5, "lexical_weight": 1.0},
    "hybrid dense_weight=1.0": {"dense_weight": 1.0, "lexical_weight": 1.0},
    "hybrid dense_weight=1.5": {"dense_weight": 1.5, "lexical_weight": 1.0},
    "hybrid dense_weight=2.0": {"dense_weight": 2.0, "lexical_weight": 1.0},
}


def markdown(results: list[EvalResult], command: str, seconds: float) -> str:
    lines = [
        BEGIN,
        "## Retrieval quality (nDCG@10, recall@10)",
        "",
        f"Command: `{command}` ({seconds:.0f} s, {platform.machine()}, 2 cores). Offline model all-MiniLM-L6-v2,",
        "queries through `hipocampo.hybrid_search` as service_role on one tenant; `hybrid` = the config defaults.",
        "",
        "| set | mode | nDCG@10 | recall@10 | reference nDCG@10 | target | median ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ref = REFERENCE.get(r.dataset, {}).get(r.mode)
        tgt = f"≥ {TARGET[r.dataset]:.2f}" if r.mode == "hybrid" else ""
        if r.mode == "lexical":
            tgt = f"within 0.02 of {REFERENCE[r.dataset]['lexical']:.3f}"
        lines.append(
            f"| {r.dataset} | {r.mode} | {r.ndcg10:.3f} | {r.recall10:.3f} | "
            f"{'' if ref is None else f'{ref:.3f}'} | {tgt} | {r.median_ms:.1f} |"
        )
    lines.append(END)
    return "\n".join(lines)


def side_by_side(rows: list[tuple[str, EvalResult]], command: str, seconds: float) -> str:
    """The per-model table: one row per set and mode, one column pair per model."""
    models = list(dict.fromkeys(m for m, _ in rows))
    cal = load_config()["calibration"]
    by = {(m, r.dataset, r.mode): r for m, r in rows}
    keys = list(dict.fromkeys((r.dataset, r.mode) for _, r in rows))
    head = " | ".join(f"{m} nDCG@10 | recall@10 | median ms" for m in models)
    lines = [
        SIDE_BEGIN,
        "## Retrieval with each offline model, side by side (issue 22 §3)",
        "",
        f"Command: `{command}` ({seconds:.0f} s, {platform.machine()}, 2 cores, one run). Each model's chunks",
        "in a knowledge base of their own (the same text, so the lexical leg is the same), searched by name;",
        "queries embedded as queries (e5: `query: `), passages as `passage: ` + title + text;",
        "`hybrid` = each model's calibration (config.toml `[calibration]`: "
        + "; ".join(
            f"{m} min_similarity {cal[m]['retrieval']['min_similarity']}, "
            f"dense_weight {cal[m]['retrieval']['dense_weight']}"
            for m in models
        )
        + "; lexical 1.0). nDCG@10 as BEIR computes it (the first 10",
        "distinct documents of 20 hits; gain = the qrels grade, discount log2(rank + 1)). Median ms:",
        "one hybrid_search call from Python (match_count 20), the query's embedding not included.",
        "",
        f"| set | mode | {head} |",
        "|---|---|" + "---|---|---|" * len(models),
    ]
    for ds, mode in keys:
        cells = []
        for m in models:
            r = by.get((m, ds, mode))
            cells.append(f"{r.ndcg10:.3f} | {r.recall10:.3f} | {r.median_ms:.1f}" if r else " |  | ")
        lines.append(f"| {ds} | {mode} | " + " | ".join(cells) + " |")
    lines.append(SIDE_END)
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sets", default="faquad,quati,scifact")
    ap.add_argument("--write", action="store_true", help="update docs/BENCHMARKS.md")
    ap.add_argument("--extra", action="store_true", help="also run the fusion/weight variants")
    ap.add_argument("--models", default="", help="side by side: comma-separated offline models")
    args = ap.parse_args()
    started = time.perf_counter()
    url = db.ensure_database()
    if args.models:
        run_models(url, args.models.split(","), args.sets.split(","), args.write, started)
        return
    embedder = offline_embedder(MINILM)
    results: list[EvalResult] = []
    with Hipocampo(url) as root:
        # MiniLM beside the active model (e5 by default since issue 61 §2), searched by name, in
        # knowledge bases of its own: searched as the active model, its chunks matched nothing.
        root.rpc("register_embedding_model", {"name": MINILM, "provider": "local", "dims": embedder.dims})
        tid = root.tenant_id("bench") or root.create_tenant("Benchmarks", "bench")
        client = root.as_actor(Actor.service(tid))
        for name in args.sets.split(","):
            ds = load_beir(name)
            kb = index_beir(client, ds, embedder, count_tokens, f"eval-{name}-minilm")
            modes = {**MODES, **(EXTRA_MODES if args.extra else {})}
            rows = evaluate(client, ds, embedder, kb, modes, embedding_model=MINILM)
            if not any(r.ndcg10 for r in rows):
                sys.exit(f"{name}: every mode found nothing relevant; the {MINILM} chunks were not searched")
            for r in rows:
                print(
                    f"{r.dataset:8} {r.mode:26} nDCG@10 {r.ndcg10:.3f} recall@10 {r.recall10:.3f} "
                    f"({r.queries} q, median {r.median_ms:.1f} ms)",
                    flush=True,
                )
                results.append(r)
    if args.write:
        command = "python benchmarks/retrieval.py " + " ".join(sys.argv[1:])
        write_section(BEGIN, END, markdown(results, command.strip(), time.perf_counter() - started))


def run_models(url: str, models: list[str], sets: list[str], write: bool, started: float) -> None:
    """Every set with every model, in one run (see the module docstring)."""
    rows: list[tuple[str, EvalResult]] = []
    modes = {**MODES, **SIDE_MODES}
    with Hipocampo(url) as root:
        tid = root.tenant_id("bench") or root.create_tenant("Benchmarks", "bench")
        client = root.as_actor(Actor.service(tid))
        for model in models:
            embedder = offline_embedder(model)
            root.rpc("register_embedding_model", {"name": model, "provider": "local", "dims": embedder.dims})
            for name in sets:
                ds = load_beir(name)
                kb_name = f"eval-{name}" if model == MINILM else f"eval-{name}-e5"
                kb = index_beir(client, ds, embedder, count_tokens, kb_name)
                for r in evaluate(client, ds, embedder, kb, modes, embedding_model=model):
                    line = f"{model:24} {r.dataset:8} {r.mode:26} nDCG@10 {r.ndcg10:.3f} recall@10 {r.recall10:.3f}"
                    print(line, flush=True)
                    rows.append((model, r))
    if write:
        command = "python benchmarks/retrieval.py " + " ".join(sys.argv[1:])
        text = side_by_side(rows, command.strip(), time.perf_counter() - started)
        write_section(SIDE_BEGIN, SIDE_END, text)


if __name__ == "__main__":
    main()
