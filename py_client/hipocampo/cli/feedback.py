"""``hipocampo feedback``: what users said of the replies (issue 59 §5), over ``record_feedback``,
``feedback_summary``, ``judge_feedback``, ``judged_questions`` and ``delete_judged_question``.
The CLI acts as the tenant's operator (service_role): ``mark`` records a verdict on any reply of
the tenant (an app records its users' through the RPC, serve's POST /feedback, the feedback edge
function or the MCP tool, as the user)."""

from __future__ import annotations

import json
from typing import Annotated
from uuid import UUID

import typer
from rich.table import Table

from ..errors import HipocampoError
from .common import JsonOpt, TenantOpt, _client, _fail, console

__all__ = ["feedback_app"]

feedback_app = typer.Typer(
    help="Feedback on replies: mark them, read it per week, make judged questions of it.", no_args_is_help=True
)


@feedback_app.command("mark")
def feedback_mark(
    trace_id: Annotated[str, typer.Argument(help="The reply's trace id (ask's trace_id, X-Trace-ID).")],
    useful: Annotated[bool, typer.Option("--useful/--not-useful", help="Whether the reply helped.")],
    comment: Annotated[str | None, typer.Option(help="What was said about it (1..1,000 characters).")] = None,
    question: Annotated[
        str | None, typer.Option(help="The question asked (kept only when it is that reply's).")
    ] = None,
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Mark one reply of the tenant useful or not (marking again replaces it)."""
    with _client(tenant) as client:
        try:
            marked = client.record_feedback(trace_id, useful, comment, question)
        except HipocampoError as exc:
            raise _fail(exc) from exc
    console.print_json(json.dumps({"trace_id": str(marked)})) if as_json else console.print(str(marked))


@feedback_app.command("summary")
def feedback_summary(
    kb: Annotated[str | None, typer.Option(help="Only replies that searched this knowledge base.")] = None,
    weeks: Annotated[int, typer.Option(help="Weeks back from this one (1..104).")] = 12,
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Per week, replies marked useful and not; then the newest replies marked not useful, with
    their question (what `feedback judge` makes a judged question of)."""
    with _client(tenant) as client:
        try:
            summary = client.feedback_summary(client.kb_id(kb) if kb else None, weeks)
        except HipocampoError as exc:
            raise _fail(exc) from exc
    if as_json:
        console.print_json(summary.model_dump_json())
        return
    weekly = Table("week", "useful", "not useful", "share useful")
    for w in summary.weeks:
        weekly.add_row(str(w.week), str(w.useful), str(w.not_useful), f"{w.share_useful:.0%}")
    console.print(weekly)
    worst = Table("trace id", "question", "comment", "source", "cited", "judged")
    for r in summary.worst:
        cited = ", ".join(c.source_uri for c in r.cited)
        worst.add_row(str(r.trace_id), r.question, r.comment or "", r.answer_source, cited, "yes" if r.judged else "")
    console.print(worst)


@feedback_app.command("judge")
def feedback_judge(
    trace_id: Annotated[str, typer.Argument(help="A reply marked with its question (feedback summary).")],
    document: Annotated[
        list[UUID], typer.Option("--document", help="A document that answers it (repeatable; 1..20, one KB).")
    ],
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """Make the reply's question a judged question of the documents' knowledge base (what
    `kb eval --stored` evaluates), with these documents as the ones that answer it."""
    with _client(tenant) as client:
        try:
            judged = client.judge_feedback(trace_id, document)
        except HipocampoError as exc:
            raise _fail(exc) from exc
    console.print_json(json.dumps({"id": judged})) if as_json else console.print(str(judged))


@feedback_app.command("judged")
def feedback_judged(
    kb: Annotated[str, typer.Option(help="The knowledge base.")],
    tenant: TenantOpt = "default",
    as_json: JsonOpt = False,
) -> None:
    """The knowledge base's judged questions stored from feedback."""
    with _client(tenant) as client:
        try:
            rows = client.judged_questions(client.kb_id(kb))
        except HipocampoError as exc:
            raise _fail(exc) from exc
    if as_json:
        console.print_json(json.dumps([r.model_dump(mode="json") for r in rows]))
        return
    table = Table("id", "question", "relevant")
    for r in rows:
        table.add_row(str(r.id), r.question, ", ".join(r.relevant_uris))
    console.print(table)
