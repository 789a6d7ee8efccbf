"""History search's late-interaction re-rank: set_message_tokens and its
checks, the MaxSim token score over the best candidates, and the re-rank switched off."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from ..conftest import World, unit_vector, vec_text
from .test_conversations import Conn, add

DIMS = 384


def bits(seed: int) -> str:
    """The sign bits of a deterministic unit vector: one token's 384 bits."""
    return "".join("1" if x > 0 else "0" for x in unit_vector(seed))


def set_tokens(db: Conn, message_id: int, ids: list[int], token_bits: list[str]) -> None:
    db.execute("select hipocampo.set_message_tokens(%s, %s::integer[], %s::varbit[])", (message_id, ids, token_bits))


def search(db: Conn, conv: uuid.UUID, query: str, q_ids: list[int] | None, q_bits: list[str] | None) -> list[Any]:
    return db.execute(
        "select message_id, score, token_score, rank from hipocampo.search_history(%s, %s::extensions.vector, %s, "
        "query_token_ids => %s::integer[], query_token_bits => %s::varbit[])",
        (query, vec_text(unit_vector(999)), conv, q_ids, q_bits),
    ).fetchall()


def test_tokens_rerank_messages_the_fused_score_cannot_tell_apart(db: Conn, user_a: World) -> None:
    # Four messages with no query word and the same embedding: the fused score ties them. The
    # third holds the query's token (same bits); the token leg puts it first.
    conv = uuid.uuid4()
    vec = vec_text(unit_vector(500))
    ids = [add(db, conv, "user", f"mensagem número {i}", embedding=vec) for i in range(4)]
    for i, mid in enumerate(ids):
        set_tokens(db, mid, [1000 + i, 7], [bits(600 + i), bits(700)])
    before = search(db, conv, "pergunta", None, None)
    assert [r["token_score"] for r in before] == [None] * 4
    after = search(db, conv, "pergunta", [1002], [bits(602)])
    assert after[0]["message_id"] == ids[2] and after[0]["rank"] == 1
    assert abs(after[0]["token_score"] - 1.0) < 1e-9
    assert all(r["token_score"] < 1.0 for r in after[1:])
    # Weight 0 switches the re-rank off: the fused order and scores come back.
    user_a.act("authenticated", user_a.admin_a, user_a.tenant_a)
    db.execute("""select hipocampo.set_tenant_config('conversations', '{"token_rerank_weight": 0}')""")
    user_a.act("authenticated", user_a.member_a, user_a.tenant_a)
    off = search(db, conv, "pergunta", [1002], [bits(602)])
    assert [(r["message_id"], r["score"], r["token_score"]) for r in off] == [
        (r["message_id"], r["score"], None) for r in before
    ]


def test_a_message_without_tokens_ranks_at_the_tokens_minimum(db: Conn, user_a: World) -> None:
    conv = uuid.uuid4()
    vec = vec_text(unit_vector(501))
    without = add(db, conv, "user", "primeira mensagem", embedding=vec)
    other = add(db, conv, "user", "segunda mensagem", embedding=vec)
    match = add(db, conv, "user", "terceira mensagem", embedding=vec)
    set_tokens(db, other, [6], [bits(801)])
    set_tokens(db, match, [5], [bits(800)])
    rows = search(db, conv, "mensagem", [5], [bits(800)])
    assert rows[0]["message_id"] == match and rows[0]["token_score"] == pytest.approx(1.0)
    scores = {r["message_id"]: r["token_score"] for r in rows}
    assert scores[without] is None and scores[other] < 0.5


@pytest.mark.parametrize(
    ("ids", "token_bits", "message"),
    [
        ([1, 2], [bits(1)], "token_ids and token_bits must have the same 1..512 items, none null"),
        ([], [], "token_ids and token_bits must have the same 1..512 items, none null"),
        ([1], ["0101"], "token_bits must be bit strings of 384 bits (the embedding model's dimensions)"),
    ],
)
def test_bad_tokens_are_refused(db: Conn, user_a: World, ids: list[int], token_bits: list[str], message: str) -> None:
    mid = add(db, uuid.uuid4(), "user", "uma mensagem", embedding=vec_text(unit_vector(502)))
    with pytest.raises(psycopg.errors.InvalidParameterValue) as err, db.transaction():
        set_tokens(db, mid, ids, token_bits)
    assert err.value.diag.message_primary == message


def test_tokens_need_the_message_embedding_and_its_owner(db: Conn, world: World) -> None:
    world.act("authenticated", world.member_a, world.tenant_a)
    plain = add(db, uuid.uuid4(), "user", "sem embedding")
    with pytest.raises(psycopg.errors.InvalidParameterValue) as err, db.transaction():
        set_tokens(db, plain, [1], [bits(1)])
    assert err.value.diag.message_primary == "the message has no embedding: its tokens belong to the embedding's model"
    mine = add(db, uuid.uuid4(), "user", "minha mensagem", embedding=vec_text(unit_vector(503)))
    # Another user of the same tenant neither sees nor changes it.
    world.act("authenticated", world.admin_a, world.tenant_a)
    with pytest.raises(psycopg.errors.NoDataFound) as err, db.transaction():
        set_tokens(db, mine, [1], [bits(1)])
    assert err.value.diag.message_primary == f"unknown message: {mine}"
    # Nor does a member of another tenant.
    world.act("authenticated", world.member_b, world.tenant_b)
    with pytest.raises(psycopg.errors.NoDataFound) as err, db.transaction():
        set_tokens(db, mine, [1], [bits(1)])
    assert err.value.diag.message_primary == f"unknown message: {mine}"
    # The owner may update the token columns only.
    world.act("authenticated", world.member_a, world.tenant_a)
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.transaction():
        db.execute("update hipocampo_private.messages set content = 'outra' where id = %s", (mine,))


def test_query_tokens_are_checked(db: Conn, user_a: World) -> None:
    conv = uuid.uuid4()
    with pytest.raises(psycopg.errors.InvalidParameterValue) as err, db.transaction():
        db.execute(
            "select * from hipocampo.search_history('oi', filter_conversation_id => %s, "
            "query_token_ids => array[1], query_token_bits => array[%s::varbit])",
            (conv, bits(1)),
        )
    assert err.value.diag.message_primary == "query tokens need query_embedding (their model's)"
    with pytest.raises(psycopg.errors.InvalidParameterValue) as err, db.transaction():
        search(db, conv, "oi", [1, 2], [bits(1)])
    assert err.value.diag.message_primary == (
        "query_token_ids and query_token_bits must have the same 1..512 items, none null"
    )


def test_messages_without_tokens_lists_what_the_backfill_needs(db: Conn, user_a: World) -> None:
    # Messages with an embedding of the active model and no tokens, oldest first,
    # each with its conversation's previous token_context_messages (2) messages, oldest first.
    conv, other_conv = uuid.uuid4(), uuid.uuid4()
    vec = vec_text(unit_vector(500))
    ids = [add(db, conv, "user", f"m{i}", embedding=vec) for i in range(4)]
    no_embedding = add(db, conv, "user", "m4")
    elsewhere = add(db, other_conv, "user", "o0", embedding=vec)
    set_tokens(db, ids[1], [7], [bits(700)])
    user_a.act("authenticated", user_a.member_b, user_a.tenant_b)
    in_b = add(db, uuid.uuid4(), "user", "b0", embedding=vec)
    user_a.act("service_role", None, user_a.tenant_a)

    def listed(tenant: uuid.UUID | None, after: int = 0, n: int = 100) -> list[tuple[int, list[str]]]:
        rows = db.execute(
            "select message_id, tenant_id, context from hipocampo.messages_without_tokens(%s, %s, %s)",
            (n, tenant, after),
        ).fetchall()
        return [(r["message_id"], r["context"]) for r in rows if r["message_id"] >= ids[0]]

    # ids[1] has its tokens, no_embedding cannot have any; a message's context includes ids[1].
    assert listed(user_a.tenant_a) == [(ids[0], []), (ids[2], ["m0", "m1"]), (ids[3], ["m1", "m2"]), (elsewhere, [])]
    # Every tenant's (after ids[0] - 1: the session's committed messages of other tests come first).
    assert listed(None, after=ids[0] - 1)[-1] == (in_b, [])
    assert no_embedding not in [m for m, _ in listed(None, after=ids[0] - 1)]
    assert listed(user_a.tenant_a, after=ids[2]) == [(ids[3], ["m1", "m2"]), (elsewhere, [])]
    assert listed(user_a.tenant_a, n=1) == [(ids[0], [])]
    # Messages of another model than the active one are not listed (their tokens would be its).
    db.execute("reset role")
    db.execute("update hipocampo_private.embedding_models set active = false where active")
    user_a.act("service_role", None, user_a.tenant_a)
    assert listed(None, after=ids[0] - 1) == []


@pytest.mark.parametrize("n", [0, 1001, None])
def test_messages_without_tokens_batch_size(db: Conn, user_a: World, n: int | None) -> None:
    user_a.act("service_role", None, user_a.tenant_a)
    with pytest.raises(psycopg.errors.InvalidParameterValue) as exc:
        db.execute("select * from hipocampo.messages_without_tokens(%s)", (n,))
    assert exc.value.sqlstate == "22023" and exc.value.diag.message_primary == "batch_size must be 1..1000"
