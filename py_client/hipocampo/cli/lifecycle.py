"""The lifecycle commands: ``tenant list|delete``, ``member add|remove|list``, ``kb delete``,
``doc list|show|update|delete``, ``config show|set`` (all through the RPCs, with their checks)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

import typer
from rich.markup import escape
from rich.table import Column, Table

from ..client import Actor, Hipocampo
from ..config_models import BOUND_SUFFIXES as _BOUND_SUFFIXES
from ..errors import HipocampoError, InvalidInputError, NotFoundError
from .common import JsonOpt, TenantOpt, _client, _database_url, _fail, console, err_console

__all__ = ["config_app", "doc_app", "kb_delete", "member_app", "tenant_delete", "tenant_list"]

member_app = typer.Typer(
    help="Members of a tenant (who may sign in to it, and as what).", no_args_is_help=True, rich_markup_mode="markdown"
)
doc_app = typer.Typer(help="Documents of a knowledge base.", no_args_is_help=True, rich_markup_mode="markdown")
config_app = typer.Typer(
    help="Configuration in force, and per-tenant or per-KB overrides.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
KbOpt = Annotated[str, typer.Option("--kb", help="Knowledge base name.")]


def _dump(rows: Any) -> None:
    console.print_json(json.dumps(rows, default=str))


def _say(data: dict[str, Any], line: str, as_json: bool) -> None:
    """A command's result: JSON with --json, else one line."""
    if as_json:
        _dump(data)
    else:
        console.print(line, highlight=False)


def _uuid(value: str, what: str) -> UUID:
    try:
        return UUID(value)
    except ValueError:
        raise _fail(InvalidInputError(f"{what} is not a uuid: {value!r} (give it in full)", "22023")) from None


# -- tenants and members ----------------------------------------------------------------------
def tenant_list(as_json: JsonOpt = False) -> None:
    """List every tenant with its member and knowledge-base counts."""
    with _client() as client:
        rows = client.list_tenants()
    if as_json:
        _dump([r.model_dump() for r in rows])
        return
    table = Table("slug", "name", "members", "knowledge bases", Column("id", no_wrap=True, min_width=36))
    for r in rows:
        table.add_row(r.slug, r.name, str(r.members), str(r.knowledge_bases), str(r.id))
    console.print(table)


def tenant_delete(
    slug: Annotated[str, typer.Argument(help="The tenant's slug.")],
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete a tenant and everything it holds: knowledge bases, memories, conversations, config and
    audit, in one transaction (asks first; offboarding a customer)."""
    with _client() as root:
        tid = root.tenant_id(slug)
        if tid is None:
            raise _fail(NotFoundError(f"unknown tenant {slug!r}", "P0002"))
        if not yes:
            row = next((r for r in root.list_tenants() if r.id == tid), None)
            kbs = row.knowledge_bases if row else 0
            typer.confirm(f"Delete tenant {slug!r}, its {kbs} knowledge bases and all its users' data?", abort=True)
        try:
            out = root.as_actor(Actor.service(tid)).delete_tenant(tid).model_dump()
        except HipocampoError as exc:
            raise _fail(exc) from exc
    _say(
        out,
        f"deleted tenant {out['slug']}: {out['knowledge_bases']} knowledge bases, {out['chunks']} chunks, "
        f"{out['memories']} memories, {out['messages']} messages, {out['members']} members",
        as_json,
    )


KeyFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--key-file",
        help="A file holding the operator's signing key (at least 16 bytes; default: the "
        "HIPOCAMPO_TENANT_COPY_KEY environment variable).",
    ),
]


def _copy_key(key_file: Path | None) -> bytes | None:
    """The signing key: ``key_file``'s bytes (a trailing newline dropped), else
    HIPOCAMPO_TENANT_COPY_KEY's, else none."""
    import os

    if key_file is not None:
        try:
            return key_file.read_bytes().rstrip(b"\r\n")
        except OSError as exc:
            raise _fail(InvalidInputError(f"cannot read the key file {key_file}: {exc.strerror}", "22023")) from exc
    env = os.environ.get("HIPOCAMPO_TENANT_COPY_KEY")
    return env.encode() if env else None


def tenant_export(
    slug: Annotated[str, typer.Argument(help="The tenant's slug (or id).")],
    file: Annotated[Path, typer.Argument(help="The file to write (a gzipped tar).")],
    key_file: KeyFileOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a tenant, every table that holds it, to a file (one consistent snapshot), with the
    digest `tenant import` checks, signed (HMAC-SHA256) when a key is given: the offline way to
    move a tenant to another database."""
    from ..db.tenant_copy import export_tenant

    key = _copy_key(key_file)
    try:
        manifest = export_tenant(_database_url(), slug, file, key=key)
    except HipocampoError as exc:
        raise _fail(exc) from exc
    rows = {name: d["rows"] for name, d in manifest["digest"].items()}
    out = {"tenant": manifest["tenant"], "file": str(file), "rows": rows, "signed": key is not None}
    signed = "signed" if key is not None else "unsigned: the importer must pass --trust-unsigned"
    _say(out, f"exported tenant {manifest['tenant']['slug']} to {file} ({signed}): {sum(rows.values())} rows", as_json)


def tenant_import(
    file: Annotated[Path, typer.Argument(help="A file `tenant export` wrote.")],
    to: Annotated[str | None, typer.Option("--to", help="The target database's URL (default: this database).")] = None,
    key_file: KeyFileOpt = None,
    trust_unsigned: Annotated[
        bool,
        typer.Option(
            "--trust-unsigned",
            help="Import a file without a signature you can check (only one you exported yourself: docs/SECURITY.md).",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Write an exported tenant into a database with the same migrations, in one transaction. The
    file is trusted for nothing: its signature is checked (an unsigned file needs
    --trust-unsigned), only the target's tenant tables and columns are written, every row must be
    the manifest's tenant and every reference stay inside it, the configuration passes a tenant
    admin's checks, sequences only move forward within bounds, and the tenant's digest must equal
    the source's; on any fault or collision nothing is kept."""
    from ..db.tenant_copy import import_tenant

    try:
        digest = import_tenant(to or _database_url(), file, key=_copy_key(key_file), trust_unsigned=trust_unsigned)
    except HipocampoError as exc:
        raise _fail(exc) from exc
    rows = {name: d["rows"] for name, d in digest.items()}
    _say({"file": str(file), "rows": rows}, f"imported {file}: {sum(rows.values())} rows, digest checked", as_json)


def tenant_move(
    slug: Annotated[str, typer.Argument(help="The tenant's slug (or id).")],
    to: Annotated[str | None, typer.Option("--to", help="The target database's URL (same migrations).")] = None,
    finish: Annotated[
        bool, typer.Option("--finish", help="After the grace period: delete the moved tenant's rows here.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Move a tenant to another database online (logical replication): its rows copied while it
    keeps working, then its writes refused for the cut-over (seconds), the copy checked table by
    table, its users moved there. Then point `[database.tenants]` at the target; `--finish` deletes
    what stays here after the grace period."""
    from ..db.tenant_move import finish_move, move_tenant

    try:
        if finish:
            out = finish_move(_database_url(), slug)
            _say(out, f"deleted the moved tenant {slug} from this database", as_json)
            return
        if not to:
            raise _fail(InvalidInputError("give the target database: --to URL", "22023"))
        out = move_tenant(_database_url(), slug, to, say=lambda line: err_console.print(line, highlight=False))
    except HipocampoError as exc:
        raise _fail(exc) from exc
    rows = {name: d["rows"] for name, d in out["digest"].items()}
    summary = {"tenant": out["tenant"], "target": out["target"], "freeze_ms": round(out["freeze_ms"]), "rows": rows}
    _say(
        summary,
        f"moved {slug} to {out['target']} ({sum(rows.values())} rows, writes paused {summary['freeze_ms']} ms); add "
        f'`{slug} = "<its URL>"` under [database.tenants] in config.toml',
        as_json,
    )


@member_app.command("add")
def member_add(
    user: Annotated[str, typer.Argument(help="The user's auth id (uuid: the JWT's sub).")],
    tenant: TenantOpt = "default",
    role: Annotated[str, typer.Option(help="admin | member.")] = "member",
    as_json: JsonOpt = False,
) -> None:
    """Add a user to the tenant (or change their role)."""
    uid = _uuid(user, "user")
    with _client(tenant, create_default=True) as client:
        try:
            client.add_member(str(client._tenant()), uid, role)
        except HipocampoError as exc:
            raise _fail(exc) from exc
    _say({"user_id": str(uid), "tenant": tenant, "role": role}, f"{uid} is now {role} of {tenant}", as_json)


@member_app.command("remove")
def member_remove(
    user: Annotated[str, typer.Argument(help="The user's auth id (uuid).")],
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """End a user's membership (their data stays: `hipocampo memory erase --user <id>` first to erase it)."""
    uid = _uuid(user, "user")
    with _client(tenant) as client:
        removed = client.remove_member(str(client._tenant()), uid)
    if not removed:
        raise _fail(NotFoundError(f"{uid} is not a member of {tenant}", "P0002"))
    _say({"user_id": str(uid), "tenant": tenant, "removed": True}, f"{uid} removed from {tenant}", as_json)


@member_app.command("list")
def member_list(tenant: TenantOpt = "default", as_json: JsonOpt = False) -> None:
    """List the tenant's members and their roles."""
    with _client(tenant) as client:
        rows = client.list_members(str(client._tenant()))
    if as_json:
        _dump([r.model_dump() for r in rows])
        return
    table = Table(Column("user", no_wrap=True, min_width=36), "role", "since")
    for r in rows:
        table.add_row(str(r.user_id), r.role, r.created_at.strftime("%Y-%m-%d %H:%M"))
    console.print(table)


# -- knowledge bases --------------------------------------------------------------------------
def kb_delete(
    name: Annotated[str, typer.Argument(help="Knowledge base name.")],
    tenant: TenantOpt = "default",
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete a knowledge base with its documents, chunks and embeddings (asks first)."""
    with _client(tenant) as client:
        try:
            kb = client.kb_id(name)
            if not yes:
                docs = next((k.documents for k in client.list_kbs() if k.id == kb), 0)
                typer.confirm(f"Delete knowledge base {name!r} and its {docs} documents?", abort=True)
            out = client.delete_kb(kb).model_dump()
        except HipocampoError as exc:
            raise _fail(exc) from exc
    _say(out, f"deleted {out['name']}: {out['documents']} documents, {out['chunks']} chunks", as_json)


# -- documents --------------------------------------------------------------------------------
def _find_document(client: Hipocampo, doc_id: UUID) -> tuple[str, dict[str, Any]]:
    found = client.get_document(doc_id)
    if found is None:
        raise _fail(NotFoundError(f"unknown document: {doc_id}", "P0002"))
    d = found.model_dump()
    return str(d.pop("kb_name")), d


@doc_app.command("list")
def doc_list(
    kb: KbOpt,
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="At most this many documents.")] = 1000,
    after: Annotated[str | None, typer.Option(help="Only documents whose source URI sorts after this one.")] = None,
) -> None:
    """List a knowledge base's documents by source URI, a page at a time: id, trust, type, status,
    chunks, title. When more follow, stderr says how to ask for the next page (--after)."""
    with _client(tenant) as client:
        try:
            page, next_after = client.document_page(client.kb_id(kb), after=after, limit=limit)
            rows = [r.model_dump() for r in page]
        except HipocampoError as exc:
            raise _fail(exc) from exc
    if next_after is not None:
        nxt = shlex.quote(next_after)
        err_console.print(f"{limit} documents shown, more follow: --after {nxt}", highlight=False, markup=False)
    if as_json:
        _dump(rows)
        return
    if console.width < 100:  # (issue 45 §6: a title column of five characters wrapped letter by letter)
        for d in rows:
            console.print(
                f"{d['id']}  {d['trust_score']:.2f}  {d['source_type']}  {d['status']}  {d['chunk_count']} chunks",
                highlight=False,
            )
            console.print(f"    {escape(str(d['title']))}", highlight=False)
        return
    # Borderless, the whole id first (doc show/update/delete need it), the title last (it wraps).
    table = Table(
        Column("id", no_wrap=True, min_width=36),
        Column("trust", no_wrap=True, min_width=5),
        Column("type", no_wrap=True),
        Column("status", no_wrap=True),
        Column("chunks", no_wrap=True, justify="right"),
        Column("title", ratio=1),
        box=None,
    )
    for d in rows:
        table.add_row(
            str(d["id"]), f"{d['trust_score']:.2f}", d["source_type"], d["status"], str(d["chunk_count"]), d["title"]
        )
    console.print(table)


@doc_app.command("show")
def doc_show(
    document_id: Annotated[str, typer.Argument(help="Document id (uuid).")], tenant: TenantOpt = "default"
) -> None:
    """Everything stored about one document (JSON); ``reads_as_language`` false (with a warning
    on stderr) for a text that does not read as language, which answers never cite."""
    with _client(tenant) as client:
        kb, d = _find_document(client, _uuid(document_id, "document_id"))
        babble = client.documents_not_language(d["kb_id"], [d["source_uri"]])
    if babble:
        err_console.print(
            "warning: its text does not read as language (word salad, OCR garbage?): search ranks it"
            " after every text that does, answers never cite it",
            style="yellow",
            highlight=False,
        )
    _dump(
        {
            "kb": kb,
            **d,
            "reads_as_language": not babble,
            **({"text_measures": babble[0].text_measures} if babble else {}),
        }
    )


@doc_app.command("update")
def doc_update(
    document_id: Annotated[str, typer.Argument(help="Document id (uuid).")],
    tenant: TenantOpt = "default",
    trust: Annotated[float | None, typer.Option(help="Trust 0..1.")] = None,
    source_type: Annotated[str | None, typer.Option(help="regulation, policy, manual, faq, …, other.")] = None,
    status: Annotated[str | None, typer.Option(help="active | superseded | archived.")] = None,
    expires: Annotated[str | None, typer.Option(help="Expiry (ISO date or timestamp); 'never' clears it.")] = None,
) -> None:
    """Change a document's trust, source type, status or expiry without re-embedding it."""
    doc = _uuid(document_id, "document_id")
    patch: dict[str, Any] = {
        k: v for k, v in {"trust_score": trust, "source_type": source_type}.items() if v is not None
    }
    if expires is not None:
        patch["expires_at"] = None if expires == "never" else expires
    if not patch and status is None:
        raise _fail(InvalidInputError("nothing to change: give --trust, --source-type, --status or --expires"))
    out: dict[str, Any] = {"document_id": str(doc)}
    try:  # one transaction: both changes or neither
        with _client(tenant) as client, client.transaction() as cur:
            if patch:
                out.update(client.rpc_in(cur, "set_document_metadata", {"document_id": doc, "metadata": patch}))
            if status is not None:
                out.update(client.rpc_in(cur, "set_document_status", {"document_id": doc, "status": status}))
    except HipocampoError as exc:
        raise _fail(exc) from exc
    _dump(out)


@doc_app.command("delete")
def doc_delete(
    document_id: Annotated[str, typer.Argument(help="Document id (uuid).")],
    tenant: TenantOpt = "default",
    yes: YesOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete a document with its chunks and embeddings (asks first)."""
    doc = _uuid(document_id, "document_id")
    with _client(tenant) as client:
        kb, d = _find_document(client, doc)
        if not yes:
            typer.confirm(f"Delete {d['title']!r} from {kb}?", abort=True)
        try:
            client.delete_document(doc)
        except HipocampoError as exc:
            raise _fail(exc) from exc
    summary = {"document_id": str(doc), "title": d["title"], "kb": kb, "chunks": d["chunk_count"]}
    _say(summary, f"deleted {d['title']} ({d['chunk_count']} chunks) from {kb}", as_json)


# -- config -----------------------------------------------------------------------------------
@config_app.command("show")
def config_show(
    section: Annotated[str | None, typer.Argument(help="retrieval, chunking, rag, memory, … (default: all).")] = None,
    tenant: TenantOpt = "default",
    kb: Annotated[
        str | None, typer.Option("--kb", help="With this knowledge base's tuning for the active model and overrides.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The configuration in force for the tenant (global ← the active model's calibration ← tenant
    ← KB tuning for that model ← KB overrides): a table of each key, its value and its bounds
    (fixed: tenant_locked; operator: operator_only), or the raw rows with --json."""
    with _client(tenant) as client:
        try:
            cfg = client.effective_config_json(client.kb_id(kb) if kb else None)
            if section == "rag" or section is None:
                cfg["rag"] = {
                    k: v
                    for k, v in client.rag_config_json(client.kb_id(kb) if kb else None).items()
                    if k not in ("kb_ids", "agent")
                }
        except HipocampoError as exc:
            raise _fail(exc) from exc
    if section is not None:
        if section not in cfg:
            raise _fail(InvalidInputError(f"unknown section {section!r}; one of {', '.join(sorted(cfg))}", "22023"))
        cfg = cfg[section]
    if as_json:
        _dump(cfg)
        return
    if section in (None, "rag"):
        from ..answers.generation import answering_model

        rag = cfg if section == "rag" else cfg.get("rag", {})
        console.print(f"answers written by: {answering_model(rag)}", highlight=False)
    for name, values in [(section, cfg)] if section is not None else sorted(cfg.items()):
        console.print(_config_table(str(name), values))


def _config_table(section: str, values: Any) -> Table:
    """One section as rows of key, value and bound; the bound keys themselves are not rows."""
    table = Table(
        Column("key", overflow="fold"),
        Column("value", overflow="fold"),
        Column("bound", overflow="fold"),
        title=section,
    )
    if not isinstance(values, dict):
        table.add_row("", json.dumps(values, ensure_ascii=False), "")
        return table
    locked = set(values.get("tenant_locked") or [])
    operator = set(values.get("operator_only") or [])
    for key in sorted(values):
        if key.endswith(_BOUND_SUFFIXES) or key in ("tenant_locked", "operator_only", "tenant_id"):
            continue
        bound = []
        if f"{key}_range" in values:
            low, high = values[f"{key}_range"]
            bound.append(f"{low}..{high}")
        if f"{key}_max_length" in values:
            bound.append(f"≤ {values[f'{key}_max_length']} chars")
        if f"{key}_max_items" in values:
            bound.append(f"≤ {values[f'{key}_max_items']} items")
        if key in locked:
            bound.append("fixed")
        if key in operator:
            bound.append("operator")
        table.add_row(key, json.dumps(values[key], ensure_ascii=False), ", ".join(bound))
    return table


@config_app.command("set")
def config_set(
    section: Annotated[str, typer.Argument(help="Config section, e.g. rag.")],
    patch: Annotated[
        str, typer.Argument(help="JSON object of keys to override, e.g. '{\"top_k\": 6}'; null resets a key.")
    ],
    tenant: TenantOpt = "default",
    kb: Annotated[str | None, typer.Option("--kb", help="Override for this knowledge base only.")] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="The tenant's (with --kb: the KB's) tuning for this embedding model (in force while it is searched).",
        ),
    ] = None,
) -> None:
    """Override config keys for the tenant (or one KB), within the bounds config.toml declares;
    with --model, the tenant's (with --kb too, the knowledge base's) values for one embedding
    model (model-dependent keys only: docs/design.md §calibration)."""
    try:
        values = json.loads(patch)
    except json.JSONDecodeError as exc:
        raise _fail(InvalidInputError(f"patch is not JSON: {exc.msg}", "22023")) from None
    if not isinstance(values, dict):
        raise _fail(InvalidInputError("patch must be a JSON object", "22023"))
    with _client(tenant) as client:
        try:
            if kb and model:
                out = client.set_kb_tuning(client.kb_id(kb), model, section, values)
            elif kb:
                out = client.set_kb_config(client.kb_id(kb), section, values)
            elif model:
                out = client.set_tenant_tuning(model, section, values)
            else:
                out = client.set_tenant_config(section, values)
        except HipocampoError as exc:
            raise _fail(exc) from exc
    _dump(out.stored())
