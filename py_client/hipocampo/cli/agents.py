"""``hipocampo agent``: a tenant's agent bindings (which assistant answers from which knowledge
bases, with which overrides of the rag section; seed 003's hub), over
``set_agent_binding`` / ``list_agent_bindings`` / ``delete_agent_binding`` / ``rag_config``."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from ..errors import HipocampoError, InvalidInputError
from .common import JsonOpt, TenantOpt, _client, _fail, console

__all__ = ["agent_app"]

agent_app = typer.Typer(help="Agent bindings: an assistant's knowledge bases and rag overrides.", no_args_is_help=True)


def _overrides(pairs: list[str]) -> dict[str, Any]:
    """``key=value`` pairs as a rag patch: each value read as JSON (``top_k=3``, ``strict=true``),
    else as text (``chat_model=gpt-4o-mini``).

    Raises:
        InvalidInputError: a pair without ``=`` (22023).
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInputError(f"an override is key=value (got {pair!r})", "22023")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


@agent_app.command("list")
def agent_list(tenant: TenantOpt = "default", as_json: JsonOpt = False) -> None:
    """The tenant's agent bindings: knowledge bases and overrides."""
    with _client(tenant) as client:
        agents = client.list_agent_bindings()
    if as_json:
        console.print_json(json.dumps([a.model_dump(mode="json") for a in agents]))
        return
    table = Table("agent", "knowledge bases", "rag overrides", "updated")
    for a in agents:
        names = ", ".join(n or f"(deleted {k})" for n, k in zip(a.kb_names, a.kb_ids, strict=True))
        updated = a.updated_at.strftime("%Y-%m-%d %H:%M") if a.updated_at else ""
        table.add_row(a.name, names, json.dumps(a.rag_overrides, ensure_ascii=False), updated)
    console.print(table)


@agent_app.command("set")
def agent_set(
    name: Annotated[str, typer.Argument(help="Agent name ([a-z0-9][a-z0-9_.-], at most 63).")],
    kb: Annotated[list[str], typer.Option("--kb", help="Knowledge base name (repeatable; at least one).")],
    override: Annotated[
        list[str] | None, typer.Option("--set", help="A rag override key=value (repeatable), e.g. top_k=3.")
    ] = None,
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Create or replace an agent binding (its knowledge bases and overrides, replaced whole)."""
    with _client(tenant) as client:
        try:
            kb_ids = [client.kb_id(k) for k in kb]
            agent = client.set_agent_binding(name, kb_ids, _overrides(override or []))
        except HipocampoError as exc:
            raise _fail(exc) from exc
    out = {"id": str(agent), "name": name, "kb": kb}
    console.print_json(json.dumps(out)) if as_json else console.print(str(agent))


@agent_app.command("show")
def agent_show(
    name: Annotated[str, typer.Argument(help="Agent name.")], tenant: TenantOpt = "default", as_json: JsonOpt = False
) -> None:
    """The rag config an agent answers with (global <- tenant <- its overrides), its knowledge bases."""
    with _client(tenant) as client:
        try:
            cfg = client.rag_config_json(agent=name)
        except HipocampoError as exc:
            raise _fail(exc) from exc
    if as_json:
        console.print_json(json.dumps(cfg, default=str))
        return
    table = Table("key", "value")
    for key in sorted(cfg):
        table.add_row(key, json.dumps(cfg[key], ensure_ascii=False, default=str))
    console.print(table)


@agent_app.command("delete")
def agent_delete(
    name: Annotated[str, typer.Argument(help="Agent name.")], tenant: TenantOpt = "default", as_json: JsonOpt = False
) -> None:
    """Delete an agent binding (exit 1 when there is none of that name)."""
    with _client(tenant) as client:
        try:
            gone = client.delete_agent_binding(name)
        except HipocampoError as exc:
            raise _fail(exc) from exc
    if not gone:
        raise _fail(HipocampoError(f"unknown agent binding: {name}", "P0002"))
    console.print_json(json.dumps({"deleted": name})) if as_json else console.print(f"deleted {name}")
