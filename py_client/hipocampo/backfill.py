"""Backfills: what search needs and a row lacks, computed where the embedding model runs.

- :func:`embed_missing_rows`: chunks, active and staged memories and messages
  without an embedding of the active model (after a model switch, or messages stored through the edge
  functions without a vector) get one; then the old model can be dropped.
- :func:`backfill_message_tokens`: messages stored before the late-interaction re-rank,
  through the edge functions (no token model in Deno) or by a client without the token model have
  an embedding but no tokens; in a history that mixes them with messages that have tokens they
  rank at the tokens' minimum among the re-rank's candidates (docs/design.md §history search).
  It gives them their tokens, as ``Memory.add_messages`` would have.
- :func:`backfill_chunk_sentences`: chunks without sentence embeddings
  in knowledge bases whose answer gate reads them (``rag.sentence_weight`` > 0: ingested before
  the weight was set, or a new model's rows added by :func:`embed_missing_rows`) get them, as
  ingestion would have written them.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from .client import Hipocampo, vector_text
from .embeddings.base import token_embedder
from .errors import EmbeddingError
from .ingest.chunking import chunk_sentences

__all__ = ["KINDS", "backfill_chunk_sentences", "backfill_message_tokens", "embed_missing_rows"]

KINDS = ("chunks", "memories", "memory_staging", "messages")


def _check_active(client: Hipocampo, embedder: Any) -> None:
    """EmbeddingError unless ``embedder`` is the active model."""
    active = client.active_embedding_model()
    if active != embedder.model_name:
        raise EmbeddingError(
            f"the active embedding model is {active!r}; its rows need its own embedder, not {embedder.model_name!r}"
        )


def backfill_message_tokens(
    client: Hipocampo,
    embedder: Any,
    *,
    batch_size: int = 100,
    tenant_id: UUID | str | None = None,
    limit: int | None = None,
) -> int:
    """Store the tokens of the messages that have an embedding of the active model and none.

    ``hipocampo.messages_without_tokens`` lists a batch (oldest first, each with its previous
    ``conversations.token_context_messages`` messages, locked until the batch commits),
    ``embedder.embed_tokens`` reads each message after them, ``hipocampo.set_message_tokens``
    stores them; one transaction per batch, so an interrupted run keeps what it committed and
    several workers can run side by side.

    Args:
        client: a service_role client (``Actor.service()``, the default actor).
        embedder: the active model's provider (``model_name`` must be the active model's); one
            without token vectors (OpenAI / Azure) stores nothing.
        batch_size: messages per transaction, 1..1000 (~25 ms of CPU each with the local model).
        tenant_id: only this tenant's messages (default: every tenant's).
        limit: stop after about this many messages (default: until none is left).

    Returns:
        The number of messages whose tokens were stored.

    Raises:
        EmbeddingError: ``embedder`` is not the active model.
        InvalidInputError: batch_size outside 1..1000 (22023).
        PreconditionError: a tenant's ``conversations.token_context_messages`` is not seeded (55000).
        PermissionDeniedError: the client is not service_role (42501).
    """
    tokens = token_embedder(embedder)
    if tokens is None:
        return 0
    _check_active(client, embedder)
    stored, after = 0, 0
    while limit is None or stored < limit:
        with client.transaction() as cur:
            batch = client.rpc_in(
                cur,
                "messages_without_tokens",
                {"batch_size": batch_size, "filter_tenant_id": tenant_id, "after_message_id": after},
                "rows",
            )
            if not batch:
                break
            vectors = tokens.embed_tokens([r["content"] for r in batch], [list(r["context"]) for r in batch])
            for r, tv in zip(batch, vectors, strict=True):
                if tv.ids:
                    client.rpc_in(
                        cur,
                        "set_message_tokens",
                        {"message_id": r["message_id"], "token_ids": tv.ids, "token_bits": tv.bits},
                        "none",
                    )
                    stored += 1
            after = int(batch[-1]["message_id"])
    return stored


def embed_missing_rows(
    client: Hipocampo,
    embedder: Any,
    *,
    kinds: tuple[str, ...] = KINDS,
    batch_size: int = 100,
    limit: int | None = None,
) -> dict[str, int]:
    """Embed, with the active model, the rows search cannot read with it: chunks whose content has
    no chunk of the active model (the title and content ingestion embeds; a row of the active model
    is added beside the source row), active memories and staged memories (their description) and
    messages (their content) that have no embedding or one of another model.

    After ``activate_embedding_model`` this carries the knowledge bases, memories and history over
    to the new model without the source files
    (``drop_embedding_model`` of the old one refuses until it is done, 55000); it also embeds
    messages stored through the edge functions without a vector. ``hipocampo.rows_to_embed``
    lists a batch (locked until it commits), ``embedder.embed_documents`` embeds it,
    ``hipocampo.set_row_embeddings`` stores it; one transaction per batch. A message's tokens are
    cleared with its old embedding: run :func:`backfill_message_tokens` afterwards.

    Args:
        client: a service_role client (``Actor.service()``, the default actor).
        embedder: the active model's provider (its ``model_name``).
        kinds: which of ``chunks``, ``memories``, ``memory_staging``, ``messages`` (default all).
        batch_size: rows per transaction, 1..1000.
        limit: stop each kind after about this many rows (default: until none is left).

    A batch the embedder fails on (EmbeddingError: the provider is down, a rate limit outlasted
    its retries) is recorded with ``hipocampo.record_embedding_failure``: its rows are retried by a
    later run after an exponential backoff (``maintenance.embedding_retry_seconds``, doubling, at
    most ``embedding_retry_max_seconds``) and dead-lettered after ``embedding_max_attempts``
    failures (view ``hipocampo.embedding_queue``; ``requeue_embedding_failures`` gives them back).
    A worker that dies mid-batch leaves its rows to the next (its transaction rolls back).

    Returns:
        Rows embedded per kind, e.g. ``{"chunks": 250, "memories": 3, "memory_staging": 0, "messages": 120}``,
        and ``<kind>_failed`` (rows whose embedding failed in this run) when there were any.

    Raises:
        EmbeddingError: ``embedder`` is not the active model.
        InvalidInputError: unknown kind or batch_size outside 1..1000 (22023).
        PermissionDeniedError: the client is not service_role (42501).
    """
    _check_active(client, embedder)
    done: dict[str, int] = {}
    for kind in kinds:
        stored, failed, after = 0, 0, None
        while limit is None or stored < limit:
            with client.transaction() as cur:
                batch = client.rpc_in(
                    cur, "rows_to_embed", {"kind": kind, "batch_size": batch_size, "after_id": after}, "rows"
                )
                if not batch:
                    break
                ids = [str(r["row_id"]) for r in batch]
                try:
                    vectors = embedder.embed_documents([r["content"] for r in batch])
                except EmbeddingError as exc:
                    # The provider failed: the batch's rows wait for their retry (backoff), or are
                    # dead-lettered after maintenance.embedding_max_attempts; the others go on.
                    client.rpc_in(cur, "record_embedding_failure", {"kind": kind, "row_ids": ids, "error": str(exc)})
                    failed += len(ids)
                    after = ids[-1]
                    continue
                items = [{"id": i, "embedding": list(v)} for i, v in zip(ids, vectors, strict=True)]
                stored += int(client.rpc_in(cur, "set_row_embeddings", {"kind": kind, "items": items}) or 0)
                after = ids[-1]
        done[kind] = stored
        if failed:
            done[f"{kind}_failed"] = failed
    return done


def backfill_chunk_sentences(
    client: Hipocampo,
    embedder: Any,
    *,
    batch_size: int = 100,
    tenant_id: UUID | str | None = None,
    limit: int | None = None,
) -> int:
    """Store the sentence embeddings of the chunks whose answer gate reads them and that have none.

    ``hipocampo.chunks_without_sentences`` lists a batch (chunks of the active model in knowledge
    bases whose ``rag.sentence_weight`` is above 0, by id, locked until the batch commits), each
    chunk's sentences (:func:`hipocampo.ingest.chunking.chunk_sentences`, as ingestion splits them)
    are embedded as passages in one ``embedder.embed_documents`` call, and
    ``hipocampo.set_chunk_sentences`` stores them; one transaction per batch, so an interrupted
    run keeps what it committed and several workers can run side by side. A batch the embedder
    fails on is skipped in this run (its chunks are listed again by the next).

    Args:
        client: a service_role client (``Actor.service()``, the default actor).
        embedder: the active model's provider (``model_name`` must be the active model's).
        batch_size: chunks per transaction, 1..1000 (~5 sentences each: with
            multilingual-e5-small ~7 ms a sentence on 2 cores, docs/BENCHMARKS.md §What the
            sentences cost at ingestion).
        tenant_id: only this tenant's chunks (default: every tenant's).
        limit: stop after about this many chunks (default: until none is left).

    Returns:
        The number of chunks whose sentence embeddings were stored.

    Raises:
        EmbeddingError: ``embedder`` is not the active model.
        InvalidInputError: batch_size outside 1..1000 (22023).
        PermissionDeniedError: the client is not service_role (42501).
    """
    _check_active(client, embedder)
    stored, after = 0, 0
    while limit is None or stored < limit:
        with client.transaction() as cur:
            batch = client.rpc_in(
                cur,
                "chunks_without_sentences",
                {"batch_size": batch_size, "filter_tenant_id": tenant_id, "after_chunk_id": after},
                "rows",
            )
            if not batch:
                break
            after = int(batch[-1]["chunk_id"])
            sentences = [chunk_sentences(str(r["content"])) for r in batch]
            try:
                vectors = iter(embedder.embed_documents([t for ss in sentences for t in ss]))
            except EmbeddingError:
                continue
            items = [
                {"id": str(r["chunk_id"]), "sentence_embeddings": [vector_text(next(vectors)) for _ in ss]}
                for r, ss in zip(batch, sentences, strict=True)
            ]
            stored += int(client.rpc_in(cur, "set_chunk_sentences", {"items": items}) or 0)
    return stored
