"""``hipocampo ask`` and ``hipocampo serve``."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import HipocampoError, InvalidInputError
from ..models import Answer
from .common import _client, _fail

if TYPE_CHECKING:
    from ..hub import DevUser

__all__ = ["ask", "print_answer", "serve"]

console = Console(soft_wrap=True)


def print_answer(ans: Answer, out: Console | None = None) -> None:
    """An answer with its sources table, or a refusal with its reason code."""
    out = out or console
    if ans.refused:
        # The reason in words, never a confidence: a refusal's support figure reads as a
        # contradiction next to it (issue 19 §1.1).
        out.print(f"[yellow]REFUSAL[/yellow] {escape(ans.answer)}", highlight=False)
        out.print(f"[dim]why: {escape(ans.explanation or '')} ({ans.reason})[/dim]", highlight=False)
        if ans.closest is not None:
            c = ans.closest
            where = " – ".join(x for x in (c.document, c.section, c.article) if x)
            out.print(f"the closest passage I found: {escape(where)}: {escape(c.excerpt)}", highlight=False)
    elif ans.answer_source == "PASSAGES":
        # No exact answer: the passages on the question's topic, each cited (issue 61 §1).
        out.print(f"[cyan]PASSAGES[/cyan] {escape(ans.answer)}", highlight=False)
        out.print(f"[dim]why no exact answer: {escape(ans.explanation or '')} ({ans.reason})[/dim]", highlight=False)
    else:
        out.print(f"[green]{ans.answer_source}[/green] (confidence {ans.confidence:.2f}) {ans.answer}")
        table = Table("#", "document", "chunk", "score", "excerpt", show_lines=True)
        for s in ans.sources:
            excerpt = s.excerpt[:200] + ("…" if len(s.excerpt) > 200 else "")
            table.add_row(str(s.n), s.document, str(s.chunk_id), f"{s.score:.2f}", excerpt)
        out.print(table)
    out.print(f"[dim]trace {ans.trace_id}; {json.dumps(ans.timings_ms)}[/dim]")


def ask(
    question: Annotated[str, typer.Argument(help="The question, in words.")],
    kb: Annotated[list[str] | None, typer.Option("--kb", help="Knowledge base (repeatable).")] = None,
    agent: Annotated[str | None, typer.Option(help="Agent binding name (its KBs and overrides).")] = None,
    tenant: Annotated[str, typer.Option("--tenant", "-t", help="Tenant slug.")] = "default",
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the answer cache.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the Answer as JSON.")] = False,
) -> None:
    """Answer with cited sources, or refuse ("Não encontrei informações confiáveis…") with a reason."""
    from ..answers import Orchestrator
    from ..embeddings import provider_from_config

    with _client(tenant) as client:
        if not kb and not agent:  # the CLI's words, not the Python argument's (issue 58 §4)
            names = sorted(k.name for k in client.list_kbs())
            which = f" (the tenant's: {', '.join(names[:10])})" if names else " (the tenant has none yet)"
            raise _fail(InvalidInputError(f"no knowledge base: pass --kb <name> or --agent <name>{which}", "22023"))
        try:
            kb_ids = [client.kb_id(name) for name in kb] if kb else None
            ans = Orchestrator(client, provider_from_config()).ask(
                question, kb_ids=kb_ids, agent=agent, use_cache=not no_cache
            )
        except HipocampoError as exc:
            raise _fail(exc) from exc
    if as_json:
        console.print_json(ans.model_dump_json())
    else:
        print_answer(ans)


def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (default: config http.host).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default: config http.port).")] = None,
    dev_user: Annotated[
        bool,
        typer.Option(
            "--dev-user",
            help="Offer the hub's local development user (an admin of --tenant, else of the demo tenant); "
            "loopback only.",
        ),
    ] = False,
    tenant: Annotated[
        str | None,
        typer.Option("--tenant", "-t", help="With --dev-user: the tenant the local user is an admin of."),
    ] = None,
) -> None:
    """HTTP API (FastAPI): POST /ask, POST /context-pack, POST /mcp (MCP, streamable HTTP), GET /healthz,
    GET /readyz, docs at /docs, and the knowledge-base hub at /hub.

    Needs the JWT secret in the environment variable config http.jwt_secret_env names
    (SUPABASE_JWT_SECRET), or the JWKS URL of the project's asymmetric signing keys in the one
    http.jwks_url_env names (SUPABASE_JWKS_URL). With --dev-user and neither set, a random
    secret is made for this process (only tokens this server signs are valid then). The embedding
    model is loaded before the first request is served.
    """
    import uvicorn

    from .. import db
    from ..config import load_config
    from ..embeddings import provider_from_config
    from ..http import create_app

    http = load_config().get("http", {})
    env = str(http.get("jwt_secret_env", "SUPABASE_JWT_SECRET"))
    jwks_env = str(http.get("jwks_url_env", "SUPABASE_JWKS_URL"))
    bind = host or str(http.get("host", "127.0.0.1"))
    secret = os.environ.get(env, "")
    url = db.ensure_database()
    local = None
    if dev_user:
        if bind not in ("127.0.0.1", "localhost", "::1"):
            console.print("[red]error:[/red] --dev-user serves loopback only (--host 127.0.0.1)")
            raise typer.Exit(code=1)
        if not secret and not os.environ.get(jwks_env):
            import secrets as random_tokens

            secret = random_tokens.token_urlsafe(48)
        if not secret:
            console.print(f"[red]error:[/red] --dev-user signs HS256 tokens: set ${env}")
            raise typer.Exit(code=1)
        local = _dev_user(url, secret, tenant)
    elif not secret and not os.environ.get(jwks_env):
        console.print(
            f"[red]error:[/red] set ${env} (the HS256 secret of your JWTs) or ${jwks_env} (the JWKS URL of "
            "your project's asymmetric signing keys) before serving"
        )
        raise typer.Exit(code=1)
    from ..client import Hipocampo
    from ..embeddings import active_provider

    with Hipocampo(url) as root:
        embedder = active_provider(root, provider_from_config())
    app = create_app(
        url,
        embedder,
        jwt_secret=secret or None,
        dev_user=local,
        read_url=db.read_url(),
        read_your_writes_wait_ms=db.read_your_writes_wait_ms(),
    )
    at = port or int(http.get("port", 8000))
    who = f"  (sign in as the local development user, an admin of {tenant or 'demo'})" if local else ""
    console.print(f"hub: http://{bind}:{at}/hub{who}")
    uvicorn.run(app, host=bind, port=at)


def _dev_user(url: str, secret: str, slug: str | None = None) -> DevUser:
    """The local development user: an admin of the tenant ``slug`` (which must exist; issue 58 §2:
    `serve --dev-user --tenant sol` opens the hub on the tenant you built), else of the demo
    tenant (created if missing).

    Raises:
        typer.Exit: ``slug`` names no tenant (exit 1, the tenants that exist named).
    """
    from uuid import NAMESPACE_URL, uuid5

    from ..client import Actor, Hipocampo
    from ..hub import DevUser

    user = uuid5(NAMESPACE_URL, "hipocampo:dev-admin")
    with Hipocampo(url) as root:
        tenant = root.tenant_id(slug) if slug else root.tenant_id("demo") or root.create_tenant("Demo (FaQuAD)", "demo")
        if tenant is None:
            slugs = sorted(t.slug for t in root.list_tenants())
            console.print(f"[red]error:[/red] unknown tenant {slug!r}; pass --tenant with one of: {', '.join(slugs)}")
            raise typer.Exit(code=1)
        root.as_actor(Actor.service(tenant)).add_member(tenant, user, "admin")
    return DevUser(user, tenant, secret)
