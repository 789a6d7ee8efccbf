"""Backfills (hipocampo.backfill): messages stored with an embedding and no tokens get the tokens
Memory.add_messages would have stored, once (migration 003600); rows without an embedding of the
active model get one (migration 003700). The listed rows are locked for the batch, so workers run
side by side. Data is committed (each test on a fresh tenant): locks and concurrent workers need
other connections."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from hipocampo import Actor, EmbeddingError, Hipocampo, InvalidInputError, Memory, PermissionDeniedError
from hipocampo.backfill import backfill_message_tokens, embed_missing_rows
from hipocampo.cli import app

from .conftest import CountingEmbedder

TEXTS = [
    "Caroline: fui ao grupo de apoio ontem",
    "Melanie: que bom! como foi?",
    "Caroline: muito acolhedor, voltei inspirada",
    "Melanie: pintei um pôr do sol no lago",
]


class Tenant:
    """A fresh tenant with one member whose conversation was stored without tokens (an embedder
    without token vectors, as the edge functions and the OpenAI provider store them)."""

    def __init__(self, root: Hipocampo, embedder: Any) -> None:
        self.slug = f"bf-{uuid.uuid4().hex[:10]}"
        self.id = root.create_tenant("T", self.slug, uuid.uuid4())
        self.user = uuid.uuid4()
        root.add_member(self.id, self.user, "member")
        self.member = Memory(root.as_actor(Actor.user(self.user, self.id)), CountingEmbedder(embedder))
        self.conversation = uuid.uuid4()
        self.ids = self.member.add_messages(self.conversation, [{"role": "user", "content": t} for t in TEXTS])

    def tokens(self, root: Hipocampo) -> list[tuple[list[int] | None, list[str] | None]]:
        with root.transaction() as cur:
            cur.execute(
                "select token_ids, token_bits::text[] as bits from hipocampo_private.messages "
                "where id = any(%s) order by id",
                (self.ids,),
            )
            return [(r["token_ids"], r["bits"]) for r in cur.fetchall()]


@pytest.fixture
def root(database_url: str) -> Iterator[Hipocampo]:
    with Hipocampo(database_url) as client:
        yield client


@pytest.fixture
def tenant(root: Hipocampo, embedder: Any) -> Tenant:
    return Tenant(root, embedder)


def test_backfill_stores_the_tokens_add_messages_would_have(root: Hipocampo, tenant: Tenant, embedder: Any) -> None:
    assert tenant.tokens(root) == [(None, None)] * 4
    assert backfill_message_tokens(root, embedder, tenant_id=tenant.id, batch_size=3) == 4
    # Each message read after its conversation's previous token_context_messages (2) messages.
    expected = embedder.embed_tokens(TEXTS, [[], TEXTS[:1], TEXTS[:2], TEXTS[1:3]])
    assert tenant.tokens(root) == [(t.ids, t.bits) for t in expected]
    # Done once: nothing left to list.
    assert backfill_message_tokens(root, embedder, tenant_id=tenant.id) == 0
    # The re-rank now scores them.
    hits = Memory(tenant.member.client, embedder).search_history("pintura no lago", conversation_id=tenant.conversation)
    assert hits and all(h.token_score is not None for h in hits)


def test_limit_and_tenant_filter(root: Hipocampo, tenant: Tenant, embedder: Any) -> None:
    other = Tenant(root, embedder)
    assert backfill_message_tokens(root, embedder, tenant_id=tenant.id, batch_size=2, limit=2) == 2
    assert [t[0] is not None for t in tenant.tokens(root)] == [True, True, False, False]
    assert other.tokens(root) == [(None, None)] * 4
    assert backfill_message_tokens(root, embedder, tenant_id=tenant.id) == 2


def test_listed_messages_are_locked_for_other_workers(
    database_url: str, root: Hipocampo, tenant: Tenant, embedder: Any
) -> None:
    listing = "select message_id, context from hipocampo.messages_without_tokens(2, %s::uuid, 0) order by message_id"
    with psycopg.connect(database_url) as first:
        rows = first.execute(listing, (tenant.id,)).fetchall()
        assert [r[0] for r in rows] == tenant.ids[:2] and [list(r[1]) for r in rows] == [[], TEXTS[:1]]
        # A second worker skips the first one's batch and takes the rest.
        assert backfill_message_tokens(root, embedder, tenant_id=tenant.id) == 2
        assert [t[0] is not None for t in tenant.tokens(root)] == [False, False, True, True]
        first.rollback()
    assert backfill_message_tokens(root, embedder, tenant_id=tenant.id) == 2


def test_errors(root: Hipocampo, tenant: Tenant, embedder: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"^batch_size must be 1\.\.1000$"):
        backfill_message_tokens(root, embedder, tenant_id=tenant.id, batch_size=0)
    with pytest.raises(PermissionDeniedError, match="permission denied for function messages_without_tokens"):
        backfill_message_tokens(tenant.member.client, embedder)

    class OtherModel(CountingEmbedder):
        tokens_supported = True

        def embed_tokens(self, texts: Any, contexts: Any = None) -> Any:
            return self.inner.embed_tokens(texts, contexts)

    other = OtherModel(embedder)
    other.model_name = "e5-small"
    with pytest.raises(
        EmbeddingError,
        match=r"^the active embedding model is 'all-MiniLM-L6-v2'; its rows need its own embedder, not 'e5-small'$",
    ):
        backfill_message_tokens(root, other, tenant_id=tenant.id)
    with pytest.raises(EmbeddingError, match="its rows need its own embedder, not 'e5-small'"):
        embed_missing_rows(root, other)
    # An embedder without token vectors (OpenAI / Azure) stores nothing.
    assert backfill_message_tokens(root, CountingEmbedder(embedder), tenant_id=tenant.id) == 0
    assert tenant.tokens(root) == [(None, None)] * 4


def test_messages_without_a_vector_are_embedded_then_given_tokens(root: Hipocampo, embedder: Any) -> None:
    # Messages stored without a vector (the edge functions with the offline model) get one of the
    # active model, then their tokens: search reads them as if Memory.add_messages had stored them.
    slug = f"bf-{uuid.uuid4().hex[:10]}"
    tid = root.create_tenant("T", slug, uuid.uuid4())
    user = uuid.uuid4()
    root.add_member(tid, user, "member")
    member = Memory(root.as_actor(Actor.user(user, tid)), None)
    conv = uuid.uuid4()
    ids = member.add_messages(conv, [{"role": "user", "content": t} for t in TEXTS])
    done = embed_missing_rows(root, embedder, batch_size=2)
    assert set(done) == {"memories", "memory_staging", "messages"} and done["messages"] >= 4
    with root.transaction() as cur:
        cur.execute(
            "select embedding::text as e from hipocampo_private.messages where id = any(%s) order by id", (ids,)
        )
        stored = [[float(x) for x in r["e"].strip("[]").split(",")] for r in cur.fetchall()]
    for got, want in zip(stored, embedder.embed_documents(TEXTS), strict=True):
        assert sum(a * b for a, b in zip(got, want, strict=True)) > 0.9999
    assert embed_missing_rows(root, embedder)["messages"] == 0
    assert backfill_message_tokens(root, embedder, tenant_id=tid) == 4
    hits = Memory(member.client, embedder).search_history("pintura no lago", conversation_id=conv)
    assert hits[0].content == TEXTS[3] and all(h.dense_score is not None and h.token_score is not None for h in hits)


def test_cli_embed_missing(root: Hipocampo, tenant: Tenant) -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["db", "embed-missing", "--batch-size", "3"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert set(out) == {"memories", "memory_staging", "messages", "message_tokens"} and out["message_tokens"] >= 4
    assert all(t[0] is not None for t in tenant.tokens(root))
    res = runner.invoke(app, ["db", "embed-missing"])
    assert json.loads(res.output) == {"memories": 0, "memory_staging": 0, "messages": 0, "message_tokens": 0}
    res = runner.invoke(app, ["db", "embed-missing", "--batch-size", "0"])
    assert res.exit_code == 1 and "error [22023]: batch_size must be 1..1000" in res.output
