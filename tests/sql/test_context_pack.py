"""hipocampo.context_pack: window policy, preferences first, session state, chunks with citations
skipped when the conversation already cited them, same pack for chat and voice, token budget."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import World, unit_vector, vec_text

Conn = psycopg.Connection[dict[str, Any]]


def pack(db: Conn, conv: Any, kb: Any = None, budget: int | None = None, modality: str = "chat") -> dict[str, Any]:
    row = db.execute(
        "select hipocampo.context_pack(%s, 'Qual o prazo de trancamento de matrícula?', %s::extensions.vector,"
        " %s, %s, %s::uuid[]) as v",
        (conv, vec_text(unit_vector(5)), modality, budget, [kb] if kb else None),
    ).fetchone()
    assert row is not None
    v: dict[str, Any] = row["v"]
    return v


def add(db: Conn, conv: Any, n: int, metadata: dict[str, Any] | None = None) -> None:
    for i in range(n):
        db.execute(
            "select hipocampo.add_message(%s, %s, %s, metadata => %s::jsonb)",
            (conv, "user" if i % 2 == 0 else "assistant", f"mensagem número {i}", json.dumps(metadata or {})),
        )


@pytest.mark.parametrize(
    ("messages", "policy", "included"),
    [(9, "all", 9), (10, "recent_with_summary", 10), (30, "recent_with_summary", 10), (31, "recent_long", 5)],
)
def test_window_policy(db: Conn, user_a: World, messages: int, policy: str, included: int) -> None:
    conv = uuid.uuid4()
    add(db, conv, messages)
    last = db.execute(
        "select max(id) as v from hipocampo_private.messages where conversation_id = %s", (conv,)
    ).fetchone()
    assert last is not None
    db.execute("select hipocampo.update_conversation_summary(%s, 'Resumo da conversa', %s)", (conv, last["v"]))
    p = pack(db, conv)
    assert (p["window"]["policy"], p["window"]["total_messages"], len(p["messages"])) == (policy, messages, included)
    assert p["messages"][-1]["content"] == f"mensagem número {messages - 1}"
    assert p["summary"] == (None if policy == "all" else "Resumo da conversa")
    assert p["retrieval_order"] == ["memory", "session", "rag", "tools", "model"]


def test_preferences_first_session_state_and_chunks(db: Conn, user_a: World) -> None:
    conv = uuid.uuid4()
    add(db, conv, 2)
    db.execute(
        "select hipocampo.remember('prefs.short_answers', 'true'::jsonb, 'Prefere respostas curtas', 'preference',"
        " embedding => %s::extensions.vector)",
        (vec_text(unit_vector(99)),),
    )
    s = db.execute("select hipocampo.open_session(%s) as v", (conv,)).fetchone()
    assert s is not None
    db.execute("select hipocampo.update_session(%s, tool => 'boleto')", (s["v"]["session_id"],))
    p = pack(db, conv, user_a.kb_a)
    assert [m["key"] for m in p["memories"]][:1] == ["prefs.short_answers"] and p["memories"][0]["preference"]
    assert p["session"]["tools_used"] == ["boleto"]
    assert p["rag"] == {"skipped": False, "reason": None}
    assert p["chunks"][0]["content"].startswith("Prazo de trancamento") and p["chunks"][0]["citation"].startswith(
        "[1] "
    )
    # Voice gets the same pack for the same conversation.
    v = pack(db, conv, user_a.kb_a, modality="voice")
    assert {k: x for k, x in v.items() if k != "modality"} == {k: x for k, x in p.items() if k != "modality"}
    # Once the conversation cited those chunks, RAG is skipped as covered.
    ids = [c["chunk_id"] for c in p["chunks"]]
    db.execute(
        "select hipocampo.add_message(%s, 'assistant', 'Trinta dias.', metadata => %s::jsonb)",
        (conv, json.dumps({"citations": ids})),
    )
    assert pack(db, conv, user_a.kb_a)["rag"] == {"skipped": True, "reason": "covered_by_session"}


@pytest.mark.parametrize("budget", [64, 90, 150, 400])
def test_the_pack_fits_the_token_budget(db: Conn, user_a: World, budget: int) -> None:
    conv = uuid.uuid4()
    add(db, conv, 8)
    db.execute("select hipocampo.add_message(%s, 'user', %s)", (conv, "texto longo " * 200))
    p = pack(db, conv, user_a.kb_a, budget=budget)
    assert p["tokens_used"] <= budget
    assert p["token_budget"] == budget
    dropped = p["dropped"]["messages"] + p["dropped"]["chunks"]
    assert dropped > 0


def test_bad_input(db: Conn, user_a: World) -> None:
    conv = uuid.uuid4()
    cases = [
        ("chat", 10, "token_budget must be at least 64 tokens"),
        ("fax", None, "modality must be chat or voice"),
    ]
    for modality, budget, msg in cases:
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=msg), db.transaction():
            pack(db, conv, budget=budget, modality=modality)
    with pytest.raises(psycopg.errors.DataException, match="query_embedding has 3 dimensions"), db.transaction():
        db.execute("select hipocampo.context_pack(%s, 'oi', '[1,2,3]'::extensions.vector)", (conv,))
