"""What the answer gate's sentence similarity costs at ingestion.

Usage:  .venv/bin/python benchmarks/sentence_cost.py [--model multilingual-e5-small] [--docs 100] [--write]

The first ``--docs`` FaQuAD paragraphs (one document each, type regulation) are ingested through
``hipocampo.ingest.ingest_documents`` into two fresh knowledge bases of a throwaway tenant, in the
model's database (benchmarks/models.py), with the model itself (no embedding cache): one with
``rag.sentence_weight`` 0 (chunks only), one with the model's calibrated weight (or 0.4 where it
is 0), whose ingestion also embeds each chunk's sentences in the same model call. Reported: the
texts embedded, seconds and chunks/s of each, and the ratio. The tenant is deleted afterwards.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
import uuid

os.environ.setdefault("OMP_WAIT_POLICY", "passive")

from hipocampo import Actor, Hipocampo
from hipocampo.embeddings import LocalE5, LocalMiniLM, count_tokens
from hipocampo.evaluation.answer_sets import WHOLE
from hipocampo.evaluation.datasets import load_beir
from hipocampo.ingest import DocumentInput, ingest_documents
from hipocampo.ingest.loaders import LoadedDocument
from models import MINILM, model_database
from report import write_section

BEGIN, END = "<!-- sentence-cost:begin -->", "<!-- sentence-cost:end -->"


class Counting:
    """The model, counting the texts it embeds."""

    def __init__(self, inner: object) -> None:
        self.inner, self.texts = inner, 0
        for k in ("model_name", "provider", "dims", "model_version"):
            setattr(self, k, getattr(inner, k))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.texts += len(texts)
        return list(self.inner.embed_documents(texts))  # type: ignore[attr-defined]

    def embed_query(self, text: str) -> list[float]:
        return list(self.inner.embed_query(text))  # type: ignore[attr-defined]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="multilingual-e5-small")
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    model = LocalMiniLM() if args.model == MINILM else LocalE5()
    url = model_database(model.model_name, model.dims)
    fq = load_beir("faquad")
    docs = [
        DocumentInput(LoadedDocument(title or pid, text, f"faquad:{pid}"), "regulation")
        for pid, (title, text) in list(fq.corpus.items())[: args.docs]
    ]
    rows = []
    with Hipocampo(url) as root:
        tid = root.create_tenant("Benchmark (sentence cost)", f"bench-sc-{uuid.uuid4().hex[:8]}")
        try:
            client = root.as_actor(Actor.service(tid))
            weight = float(client.effective_config()["rag"]["sentence_weight"]) or 0.4
            # A warm-up (the model's first call loads it).
            model.embed_documents(["aquecimento"])
            for label, w in (("chunks only (weight 0)", 0.0), (f"chunks and sentences (weight {weight})", weight)):
                name = f"cost-{w}"
                kb = client.create_kb(name, overrides={"chunking": {"regulation": WHOLE}})
                client.set_kb_config(kb, "rag", {"sentence_weight": w})
                counting = Counting(model)
                t0 = time.perf_counter()
                summary = ingest_documents(client, name, docs, counting, count_tokens)  # type: ignore[arg-type]
                seconds = time.perf_counter() - t0
                rows.append((label, summary.chunks_written, counting.texts, seconds))
        finally:
            root.delete_tenant(tid)
    lines = ["| knowledge base | chunks | texts embedded | seconds | chunks/s |", "|---|---|---|---|---|"]
    for label, chunks, texts, seconds in rows:
        lines.append(f"| {label} | {chunks} | {texts} | {seconds:.1f} | {chunks / seconds:.1f} |")
    ratio = rows[1][3] / rows[0][3]
    verdict = f"With sentences the ingestion takes {ratio:.2f}x as long ({rows[1][2] / rows[0][2]:.1f}x the texts)."
    print("\n".join(lines))
    print(verdict)
    if args.write:
        cmd = "python benchmarks/sentence_cost.py " + shlex.join(sys.argv[1:])
        text = "\n".join(
            [
                BEGIN,
                "### What the sentences cost at ingestion",
                "",
                f"Command: `{cmd.strip()}` ({model.model_name}, no embedding cache, one run, 2 cores). The first "
                f"{args.docs} FaQuAD paragraphs, one document each, through the ingestion pipeline into two fresh "
                "knowledge bases:",
                "",
                *lines,
                "",
                verdict,
                END,
            ]
        )
        print(f"written to {write_section(BEGIN, END, text)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
