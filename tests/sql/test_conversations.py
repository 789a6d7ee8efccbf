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


def test_chat_and_voice_share_a_conversation_and_only_what_the_user_states_becomes_memory(
    db: Conn, user_a: World
) -> None:
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
    # What the user stated of themselves went through the memory gate (issue 59 §6); nothing else.
    rows = db.execute("select key, source from hipocampo_private.memories").fetchall()
    assert [(r["key"], r["source"]) for r in rows] == [("preference.respostas_curtas_por", "conversation")]
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


def without_context(db: Conn, world: World) -> None:
    """Tenant A's admin turns the context windows and date words off (plain BM25 and cosine)."""
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute(
        "select hipocampo.set_tenant_config('conversations', %s::jsonb)",
        ('{"context_weights_before": [], "context_weights_after": [], "date_weight": 0}',),
    )
    world.act("authenticated", world.member_a, world.tenant_a)


def test_every_context_cosine_equals_the_weighted_sum_s(db: Conn, user_a: World) -> None:
    """The dense leg's cosine, computed from inner products, equals the
    cosine to the weighted sum of each context's embeddings for every message: first and last
    ones, and a neighbour without an embedding, which adds nothing. A message without one gets no
    dense score; a zero query vector gives none either (not NaN)."""
    conv = uuid.uuid4()
    seeds = [300, 301, None, 303, 304, 305, 306, 307]
    ids = [
        add(db, conv, "user", f"mensagem {i}", **({"embedding": vec_text(unit_vector(s))} if s else {}))
        for i, s in enumerate(seeds)
    ]
    q = unit_vector(999)
    rows = db.execute(
        "select message_id, dense_score from hipocampo.search_history('mensagem', %s::extensions.vector, "
        "filter_conversation_id => %s, match_count => 10)",
        (vec_text(q), conv),
    ).fetchall()
    got = {r["message_id"]: r["dense_score"] for r in rows}
    before, after = (1.0, 0.5, 0.3, 0.2), (0.3, 0.2)  # itself, then config.toml's weights
    for i, seed in enumerate(seeds):
        if seed is None:
            assert got[ids[i]] is None
            continue
        parts = [(w, seeds[i - d]) for d, w in enumerate(before) if i - d >= 0]
        parts += [(w, seeds[i + d]) for d, w in enumerate(after, start=1) if i + d < len(seeds)]
        context = [0.0] * len(q)
        for w, s in parts:
            if s is not None:
                context = [c + w * x for c, x in zip(context, unit_vector(s), strict=True)]
        cosine = sum(x * y for x, y in zip(q, context, strict=True)) / sum(x * x for x in context) ** 0.5
        assert abs(got[ids[i]] - cosine) < 1e-5, i
    zero = "[" + ",".join(["0"] * len(q)) + "]"
    rows = db.execute(
        "select dense_score from hipocampo.search_history('mensagem', %s::extensions.vector, "
        "filter_conversation_id => %s, match_count => 10)",
        (zero, conv),
    ).fetchall()
    assert rows and all(r["dense_score"] is None for r in rows)


def test_history_search_ranks_by_bm25_and_cosine(db: Conn, user_a: World) -> None:
    without_context(db, user_a)
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
        "select message_id, dense_score from hipocampo.search_history('qual o horário?', %s::extensions.vector, "
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


def test_history_search_reads_a_message_with_its_neighbours(db: Conn, user_a: World) -> None:
    # The answer ("Um pôr do sol") shares no word with the question; the turn before it does.
    conv = uuid.uuid4()
    texts = [
        "Oi! Tudo bem por aí?",
        "Tudo ótimo. O que você pintou no fim de semana?",
        "Um pôr do sol na praia",
        "Que lindo!",
        "Amanhã tenho consulta no dentista",
        "Boa sorte com o dentista",
        "Obrigado, até mais",
    ]
    ids = [add(db, conv, "user", t, embedding=vec_text(unit_vector(200 + i))) for i, t in enumerate(texts)]
    rows = db.execute("select message_id, lexical_score from hipocampo.search_history('o que ela pintou?')").fetchall()
    got = [r["message_id"] for r in rows]
    # weights: the message itself 1, the previous 0.5 / 0.3 / 0.2, the next 0.3 / 0.2 (config.toml)
    assert got[:2] == [ids[1], ids[2]]
    assert set(got) == {ids[0], ids[1], ids[2], ids[3], ids[4]}
    # The dense leg scores the weighted sum of the context's embeddings.
    row = db.execute(
        "select dense_score from hipocampo.search_history('pintura', %s::extensions.vector, match_count => 7) "
        "where message_id = %s",
        (vec_text(unit_vector(202)), ids[2]),
    ).fetchone()
    # Message 2 has two messages before it (0.5, 0.3) and two after it (0.3, 0.2).
    weighted = ((1.0, 202), (0.5, 201), (0.3, 200), (0.3, 203), (0.2, 204))
    context = [
        sum(w * x for w, x in zip((w for w, _ in weighted), xs, strict=True))
        for xs in zip(*(unit_vector(seed) for _, seed in weighted), strict=True)
    ]
    q = unit_vector(202)
    expected = sum(x * y for x, y in zip(q, context, strict=True)) / sum(x * x for x in context) ** 0.5
    assert row is not None and abs(row["dense_score"] - expected) < 1e-5
    # Only voice messages come back with filter_modality, though chat neighbours give context.
    add(db, conv, "user", "Foi o pôr do sol mais bonito do ano", modality="voice")
    rows = db.execute(
        "select modality from hipocampo.search_history('pôr do sol', filter_modality => 'voice')"
    ).fetchall()
    assert [r["modality"] for r in rows] == ["voice"]


def test_history_search_matches_a_message_by_its_date(db: Conn, user_a: World) -> None:
    # The same words on two days: the question's date picks the message of that day.
    conv = uuid.uuid4()
    messages = [("2024-01-15", "Fui ao médico fazer exames de rotina")]
    messages += [(f"2024-03-{10 + i}", f"Anotei a tarefa número {i} da reforma da cozinha") for i in range(7)]
    messages += [("2024-06-10", "Fui ao médico fazer exames de rotina")]
    messages += [(f"2024-07-{10 + i}", f"Comprei o material número {i} da reforma") for i in range(3)]
    ids = [add(db, conv, "user", text, created_at=f"{day} 10:00-03", language="portuguese") for day, text in messages]
    rows = db.execute(
        "select message_id from hipocampo.search_history('Quando fui ao médico em junho de 2024?', match_count => 3)"
    ).fetchall()
    assert rows[0]["message_id"] == ids[8]
    rows = db.execute(
        "select message_id from hipocampo.search_history('médico em janeiro', match_count => 3)"
    ).fetchall()
    assert rows[0]["message_id"] == ids[0]
    # Month names follow the message's language.
    assert db.execute(
        "select hipocampo_private._date_words('2024-03-05', hipocampo_private.text_search_config('portuguese')) as w"
    ).fetchone() == {"w": "5 março 2024"}
    assert db.execute("select hipocampo_private._date_words('2023-05-08', 'pg_catalog.english') as w").fetchone() == {
        "w": "8 may 2023"
    }


def test_history_context_config_is_validated(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    for patch, error, message in (
        (
            '{"context_weights_before": [0.5, 2]}',
            psycopg.errors.NumericValueOutOfRange,
            r"conversations.context_weights_before must lie in \[0, 1\] \(got \[0.5, 2\]\)",
        ),
        (
            '{"context_weights_after": ["x"]}',
            psycopg.errors.NumericValueOutOfRange,
            r"conversations.context_weights_after must lie in \[0, 1\]",
        ),
        (
            '{"context_weights_after": [0.1, 0.1, 0.1, 0.1, 0.1, 0.1]}',
            psycopg.errors.InvalidParameterValue,
            "conversations.context_weights_after must have at most 5 items",
        ),
        (
            '{"context_weights_after": 0.3}',
            psycopg.errors.InvalidParameterValue,
            "conversations.context_weights_after must be a array",
        ),
        (
            '{"date_weight": 9}',
            psycopg.errors.NumericValueOutOfRange,
            r"conversations.date_weight must lie in \[0, 5\]",
        ),
        (
            '{"context_weights_after_max_items": 9}',
            psycopg.errors.InvalidParameterValue,
            "unknown key conversations.context_weights_after_max_items",
        ),
    ):
        with pytest.raises(error, match=message), db.transaction():
            db.execute("select hipocampo.set_tenant_config('conversations', %s::jsonb)", (patch,))
    db.execute("""select hipocampo.set_tenant_config('conversations', '{"time_zone": "Mars/Olympus"}')""")
    with (
        pytest.raises(psycopg.errors.InvalidParameterValue, match=r"unknown conversations\.time_zone: Mars/Olympus"),
        db.transaction(),
    ):
        db.execute("select * from hipocampo.search_history('oi')")


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


def test_messages_written_with_add_message_roll_the_summary(db: Conn, user_a: World) -> None:
    """Issue 59 §6: the rolling summary rolls for conversations written message by message (the
    conversations edge function's path, chat and voice), not only for asked turns."""
    user_a.act("authenticated", user_a.admin_a, user_a.tenant_a)
    db.execute("""select hipocampo.set_tenant_config('sessions', '{"summary_every_messages": 4}')""")
    user_a.act("authenticated", user_a.member_a, user_a.tenant_a)
    conv = uuid.uuid4()
    ids = [add(db, conv, "user", "Qual o horário da piscina?")]
    ids += [add(db, conv, "assistant", "A piscina abre das 8h às 22h.")]
    ids += [add(db, conv, "user", "E aos domingos?", modality="voice")]
    ctx = db.execute("select hipocampo.conversation_context(%s) as c", (conv,)).fetchone()
    assert ctx and ctx["c"]["summary"] is None  # three messages: not due yet
    ids += [add(db, conv, "assistant", "Aos domingos, das 9h às 18h.")]
    ctx = db.execute("select hipocampo.conversation_context(%s) as c", (conv,)).fetchone()
    assert ctx
    c = ctx["c"]
    assert (c["summary_through"], c["unsummarized"]) == (ids[-1], 0)
    assert c["summary"].startswith("Usuário: Qual o horário da piscina?") and "E aos domingos?" in c["summary"]
