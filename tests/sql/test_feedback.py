"""Feedback on replies (issue 59 §5): a user marks a reply useful or not by its trace id, admins
read it per knowledge base and turn a marked question into a judged question of kb eval; feedback
is the user's data (export, erasure)."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import World

Conn = psycopg.Connection[dict[str, Any]]
QUESTION = "posso fazer mudança no domingo?"


def fails(db: Conn, sql: str, params: tuple[Any, ...] = ()) -> tuple[str | None, str | None]:
    db.execute("savepoint s")
    with pytest.raises(psycopg.Error) as exc:
        db.execute(sql, params)  # type: ignore[arg-type]
    db.execute("rollback to savepoint s")
    return exc.value.sqlstate, exc.value.diag.message_primary


def asked(db: Conn, world: World, question: str = QUESTION, source: str = "PASSAGES") -> uuid.UUID:
    """A reply member A got (its audit row, as the orchestrator records it), citing doc A's chunk."""
    world.act("authenticated", world.member_a, world.tenant_a)
    trace = uuid.uuid4()
    chunk = db.execute("select min(id) as v from hipocampo_private.chunks where document_id = %s", (world.doc_a,))
    row = chunk.fetchone()
    assert row
    db.execute(
        "select hipocampo.record_answer(%s, %s, %s, null, 0.4, 3, 1, array[%s]::bigint[], '{}', 12, array[%s]::uuid[])",
        (trace, question, source, row["v"], world.kb_a),
    )
    return trace


def mark(db: Conn, trace: uuid.UUID, useful: bool, comment: str | None = None, question: str | None = None) -> Any:
    row = db.execute(
        "select hipocampo.record_feedback(%s, %s, %s, %s) as v", (trace, useful, comment, question)
    ).fetchone()
    return row and row["v"]


def test_a_user_marks_their_reply_and_marks_it_again(db: Conn, world: World) -> None:
    trace = asked(db, world)
    assert mark(db, trace, False, "citou o artigo errado", QUESTION) == trace
    row = db.execute("select * from hipocampo_private.answer_feedback where trace_id = %s", (trace,)).fetchone()
    assert row and row["user_id"] == world.member_a and row["useful"] is False
    assert (row["question"], row["answer_source"], row["kb_ids"]) == (QUESTION, "PASSAGES", [world.kb_a])
    assert [str(d) for d in row["cited_document_ids"]] == [str(world.doc_a)]
    mark(db, trace, True)  # the verdict and comment replaced, the question kept
    row = db.execute("select * from hipocampo_private.answer_feedback where trace_id = %s", (trace,)).fetchone()
    assert row and (row["useful"], row["comment"], row["question"]) == (True, None, QUESTION)


def test_feedback_is_checked_and_bound_to_the_asker(db: Conn, world: World) -> None:
    trace = asked(db, world)
    call = "select hipocampo.record_feedback(%s, %s, %s, %s)"
    assert fails(db, call, (trace, None, None, None)) == ("22023", "useful is required (true or false)")
    assert fails(db, call, (trace, False, "x" * 1001, None)) == (
        "22023",
        "comment must be 1..1000 characters (got 1001)",
    )
    assert fails(db, call, (trace, False, None, "")) == ("22023", "question must be 1..2000 characters (got 0)")
    assert fails(db, call, (trace, False, None, "outra pergunta?")) == (
        "22023",
        "question is not the one this answer was asked",
    )
    # Another user of the tenant (its admin too) and another tenant's member see no such reply.
    for user, tenant in ((world.admin_a, world.tenant_a), (world.member_b, world.tenant_b)):
        world.act("authenticated", user, tenant)
        assert fails(db, call, (trace, True, None, None)) == ("P0002", f"unknown answer: {trace}")
    # The operator marks any reply of the tenant it names.
    world.act("service_role")
    row = db.execute(
        "select hipocampo.record_feedback(%s, true, tenant_id => %s) as v", (trace, world.tenant_a)
    ).fetchone()
    assert row and row["v"] == trace


def test_the_question_is_kept_scrubbed_of_personal_data(db: Conn, world: World) -> None:
    question = "meu email é ana.souza@example.com, posso reservar o salão?"
    trace = asked(db, world, question)
    mark(db, trace, False, None, question)
    row = db.execute("select question from hipocampo_private.answer_feedback where trace_id = %s", (trace,)).fetchone()
    assert row and "ana.souza" not in row["question"] and "[EMAIL]" in row["question"]


def test_members_read_only_their_own_feedback(db: Conn, world: World) -> None:
    trace = asked(db, world)
    mark(db, trace, False, None, QUESTION)
    count = "select count(*) as n from hipocampo_private.answer_feedback where trace_id = %s"
    for user, tenant, seen in (
        (world.member_a, world.tenant_a, 1),
        (world.admin_a, world.tenant_a, 1),
        (world.member_b, world.tenant_b, 0),
        (world.admin_b, world.tenant_b, 0),
    ):
        world.act("authenticated", user, tenant)
        row = db.execute(count, (trace,)).fetchone()
        assert row and row["n"] == seen, (user, tenant)


def test_admins_read_the_weeks_and_the_worst_questions(db: Conn, world: World) -> None:
    bad = asked(db, world)
    mark(db, bad, False, "citou o artigo errado", QUESTION)
    good = asked(db, world, "qual o prazo de trancamento?", "EXTRACTIVE")
    mark(db, good, True, None, "qual o prazo de trancamento?")
    summary = "select hipocampo.feedback_summary(%s, 4) as v"
    assert fails(db, summary, (world.kb_a,)) == ("42501", "only tenant admins can read the tenant's feedback")
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert fails(db, "select hipocampo.feedback_summary(null, 0)") == ("22023", "weeks must lie in [1, 104] (got 0)")
    row = db.execute(summary, (world.kb_a,)).fetchone()
    assert row
    out = row["v"]
    assert [(w["useful"], w["not_useful"], w["share_useful"]) for w in out["weeks"]] == [(1, 1, 0.5)]
    assert [(w["question"], w["comment"], w["judged"]) for w in out["worst"]] == [
        (QUESTION, "citou o artigo errado", False)
    ]
    assert [c["document_id"] for c in out["worst"][0]["cited"]] == [str(world.doc_a)]
    other = db.execute(summary, (world.kb_b,)).fetchone()
    assert other and other["v"] == {"weeks": [], "worst": []}


def test_an_admin_turns_a_marked_question_into_a_judged_one(db: Conn, world: World) -> None:
    trace = asked(db, world)
    mark(db, trace, False, None, QUESTION)
    no_question = asked(db, world, "e aos sábados?")
    mark(db, no_question, False)
    judge = "select hipocampo.judge_feedback(%s, %s::uuid[]) as v"
    assert fails(db, judge, (trace, [world.doc_a])) == ("42501", "only tenant admins can judge the tenant's questions")
    world.act("authenticated", world.admin_a, world.tenant_a)
    row = db.execute(judge, (trace, [world.doc_a])).fetchone()
    assert row
    judged = db.execute("select * from hipocampo.judged_questions(%s)", (world.kb_a,)).fetchall()
    assert [(j["id"], j["question"], j["relevant_uris"], j["from_trace_id"]) for j in judged] == [
        (row["v"], QUESTION, ["test://a1"], trace)
    ]
    summary = db.execute("select hipocampo.feedback_summary(%s) as v", (world.kb_a,)).fetchone()
    assert summary and [w["judged"] for w in summary["v"]["worst"]] == [True]
    # Judged again: the same question, its documents replaced.
    doc2 = world.ingest(world.kb_a, "a2", ["Mudanças só de segunda a sábado, das 8h às 18h."])
    world.act("authenticated", world.admin_a, world.tenant_a)
    again = db.execute(judge, (trace, [doc2])).fetchone()
    assert again and again["v"] == row["v"]
    uris = db.execute("select relevant_uris as v from hipocampo.judged_questions(%s)", (world.kb_a,)).fetchone()
    assert uris and uris["v"] == ["test://a2"]
    assert fails(db, judge, (no_question, [world.doc_a])) == ("P0002", f"unknown feedback: {no_question}")
    assert fails(db, judge, (trace, [])) == ("22023", "document_ids must hold 1..20 documents (got 0)")
    assert fails(db, judge, (trace, [world.doc_b])) == ("P0002", f"unknown document: {world.doc_b}")
    kb2 = db.execute("select hipocampo.create_knowledge_base('outra') as v").fetchone()
    assert kb2
    doc3 = world.ingest(kb2["v"], "c1", ["Outro texto."])
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert fails(db, judge, (trace, [world.doc_a, doc3])) == (
        "22023",
        "the documents must belong to one knowledge base",
    )
    # Two documents of two knowledge bases under one source_uri: still two knowledge bases.
    same_uri = world.ingest(kb2["v"], "a1", ["O mesmo nome de arquivo, em outra base."])
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert fails(db, judge, (trace, [world.doc_a, same_uri])) == (
        "22023",
        "the documents must belong to one knowledge base",
    )
    assert db.execute("select hipocampo.delete_judged_question(%s) as v", (row["v"],)).fetchone() == {"v": True}
    assert db.execute("select count(*) as n from hipocampo.judged_questions(%s)", (world.kb_a,)).fetchone() == {"n": 0}
    world.act("authenticated", world.admin_b, world.tenant_b)
    assert fails(db, "select * from hipocampo.judged_questions(%s)", (world.kb_a,)) == (
        "P0002",
        f"unknown knowledge base: {world.kb_a}",
    )


def test_feedback_is_in_the_user_s_export_and_goes_with_their_erasure(db: Conn, world: World) -> None:
    trace = asked(db, world)
    mark(db, trace, False, "não respondeu", QUESTION)
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("select hipocampo.judge_feedback(%s, array[%s]::uuid[])", (trace, world.doc_a))
    world.act("authenticated", world.member_a, world.tenant_a)
    export = db.execute("select hipocampo.export_user_data() as v").fetchone()
    assert export and [(f["trace_id"], f["comment"]) for f in export["v"]["feedback"]] == [
        (str(trace), "não respondeu")
    ]
    erased = db.execute("select hipocampo.erase_user() as v").fetchone()
    assert erased and erased["v"]["feedback"] == 1
    db.execute("reset role")
    assert db.execute(
        "select count(*) as n from hipocampo_private.answer_feedback where trace_id = %s", (trace,)
    ).fetchone() == {"n": 0}
    # The judged question is the tenant's: it stays, with no user in it.
    kept = db.execute("select question from hipocampo_private.judged_questions where from_trace_id = %s", (trace,))
    assert kept.fetchone() == {"question": QUESTION}
