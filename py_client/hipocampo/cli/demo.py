"""``make demo``: the main job on the embedded default, on real Portuguese documents."""

from __future__ import annotations

import time
from pathlib import Path
from uuid import NAMESPACE_URL, UUID, uuid5

from rich.console import Console
from rich.table import Table

from .. import db
from ..answers import Orchestrator
from ..client import Actor, Hipocampo
from ..embeddings import EmbeddingProvider, active_provider, count_tokens
from ..errors import MemoryRejected
from ..evaluation import evaluate, index_beir
from ..evaluation.datasets import datasets_dir, load_beir, load_faquad_questions
from ..ingest import DocumentInput, ingest_documents, load_path
from ..memory import Memory

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
        embedder = active_provider(root)
        source = datasets_dir() / "faquad" / "dataset.json"
        docs = [DocumentInput(d, "regulation", trust_score=0.9) for d in load_path(Path(source))]
        summary = ingest_documents(client, "regulamentos", docs, embedder, count_tokens)
        console.print(
            f"ingested {summary.documents_ingested} documents ({summary.chunks_written} chunks), "
            f"{summary.documents_unchanged} unchanged, {summary.documents_failed} failed "
            f"in {summary.seconds:.1f} s ({summary.chunks_per_second:.1f} chunks/s, embedding included)"
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

        _memory_demo(console, root, tid, embedder)
        _answers_demo(console, root, tid, embedder, kb, [q for q, _, _ in picked[:3]])

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
    console.rule("[bold]the knowledge-base hub on this data")
    console.print(
        "run   .venv/bin/hipocampo serve --dev-user\n"
        "open  http://127.0.0.1:8000/hub  and choose 'local development user' (an admin of the demo tenant)"
    )


def _memory_demo(console: Console, root: Hipocampo, tenant_id: UUID, embedder: EmbeddingProvider) -> None:
    """Profile seed, a refusal, a staged item, a correction and a recall, as a demo user."""
    console.rule("[bold]memory: profile seed, gate, correction, recall")
    user = uuid5(NAMESPACE_URL, "hipocampo:demo-user")
    service = root.as_actor(Actor.service(tenant_id))
    mem = Memory(service.as_actor(Actor.user(user, tenant_id)), embedder)
    service.add_member(tenant_id, user, "member")
    mem.erase()  # the demo starts from a clean slate each run (and shows erasure works)
    service.add_member(tenant_id, user, "member")  # erasure ended the membership too
    mem.consent()
    seeded = mem.seed_profile(
        {
            "user.name": "Ana",
            "user.preferred_language": "pt-BR",
            "user.role_title": "síndica",
            "tenant.segment": "condomínios residenciais",
            "prefs.short_answers": True,
            "prefs.no_emojis": True,
        }
    )
    console.print(f"seed_profile: {seeded}")
    for key, value, text, category, intensity in [
        (
            "tools_integrations.billing",
            "Superlógica",
            "Usa o Superlógica para emitir boletos",
            "tools_integrations",
            None,
        ),
        ("projects.fachada", "pintura", "Está organizando a pintura da fachada do prédio", "projects", 5.0),
        ("prefs.greeting", "bom dia", "bom dia", "preference", None),
    ]:
        try:
            r = mem.remember(key, value, text, category, intensity=intensity)
            console.print(f"remember {key!r}: [green]{r.status}[/green]")
        except MemoryRejected as exc:
            console.print(f"remember {key!r}: [yellow]refused ({exc.reason}, {exc.sqlstate})[/yellow] {exc}")
    billing = mem.lookup("tools_integrations.billing")[0]
    fixed = mem.correct(billing.id, "Omie", "Usa o Omie para emitir boletos")
    console.print(f"correction 'isso está errado, é o Omie': {fixed.status}; history:")
    for m in mem.lookup("tools_integrations.billing", include_history=True):
        console.print(f"  {m.status:<10} {m.value!r}  ({m.description})")
    for question in ["Qual sistema ela usa para boletos?", "Quem é a usuária e qual o cargo dela?"]:
        recall = mem.recall(question, k=3, min_score=0.2)
        table = Table("#", "score", "tier", "memory", title=f"recall: {question}")
        for h in recall.hits:
            table.add_row(str(h.rank), f"{h.score:.2f}", h.tier, f"{h.key} = {h.value!r}")
        console.print(table)


def _answers_demo(
    console: Console, root: Hipocampo, tenant_id: UUID, embedder: EmbeddingProvider, kb: UUID, questions: list[str]
) -> None:
    """Cited answers to real FaQuAD questions, a question in a student's own words (answered, or
    answered with the passages on its topic), two off-topic refusals, and a ContextPack that
    carries a remembered preference, all as the demo user (RLS applies)."""

    from .answers import print_answer

    console.rule("[bold]answers that cite, passages on the topic, or a refusal (hipocampo ask)")
    user = uuid5(NAMESPACE_URL, "hipocampo:demo-user")
    client = root.as_actor(Actor.user(user, tenant_id))
    orch = Orchestrator(client, embedder)
    # A question in a student's own words (no exact answer offline: the passages on its topic, cited),
    # and two the knowledge base knows nothing of (refused).
    own_words = ["Dá pra aproveitar as matérias que já fiz em outra faculdade?"]
    unanswerable = ["Qual é a capital da Austrália?", "Quanto custa um ingresso para a final da Copa do Mundo?"]
    for q in [*questions, *own_words, *unanswerable]:
        console.print(f"[bold cyan]? {q}[/bold cyan]")
        print_answer(orch.ask(q, kb_ids=[kb], use_cache=False), console)
    console.rule("[bold]ContextPack (memory -> session -> RAG) for a conversation")
    mem = Memory(client, embedder)
    conversation = uuid5(NAMESPACE_URL, "hipocampo:demo-conversation")
    mem.add_message(conversation, "user", "Preciso entender as regras de estágio do curso.")
    mem.add_message(conversation, "assistant", "Claro! O que você quer saber sobre o estágio?")
    question = "Qual a carga horária do estágio supervisionado?"
    pack = (
        client.rpc(
            "context_pack",
            {
                "conversation_id": conversation,
                "query": question,
                "query_embedding": embedder.embed_query(question),
                "modality": "voice",
                "token_budget": 600,
                "kb_ids": [kb],
            },
        )
        or {}
    )
    console.print(
        f"modality {pack['modality']}, budget {pack['token_budget']} tokens, used {pack['tokens_used']}; "
        f"window {pack['window']['policy']} ({pack['window']['included']} of {pack['window']['total_messages']})"
    )
    for m in pack["memories"]:
        flag = " (preference)" if m["preference"] else ""
        console.print(f"  memory{flag}: {m['key']} = {m['value']!r}")
    for c in pack["chunks"]:
        console.print(f"  {c['citation']} (chunk {c['chunk_id']}): {c['content'][:120]}…")
    console.print(f"  rag: {pack['rag']}")


def _excerpt(content: str, answer: str, width: int = 240) -> str:
    i = content.lower().find(answer.lower()) if answer else -1
    if i < 0:
        return content[:width] + ("…" if len(content) > width else "")
    start = max(0, i - width // 3)
    text = content[start : start + width]
    return ("…" if start else "") + text.replace(answer, f"[bold green]{answer}[/bold green]", 1) + "…"
