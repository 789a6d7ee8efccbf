"""What every CLI command shares: the consoles, the one-line error, the service client of a tenant.

Exit codes (every command): 0 done; 1 the request failed (bad input, not found, refused, a file
that did not ingest; one line ``error [SQLSTATE]: message`` on stderr); 2 usage (unknown command
or option, a missing argument: the usage text); 3 the database cannot be reached; 130 interrupted.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from .. import db
from ..client import Actor, Hipocampo
from ..errors import ConnectionLostError, HipocampoError, NotFoundError

__all__ = [
    "EXIT_DATABASE",
    "EXIT_ERROR",
    "JsonOpt",
    "TenantOpt",
    "_client",
    "_database_url",
    "_fail",
    "console",
    "err_console",
]

EXIT_ERROR = 1
EXIT_DATABASE = 3

console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)

TenantOpt = Annotated[str, typer.Option("--tenant", "-t", help="Tenant slug.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _fail(exc: Exception) -> typer.Exit:
    """Print ``error [SQLSTATE]: message`` on stderr; the exit to raise (1, or 3 when the database
    cannot be reached)."""
    state = f" [{exc.sqlstate}]" if isinstance(exc, HipocampoError) and exc.sqlstate else ""
    err_console.print(f"[red]error{escape(state)}:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
    return typer.Exit(code=EXIT_DATABASE if isinstance(exc, ConnectionLostError) else EXIT_ERROR)


def _database_url() -> str:
    """The database's URL; starting the embedded server when it is not running, and saying so.
    A data directory that does not exist yet is a new, empty database: said in yellow, with how to
    point at another one (issue 45 §6: forgetting HIPOCAMPO_DATA_DIR silently started a
    second, empty database)."""
    if db.external_url() is None and not db.status().running:
        where = db.data_dir()
        if not (where / "PG_VERSION").exists():  # (stderr: --json output stays JSON)
            err_console.print(
                f"[yellow]creating a new, empty embedded database in {where}[/yellow] (to use another one, set"
                " HIPOCAMPO_DATA_DIR or [database] data_dir)",
                highlight=False,
                soft_wrap=True,
            )
        err_console.print(
            f"[dim]starting the embedded PostgreSQL server ({where})…[/dim]", highlight=False, soft_wrap=True
        )
    return db.ensure_database()


def _client(tenant: str | None = None, *, create_default: bool = False) -> Hipocampo:
    """A service-role client, acting for ``tenant`` when one is named. Only a command that
    creates (``kb create``, ``ingest --create-kb``, ``member add``) passes ``create_default``,
    and then a missing tenant ``default`` is created; any other missing tenant is P0002 naming
    the tenants that exist (issue 58 §1: a read never writes).

    Raises:
        typer.Exit: the tenant does not exist (exit 1, P0002 with the values of --tenant).
    """
    # A tenant moved to a database of its own (`hipocampo tenant move`) is served from there.
    moved = db.tenant_database_url(tenant) if tenant else None
    url = moved or _database_url()
    # A server that went away is reported after 10 s (one line, exit 1), not the library's 30.
    client = Hipocampo(
        url,
        pool_timeout_s=10.0,
        read_url=None if moved else db.read_url(),
        read_your_writes_wait_ms=db.read_your_writes_wait_ms(),
    )
    if tenant is None:
        return client
    tid = client.tenant_id(tenant)
    if tid is None:
        if tenant != "default" or not create_default:
            slugs = sorted(t.slug for t in client.list_tenants())
            client.close()
            which = (
                "pass --tenant with one of: " + ", ".join(slugs[:10]) + (", …" if len(slugs) > 10 else "")
                if slugs
                else "no tenant exists yet"
            )
            raise _fail(
                NotFoundError(
                    f"unknown tenant {tenant!r}; {which} (or create one: `hipocampo tenant create <name> --slug"
                    " <slug>`, or `hipocampo kb create <kb>` for the tenant default)",
                    "P0002",
                )
            )
        tid = client.create_tenant("Default", "default")
    return client.as_actor(Actor.service(tid))
