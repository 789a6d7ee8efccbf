"""What every CLI command shares: the consoles, the one-line error, the service client of a tenant."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from .. import db
from ..client import Actor, Hipocampo
from ..errors import HipocampoError

__all__ = ["JsonOpt", "TenantOpt", "_client", "_fail", "console", "err_console"]

console = Console()
err_console = Console(stderr=True)

TenantOpt = Annotated[str, typer.Option("--tenant", "-t", help="Tenant slug.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _fail(exc: Exception) -> typer.Exit:
    state = f" [{exc.sqlstate}]" if isinstance(exc, HipocampoError) and exc.sqlstate else ""
    err_console.print(f"[red]error{escape(state)}:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
    return typer.Exit(code=1)


def _client(tenant: str | None = None, *, create_default: bool = True) -> Hipocampo:
    url = db.ensure_database()
    # A server that went away is reported after 10 s (one line, exit 1), not the library's 30.
    client = Hipocampo(url, pool_timeout_s=10.0)
    if tenant is None:
        return client
    tid = client.tenant_id(tenant)
    if tid is None:
        if tenant != "default" or not create_default:
            client.close()
            raise _fail(HipocampoError(f"unknown tenant {tenant!r}; create it with `hipocampo tenant create`"))
        tid = client.create_tenant("Default", "default")
    return client.as_actor(Actor.service(tid))
