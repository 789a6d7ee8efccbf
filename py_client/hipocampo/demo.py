"""``make demo``: the main job on the embedded default, on real Portuguese documents."""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from . import db
from .client import Actor, Hipocampo
from .datasets import datasets_dir, load_beir, load_faquad_questions
from .embeddings import LocalMiniLM, count_tokens
from .evaluation import evaluate, index_beir
from .ingest import DocumentInput, ingest_documents, load_path

__all__ = ["run_demo"]


def run_demo(console: Console, *, questions: int = 5, evaluate_sets: list[str] | None = None) -> None:
    """Start the DB, ingest FaQuAD into KB ``regulamentos``, ask real questions, evaluate."""
    t0 = time.perf_counter()
    url = db.ensure_database()
    console.rule("[bold]hipocampo demo")
    console.print(f"database: {url}")
    with Hipocampo(url) as root:
        tid = root.tenant_id("demo") or root.create_tenant("Demo (FaQuAD)", "demo")
        client = root.as_actor(Actor.service(tid))
        embedder = LocalMiniLM()
        source = datasets_dir() / "faquad" / "dataset.json"
        docs = [DocumentInput(d, "regulation", trust_score=0.9) for d in load_path(Path(source))]
        summary = ingest_documents(client, "regulamentos", docs, embedder, count_tokens)
        console.print(
            f"ingested {summary.documents_ingested} documents ({summary.chunks_written} chunks), "
            f"{summary.documents_unchanged} unchanged, {summary.documents_failed} failed "
            f"in {summary.seconds:.1f} s"
        )
        kb = client.kb_id("regulamentos")
        picked = load_faquad_questions()[:: max(1, 900 // max(questions, 1))][:questions]
        for q, answer, title in picked:
            console.rule(f"[cyan]{q}")
            console.print(f"[dim]gold answer: {answer!r} (from {title})[/dim]")
            hits = client.search(q, embedder.embed_query(q), kb_ids=[kb], match_count=3)
            table = Table("#", "score", "citation", "excerpt", show_lines=True)
            for h in hits:
                cite = f"{h.title}" + (f", {h.metadata['article']}" if h.metadata.get("article") else "")
                cite += f" (chunk {h.chunk_index}, id {h.chunk_id})"
                table.add_row(str(h.rank), f"{h.final_score:.2f}", cite, _excerpt(h.content, answer))
            console.print(table)

        results = []
        for name in evaluate_sets or []:
            ds = load_beir(name)
            kb_name = index_beir(client, ds, embedder, count_tokens)
            results.extend(evaluate(client, ds, embedder, kb_name))
        if results:
            console.rule("[bold]evaluation (nDCG@10 / recall@10 through hipocampo.hybrid_search)")
            table = Table("set", "mode", "nDCG@10", "recall@10", "queries", "median ms")
            for r in results:
                table.add_row(
                    r.dataset,
                    r.mode,
                    f"{r.ndcg10:.3f}",
                    f"{r.recall10:.3f}",
                    str(r.queries),
                    f"{r.median_ms:.1f}",
                )
            console.print(table)
    console.print(f"demo finished in {time.perf_counter() - t0:.0f} s")


def _excerpt(content: str, answer: str, width: int = 240) -> str:
    i = content.lower().find(answer.lower()) if answer else -1
    if i < 0:
        return content[:width] + ("…" if len(content) > width else "")
    start = max(0, i - width // 3)
    text = content[start : start + width]
    return ("…" if start else "") + text.replace(answer, f"[bold green]{answer}[/bold green]", 1) + "…"
