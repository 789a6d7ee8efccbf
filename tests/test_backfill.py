"""Backfills (hipocampo.backfill): messages stored with an embedding and no tokens get the tokens
Memory.add_messages would have stored, once; rows without an embedding of the
active model get one. The listed rows are locked for the batch, so workers run
side by side. Data is committed (each test on a fresh tenant): locks and concurrent workers need
other connections."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from hipocampo import Actor, EmbeddingError, Hipocampo, InvalidInputError, Memory, PermissionDeniedError
from hipocampo.backfill import backfill_chunk_sentences, backfill_message_tokens, embed_missing_rows
from hipocampo.cli import app
from hipocampo.embeddings import count_tokens
from hipocampo.ingest import DocumentInput, ingest_documents
from hipocampo.ingest.chunking import chunk_sentences
from hipocampo.ingest.loaders import LoadedDocument

from .conftest import MODEL, CountingEmbedder

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
        match=rf"^the active embedding model is '{MODEL}'; its rows need its own embedder, not 'e5-small'$",
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
    assert set(done) == {"chunks", "memories", "memory_staging", "messages"} and done["messages"] >= 4
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
    assert (
        set(out) == {"chunks", "memories", "memory_staging", "messages", "message_tokens", "chunk_sentences"}
        and out["message_tokens"] >= 4
    )
    assert all(t[0] is not None for t in tenant.tokens(root))
    res = runner.invoke(app, ["db", "embed-missing"])
    assert json.loads(res.output) == {
        "chunks": 0,
        "memories": 0,
        "memory_staging": 0,
        "messages": 0,
        "message_tokens": 0,
        "chunk_sentences": 0,
    }
    res = runner.invoke(app, ["db", "embed-missing", "--batch-size", "0"])
    assert res.exit_code == 1 and "error [22023]: batch_size must be 1..1000" in res.output


# -- sentence embeddings of chunks ---------------------------------
def test_sentences_are_backfilled_where_the_gate_reads_them(root: Hipocampo, embedder: Any) -> None:
    """Chunks ingested while rag.sentence_weight was 0 get their sentences' embeddings once a
    knowledge base's weight is above 0, as ingestion would have written them; only there."""
    tid = root.create_tenant("T", f"bs-{uuid.uuid4().hex[:10]}", uuid.uuid4())
    service = root.as_actor(Actor.service(tid))
    service.set_tenant_config("rag", {"sentence_weight": 0.0})  # ingested unweighted, whatever the model
    texts = [
        "Art. 1º O portão fecha às 23h. Visitantes se identificam na portaria.",
        "Art. 2º A piscina abre às 9h. Crianças entram acompanhadas.",
    ]
    for kb in ("lido", "sem-frases"):
        docs = [
            DocumentInput(LoadedDocument(f"Doc {i}", t, f"test://{kb}/{i}"), "regulation") for i, t in enumerate(texts)
        ]
        ingest_documents(service, kb, docs, embedder, count_tokens)
    kb_id = service.kb_id("lido")
    assert backfill_chunk_sentences(root, embedder, tenant_id=tid) == 0  # weight 0: nothing listed
    service.set_kb_config(kb_id, "rag", {"sentence_weight": 0.4})
    assert backfill_chunk_sentences(root, embedder, tenant_id=tid, batch_size=1, limit=1) == 1
    assert backfill_chunk_sentences(root, embedder, tenant_id=tid, batch_size=1) == 1
    assert backfill_chunk_sentences(root, embedder, tenant_id=tid) == 0
    with root.transaction() as cur:
        cur.execute(
            "select k.name, c.content, c.sentence_embeddings::text[] as s from hipocampo_private.chunks c"
            " join hipocampo_private.knowledge_bases k on k.id = c.kb_id where c.tenant_id = %s"
            " order by k.name, c.id",
            (tid,),
        )
        rows = cur.fetchall()
    assert [r["s"] is None for r in rows] == [False, False, True, True]
    for r in rows[:2]:
        expected = embedder.embed_documents(chunk_sentences(r["content"]))
        got = [[float(x) for x in v.strip("[]").split(",")] for v in r["s"]]
        assert len(got) == 2 and got == [pytest.approx(v, abs=1e-5) for v in expected]
    with pytest.raises(InvalidInputError, match=r"batch_size must be 1\.\.1000"):
        backfill_chunk_sentences(root, embedder, batch_size=0)
    member = root.as_actor(Actor.user(uuid.uuid4(), tid))
    with pytest.raises(PermissionDeniedError):
        member.rpc("chunks_without_sentences", {"batch_size": 1})


def test_set_chunk_sentences_checks_its_items(root: Hipocampo, embedder: Any) -> None:
    tid = root.create_tenant("T", f"bs-{uuid.uuid4().hex[:10]}", uuid.uuid4())
    service = root.as_actor(Actor.service(tid))
    doc = DocumentInput(LoadedDocument("Doc", "O portão fecha às 23h.", "test://um"), "regulation")
    ingest_documents(service, "checa", [doc], embedder, count_tokens)
    with root.transaction() as cur:
        cur.execute("select id from hipocampo_private.chunks where tenant_id = %s", (tid,))
        row = cur.fetchone()
        assert row is not None
        chunk = str(row["id"])
    v = embedder.embed_documents(["O portão fecha às 23h."])[0]
    cases = [
        (
            {"id": chunk, "sentence_embeddings": []},
            f"sentence_embeddings of chunk {chunk} must be a json array of 1 to 64 embeddings",
        ),
        ({"id": chunk}, f"sentence_embeddings of chunk {chunk} must be a json array of 1 to 64 embeddings"),
        (
            {"id": chunk, "sentence_embeddings": [v, v[:10]]},
            f"a sentence embedding of chunk {chunk} has 10 dimensions; its model expects {len(v)}",
        ),
    ]
    for item, message in cases:
        with pytest.raises(InvalidInputError) as exc:
            root.rpc("set_chunk_sentences", {"items": [item]})
        assert exc.value.message == message
    assert (
        root.rpc(
            "set_chunk_sentences",
            {"items": [{"id": chunk, "sentence_embeddings": [v]}, {"id": "0", "sentence_embeddings": [v]}]},
        )
        == 1
    )


# -- retries and dead letters (issue 20 §4) ----------------------------------------------------
class Flaky:
    """The active model's provider, failing its first ``failures`` calls (None: always)."""

    def __init__(self, inner: Any, failures: int | None) -> None:
        self.inner, self.failures, self.calls = inner, failures, 0
        self.model_name, self.provider, self.dims, self.model_version = (
            inner.model_name,
            inner.provider,
            inner.dims,
            inner.model_version,
        )

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.failures is None or self.calls <= self.failures:
            raise EmbeddingError(f"embedding endpoint unreachable (call {self.calls})")
        return list(self.inner.embed_documents(texts))

    def embed_query(self, text: str) -> list[float]:
        return list(self.inner.embed_query(text))


def _unembedded_messages(root: Hipocampo, n: int = 2) -> tuple[Memory, uuid.UUID, list[int]]:
    tid = root.create_tenant("Q", f"q-{uuid.uuid4().hex[:10]}", uuid.uuid4())
    user = uuid.uuid4()
    root.add_member(tid, user, "member")
    member = Memory(root.as_actor(Actor.user(user, tid)), None)  # stored without vectors
    conv = uuid.uuid4()
    return member, conv, member.add_messages(conv, [{"role": "user", "content": t} for t in TEXTS[:n]])


def _failures(root: Hipocampo, ids: list[int]) -> list[dict[str, Any]]:
    with root.transaction() as cur:
        cur.execute(
            "select row_id, attempts, dead, last_error from hipocampo_private.embedding_failures"
            " where kind = 'messages' and row_id = any(%s) order by row_id",
            ([str(i) for i in ids],),
        )
        return [dict(r) for r in cur.fetchall()]


def _time_passes(root: Hipocampo, ids: list[int]) -> None:
    """The retry time comes (the backoff is minutes; the test moves the clock of the rows)."""
    with root.transaction() as cur:
        cur.execute(
            "update hipocampo_private.embedding_failures set next_attempt_at = now() - interval '1 second'"
            " where kind = 'messages' and row_id = any(%s)",
            ([str(i) for i in ids],),
        )


def _drain_others(root: Hipocampo, embedder: Any) -> None:
    """Rows other tests left without a vector are embedded first, so the runs below see ours."""
    embed_missing_rows(root, embedder, kinds=("messages",))


def test_a_provider_that_fails_twice_is_retried_with_backoff(root: Hipocampo, embedder: Any) -> None:
    _drain_others(root, embedder)
    member, conv, ids = _unembedded_messages(root)
    flaky = Flaky(embedder, failures=2)
    first = embed_missing_rows(root, flaky, kinds=("messages",))
    assert first == {"messages": 0, "messages_failed": 2}
    assert [(f["attempts"], f["dead"]) for f in _failures(root, ids)] == [(1, False), (1, False)]
    assert embed_missing_rows(root, flaky, kinds=("messages",)) == {"messages": 0}  # still backing off
    _time_passes(root, ids)
    assert embed_missing_rows(root, flaky, kinds=("messages",))["messages_failed"] == 2
    assert [f["attempts"] for f in _failures(root, ids)] == [2, 2]
    with root.transaction() as cur:  # the second wait is longer: 60 s, then 120 s (doubling)
        cur.execute(
            "select min(next_attempt_at - updated_at) as wait from hipocampo_private.embedding_failures"
            " where kind = 'messages' and row_id = any(%s)",
            ([str(i) for i in ids],),
        )
        row = cur.fetchone()
        assert row is not None and row["wait"].total_seconds() >= 119
    _time_passes(root, ids)
    assert embed_missing_rows(root, flaky, kinds=("messages",)) == {"messages": 2}
    assert _failures(root, ids) == []  # embedded: out of the bookkeeping
    hits = Memory(member.client, embedder).search_history("grupo de apoio", conversation_id=conv)
    assert hits and hits[0].content == TEXTS[0] and hits[0].dense_score is not None


def test_a_provider_that_always_fails_dead_letters_the_rows(root: Hipocampo, embedder: Any) -> None:
    _drain_others(root, embedder)
    _, _, ids = _unembedded_messages(root, 1)
    broken = Flaky(embedder, failures=None)
    for _ in range(5):  # maintenance.embedding_max_attempts
        assert embed_missing_rows(root, broken, kinds=("messages",))["messages_failed"] == 1
        _time_passes(root, ids)
    (failure,) = _failures(root, ids)
    assert (failure["attempts"], failure["dead"]) == (5, True)
    assert failure["last_error"] == "embedding endpoint unreachable (call 5)"
    assert embed_missing_rows(root, broken, kinds=("messages",)) == {"messages": 0}  # a dead letter waits
    with root.transaction() as cur:
        cur.execute("select * from hipocampo.embedding_queue where kind = 'messages'")
        queue = cur.fetchone()
    assert queue is not None and queue["dead"] >= 1 and queue["waiting"] >= 1
    assert queue["last_dead_letter_error"] == "embedding endpoint unreachable (call 5)"
    assert root.rpc("requeue_embedding_failures", {"kind": "messages"}) >= 1  # the provider is fixed
    assert embed_missing_rows(root, embedder, kinds=("messages",))["messages"] >= 1
    assert _failures(root, ids) == []


def test_two_workers_embed_each_row_once(root: Hipocampo, embedder: Any) -> None:
    import threading
    import time

    _drain_others(root, embedder)
    for _ in range(3):
        _unembedded_messages(root, 4)

    class Slow(CountingEmbedder):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            time.sleep(0.2)  # both workers hold a batch at the same time
            return super().embed_documents(texts)

    workers = [Slow(embedder), Slow(embedder)]
    results: list[dict[str, int]] = []
    threads = [
        threading.Thread(
            target=lambda w=w: results.append(embed_missing_rows(root, w, kinds=("messages",), batch_size=2))
        )
        for w in workers
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r["messages"] for r in results) == 12 and sum(w.texts for w in workers) == 12
    assert all(w.texts > 0 for w in workers)  # both worked, on different rows


def test_rows_a_crashed_worker_held_are_taken_by_the_next(root: Hipocampo, database_url: str, embedder: Any) -> None:
    _drain_others(root, embedder)
    _, _, ids = _unembedded_messages(root)
    crashed = psycopg.connect(database_url)  # claims the rows, then dies without committing
    pid = crashed.info.backend_pid
    claimed = crashed.execute("select row_id from hipocampo.rows_to_embed('messages', 10)").fetchall()
    assert {int(r[0]) for r in claimed} >= set(ids)
    assert embed_missing_rows(root, embedder, kinds=("messages",)) == {"messages": 0}  # locked: skipped
    crashed.close()  # the process is gone: its transaction rolls back, its locks go
    # (the server ends that backend after the socket closes, not before close() returns: under
    # load the next claim could still find the rows locked; wait until the backend is gone)
    with psycopg.connect(database_url, autocommit=True) as watch:
        deadline = time.monotonic() + 30
        while watch.execute("select 1 from pg_stat_activity where pid = %s", (pid,)).fetchone():
            assert time.monotonic() < deadline, "the crashed worker's backend is still there after 30 s"
            time.sleep(0.05)
    assert embed_missing_rows(root, embedder, kinds=("messages",))["messages"] >= 2
