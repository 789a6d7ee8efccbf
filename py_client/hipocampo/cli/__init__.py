"""``hipocampo`` command line (typer + rich).

The CLI acts as service_role on the tenant named by ``--tenant`` (a slug; ``default`` is created
on first use), the way a backend job would.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from .. import db
from ..client import Hipocampo
from ..constraints import TEXT_SEARCH_LANGUAGES
from ..errors import HipocampoError, InvalidInputError, from_db_error
from ..models import NotLanguageDocument
from ..text import plain_text
from .agents import agent_app
from .answers import ask, serve
from .calibrate import calibrate
from .common import JsonOpt, TenantOpt, _client, _database_url, _fail, console, err_console
from .evaluate import kb_eval
from .feedback import feedback_app
from .lifecycle import (
    config_app,
    doc_app,
    kb_delete,
    member_app,
    tenant_delete,
    tenant_export,
    tenant_import,
    tenant_list,
    tenant_move,
)
from .memory import memory_app
from .model import model_app

__all__ = ["app"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

app = typer.Typer(
    help="hipocampo: Supabase-native RAG and AI memory.", no_args_is_help=True, rich_markup_mode="markdown"
)
db_app = typer.Typer(
    help="The database (embedded PostgreSQL or a configured URL).", no_args_is_help=True, rich_markup_mode="markdown"
)
tenant_app = typer.Typer(help="Tenants.", no_args_is_help=True, rich_markup_mode="markdown")
kb_app = typer.Typer(help="Knowledge bases.", no_args_is_help=True, rich_markup_mode="markdown")
app.add_typer(db_app, name="db")
app.add_typer(tenant_app, name="tenant")
app.add_typer(kb_app, name="kb")
app.add_typer(agent_app, name="agent")
app.add_typer(feedback_app, name="feedback")


# -- db ---------------------------------------------------------------------------------------
@db_app.command("start")
def db_start() -> None:
    """Start (or reuse) the embedded server, apply the shim and migrations, print the URL."""
    console.print(_database_url())


@db_app.command("stop")
def db_stop() -> None:
    """Stop the embedded server."""
    console.print("stopped" if db.stop() else "not running")


def _replica_line(as_json: bool) -> dict[str, Any] | None:
    """The read replica's lag (with a read URL configured), printed unless ``as_json``."""
    if not db.read_url():
        return None
    with _client() as client:
        lag = client.replica_status()
    out = {"read_url": str(db.read_url()).split("@")[-1], "lag_bytes": lag.lag_bytes, "lag_ms": round(lag.lag_ms, 1)}
    if not as_json:
        console.print(f"read replica: {out['read_url']}, {lag.lag_bytes} bytes / {out['lag_ms']} ms behind")
    return out


@db_app.command("status")
def db_status(as_json: JsonOpt = False) -> None:
    """Whether the embedded server runs (exit 1 when it does not); with a read replica configured
    (``HIPOCAMPO_READ_DATABASE_URL``), how far it is behind (WAL bytes and ms not replayed)."""
    url = db.external_url()
    if url:
        if not as_json:
            console.print(f"external database configured: {url.split('@')[-1]}")
        replica = _replica_line(as_json)
        if as_json:
            console.print_json(json.dumps({"external": True, "host": url.split("@")[-1], "replica": replica}))
        return
    st = db.status()
    if as_json:
        console.print_json(
            json.dumps({"external": False, "data_dir": str(st.data_dir), "running": st.running, "pid": st.pid})
        )
    else:
        console.print(
            f"data dir: {st.data_dir}\nrunning: {st.running}"
            + (f" (pid {st.pid})\nurl: {st.url}" if st.running else "")
        )
    if not st.running:
        raise typer.Exit(code=1)


@db_app.command("url")
def db_url() -> None:
    """Print the connection URL (starts the embedded server when needed)."""
    console.print(db.ensure_database())


@db_app.command("migrate")
def db_migrate(as_json: JsonOpt = False) -> None:
    """Apply pending migrations (and, on the embedded server, the local shim)."""
    url = db.external_url()
    res = db.apply_migrations(url, shim=False) if url else db.apply_migrations(db.start(), shim=True)
    if as_json:
        console.print_json(json.dumps({"applied": res.applied, "skipped": res.skipped, "drifted": res.drifted}))
        return
    console.print(f"applied {len(res.applied)}, already recorded {len(res.skipped)}")
    for version in res.drifted:
        console.print(
            f"[yellow]warning:[/yellow] migration {version} was edited after this database applied it;"
            " add a new migration for the change (local database: `hipocampo db reset`)"
        )


@db_app.command("link-primary")
def db_link_primary(
    url: Annotated[
        str | None,
        typer.Argument(help="The primary's connection URL as its standbys reach it (default: this database's)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Link this database (the primary) to itself for its read replicas: a read on a hot standby
    records itself on the primary through dblink (server hipocampo_primary), so replica reads are
    in the access log too. Run once on the primary, as the database owner; replication copies the
    link to every standby. Without it a read RPC on a standby fails (25006) rather than go unrecorded."""
    import psycopg

    from ..db import replica

    target = _database_url()
    with psycopg.connect(target, autocommit=True) as conn:
        replica.link_primary(conn, url or target)
    where = (url or target).split("@")[-1]
    if as_json:
        console.print_json(json.dumps({"linked": where}))
    else:
        console.print(f"linked: reads in read-only transactions are recorded on {where}")


@db_app.command("reset")
def db_reset(yes: Annotated[bool, typer.Option("--yes", help="Do not ask.")] = False) -> None:
    """Delete the embedded server's data and start afresh."""
    if db.external_url():
        raise _fail(HipocampoError("reset only applies to the embedded server"))
    if not yes:
        typer.confirm(f"Delete everything in {db.data_dir()}?", abort=True)
    console.print(db.reset())


@db_app.command("embed-missing")
def db_embed_missing(
    batch_size: Annotated[int, typer.Option(help="Rows per transaction (1..1000).")] = 100,
    limit: Annotated[int | None, typer.Option(help="Stop each kind after about this many rows.")] = None,
) -> None:
    """Embed what search cannot read yet, with the configured (active) model.

    Chunks, memories (active and staged) and messages without an embedding of the active model
    (after a model switch; messages stored through the edge functions), then the tokens of
    messages that have none (history search's re-rank) and the sentence embeddings of chunks whose
    answer gate reads them (rag.sentence_weight > 0). Re-running `ingest` also re-embeds a
    knowledge base, from the source files.
    """
    from ..backfill import backfill_chunk_sentences, backfill_message_tokens, embed_missing_rows
    from ..embeddings import provider_from_config

    with _client() as client:
        embedder = provider_from_config()
        try:
            out = embed_missing_rows(client, embedder, batch_size=batch_size, limit=limit)
            out["message_tokens"] = backfill_message_tokens(client, embedder, batch_size=batch_size, limit=limit)
            out["chunk_sentences"] = backfill_chunk_sentences(client, embedder, batch_size=batch_size, limit=limit)
        except HipocampoError as exc:
            raise _fail(exc) from exc
    console.print(json.dumps(out))


# -- tenants ----------------------------------------------------------------------------------
@tenant_app.command("create")
def tenant_create(
    name: Annotated[str, typer.Argument(help='Display name, e.g. "Condomínio Sol".')],
    slug: Annotated[str, typer.Option(help="Unique slug ([a-z0-9_-]).")],
    admin_user: Annotated[str | None, typer.Option(help="Auth user id made admin.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a tenant; prints its id."""
    with _client() as client:
        try:
            tid = client.create_tenant(name, slug, admin_user)
            console.print_json(json.dumps({"id": str(tid), "slug": slug})) if as_json else console.print(str(tid))
        except HipocampoError as exc:
            raise _fail(exc) from exc


# -- knowledge bases --------------------------------------------------------------------------
@kb_app.command("create")
def kb_create(
    name: Annotated[str, typer.Argument(help="Knowledge base name (unique in the tenant).")],
    tenant: TenantOpt = "default",
    description: Annotated[str | None, typer.Option(help="What the knowledge base holds.")] = None,
    language: Annotated[
        str,
        typer.Option(
            help=f"Text-search language: {', '.join(TEXT_SEARCH_LANGUAGES)} (documents in another language "
            "are detected and stemmed in theirs)."
        ),
    ] = "portuguese",
    tag: Annotated[list[str] | None, typer.Option(help="Tag (repeatable).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a knowledge base (idempotent by name); prints its id."""
    with _client(tenant, create_default=True) as client:
        try:
            kb = client.create_kb(name, description=description, language=language, tags=tag or [])
            console.print_json(json.dumps({"id": str(kb), "name": name})) if as_json else console.print(str(kb))
        except HipocampoError as exc:
            raise _fail(exc) from exc


def _kb_table(kbs: list[Any]) -> Table:
    table = Table("name", "status", "language", "documents", "chunks", "updated")
    for kb in kbs:
        table.add_row(
            kb.name,
            kb.status,
            kb.language,
            str(kb.documents),
            str(kb.chunks),
            kb.updated_at.strftime("%Y-%m-%d %H:%M") if kb.updated_at else "",
        )
    return table


@kb_app.command("list")
def kb_list(tenant: TenantOpt = "default", as_json: JsonOpt = False) -> None:
    """List the tenant's knowledge bases."""
    with _client(tenant) as client:
        kbs = client.list_kbs()
    if as_json:
        console.print_json(json.dumps([k.model_dump(mode="json") for k in kbs]))
    else:
        console.print(_kb_table(kbs))


@kb_app.command("status")
def kb_status(
    name: Annotated[str, typer.Argument(help="Knowledge base name.")],
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Status and counts of one knowledge base."""
    with _client(tenant) as client:
        kbs = [k for k in client.list_kbs() if k.name == name]
    if not kbs:
        raise _fail(HipocampoError(f"unknown knowledge base: {name}", "P0002"))
    if as_json:
        console.print_json(kbs[0].model_dump_json())
    else:
        console.print(_kb_table(kbs))


def _ingest_progress(quiet: bool) -> Progress:
    """The ingest progress bar on stderr: documents, chunks, chunks/s, elapsed and ETA."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[chunks]} chunks · {task.fields[rate]:.1f} chunks/s"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=err_console,
        # (off when stderr is not a terminal: a transient bar left a blank line there; issue 58 §3)
        disable=quiet or not err_console.is_terminal,
        transient=True,
    )


def _with_tenant_hint(exc: HipocampoError, kb: str, tenant: str) -> HipocampoError:
    """The missing knowledge base's hint with the tenant named (`kb create` without --tenant
    creates in "default"; issue 45 §6)."""
    if tenant == "default" or not exc.message.startswith("unknown knowledge base"):
        return exc
    hint = exc.message.replace(f"`hipocampo kb create {kb}`", f"`hipocampo kb create {kb} --tenant {tenant}`")
    return type(exc)(hint, exc.sqlstate)


def _report_ingest(
    summary: Any, kb: str, pruned: list[str] | None, note: str | None, babble: list[NotLanguageDocument]
) -> None:
    """What `hipocampo ingest` says in words: the totals (stdout), then the knowledge base not
    kept, the documents pruned (``pruned``: None without --prune), each failure or refusal and
    each quarantine with its reason, the cross-check
    note and the documents that do not read as language (stderr)."""
    console.print(
        f"[bold]{summary.kb}[/bold]: {summary.documents_ingested} ingested, "
        f"{summary.documents_unchanged} unchanged, {summary.documents_updated} metadata updated, "
        f"{summary.documents_failed} failed"
        + (f" ({summary.documents_refused} refused)" if summary.documents_refused else "")
        + (f", {summary.documents_quarantined} quarantined" if summary.documents_quarantined else "")
        + f"; {summary.chunks_written} chunks, {summary.pii_replaced} PII replaced, {summary.seconds:.1f} s"
    )
    if summary.kb_deleted:
        err_console.print(f"nothing was ingested: the new knowledge base {escape(kb)} was not kept", highlight=False)
    if pruned is not None:
        console.print(f"pruned {len(pruned)} documents whose files or pages are gone", highlight=False)
        for uri in pruned:
            console.print(f"  - {escape(uri)}", highlight=False, soft_wrap=True)
    for d in summary.documents:
        if d.status == "quarantined":  # its reason says "quarantined: …"
            err_console.print(f"[yellow]{escape(d.source_uri)}[/yellow]: {escape(str(d.error))}", highlight=False)
        elif d.error:
            err_console.print(
                f"[red]failed[/red] {escape(d.source_uri)}: {escape(d.error)}", highlight=False, soft_wrap=True
            )
    if note:
        err_console.print(escape(note), style="yellow", highlight=False)
    for b in babble:
        err_console.print(
            f"[yellow]warning[/yellow] {escape(b.source_uri)}: its text does not read as language"
            " (word salad, OCR garbage?): search ranks it after every text that does, answers never cite it"
            " (rag.language_*)",
            highlight=False,
            soft_wrap=True,
        )


# -- ingest and search ------------------------------------------------------------------------
@app.command()
def ingest(
    paths: Annotated[
        list[str],
        typer.Argument(help="Files or directories, or http(s) URLs of pages or sitemaps (not both in one run)."),
    ],
    kb: Annotated[str, typer.Option("--kb", help="Knowledge base (must exist unless --create-kb).")],
    tenant: TenantOpt = "default",
    create_kb: Annotated[bool, typer.Option("--create-kb", help="Create the knowledge base if it is missing.")] = False,
    source_type: Annotated[str, typer.Option(help="regulation, policy, manual, faq, …, other.")] = "other",
    trust: Annotated[
        float | None,
        typer.Option(help="Trust 0..1 of these documents (default: retrieval.default_trust of the source type)."),
    ] = None,
    defer_index: Annotated[
        bool,
        typer.Option(
            "--defer-index",
            help="A large first load: drop the model's HNSW index before and build it after, in one pass "
            "(service_role; meanwhile large knowledge bases are searched by exact scan).",
        ),
    ] = False,
    prune: Annotated[
        bool,
        typer.Option(
            "--prune",
            help="Also delete the knowledge base's documents that came from under these directories and "
            "whose files are gone, or, for URLs, the site's stored pages the crawl no longer reaches (listed; "
            "never without this flag; nothing when a file or page failed).",
        ),
    ] = False,
    depth: Annotated[
        int, typer.Option(help="URLs: follow same-site links this many clicks from each start page (0..5).")
    ] = 0,
    max_pages: Annotated[int, typer.Option(help="URLs: fetch at most this many pages (1..10000).")] = 200,
    as_json: JsonOpt = False,
) -> None:
    """Load, scrub PII, chunk, embed and store documents, a batch of them per transaction;
    unchanged ones are skipped, a changed source type or trust is applied without re-embedding.
    URLs are crawled (robots.txt obeyed, same site only) and each page's main text stored under
    its URL; run again, it is a sync: unchanged pages cost no embedding, pages that answer 404 / 410
    are deleted. Exit 1 when any file or page failed, or when the paths hold no file at all
    (without --prune)."""
    from ..embeddings import active_provider, count_tokens
    from ..ingest.pipeline import prune_missing
    from ..ingest.web import is_url

    urls = [p for p in paths if is_url(p)]
    if urls and len(urls) != len(paths):
        raise _fail(InvalidInputError("pass files or URLs, not both in one run", "22023"))
    files = [] if urls else _files_to_ingest([Path(p) for p in paths], prune)
    with _client(tenant, create_default=create_kb) as client:
        embedder = active_provider(client)
        progress = _ingest_progress(as_json)
        with progress:
            task = progress.add_task("documents", total=None, chunks=0, rate=0.0)
            hooks = _ingest_hooks(progress, task)
            try:
                if defer_index:
                    client.defer_model_index(embedder.model_name)
                try:
                    common: dict[str, Any] = {"source_type": source_type, "trust_score": trust, **hooks}
                    if urls:
                        crawl = {"depth": depth, "max_pages": max_pages, "prune": prune}
                        summary = _ingest_urls(client, kb, urls, embedder, count_tokens, common, crawl)
                    else:
                        summary = _ingest_files(client, kb, files, embedder, count_tokens, common, create_kb)
                finally:
                    if defer_index:
                        progress.update(task, description="building the HNSW index")
                        client.build_model_index(embedder.model_name)
            except HipocampoError as exc:
                raise _fail(_with_tenant_hint(exc, kb, tenant)) from exc
        if prune and not urls and not summary.kb_deleted:
            summary.pruned = prune_missing(client, kb, [Path(p) for p in paths], summary)
        written = summary.documents_ingested + summary.documents_updated
        note = _cross_check_note(client, kb, tenant, source_type, trust) if written and not as_json else None
        babble = _not_language(client, kb, summary) if summary.documents_ingested and not as_json else []
    if as_json:
        console.print_json(summary.model_dump_json())
    else:
        _report_ingest(summary, kb, summary.pruned if prune or urls else None, note, babble)
    if summary.documents_failed:
        raise typer.Exit(code=1)


def _files_to_ingest(paths: list[Path], prune: bool) -> list[Path]:
    """The files under ``paths``; none (without --prune, where an emptied folder is what is pruned)
    fails with 22023, naming the supported types."""
    from ..ingest import expand_paths
    from ..ingest.loaders import SUPPORTED_SUFFIXES

    files = expand_paths(paths)
    if not files and not prune:
        where = ", ".join(str(p) for p in paths)
        raise _fail(
            InvalidInputError(
                f"nothing to ingest: no file under {where} (supported: {', '.join(SUPPORTED_SUFFIXES)})", "22023"
            )
        )
    return files


def _ingest_hooks(progress: Progress, task: Any) -> dict[str, Any]:
    """The progress bar's hooks for ``ingest_paths`` / ``ingest_urls``: on_document, on_total, on_scrub."""
    state = {"chunks": 0}

    def scrubbed(done: int, total: int) -> None:
        label = "documents" if done >= total else f"PII scrub {done / 1e6:.1f} / {total / 1e6:.1f} MB"
        progress.update(task, description=label)

    def tick(res: Any) -> None:
        state["chunks"] += res.chunks
        elapsed = progress.tasks[0].elapsed or 1e-9
        progress.update(task, advance=1, chunks=state["chunks"], rate=state["chunks"] / elapsed)

    return {"on_document": tick, "on_total": lambda n: progress.update(task, total=n), "on_scrub": scrubbed}


def _ingest_files(
    client: Any, kb: str, files: list[Path], embedder: Any, count: Any, common: dict[str, Any], create_kb: bool
) -> Any:
    from ..ingest import ingest_paths

    return ingest_paths(client, kb, files, embedder, count, create_kb=create_kb, **common)


def _ingest_urls(
    client: Any,
    kb: str,
    urls: list[str],
    embedder: Any,
    count: Any,
    common: dict[str, Any],
    crawl: dict[str, Any],
) -> Any:
    """A crawl (:func:`hipocampo.ingest.web.ingest_urls`; ``crawl``: depth, max_pages, prune);
    without the [web] extra, says how to get it."""
    try:
        import trafilatura  # noqa: F401 - the [web] extra's presence

        from ..ingest.web import CrawlLimits, ingest_urls
    except ImportError as exc:
        missing = InvalidInputError("ingesting URLs needs the web extra: pip install 'hipocampo[web]'", "22023")
        raise _fail(missing) from exc
    limits = CrawlLimits(depth=crawl["depth"], max_pages=crawl["max_pages"])
    return ingest_urls(client, kb, urls, embedder, count, limits=limits, prune=crawl["prune"], **common)


def _not_language(client: Any, kb: str, summary: Any) -> list[NotLanguageDocument]:
    """The documents this run wrote whose text does not read as language
    (``Hipocampo.documents_not_language``)."""
    uris = [d.source_uri for d in summary.documents if d.status in ("inserted", "replaced")]
    found: list[NotLanguageDocument] = client.documents_not_language(client.kb_id(kb), uris) if uris else []
    return found


def _cross_check_note(client: Any, kb: str, tenant: str, source_type: str, trust: float | None) -> str | None:
    """What `ingest` says when the documents it wrote cannot back an answer alone
    (``answers.cross_check.cross_check_gap``): ``ask`` refuses what only one of them supports
    (cross_check_failed; docs/design.md §answers). None when they can."""
    from ..answers.cross_check import cross_check_gap

    gap = cross_check_gap(client, client.kb_id(kb), source_type, trust)
    if gap is None:
        return None
    return (
        f"note: documents of type {source_type} at trust {gap.trust:g} are not authoritative, so `ask` refuses an "
        f"answer only one of them supports (cross_check_failed: rag.cross_check_min_documents is "
        f"{gap.min_documents}). For vetted documents: --source-type {' / '.join(gap.authoritative_types)} (trust >= "
        f"{gap.authoritative_trust:g}), or `hipocampo config set rag "
        f"'{{\"cross_check_min_documents\": 1}}' --kb {kb}{'' if tenant == 'default' else ' --tenant ' + tenant}`."
    )


def print_hits(hits: list[Any], hidden: int = 0, width: int = 110) -> None:
    """A readable table of hits: rank, the two legs' scores on their own scales, source and a
    plain-text excerpt (markdown marks stripped), with a footnote on how they are ranked."""
    table = Table("#", "semantic", "keywords", "source", "excerpt", show_lines=True)
    for h in hits:
        src = plain_text(h.title) + (f" · {h.metadata['article']}" if h.metadata.get("article") else "")
        text = " ".join(plain_text(h.content).split())
        excerpt = text if len(text) <= width * 2 else text[: width * 2] + "…"
        table.add_row(
            str(h.rank),
            "—" if h.dense_score is None else f"{h.dense_score:.2f}",
            "—" if h.lexical_score is None else f"{h.lexical_score:.1f}",
            f"{escape(src)}\n[dim]{escape(h.source_uri)}[/dim]",
            escape(excerpt),
        )
    console.print(table)
    note = (
        "semantic: cosine similarity of the meaning (0-1); keywords: BM25 of the query's terms (0 = none);"
        " ranked by both together (retrieval.fusion)"
    )
    if hidden:
        note += f"; {hidden} weaker hit(s) below retrieval.display_min_score hidden (--all shows them)"
    err_console.print(f"[dim]{note}[/dim]", highlight=False)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="The question or keywords.")],
    kb: Annotated[list[str] | None, typer.Option("--kb", help="Knowledge base (repeatable; default all).")] = None,
    tenant: TenantOpt = "default",
    k: Annotated[int | None, typer.Option("-k", "--match-count", help="Hits (default: config).")] = None,
    source_type: Annotated[list[str] | None, typer.Option(help="Filter (repeatable).")] = None,
    fusion: Annotated[str | None, typer.Option(help="score | rrf")] = None,
    rerank: Annotated[str | None, typer.Option(help="none | trust_recency")] = None,
    mmr_lambda: Annotated[float | None, typer.Option(help="0..1; 1 = relevance only")] = None,
    show_all: Annotated[bool, typer.Option("--all", help="Also the hits below retrieval.display_min_score.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Hybrid search: the hits with their scores, sources and excerpts (--json: every hit, raw)."""
    from ..embeddings import provider_from_config
    from ..embeddings.factory import query_vector

    with _client(tenant) as client:
        try:
            kb_ids = [client.kb_id(name) for name in kb] if kb else None
            embedder = provider_from_config()
            hits = client.search(
                query,
                query_vector(client, query, embedder, kb_ids),
                kb_ids=kb_ids,
                source_types=source_type,
                match_count=k,
                fusion=cast(Any, fusion),  # checked by hybrid_search (22023 names the choices)
                rerank=cast(Any, rerank),
                mmr_lambda=mmr_lambda,
            )
            retrieval = client.effective_config(kb_ids[0] if kb_ids and len(kb_ids) == 1 else None)["retrieval"]
        except HipocampoError as exc:
            raise _fail(exc) from exc
    if as_json:
        console.print_json(json.dumps([h.model_dump(mode="json") for h in hits]))
        return
    shown = hits
    if not show_all and (fusion or retrieval.get("fusion")) == "score":
        floor = float(retrieval.get("display_min_score", 0.0))
        shown = [h for h in hits if h.final_score >= floor] or hits[:1]
    print_hits(shown, hidden=len(hits) - len(shown))


@app.command("mcp")
def mcp_stdio(
    tenant: TenantOpt = "default",
    user: Annotated[
        str | None,
        typer.Option("--user", "-u", help="User id, a uuid (default $HIPOCAMPO_USER, else the local user)."),
    ] = None,
) -> None:
    """MCP server over stdio for an agent host (Claude, Cursor, VS Code, Agent Framework): tools
    search_knowledge_base, ask, remember, recall, forget, correct, list_memories, memory_consent,
    context_pack,
    acting as --user in --tenant (RLS and the caller model apply). Protocol on stdout; messages
    on stderr."""
    from ..mcp_server import build_server, require_sdk
    from .memory import _member, _user

    try:
        require_sdk()
    except HipocampoError as exc:
        raise _fail(exc) from None
    uid = _user(user)
    with _client(tenant) as service:
        tid = _member(service, tenant, uid)
    build_server(_database_url(), tid, uid).run("stdio")


@app.command()
def worker(
    interval: Annotated[float, typer.Option(help="Seconds between maintenance runs.")] = 3600.0,
    drain_interval: Annotated[
        float, typer.Option(help="Seconds between drains of the read queue (the access log's delay).")
    ] = 60.0,
    once: Annotated[bool, typer.Option("--once", help="Run once and exit.")] = False,
    embed_missing: Annotated[
        bool,
        typer.Option("--embed-missing", help="Also embed rows search cannot read and store missing message tokens."),
    ] = False,
) -> None:
    """Run maintenance on a schedule: the local stand-in for pg_cron's jobs.

    Every --drain-interval seconds: the read queue into the access log and the access counters
    (drain_read_queue). Every --interval seconds: memory decay/expiry, staging purge, expired
    sessions, expired documents and chunks, expired cached answers and idle rate-limit buckets,
    ingestion jobs whose lease expired, the large tenants' own HNSW graphs (what
    hipocampo.schedule_maintenance schedules with pg_cron on Supabase). With --embed-missing each
    maintenance run also does what `hipocampo db embed-missing` does (the configured embedding
    model). Each run prints one JSON line.
    """
    import time

    from ..embeddings import provider_from_config

    embedder = provider_from_config() if embed_missing else None
    due = 0.0
    with _client() as client:
        while True:
            now = time.monotonic()
            with client.transaction() as cur:
                result: dict[str, Any] = {"reads": client.rpc_in(cur, "drain_read_queue")}
            if now >= due:
                result |= _maintenance_run(client, embedder)
                due = now + interval
            console.print(json.dumps(result))
            if once:
                return
            time.sleep(max(0.0, min(drain_interval, due - time.monotonic())))


def _maintenance_run(client: Hipocampo, embedder: Any) -> dict[str, Any]:
    """One run of the periodic jobs (and, with an embedder, the backfills): their results by name."""
    from ..backfill import backfill_chunk_sentences, backfill_message_tokens, embed_missing_rows

    with client.transaction() as cur:
        result: dict[str, Any] = dict(client.rpc_in(cur, "run_memory_maintenance") or {})
        result["sessions_purged"] = client.rpc_in(cur, "purge_sessions")
        result["retention"] = client.rpc_in(cur, "purge_expired")
        result["transient"] = client.rpc_in(cur, "purge_transient_state")
        result["ingestion"] = client.rpc_in(cur, "recover_ingestion_jobs")
    with client.transaction() as cur:
        result["tenant_graphs"] = client.rpc_in(cur, "build_tenant_graphs")
    if embedder is not None:
        result["embedded"] = embed_missing_rows(client, embedder)
        result["message_tokens_stored"] = backfill_message_tokens(client, embedder)
        result["chunk_sentences_stored"] = backfill_chunk_sentences(client, embedder)
    return result


@app.command()
def demo(
    questions: Annotated[int, typer.Option(help="FaQuAD questions to show.")] = 5,
    evaluate_sets: Annotated[str, typer.Option("--evaluate", help="Comma-separated sets, or 'none'.")] = "faquad",
) -> None:
    """The main job on real data: ingest FaQuAD, search it, print the evaluation summary."""
    from .demo import run_demo

    logging.getLogger("httpx").setLevel(logging.WARNING)
    run_demo(
        console,
        questions=questions,
        evaluate_sets=[] if evaluate_sets == "none" else evaluate_sets.split(","),
    )


app.add_typer(memory_app, name="memory")
app.add_typer(member_app, name="member")
app.add_typer(doc_app, name="doc")
app.add_typer(config_app, name="config")
app.add_typer(model_app, name="model")
tenant_app.command("list")(tenant_list)
tenant_app.command("delete")(tenant_delete)
tenant_app.command("export")(tenant_export)
tenant_app.command("import")(tenant_import)
tenant_app.command("move")(tenant_move)
kb_app.command("delete")(kb_delete)
kb_app.command("eval")(kb_eval)
app.command()(ask)
app.command()(serve)
app.command()(calibrate)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        console.print(f"hipocampo {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", help="Print hipocampo's version and exit.", callback=_print_version, is_eager=True),
    ] = False,
) -> None:
    """hipocampo: Supabase-native RAG and AI memory."""


def main() -> None:
    """The ``hipocampo`` command: the Typer app, with any error that escapes a command (a lost
    database connection mid-run, a driver error) reported as one line on stderr, never a
    traceback; exit codes as in :mod:`hipocampo.cli.common` (1 error, 2 usage, 3 database
    unreachable, 130 Ctrl-C)."""
    import psycopg

    # The pool's reconnection warnings would add lines to the one that says the server is gone.
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
    try:
        app()
    except HipocampoError as exc:
        raise SystemExit(_fail(exc).exit_code) from None
    except psycopg.Error as exc:
        raise SystemExit(_fail(from_db_error(exc)).exit_code) from None
    except KeyboardInterrupt:
        err_console.print("interrupted")
        raise SystemExit(130) from None


if __name__ == "__main__":  # pragma: no cover
    main()
