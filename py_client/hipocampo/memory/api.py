"""``hipocampo.Memory``: curated long-term memory, short-term staging, conversation history.

A thin layer over the SQL RPCs (the rules live in the database: see docs/design.md §memory):
this module embeds texts with the configured provider and maps results and refusals to typed
Python values. Every call runs as the client's actor, so RLS applies unchanged.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from pgvector import Vector

from ..client import Hipocampo
from ..embeddings.base import EmbeddingProvider, TokenEmbedder, TokenVectors, token_embedder
from ..errors import InvalidInputError, MemoryRejected, PreconditionError
from ..models import (
    ConversationContext,
    ErasureReport,
    HistoryHit,
    MemoryHit,
    MemoryRecord,
    Recall,
    RememberResult,
    UserExport,
)

__all__ = ["Memory"]

_RECORD_FIELDS = set(MemoryRecord.model_fields)


class Memory:
    """Memory of one user (the client's JWT user, or ``user_id`` for a service_role client).

    Args:
        client: a :class:`hipocampo.Hipocampo` acting as the user (``Actor.user``) or as
            service_role scoped to a tenant (``Actor.service(tenant_id)``, then pass ``user_id``).
        embedder: embeds memory texts and queries (``dims`` must match the active model);
            None disables semantic duplicate detection and :meth:`recall`.
        user_id: the data subject, only for a service_role client.

    Errors: :class:`MemoryRejected` when the gate refuses a write; other database errors as
    :mod:`hipocampo.errors` types with their SQLSTATE.
    """

    def __init__(
        self, client: Hipocampo, embedder: EmbeddingProvider | None = None, *, user_id: UUID | str | None = None
    ) -> None:
        self.client = client
        self.embedder = embedder
        self.user_id = str(user_id) if user_id else None
        self.tenant_id = str(client.actor.tenant_id) if client.actor.tenant_id else None

    # -- helpers -----------------------------------------------------------------------------
    def _subject(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "tenant_id": self.tenant_id}

    def _vector(self, text: str) -> str | None:
        if self.embedder is None:
            return None
        return str(Vector(self.embedder.embed_documents([text])[0]).to_text())

    def _consented(self) -> bool:
        """Whether the user has consented to long-term memory (``hipocampo.memory_consent``; over
        HTTP the memory function's consent-status route)."""
        return bool(self._call("memory_consent", self._subject()))

    def _query_vector(self, text: str) -> str:
        if self.embedder is None:
            raise InvalidInputError("semantic search needs an embedder")
        return str(Vector(self.embedder.embed_query(text)).to_text())

    def _call(self, fn: str, args: Mapping[str, Any]) -> Any:
        """The RPC's value through the client's one caller (``rpc.call``: argument types from the
        catalog)."""
        return self.client.rpc(fn, args)

    @staticmethod
    def _result(r: dict[str, Any]) -> RememberResult:
        if r.get("status") == "rejected":
            raise MemoryRejected(str(r.get("message")), str(r.get("sqlstate")), str(r.get("reason")))
        return RememberResult.model_validate(r)

    # -- consent and writes ------------------------------------------------------------------
    def has_consent(self) -> bool:
        """Whether the user has consented to long-term memory (``hipocampo.memory_consent``)."""
        return self._consented()

    def consent(self, granted: bool = True) -> None:
        """Record (or revoke) the user's consent to long-term memory (LGPD art. 7 I). Without it
        every write is refused with reason ``no_consent`` (42501)."""
        self._call("set_memory_consent", {"granted": granted, **self._subject()})

    def remember(
        self,
        key: str,
        value: Any,
        description: str,
        category: str,
        *,
        scope: str = "personal",
        confidence: float = 0.9,
        source: str = "explicit_user",
        source_ref: str | None = None,
        conversation_id: UUID | str | None = None,
        tags: Sequence[str] | None = None,
        emotion: str | None = None,
        intensity: float | None = None,
        life_domain: str | None = None,
        pinned: bool = False,
        expires_at: datetime | None = None,
    ) -> RememberResult:
        """Store a memory through the gate (one active value per key; the old one kept as history).

        Args:
            key: ``a.b`` snake_case (e.g. ``prefs.short_answers``). value: any JSON value.
            description: the memory text (3 characters .. 3,000 tokens), embedded for search.
            category: identity_profile | tenant_business | operating_model | goals_kpis |
                tools_integrations | people_contacts | projects | preference | pattern | style.
            confidence: 0..1 (floors 0.6, 0.70 for inferred: config ``memory``).
            intensity: 0..10; below 7 the memory goes to short-term staging (status ``staged``,
                expires within 30 days unless promoted).
        Returns: :class:`RememberResult` (created | updated | unchanged | duplicate | staged).
        Raises: MemoryRejected (the gate; reason + SQLSTATE), InvalidInputError (vocabulary,
            dimensions, staging expiry beyond 30 days).
        """
        args = {
            "key": key,
            "value": json.dumps(value),
            "description": description,
            "category": category,
            # Without consent the gate refuses (and records the attempt) before it reads the
            # embedding: none is computed, so no model is loaded for a refusal.
            "embedding": self._vector(description) if self.embedder is not None and self._consented() else None,
            "scope": scope,
            "confidence": confidence,
            "source": source,
            "source_ref": source_ref,
            "conversation_id": str(conversation_id) if conversation_id else None,
            "tags": list(tags) if tags is not None else None,
            "emotion": emotion,
            "intensity": intensity,
            "life_domain": life_domain,
            "pinned": pinned,
            "expires_at": expires_at,
            **self._subject(),
        }
        return self._result(self._call("remember", args))

    def correct(self, memory_id: UUID | str, value: Any, description: str) -> RememberResult:
        """ "Isso está errado": replace a memory's value; the old row is deprecated and audited.
        Raises NotFoundError (P0002) when no active memory with that id is visible."""
        r = self._call(
            "correct_memory",
            {
                "memory_id": str(memory_id),
                "value": json.dumps(value),
                "description": description,
                "embedding": self._vector(description),
            },
        )
        return self._result(r)

    def forget(self, memory_id: UUID | str) -> bool:
        """ "Esquece isso": soft delete. Returns False when no active memory has that id."""
        return bool(self._call("forget_memory", {"memory_id": str(memory_id)}))

    def promote(self, staging_id: UUID | str, intensity: float, *, override: bool = False) -> RememberResult:
        """Move a staged memory to long-term memory when the recomputed ``intensity`` (0..10) is
        >= 7 (else status ``kept``), or whatever it is with ``override`` (a human decision: the
        memory is pinned). Raises MemoryRejected (gate), NotFoundError (unknown staged id)."""
        r = self._call(
            "promote_memory",
            {"staging_id": str(staging_id), "intensity": intensity, "override": override},
        )
        return self._result(r)

    def seed_profile(self, profile: Mapping[str, Any], source_ref: str = "onboarding") -> dict[str, str]:
        """Write the onboarding profile keys (user.name, user.timezone, tenant.segment,
        prefs.short_answers, …) as memories; idempotent. Returns {key: status}. Raises
        InvalidInputError (22023) on any other key: free conversation is never stored."""
        result = dict(
            self._call(
                "seed_profile",
                {"profile": json.dumps(dict(profile)), "source_ref": source_ref, **self._subject()},
            )
        )
        if self.embedder is not None:
            self.embed_missing([k for k, status in result.items() if status in ("created", "updated")])
        return result

    def embed_missing(self, keys: Sequence[str] | None = None) -> int:
        """Embed the user's active memories that have no vector (written in SQL, e.g. the
        profile seed), optionally only those ``keys``. Returns how many were embedded."""
        if self.embedder is None:
            return 0
        todo = self.client.rpc(
            "memories_without_embedding", {"keys": list(keys) if keys is not None else None, **self._subject()}, "rows"
        )
        if not todo:
            return 0
        vectors = self.embedder.embed_documents([str(m["description"]) for m in todo])
        items = [{"memory_id": str(m["id"]), "embedding": list(v)} for m, v in zip(todo, vectors, strict=True)]
        return int(self._call("set_memory_embeddings", {"items": json.dumps(items)}))

    # -- reads ---------------------------------------------------------------------------------
    def recall(
        self,
        query: str,
        *,
        mode: str = "context",
        k: int | None = None,
        tags: Sequence[str] | None = None,
        emotion: str | None = None,
        life_domain: str | None = None,
        category: str | None = None,
        scope: str | None = None,
        min_score: float | None = None,
        include_staging: bool = True,
    ) -> Recall:
        """Semantic search of the user's memories (own + tenant_shared), both tiers.

        Thresholds (cosine): ``memory.context_threshold`` for mode ``context``,
        ``memory.answer_threshold`` for ``answer`` (config rows; docs/BENCHMARKS.md for the local
        model), +``pinned_bonus`` for pinned, MMR λ ``memory.mmr_lambda``; ``min_score``
        overrides. An empty or unknown tag filter is dropped and reported in ``fallback``.
        """
        rows = self.client.rpc(
            "search_memories",
            {
                "query_embedding": self._query_vector(query),
                "mode": mode,
                "match_count": k,
                "filter_tags": list(tags) if tags is not None else None,
                "filter_emotion": emotion,
                "filter_life_domain": life_domain,
                "filter_category": category,
                "filter_scope": scope,
                "min_score": min_score,
                "include_staging": include_staging,
            },
            "rows",
        )
        fallback = next((r["fallback"] for r in rows if r["fallback"]), None)
        return Recall(hits=[MemoryHit.model_validate(r) for r in rows if r["memory_id"]], fallback=fallback)

    def lookup(
        self, key: str | None = None, category: str | None = None, *, include_history: bool = False
    ) -> builtins.list[MemoryRecord]:
        """Exact lookup by key and/or category (active rows; the whole history with
        ``include_history``), newest first within a key. Counts as an access."""
        rows = self.client.rpc(
            "lookup_memories", {"key": key, "category": category, "include_history": include_history}, "rows"
        )
        return [_record(r, "long_term") for r in rows]

    def list(self, *, include_staging: bool = True, include_history: bool = False) -> builtins.list[MemoryRecord]:
        """Every memory the user can see: long-term (active, or all with ``include_history``) and
        staged ones (``tier`` = staging)."""
        out = self.lookup(include_history=include_history)
        if include_staging:
            out += [_record(r, "staging") for r in self.client.rpc("staged_memories", None, "rows")]
        return out

    # -- data-subject rights ---------------------------------------------------------------------
    def export(self) -> UserExport:
        """Everything held about the user (format ``hipocampo.user_export.v1``): consent, memories
        with history, staged memories, messages, summaries, sessions, events (:class:`UserExport`;
        ``.model_dump(mode="json")`` is the JSON document)."""
        return UserExport.model_validate(self._call("export_user_data", self._subject()))

    def erase(self) -> ErasureReport:
        """Erase the user from the tenant (LGPD art. 18 VI), one transaction: their data, their
        rate-limit bucket and their membership (the token no longer opens the tenant); one
        pseudonymous audit record remains. Returns the rows deleted per kind and the ``user_ref``
        (a keyed HMAC, docs/SECURITY.md §Erasure) as an :class:`ErasureReport`."""
        return ErasureReport.model_validate(self._call("erase_user", self._subject()))

    # -- conversation history --------------------------------------------------------------------
    def add_message(
        self,
        conversation_id: UUID | str,
        role: str,
        content: str,
        *,
        modality: str = "chat",
        attachments: Sequence[Mapping[str, Any]] | None = None,
        metadata: Mapping[str, Any] | None = None,
        language: str | None = None,
        created_at: datetime | None = None,
        embed: bool = True,
    ) -> int:
        """Append a message (role user | assistant | system | tool; modality chat | voice) to a
        conversation. Returns the message id. A user's message passes what it states of them (a
        name, a unit, a preference, an allergy) through the memory gate when they consented
        (``memory.propose_from_messages``; docs/design.md §Memory); nothing else becomes a memory.

        With ``embed`` the content is embedded, and with the local model its tokens are stored too
        (read after the conversation's previous messages; see :meth:`add_messages`)."""
        item = {
            "role": role,
            "content": content,
            "modality": modality,
            "attachments": list(attachments or []),
            "metadata": dict(metadata or {}),
            "created_at": created_at,
        }
        return self.add_messages(conversation_id, [item], language=language, embed=embed)[0]

    def add_messages(
        self,
        conversation_id: UUID | str,
        messages: Sequence[Mapping[str, Any]],
        *,
        language: str | None = None,
        embed: bool = True,
    ) -> builtins.list[int]:
        """Append many messages ({role, content, [modality, attachments, metadata, created_at]})
        in one transaction, embedding their contents in one batch. Returns the message ids.

        When the embedder gives token vectors (the offline model), each message's tokens are stored
        too (``hipocampo.set_message_tokens``: WordPiece ids and the sign bits of their contextual
        embeddings), each message read after the previous ``conversations.token_context_messages``
        messages of the conversation (2), for history search's late-interaction re-rank
        (history search's late-interaction re-rank). Raises the typed errors of ``hipocampo.add_message`` (e.g.
        InvalidInputError 23514 for an unknown role); nothing is stored then."""
        vectors: builtins.list[str | None] = [None] * len(messages)
        contents = [str(m["content"]) for m in messages]
        if messages:
            # Embed what will be stored: the database scrubs PII from messages when the tenant's
            # conversations.scrub_pii is on (the default).
            contents = self._scrubbed_contents(contents)
        if embed and self.embedder is not None and messages:
            vectors = [str(Vector(v).to_text()) for v in self.embedder.embed_documents(contents)]
        tokens = token_embedder(self.embedder) if embed else None
        ids: builtins.list[int] = []
        with self.client.transaction() as cur:
            token_rows = self._message_tokens(cur, tokens, conversation_id, contents) if tokens and messages else None
            for i, (m, vec) in enumerate(zip(messages, vectors, strict=True)):
                new_id = self.client.rpc_in(
                    cur,
                    "add_message",
                    {
                        "conversation_id": conversation_id,
                        "role": m["role"],
                        "content": contents[i],
                        "modality": m.get("modality", "chat"),
                        "attachments": list(m.get("attachments") or []),
                        "embedding": vec,
                        "metadata": dict(m.get("metadata") or {}),
                        "language": language,
                        "created_at": m.get("created_at"),
                        **self._subject(),
                    },
                )
                ids.append(int(new_id) if new_id is not None else 0)
                if token_rows and token_rows[i].ids and vec is not None:
                    self.client.rpc_in(
                        cur,
                        "set_message_tokens",
                        {"message_id": ids[-1], "token_ids": token_rows[i].ids, "token_bits": token_rows[i].bits},
                        "none",
                    )
        return ids

    def _scrubbed_contents(self, contents: Sequence[str]) -> builtins.list[str]:
        """``contents`` as the messages trigger will store them: scrubbed by ``hipocampo.scrub_pii``
        when the tenant's conversations.scrub_pii is on (missing means on), else unchanged."""
        config = self.client.rpc("effective_config", {"tenant_id": self.tenant_id}) or {}
        if not (config.get("conversations") or {}).get("scrub_pii", True):
            return list(contents)
        return [r.text for r in self.client.scrub_pii(contents)]

    def _message_tokens(
        self, cur: Any, tokens: TokenEmbedder, conversation_id: UUID | str, contents: Sequence[str]
    ) -> builtins.list[TokenVectors]:
        """Token vectors of ``contents``, each after the previous token_context_messages messages
        (the conversation's stored ones, then the batch's). 55000 (PreconditionError) when the
        key is not seeded."""
        config = self.client.rpc_in(cur, "effective_config", {"tenant_id": self.tenant_id}) or {}
        n_context = (config.get("conversations") or {}).get("token_context_messages")
        if n_context is None:
            raise PreconditionError(
                "conversations config is incomplete: token_context_messages (seed it from config.toml: "
                "hipocampo db migrate)",
                "55000",
            )
        n = int(n_context)
        history: builtins.list[str] = []
        if n > 0:
            got = self.client.rpc_in(
                cur, "conversation_context", {"conversation_id": conversation_id, "last_n": n, **self._subject()}
            )
            history = [str(x["content"]) for x in (got or {}).get("messages", [])]
        seen = history + list(contents)
        offset = len(history)
        contexts = [seen[max(0, offset + i - n) : offset + i] if n > 0 else [] for i in range(len(contents))]
        return list(tokens.embed_tokens(contents, contexts))

    def search_history(
        self,
        query: str,
        *,
        conversation_id: UUID | str | None = None,
        k: int | None = None,
        modality: str | None = None,
        dense: bool = True,
    ) -> builtins.list[HistoryHit]:
        """Hybrid search (BM25 + cosine, z-scored; config ``conversations``) of the user's own
        history, in one conversation or all. Each message is read with its neighbours
        (``context_weights_before`` / ``_after``) and its date words (``date_weight``,
        ``time_zone``); with the local model the best ``token_rerank_candidates`` are re-ranked by
        late interaction over tokens (``token_rerank_weight``); see
        docs/design.md §Memory (history). ``k`` defaults to ``conversations.match_count``.
        Returns at most k ``HistoryHit`` (scores: cosine, BM25, ranking score, token MaxSim).
        Raises ``InvalidInputError`` (22023) for an empty query or one over
        ``conversations.max_query_chars`` (2,000) characters."""
        semantic = dense and self.embedder is not None
        tokens = token_embedder(self.embedder) if semantic else None
        qt = tokens.embed_tokens([query])[0] if tokens else None
        rows = self.client.rpc(
            "search_history",
            {
                "query_text": query,
                "query_embedding": self._query_vector(query) if semantic else None,
                "filter_conversation_id": conversation_id,
                "match_count": k,
                "filter_modality": modality,
                **self._subject(),
                "query_token_ids": qt.ids if qt and qt.ids else None,
                "query_token_bits": qt.bits if qt and qt.ids else None,
            },
            "rows",
        )
        return [HistoryHit.model_validate(r) for r in rows]

    def context(self, conversation_id: UUID | str, last_n: int | None = None) -> ConversationContext:
        """A conversation's rolling summary and its last N messages (default
        ``sessions.last_messages``, 20), oldest first (:class:`ConversationContext`)."""
        return ConversationContext.model_validate(
            self._call(
                "conversation_context",
                {"conversation_id": str(conversation_id), "last_n": last_n, **self._subject()},
            )
        )


def _record(row: dict[str, Any], tier: str) -> MemoryRecord:
    return MemoryRecord.model_validate({k: v for k, v in row.items() if k in _RECORD_FIELDS} | {"tier": tier})
