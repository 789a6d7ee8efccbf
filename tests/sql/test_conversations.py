"""Conversation history: messages (chat and voice share a conversation), the rolling summary,
history search (BM25 + cosine), isolation, and no automatic promotion to memory."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import World, unit_vector, vec_text

Conn = psycopg.Connection[dict[str, Any]]


def add(db: Conn, conversation: uuid.UUID, role: str, content: str, **named: Any) -> int:
    casts = {"attachments": "::jsonb", "embedding": "::extensions.vector", "metadata": "::jsonb"}
    args = {"conversation_id": conversation, "role": role, "content": content, **named}
    sql = ", ".join(f"{k} => %({k})s{casts.get(k, '')}" for k in args)
    row = db.execute(f"select hipocampo.add_message({sql}) as id", args).fetchone()
    assert row is not None
    return int(row["id"])


def test_chat_and_voice_share_a_conversation_and_nothing_becomes_memory(db: Conn, user_a: World) -> None:
    conv = uuid.uuid4()
    add(db, conv, "user", "Prefiro respostas curtas, por favor")
    add(db, conv, "assistant", "Combinado!")
    add(db, conv, "user", "Qual o saldo do condomínio?", modality="voice", attachments='[{"type": "audio"}]')
    ctx = db.execute("select hipocampo.conversation_context(%s) as c", (conv,)).fetchone()
    assert ctx is not None
    c = ctx["c"]
    assert [(m["role"], m["modality"]) for m in c["messages"]] == [
        ("user", "chat"),
        ("assistant", "chat"),
        ("user", "voice"),
    ]
    assert (c["summary"], c["unsummarized"]) == (None, 3)
    assert db.execute("select count(*) as n from hipocampo_private.memories").fetchone() == {"n": 0}
    assert db.execute("select count(*) as n from hipocampo_private.memory_staging").fetchone() == {"n": 0}


def test_rolling_summary_and_last_n(db: Conn, user_a: World) -> None:
    conv = uuid.uuid4()
    ids = [add(db, conv, "user" if i % 2 == 0 else "assistant", f"mensagem {i}") for i in range(6)]
    db.execute("select hipocampo.update_conversation_summary(%s, 'Conversa sobre boletos', %s)", (conv, ids[3]))
    ctx = db.execute("select hipocampo.conversation_context(%s, 2) as c", (conv,)).fetchone()
    assert ctx is not None
    c = ctx["c"]
    assert (c["summary"], c["summary_through"], c["unsummarized"]) == ("Conversa sobre boletos", ids[3], 2)
    assert [m["content"] for m in c["messages"]] == ["mensagem 4", "mensagem 5"]
    with (
        pytest.raises(psycopg.errors.InvalidParameterValue, match="is not a message of this conversation"),
        db.transaction(),
    ):
        db.execute("select hipocampo.update_conversation_summary(%s, 'x', %s)", (uuid.uuid4(), ids[0]))


def test_bad_messages_are_refused(db: Conn, user_a: World) -> None:
    conv = uuid.uuid4()
    with pytest.raises(psycopg.errors.CheckViolation, match="invalid message"), db.transaction():
        add(db, conv, "robot", "oi")
    with pytest.raises(psycopg.errors.CheckViolation, match="invalid message"), db.transaction():
        add(db, conv, "user", "oi", modality="fax")
    with (
        pytest.raises(psycopg.errors.InvalidParameterValue, match="unsupported text-search language"),
        db.transaction(),
    ):
        add(db, conv, "user", "oi", language="klingon")
    with pytest.raises(psycopg.errors.DataException, match="embedding has 3 dimensions"), db.transaction():
        add(db, conv, "user", "oi", embedding="[1,2,3]")


def test_history_search_ranks_by_bm25_and_cosine(db: Conn, user_a: World) -> None:
    conv = uuid.uuid4()
    texts = [
        "A taxa condominial vence no dia 10",
        "O elevador está em manutenção",
        "A piscina fecha às 22h",
        "Reunião de condomínio na quinta-feira",
    ]
    ids = [add(db, conv, "user", t, embedding=vec_text(unit_vector(100 + i))) for i, t in enumerate(texts)]
    rows = db.execute("select message_id, lexical_score from hipocampo.search_history('elevador')").fetchall()
    assert rows[0]["message_id"] == ids[1] and rows[0]["lexical_score"] > 0
    assert [r["message_id"] for r in rows] == [ids[1]]
    rows = db.execute(
        "select message_id, dense_score from hipocampo.search_history('quando vence?', %s::extensions.vector, "
        "filter_conversation_id => %s, match_count => 2)",
        (vec_text(unit_vector(102)), conv),
    ).fetchall()
    assert rows[0]["message_id"] == ids[2] and abs(rows[0]["dense_score"] - 1) < 1e-6
    assert len(rows) == 2
    assert db.execute("select * from hipocampo.search_history('elevador', filter_modality => 'voice')").fetchall() == []
    with (
        pytest.raises(psycopg.errors.InvalidParameterValue, match=r"query_text must have 1\.\.2000 characters"),
        db.transaction(),
    ):
        db.execute("select * from hipocampo.search_history('  ')")


def test_history_is_private_to_its_user(db: Conn, world: World) -> None:
    conv = uuid.uuid4()
    world.act("authenticated", world.member_a, world.tenant_a)
    first = add(db, conv, "user", "Meu apartamento é o 302")
    db.execute("select hipocampo.update_conversation_summary(%s, 'Apartamento 302', %s)", (conv, first))
    for user, tenant in ((world.admin_a, world.tenant_a), (world.member_b, world.tenant_b)):
        world.act("authenticated", user, tenant)
        assert db.execute("select count(*) as n from hipocampo_private.conversation_summaries").fetchone() == {"n": 0}
        assert db.execute("select * from hipocampo.search_history('apartamento')").fetchall() == []
        assert db.execute("select count(*) as n from hipocampo_private.messages").fetchone() == {"n": 0}
        ctx = db.execute("select hipocampo.conversation_context(%s) as c", (conv,)).fetchone()
        assert ctx is not None and ctx["c"]["messages"] == []
    world.act("authenticated", world.member_b, world.tenant_b)
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
        db.execute(
            "insert into hipocampo_private.messages (tenant_id, user_id, conversation_id, role, content, ts_config) "
            "values (%s, %s, %s, 'user', 'x', 'simple')",
            (world.tenant_a, world.member_b, conv),
        )
