"""Knowledge bases of several languages (issue 59 §2): a Portuguese set and an English one in one
knowledge base, with each document stemmed in its detected language or all in the knowledge
base's.

Usage:  .venv/bin/python benchmarks/languages.py [--model NAME] [--write]

FaQuAD (Portuguese) and SciFact (English) are ingested together into one knowledge base whose
language is portuguese, twice: with each document's language detected at ingestion
(``hipocampo.ingest.language``, lingua; the product's behaviour) and with detection off (every
document stemmed as Portuguese: what a Portuguese knowledge base did before). Each set's questions
are then searched in that knowledge base (the other set's documents are distractors) in the three
modes (dense, lexical, hybrid at the defaults); nDCG@10 per set, mode and variant, beside the set
alone in a knowledge base of its own language (``eval-<set>``, as the retrieval section has it).
The model is the default one (``--model`` another offline one), in its own database.
"""

from __future__ import annotations

import argparse
import sys
import time
from unittest import mock

from hipocampo import Actor, Hipocampo
from hipocampo.embeddings import count_tokens
from hipocampo.evaluation import MODES, evaluate, index_beir
from hipocampo.evaluation.datasets import BeirSet, load_beir
from hipocampo.ingest import DocumentInput, LoadedDocument, ingest_documents
from models import with_model
from report import write_section

BEGIN, END = "<!-- languages:begin -->", "<!-- languages:end -->"
SETS = ("faquad", "scifact")


def mixed(client: Hipocampo, sets: list[BeirSet], embedder: object, name: str, detect: bool) -> str:
    """One portuguese knowledge base holding every set's corpus (idempotent)."""
    whole = {"min_tokens": 1, "max_tokens": 2000, "overlap": 0, "split": "paragraph"}
    if name not in [k.name for k in client.list_kbs()]:
        client.create_kb(name, language="portuguese", overrides={"chunking": {"faq": whole}})
    inputs = [
        DocumentInput(LoadedDocument(title or doc_id, text, f"beir:{ds.name}:{doc_id}"), "faq")
        for ds in sets
        for doc_id, (title, text) in ds.corpus.items()
    ]
    if detect:
        ingest_documents(client, name, inputs, embedder, count_tokens)  # type: ignore[arg-type]
    else:
        with mock.patch("hipocampo.ingest.pipeline.detect_language", return_value=None):
            ingest_documents(client, name, inputs, embedder, count_tokens)  # type: ignore[arg-type]
    return name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default=None, help="an offline model (default: config.toml's)")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    started = time.perf_counter()
    url, embedder = with_model(args.model)
    sets = [load_beir(s) for s in SETS]
    table: dict[tuple[str, str], dict[str, float]] = {}
    with Hipocampo(url) as root:
        tid = root.tenant_id("bench") or root.create_tenant("Benchmarks", "bench")
        client = root.as_actor(Actor.service(tid))
        variants = {
            "alone, in its own language": None,
            "together, each document in its language": mixed(client, sets, embedder, "mixed-detected", True),
            "together, every document as Portuguese": mixed(client, sets, embedder, "mixed-portuguese", False),
        }
        for ds in sets:
            for variant, kb in variants.items():
                kb = kb or index_beir(client, ds, embedder, count_tokens)  # type: ignore[arg-type]
                for r in evaluate(client, ds, embedder, kb, MODES):  # type: ignore[arg-type]
                    table.setdefault((ds.name, variant), {})[r.mode] = r.ndcg10
                    print(f"{ds.name:8} {variant:42} {r.mode:8} nDCG@10 {r.ndcg10:.3f}", flush=True)
    lines = [
        BEGIN,
        "",
        f"`python benchmarks/languages.py {' '.join(sys.argv[1:])}`".replace(" `", "`")
        + f", {embedder.model_name}, {time.perf_counter() - started:.0f} s.",
        "",
        "| set | knowledge base | dense | lexical | hybrid |",
        "|---|---|---|---|---|",
    ]
    for (name, variant), modes in table.items():
        lines.append(f"| {name} | {variant} | {modes['dense']:.3f} | {modes['lexical']:.3f} | {modes['hybrid']:.3f} |")
    lines += ["", END]
    text = "\n".join(lines)
    print(text)
    if args.write:
        print(f"wrote {write_section(BEGIN, END, text)}")


if __name__ == "__main__":
    main()
