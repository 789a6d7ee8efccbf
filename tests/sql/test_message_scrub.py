"""Messages and conversation summaries are scrubbed before storage by default (issue 16 §1.4:
add_message once stored CPF and card numbers verbatim)."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import World
from .test_conversations import add

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]

RAW = "Meu CPF é 529.982.247-25 e o cartão 4111 1111 1111 1111; e-mail joao@exemplo.com"
SCRUBBED = "Meu CPF é [CPF] e o cartão [CARTAO]; e-mail [EMAIL]"


def stored(db: Conn, message_id: int) -> dict[str, Any]:
    row = db.execute(
        "select content, attachments, metadata, fts::text as fts from hipocampo_private.messages where id = %s",
        (message_id,),
    ).fetchone()
    assert row is not None
    return row


def test_a_message_is_stored_and_indexed_scrubbed(db: Conn, user_a: World) -> None:
    mid = add(
        db,
        uuid.uuid4(),
        "user",
        RAW,
        attachments='[{"type": "file", "name": "rg_12.345.678-9.pdf"}]',
        metadata='{"from": "joao@exemplo.com"}',
    )
    row = stored(db, mid)
    assert row["content"] == SCRUBBED
    assert row["attachments"] == [{"type": "file", "name": "rg_[RG].pdf"}]
    assert row["metadata"] == {"from": "[EMAIL]"}
    for raw in ("529", "4111", "joao"):
        assert raw not in row["fts"]


def test_a_session_message_and_a_summary_are_scrubbed(db: Conn, user_a: World) -> None:
    conv = uuid.uuid4()
    mid = add(db, conv, "user", "ok")
    db.execute(
        "select hipocampo.update_conversation_summary(%s, 'Usuário informou o CPF 52998224725', %s)", (conv, mid)
    )
    ctx = db.execute("select hipocampo.conversation_context(%s) as c", (conv,)).fetchone()
    assert ctx is not None
    assert ctx["c"]["summary"] == "Usuário informou o CPF [CPF]"


def test_a_direct_insert_is_scrubbed_too(db: Conn, user_a: World) -> None:
    db.execute(
        "insert into hipocampo_private.messages (tenant_id, user_id, conversation_id, role, content, ts_config)"
        " values (%s, %s, %s, 'user', %s, 'portuguese')",
        (user_a.tenant_a, user_a.member_a, uuid.uuid4(), RAW),
    )
    row = db.execute("select content from hipocampo_private.messages where content like 'Meu CPF%'").fetchone()
    assert row == {"content": SCRUBBED}


def test_a_tenant_can_keep_messages_verbatim(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    db.execute("""select hipocampo.set_tenant_config('conversations', '{"scrub_pii": false}')""")
    mid = add(db, uuid.uuid4(), "user", RAW)
    assert stored(db, mid)["content"] == RAW
    world.act("authenticated", world.admin_b, world.tenant_b)
    assert stored(db, add(db, uuid.uuid4(), "user", RAW)) is not None
    world.act("service_role")
    row = db.execute(
        "select content from hipocampo_private.messages where tenant_id = %s and content like 'Meu CPF%%'",
        (world.tenant_b,),
    ).fetchone()
    assert row == {"content": SCRUBBED}


def test_a_session_keeps_only_scrubbed_copies(db: Conn, user_a: World) -> None:
    """sessions.data holds the last messages and pending payloads."""
    s = db.execute("select hipocampo.open_session() as v").fetchone()
    assert s is not None
    sid = s["v"]["session_id"]
    db.execute("select hipocampo.session_add_message(%s, 'user', %s)", (sid, RAW))
    db.execute("""select hipocampo.add_pending_confirmation(%s, 'remember', '{"cpf": "529.982.247-25"}')""", (sid,))
    data = db.execute("select data::text as d from hipocampo_private.sessions where id = %s", (sid,)).fetchone()
    assert data is not None
    # The numbers whole (a bare "529" also occurs in the stored timestamps' microseconds).
    assert "529.982.247-25" not in data["d"] and "4111 1111" not in data["d"] and "joao@" not in data["d"]
    assert SCRUBBED in data["d"]
