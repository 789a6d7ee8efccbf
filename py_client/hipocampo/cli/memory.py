"""``hipocampo memory …``: the memory of one user, from the command line.

These commands act as the user (role authenticated, JWT claims ``sub`` + tenant), so RLS and
the memory gate apply exactly as for the app. ``--user`` (a uuid: the auth user's id, the JWT's
``sub``) defaults to $HIPOCAMPO_USER, else to a fixed local user, and the command says so on
stderr; a user who is not a member of the tenant yet is added as a member, also said on stderr
(an operator's tool).
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

from ..client import Actor, Hipocampo
from ..errors import HipocampoError, InvalidInputError, MemoryRejected, NotFoundError
from ..memory import Memory, vocabulary
from .common import _client, _fail, err_console

__all__ = ["LOCAL_USER", "memory_app"]

# The local user of `hipocampo memory` when neither --user nor $HIPOCAMPO_USER is given.
LOCAL_USER = uuid.uuid5(uuid.NAMESPACE_URL, "hipocampo:local-user")

memory_app = typer.Typer(
    help="Long-term memory of one user (consent, remember, recall, …).",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)
console = Console(soft_wrap=True)

TenantOpt = Annotated[str, typer.Option("--tenant", "-t", help="Tenant slug.")]
UserOpt = Annotated[
    str | None,
    typer.Option("--user", "-u", help="User id, a uuid (default $HIPOCAMPO_USER, else the local user)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
EMOTIONS = ", ".join(vocabulary.EMOTIONS)
LIFE_DOMAINS = ", ".join(vocabulary.LIFE_DOMAINS)


def _user(user: str | None) -> uuid.UUID:
    """The acting user: --user, else $HIPOCAMPO_USER, else the local user (said on stderr)."""
    given = user or os.environ.get("HIPOCAMPO_USER")
    if not given:
        err_console.print(
            f"[dim]acting as the local user {LOCAL_USER} (pass --user <uuid> or set HIPOCAMPO_USER)[/dim]",
            highlight=False,
            soft_wrap=True,
        )
        return LOCAL_USER
    try:
        return uuid.UUID(given)
    except ValueError:
        origin = "--user" if user else "HIPOCAMPO_USER"
        raise _fail(
            InvalidInputError(f"{origin} must be a uuid (the auth user's id, the JWT's sub): {given!r}", "22023")
        ) from None


def _member(service: Hipocampo, tenant: str, uid: uuid.UUID, *, join: bool = False) -> uuid.UUID:
    """The tenant's id, ``uid`` being a member of it. The local user (no --user, no
    $HIPOCAMPO_USER: the single-user setup) is added as a member by ``memory consent`` (``join``,
    said on stderr), the first step of any memory use; no other command adds anyone (issue 58 §1:
    a read never writes), and any other user must have been added (``hipocampo member add``):
    naming a uuid never makes it a member (issue 44 §5).

    Raises:
        typer.Exit: ``uid`` is not a member (exit 1, P0002 with the command that adds them).
    """
    tid = service.actor.tenant_id
    assert tid is not None
    if service.membership_role(tid, uid) is None:
        if uid == LOCAL_USER and not join:
            raise _fail(
                NotFoundError(
                    f"the local user is not a member of tenant {tenant}: `hipocampo memory consent --tenant {tenant}`"
                    " adds it, or pass --user with a member's id (`hipocampo member list"
                    f" --tenant {tenant}`)",
                    "P0002",
                )
            )
        if uid != LOCAL_USER:
            raise _fail(
                NotFoundError(
                    f"user {uid} is not a member of tenant {tenant}: add them first with"
                    f" `hipocampo member add {uid} --tenant {tenant}`",
                    "P0002",
                )
            )
        service.add_member(tid, uid, "member")
        err_console.print(f"[dim]added {uid} to tenant {tenant} as a member[/dim]", highlight=False, soft_wrap=True)
    return tid


@contextmanager
def _memory(tenant: str, user: str | None, *, embed: bool = True, join: bool = False) -> Iterator[Memory]:
    from ..embeddings import active_provider

    uid = _user(user)
    with _client(tenant) as service:
        tid = _member(service, tenant, uid, join=join)
        try:
            yield Memory(service.as_actor(Actor.user(uid, tid)), active_provider(service) if embed else None)
        except MemoryRejected as exc:
            raise _fail(HipocampoError(f"refused ({exc.reason}): {exc}", exc.sqlstate)) from exc
        except HipocampoError as exc:
            raise _fail(exc) from exc


def _print(obj: Any) -> None:
    if hasattr(obj, "model_dump"):
        obj = obj.model_dump(mode="json", exclude_none=True)
    elif isinstance(obj, list):
        obj = [o.model_dump(mode="json", exclude_none=True) if hasattr(o, "model_dump") else o for o in obj]
    console.print_json(json.dumps(obj, default=str))


def _records(rows: list[Any]) -> None:
    """Memories as a table, the whole id kept (correct / forget / promote need it)."""
    table = Table(
        Column("id", no_wrap=True, min_width=36),
        Column("tier", no_wrap=True),
        Column("status", no_wrap=True),
        Column("key", min_width=9, ratio=1),
        Column("value", min_width=8, ratio=1),
        Column("category", ratio=1),
        box=None,
    )
    for m in rows:
        table.add_row(str(m.id), m.tier, m.status, m.key, json.dumps(m.value, ensure_ascii=False), m.category)
    console.print(table)


def _outcome(r: Any, as_json: bool) -> None:
    """A write's result: one line (status and id), or JSON."""
    if as_json:
        _print(r)
        return
    data = r.model_dump(mode="json", exclude_none=True) if hasattr(r, "model_dump") else dict(r)
    line = str(data.pop("status", "done"))
    if "memory_id" in data:
        line += f" {data.pop('memory_id')}"
    rest = ", ".join(f"{k} {v}" for k, v in data.items())
    console.print(line + (f" ({rest})" if rest else ""), highlight=False)


@memory_app.command("consent")
def consent(
    revoke: Annotated[bool, typer.Option("--revoke", help="Revoke instead of grant.")] = False,
    tenant: TenantOpt = "default",
    user: UserOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Grant (or revoke) consent to long-term memory (LGPD art. 7 I). Granting it as the local user
    (no --user) makes that user a member of the tenant, the single-user setup."""
    with _memory(tenant, user, embed=False, join=not revoke) as mem:
        mem.consent(not revoke)
    if as_json:
        _print({"consent": not revoke})
    else:
        console.print("consent " + ("revoked" if revoke else "granted"))


@memory_app.command("remember")
def remember(
    key: Annotated[str, typer.Argument(help="Dotted snake_case key, e.g. prefs.short_answers.")],
    value: Annotated[str, typer.Argument(help="A JSON value (plain text is stored as a string).")],
    description: Annotated[str, typer.Argument(help="The memory in words (what recall searches).")],
    category: Annotated[str, typer.Option("--category", "-c", help=" | ".join(vocabulary.CATEGORIES))],
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Tag (repeatable; snake_case).")] = None,
    intensity: Annotated[float | None, typer.Option(help="0..10; below 7 goes to staging.")] = None,
    confidence: Annotated[float, typer.Option(help="0..1")] = 0.9,
    source: Annotated[str, typer.Option(help="explicit_user | inferred | …")] = "explicit_user",
    scope: Annotated[str, typer.Option(help="personal | tenant_shared")] = "personal",
    pinned: Annotated[bool, typer.Option("--pinned", help="Exempt from decay; ranked first.")] = False,
    emotion: Annotated[str | None, typer.Option(help=EMOTIONS)] = None,
    life_domain: Annotated[str | None, typer.Option(help=LIFE_DOMAINS)] = None,
    tenant: TenantOpt = "default",
    user: UserOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Store a memory through the gate; prints what happened (refusals exit 1 with the reason)."""
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
            emotion=emotion,
            life_domain=life_domain,
        )
    _outcome(r, as_json)


@memory_app.command("recall")
def recall(
    query: Annotated[str, typer.Argument(help="What to look for, in words.")],
    mode: Annotated[str, typer.Option(help="context | answer")] = "context",
    k: Annotated[int | None, typer.Option("-k", help="Hits at most (default: config memory.*).")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Only memories with this tag (repeatable).")] = None,
    emotion: Annotated[str | None, typer.Option(help="Only memories with this emotion.")] = None,
    life_domain: Annotated[str | None, typer.Option(help="Only memories of this life domain.")] = None,
    min_score: Annotated[float | None, typer.Option(help="Override the mode's threshold.")] = None,
    tenant: TenantOpt = "default",
    user: UserOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Semantic search of the user's memories (thresholds from config, MMR, tag fallback)."""
    with _memory(tenant, user) as mem:
        r = mem.recall(query, mode=mode, k=k, tags=tag, min_score=min_score, emotion=emotion, life_domain=life_domain)
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
    key: Annotated[str | None, typer.Option("--key", help="Exact key, e.g. user.name.")] = None,
    category: Annotated[str | None, typer.Option("--category", help="Every memory of this category.")] = None,
    history: Annotated[bool, typer.Option("--history", help="Include deprecated rows.")] = False,
    tenant: TenantOpt = "default",
    user: UserOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Exact lookup by key and/or category."""
    with _memory(tenant, user, embed=False) as mem:
        rows = mem.lookup(key, category, include_history=history)
    if as_json:
        _print(rows)
    else:
        _records(rows)


@memory_app.command("list")
def list_(
    history: Annotated[
        bool, typer.Option("--history", help="Include deprecated (corrected) and forgotten rows.")
    ] = False,
    tenant: TenantOpt = "default",
    user: UserOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The user's memories (long-term and staged)."""
    with _memory(tenant, user, embed=False) as mem:
        rows = mem.list(include_history=history)
    if as_json:
        _print(rows)
    else:
        _records(rows)


@memory_app.command("correct")
def correct(
    memory_id: Annotated[str, typer.Argument(help="The memory's id (uuid, in full: `memory list`).")],
    value: Annotated[str, typer.Argument(help="The right value (JSON; plain text is a string).")],
    description: Annotated[str, typer.Argument(help="The corrected memory in words.")],
    tenant: TenantOpt = "default",
    user: UserOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Correct a memory ("isso está errado"): new value, the old one kept as history."""
    try:
        parsed: Any = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    with _memory(tenant, user) as mem:
        _outcome(mem.correct(memory_id, parsed, description), as_json)


@memory_app.command("forget")
def forget(
    memory_id: Annotated[str, typer.Argument(help="The memory's id (uuid, in full: `memory list`).")],
    tenant: TenantOpt = "default",
    user: UserOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Forget a memory ("esquece isso"): soft delete."""
    with _memory(tenant, user, embed=False) as mem:
        ok = mem.forget(memory_id)
    if as_json:
        _print({"memory_id": memory_id, "forgotten": ok})
    else:
        console.print("forgotten" if ok else "no active memory with that id")
    if not ok:
        raise typer.Exit(code=1)


@memory_app.command("promote")
def promote(
    staging_id: Annotated[str, typer.Argument(help="The staged memory's id (uuid: `memory list`, tier staging).")],
    intensity: Annotated[float, typer.Argument(help="Its intensity now, 0..10 (promoted at 7 or more).")],
    override: Annotated[bool, typer.Option("--override", help="Human decision: promote and pin.")] = False,
    tenant: TenantOpt = "default",
    user: UserOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Promote a staged memory to long-term memory."""
    with _memory(tenant, user, embed=False) as mem:
        _outcome(mem.promote(staging_id, intensity, override=override), as_json)


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
