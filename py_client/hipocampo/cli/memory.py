"""``hipocampo memory …``: the memory of one user, from the command line.

These commands act as the user (role authenticated, JWT claims ``sub`` + tenant), so RLS and
the memory gate apply exactly as for the app. ``--user`` defaults to $HIPOCAMPO_USER or a fixed
local user; the user is made a member of the tenant on first use (an operator's tool).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Column, Table

from ..client import Actor
from ..errors import HipocampoError, MemoryRejected
from ..memory import Memory
from .common import _client, _fail

__all__ = ["LOCAL_USER", "memory_app"]

# The local user of `hipocampo memory` when neither --user nor $HIPOCAMPO_USER is given.
LOCAL_USER = uuid.uuid5(uuid.NAMESPACE_URL, "hipocampo:local-user")

memory_app = typer.Typer(help="Long-term memory of one user (consent, remember, recall, …).", no_args_is_help=True)
console = Console()

TenantOpt = Annotated[str, typer.Option("--tenant", "-t", help="Tenant slug.")]
UserOpt = Annotated[str | None, typer.Option("--user", "-u", help="User id (default $HIPOCAMPO_USER).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


@contextmanager
def _memory(tenant: str, user: str | None, *, embed: bool = True) -> Iterator[Memory]:
    from ..embeddings import provider_from_config

    uid = uuid.UUID(user or os.environ.get("HIPOCAMPO_USER") or str(LOCAL_USER))
    with _client(tenant) as service:
        tid = service.actor.tenant_id
        assert tid is not None
        if service.membership_role(tid, uid) is None:
            service.add_member(tid, uid, "member")
        try:
            yield Memory(service.as_actor(Actor.user(uid, tid)), provider_from_config() if embed else None)
        except MemoryRejected as exc:
            raise _fail(HipocampoError(f"refused ({exc.reason}): {exc}", exc.sqlstate)) from exc
        except HipocampoError as exc:
            raise _fail(exc) from exc


def _print(obj: Any, as_json: bool = True) -> None:
    if hasattr(obj, "model_dump"):
        obj = obj.model_dump(mode="json", exclude_none=True)
    elif isinstance(obj, list):
        obj = [o.model_dump(mode="json", exclude_none=True) if hasattr(o, "model_dump") else o for o in obj]
    console.print_json(json.dumps(obj, default=str))


@memory_app.command("consent")
def consent(
    revoke: Annotated[bool, typer.Option("--revoke", help="Revoke instead of grant.")] = False,
    tenant: TenantOpt = "default",
    user: UserOpt = None,
) -> None:
    """Grant (or revoke) consent to long-term memory (LGPD art. 7 I)."""
    with _memory(tenant, user, embed=False) as mem:
        mem.consent(not revoke)
    console.print("consent " + ("revoked" if revoke else "granted"))


@memory_app.command("remember")
def remember(
    key: str,
    value: Annotated[str, typer.Argument(help="A JSON value (plain text is stored as a string).")],
    description: str,
    category: Annotated[str, typer.Option("--category", "-c", help="identity_profile | preference | …")],
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Tag (repeatable; snake_case).")] = None,
    intensity: Annotated[float | None, typer.Option(help="0..10; below 7 goes to staging.")] = None,
    confidence: Annotated[float, typer.Option(help="0..1")] = 0.9,
    source: Annotated[str, typer.Option(help="explicit_user | inferred | …")] = "explicit_user",
    scope: Annotated[str, typer.Option(help="personal | tenant_shared")] = "personal",
    pinned: Annotated[bool, typer.Option("--pinned")] = False,
    tenant: TenantOpt = "default",
    user: UserOpt = None,
) -> None:
    """Store a memory through the gate; prints the result (refusals exit 1 with the reason)."""
    try:
        parsed: Any = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    with _memory(tenant, user) as mem:
        r = mem.remember(
            key,
            parsed,
            description,
            category,
            tags=tag,
            intensity=intensity,
            confidence=confidence,
            source=source,
            scope=scope,
            pinned=pinned,
        )
    _print(r)


@memory_app.command("recall")
def recall(
    query: str,
    mode: Annotated[str, typer.Option(help="context | answer")] = "context",
    k: Annotated[int | None, typer.Option("-k")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag")] = None,
    min_score: Annotated[float | None, typer.Option(help="Override the mode's threshold.")] = None,
    tenant: TenantOpt = "default",
    user: UserOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Semantic search of the user's memories (thresholds from config, MMR, tag fallback)."""
    with _memory(tenant, user) as mem:
        r = mem.recall(query, mode=mode, k=k, tags=tag, min_score=min_score)
    if as_json:
        _print(r)
        return
    table = Table("rank", "score", "tier", "key", "value", "description")
    for h in r.hits:
        table.add_row(str(h.rank), f"{h.score:.3f}", h.tier, h.key, json.dumps(h.value), h.description)
    console.print(table)
    if r.fallback:
        console.print(f"[yellow]tag filter dropped: {r.fallback}[/yellow]")


@memory_app.command("lookup")
def lookup(
    key: Annotated[str | None, typer.Option("--key")] = None,
    category: Annotated[str | None, typer.Option("--category")] = None,
    history: Annotated[bool, typer.Option("--history", help="Include deprecated rows.")] = False,
    tenant: TenantOpt = "default",
    user: UserOpt = None,
) -> None:
    """Exact lookup by key and/or category."""
    with _memory(tenant, user, embed=False) as mem:
        _print(mem.lookup(key, category, include_history=history))


@memory_app.command("list")
def list_(
    history: Annotated[bool, typer.Option("--history")] = False,
    tenant: TenantOpt = "default",
    user: UserOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The user's memories (long-term and staged)."""
    with _memory(tenant, user, embed=False) as mem:
        rows = mem.list(include_history=history)
    if as_json:
        _print(rows)
        return
    # The whole id (correct / forget / promote need it), never shortened to fit the terminal.
    table = Table(Column("id", no_wrap=True, min_width=36), "tier", "status", "key", "value", "category", "confidence")
    for m in rows:
        table.add_row(str(m.id), m.tier, m.status, m.key, json.dumps(m.value), m.category, f"{m.confidence:.2f}")
    console.print(table)


@memory_app.command("correct")
def correct(memory_id: str, value: str, description: str, tenant: TenantOpt = "default", user: UserOpt = None) -> None:
    """Correct a memory ("isso está errado"): new value, the old one kept as history."""
    try:
        parsed: Any = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    with _memory(tenant, user) as mem:
        _print(mem.correct(memory_id, parsed, description))


@memory_app.command("forget")
def forget(memory_id: str, tenant: TenantOpt = "default", user: UserOpt = None) -> None:
    """Forget a memory ("esquece isso"): soft delete."""
    with _memory(tenant, user, embed=False) as mem:
        ok = mem.forget(memory_id)
    console.print("forgotten" if ok else "no active memory with that id")
    if not ok:
        raise typer.Exit(code=1)


@memory_app.command("promote")
def promote(
    staging_id: str,
    intensity: float,
    override: Annotated[bool, typer.Option("--override", help="Human decision: promote and pin.")] = False,
    tenant: TenantOpt = "default",
    user: UserOpt = None,
) -> None:
    """Promote a staged memory to long-term memory."""
    with _memory(tenant, user, embed=False) as mem:
        _print(mem.promote(staging_id, intensity, override=override))


@memory_app.command("seed-profile")
def seed_profile(
    profile: Annotated[str, typer.Argument(help='JSON object, e.g. \'{"user.name": "Ana"}\'')],
    source_ref: Annotated[str, typer.Option(help="onboarding | profile")] = "onboarding",
    tenant: TenantOpt = "default",
    user: UserOpt = None,
) -> None:
    """Write the onboarding profile keys as memories (idempotent)."""
    with _memory(tenant, user) as mem:
        _print(mem.seed_profile(json.loads(profile), source_ref))


@memory_app.command("export")
def export(tenant: TenantOpt = "default", user: UserOpt = None) -> None:
    """Print everything held about the user as JSON (LGPD art. 18)."""
    with _memory(tenant, user, embed=False) as mem:
        _print(mem.export())


@memory_app.command("erase")
def erase(
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask.")] = False,
    tenant: TenantOpt = "default",
    user: UserOpt = None,
) -> None:
    """Erase the user's memories, staging, messages, sessions and events (LGPD art. 18 VI)."""
    if not yes:
        typer.confirm("Erase this user's data from the tenant?", abort=True)
    with _memory(tenant, user, embed=False) as mem:
        _print(mem.erase())
