"""The answer-or-refuse pipeline (``Orchestrator.ask``, ``hipocampo ask``, POST /ask).

Per call: guardrails (``hipocampo.question_refusal``; no retrieval, no model call when they
refuse) -> rate limit (token bucket in Postgres) -> answer cache -> question embedding ->
``hipocampo.answer_evidence`` (retrieval, support, conflicts, evidence under the token budget,
confidence and cross-check gates, all in SQL) -> generation (``hipocampo.extractive_answer`` or an
LLM) -> post-validation of numbers (``hipocampo.numbers_absent``) -> cited sources
(``hipocampo.answer_sources``) -> cache -> audit row. The Deno ``ask`` edge function calls the
same RPCs in the same order, so both answer a question alike. Every call
gets a trace id and an audit row (``hipocampo.record_answer``); timings per step are logged at
DEBUG as JSON (logger ``hipocampo.orchestrator``). Rules and thresholds come from the database
(``hipocampo.rag_config``), never from this module.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from pgvector import Vector
from pydantic import BaseModel, ValidationError

from ..client import Actor, Hipocampo
from ..embeddings import EmbeddingProvider
from ..embeddings.factory import query_vector
from ..errors import HipocampoError, InvalidInputError
from ..models import Answer, Source
from .generation import GenerationError, Generator, NotInSources, generator_for

__all__ = ["Orchestrator", "StreamEvent", "question_refusal"]

log = logging.getLogger("hipocampo.orchestrator")


class Orchestrator:
    """Answers questions over a tenant's knowledge bases, citing sources or refusing.

    Args:
        client: a :class:`Hipocampo` acting as the caller (a user through JWT claims, so RLS
            applies; or service_role with a tenant).
        embedder: the provider of the knowledge bases' embedding model (e.g. ``LocalMiniLM``).
        generator: overrides the generator the rag config names (default: ``generator_for``).
    """

    def __init__(self, client: Hipocampo, embedder: EmbeddingProvider, generator: Generator | None = None) -> None:
        self.client = client
        self.embedder = embedder
        self.generator = generator

    def config(self, kb_ids: Sequence[UUID] | None = None, agent: str | None = None) -> dict[str, Any]:
        """The effective rag config (``hipocampo.rag_config``) for these knowledge bases / agent."""
        return self.client.rag_config_json(kb_ids[0] if kb_ids and len(kb_ids) == 1 else None, agent)

    def ask(
        self,
        question: str,
        *,
        kb_ids: Sequence[UUID] | None = None,
        agent: str | None = None,
        use_cache: bool = True,
        rate_limit: bool = True,
        session_id: UUID | str | None = None,
    ) -> Answer:
        """Answer ``question`` with cited sources, or refuse with a reason code.

        Within a session (``session_id``, issue 45 §3) the retrieval hierarchy applies
        (``hipocampo.session_turn``): a follow-up ("e aos domingos?") is resolved against the
        previous turn, a question the session already answered gets that answer again
        (``answer_source`` SESSION) while its sources stand, the user's style memories shape the
        wording (never the facts; a memory is never a source), a chat model also reads the recent
        turns; the turn is then recorded (``hipocampo.session_record_turn``), which rolls the
        conversation's summary when it is due.

        Args:
            question: 3..2,000 characters (rag.question_min_chars / question_max_chars).
            kb_ids: knowledge bases to answer from (default: the agent binding's).
            agent: agent binding name (its knowledge bases and rag overrides apply).
            use_cache: read and write the answer cache (TTL rag.cache_ttl_seconds = 600 s).
            rate_limit: spend a token of the caller's bucket (rag.rate_limit_per_minute = 60);
                batch jobs of a trusted backend turn it off.
            session_id: a live session of the caller (``hipocampo.open_session``), or None.

        Returns:
            :class:`Answer`: an answer (EXTRACTIVE / LLM / CACHE / SESSION); passages (answer_source
            PASSAGES, ``refused`` false: the gate could not confirm an answer but retrieval found
            passages above the model's on-topic floor, rag.passages_floor); or a refusal
            (``refused=True`` and ``reason``, see :class:`Answer`; the standard refusal text is
            ``rag.refusal_message``).

        Raises:
            InvalidInputError: no knowledge base named and no agent binding with one.
            NotFoundError: unknown agent binding or knowledge base.
            PermissionDeniedError: no tenant in the JWT claims / not a member.
            DimensionMismatchError: the embedder's dims differ from the active model's.
            NotFoundError: also an unknown or expired session (P0002).
        """
        ready = self._prepare(question, kb_ids, agent, use_cache, rate_limit, session_id)
        return ready if isinstance(ready, Answer) else self._generate_once(ready)

    def ask_stream(
        self,
        question: str,
        *,
        kb_ids: Sequence[UUID] | None = None,
        agent: str | None = None,
        use_cache: bool = True,
        rate_limit: bool = True,
        session_id: UUID | str | None = None,
    ) -> Iterator[StreamEvent]:
        """:meth:`ask`, streamed (issue 59 §4): with a chat model that answers, first a
        ``decision`` event (the trace id, the decision, the numbered evidence the answer may cite,
        the confidence), then ``delta`` events (the answer's text as the model writes it), then
        the post-validated reply: ``answer`` (the :class:`Answer`, as :meth:`ask` returns it) or,
        when the model said the sources do not answer or the answer failed validation (a number
        absent from the evidence), ``refusal`` (the refused :class:`Answer`: the client replaces
        what it showed). Any other reply (extractive, passages, a refusal before generation, a
        cached or session answer) is one ``answer`` (or ``refusal``) event.

        Raises: as :meth:`ask`, before the first event.
        """
        ready = self._prepare(question, kb_ids, agent, use_cache, rate_limit, session_id)
        stream = None if isinstance(ready, Answer) else getattr(ready.generator, "stream", None)
        if isinstance(ready, Answer) or stream is None:
            final = ready if isinstance(ready, Answer) else self._generate_once(ready)
            yield StreamEvent(event="refusal" if final.refused else "answer", answer=final)
            return
        yield StreamEvent(event="decision", decision=_stream_decision(ready))
        try:
            reply = stream(ready.turn.question, ready.evidence, ready.generator_config)
            for piece in reply:
                yield StreamEvent(event="delta", text=piece)
            final = self._generated(ready, reply.answer)
        except GenerationError as exc:
            final = self._generated(ready, exc)
        yield StreamEvent(event="refusal" if final.refused else "answer", answer=final)

    def _generate_once(self, ready: _Ready) -> Answer:
        try:
            text = ready.generator.generate(ready.turn.question, ready.evidence, ready.generator_config)
        except GenerationError as exc:
            return self._generated(ready, exc)
        return self._generated(ready, text)

    def _prepare(
        self,
        question: str,
        kb_ids: Sequence[UUID] | None,
        agent: str | None,
        use_cache: bool,
        rate_limit: bool,
        session_id: UUID | str | None,
    ) -> Answer | _Ready:
        """Everything before generation: a finished :class:`Answer` (a refusal, a cached or session
        answer, passages), or the evidence a generator is to answer from."""
        start = time.perf_counter()
        cfg = self.config(kb_ids, agent)
        kbs = [UUID(str(k)) for k in (kb_ids or cfg.get("kb_ids") or [])]
        if not kbs:
            raise InvalidInputError("no knowledge base: pass kb_ids or an agent bound to knowledge bases", "22023")
        turn = _Turn(self, question, kbs, agent, cfg, start)
        turn.lap("config")

        reason = question_refusal(self.client, question, int(cfg["question_min_chars"]), int(cfg["question_max_chars"]))
        turn.lap("guardrails")
        if reason:
            return turn.finish(turn.refuse(reason))
        if session_id is not None:
            reused = self._session_turn(turn, session_id)
            if reused is not None:
                return turn.finish(reused)
        if rate_limit:
            limit = dict(self.client.rpc("take_rate_limit", {"tenant_id": self.client._tenant()}) or {"allowed": True})
            turn.lap("rate_limit")
            if not limit.get("allowed"):
                return turn.finish(turn.refuse("rate_limited", retry_after_ms=int(limit.get("retry_after_ms") or 0)))
        # The shared cache holds answers every member of the tenant may get: never one a person's
        # style shaped, nor (with a chat model) one their session's turns or summary shaped
        # (issue 57 §7: one member's style.answer_length short decided the others' cached answer).
        use_cache = use_cache and not _personal(turn)
        if use_cache:
            cached = self._cache_get(turn.question, kbs, agent)
            turn.lap("cache")
            if cached is not None:
                return turn.finish(cached)
        return self._evidence(turn, use_cache)

    def _session_turn(self, turn: _Turn, session_id: UUID | str) -> dict[str, Any] | None:
        """What the session holds for this question (``hipocampo.session_turn``): the turn's
        question becomes the resolved one and its vector the resolved vector; the style and the
        recent turns go to the generator. Returns the session's earlier answer to reuse, or None."""
        vector = query_vector(self.client, turn.question, self.embedder, turn.kbs)
        ctx: dict[str, Any] = self.client.rpc(
            "session_turn", {"session_id": session_id, "question": turn.question, "query_embedding": list(vector)}
        )
        turn.lap("session")
        turn.session_id = session_id
        turn.conversation_id = ctx.get("conversation_id")
        turn.question = str(ctx["question"])
        turn.vector = [float(x) for x in ctx["query_embedding"]] if ctx.get("query_embedding") else list(vector)
        style = ctx.get("style") or {}
        turn.context = {
            **({"max_quotes": int(style["max_quotes"])} if style.get("max_quotes") else {}),
            "style_notes": style.get("notes") or [],
            "turns": ctx.get("turns") or [],
            "summary": ctx.get("summary"),
        }
        reused = ctx.get("reused")
        if not reused:
            return None
        return {**dict(reused), "answer_source": "SESSION"}

    def _evidence(self, turn: _Turn, use_cache: bool) -> Answer | _Ready:
        """Evidence (one SQL call: retrieval, gates, conflicts): the reply when it decides one
        (passages, a refusal), else what the generator answers from."""
        vector = turn.vector or query_vector(self.client, turn.question, self.embedder, turn.kbs)
        turn.lap("embed")
        decision: dict[str, Any] = self.client.rpc(
            "answer_evidence",
            {
                "query_text": turn.question,
                "query_embedding": list(vector),
                "kb_ids": turn.kbs,
                "agent": turn.agent,
                "tenant_id": self.client._tenant(),
            },
        )
        turn.lap("evidence")
        counts = int(decision["candidates"]), int(decision["filtered"])
        confidence = float(decision["confidence"])
        conflicts: list[dict[str, Any]] = decision["conflicts"]
        if decision["decision"] == "passages":
            return turn.finish(_passages(decision, confidence, conflicts), *counts)
        if decision["decision"] != "answer":
            closest = decision.get("closest")
            refusal = turn.refuse(decision["reason"], confidence=confidence, conflicts=conflicts, closest=closest)
            return turn.finish(refusal, *counts)
        generator = self.generator or generator_for(turn.cfg, self.client)
        return _Ready(turn, decision, generator, use_cache, counts)

    def _generated(self, ready: _Ready, text: str | GenerationError) -> Answer:
        """The reply from the generator's text (or its failure): the post-validation of numbers,
        the cited sources, the cache, the audit."""
        turn, evidence, counts = ready.turn, ready.evidence, ready.counts
        confidence = float(ready.decision["confidence"])
        if isinstance(text, NotInSources):
            refusal = turn.refuse("not_in_sources", confidence=confidence, closest=ready.decision.get("closest"))
            return turn.finish(refusal, *counts)
        if isinstance(text, GenerationError):
            log.warning("generation failed (trace %s): %s", turn.trace, text)
            return turn.finish(turn.refuse("generation_failed", confidence=confidence), *counts)
        turn.lap("generate")
        absent: list[str] = self.client.rpc("numbers_absent", {"answer": text, "evidence": evidence})
        if absent:
            log.info("answer refused: numbers %s absent from the evidence (trace %s)", absent, turn.trace)
            return turn.finish(turn.refuse("number_not_in_evidence", confidence=confidence), *counts)
        answer = {
            "answer": text,
            "refused": False,
            "reason": None,
            "confidence": confidence,
            "sources": [
                Source(**s).model_dump(mode="json")
                for s in self.client.rpc("answer_sources", {"answer": text, "evidence": evidence})
            ],
            "conflicts": ready.decision["conflicts"],
            "answer_source": ready.generator.answer_source,
        }
        if ready.use_cache:
            self._cache_put(turn, answer)
            turn.lap("cache_put")
        return turn.finish(answer, *counts)

    # -- database helpers --------------------------------------------------------------------
    def _cache_get(self, question: str, kbs: list[UUID], agent: str | None) -> dict[str, Any] | None:
        """The cached answer as :meth:`_Turn.finish` takes it, or None: a miss, and an entry that
        does not parse as an :class:`Answer` too (logged), never an error for the asker."""
        found = self.client.rpc(
            "cache_get", {"question": question, "kb_ids": kbs, "agent": agent, "tenant_id": self.client._tenant()}
        )
        if not found:
            return None
        entry = {**dict(found), "refused": False, "reason": None, "answer_source": "CACHE"}
        try:
            Answer(question=question, trace_id=uuid.uuid4(), **entry)
        except (ValidationError, TypeError) as exc:
            log.warning("cached answer ignored (it does not parse): %s", exc)
            return None
        return entry

    def _cache_put(self, turn: _Turn, answer: dict[str, Any]) -> None:
        """Cache the answer this turn computed, as service_role for the tenant ``rag_config``
        resolved (``hipocampo.cache_put`` is not a user's: every member reads the entry). A
        failed write is logged; the answer stands."""
        tenant = turn.cfg.get("tenant_id") or self.client._tenant()
        args = {
            "question": turn.question,
            "kb_ids": turn.kbs,
            "answer": answer,
            "agent": turn.agent,
            "tenant_id": tenant,
        }
        try:
            self.client.as_actor(Actor.service(tenant)).rpc("cache_put", args, "none")
        except HipocampoError as exc:
            log.warning("answer of trace %s not cached: %s", turn.trace, exc)

    def _audit(
        self, ans: Answer, kbs: list[UUID], agent: str | None, candidates: int, filtered: int, total_ms: float
    ) -> None:
        try:
            self.client.rpc(
                "record_answer",
                {
                    "trace_id": ans.trace_id,
                    "question": ans.question,
                    "answer_source": ans.answer_source,
                    "reason": ans.reason,
                    "confidence": ans.confidence,
                    "candidates": candidates,
                    "filtered": filtered,
                    "evidence_chunk_ids": [s.chunk_id for s in ans.sources],
                    "timings_ms": ans.timings_ms,
                    "latency_ms": total_ms,
                    "kb_ids": kbs,
                    "agent": agent,
                    "tenant_id": self.client._tenant(),
                },
                "none",
            )
        except HipocampoError as exc:  # the answer stands; a lost audit row is logged loudly
            log.error("audit row of trace %s not written: %s", ans.trace_id, exc)


class _Turn:
    """One ask: its trace id, the step timings (ms), the refusal builder and the audit at the end."""

    def __init__(
        self,
        orchestrator: Orchestrator,
        question: str,
        kbs: list[UUID],
        agent: str | None,
        cfg: dict[str, Any],
        start: float,
    ) -> None:
        self.orchestrator = orchestrator
        self.asked = question  # as the user typed it; ``question`` is what is searched (resolved)
        self.question = question
        self.session_id: UUID | str | None = None
        self.conversation_id: str | None = None
        self.vector: list[float] | None = None
        self.context: dict[str, Any] = {}  # the session's style and turns, for the generator
        self.kbs = kbs
        self.agent = agent
        self.cfg = cfg
        self.trace = uuid.uuid4()
        self.start = start
        self.mark = start
        self.timings: dict[str, float] = {}

    def record(self, ans: dict[str, Any]) -> None:
        _record(self, ans)

    def lap(self, step: str) -> None:
        now = time.perf_counter()
        self.timings[step] = round((now - self.mark) * 1000, 2)
        self.mark = now

    def refuse(self, reason: str, **extra: Any) -> dict[str, Any]:
        conflicts = extra.get("conflicts") or []
        args = {"reason": reason, "conflicts": conflicts, "refusal_message": self.cfg["refusal_message"]}
        message = str(self.orchestrator.client.rpc("refusal_text", args))
        return {"answer": message, "refused": True, "reason": reason, "answer_source": "REFUSAL", **extra}

    def finish(self, ans: dict[str, Any], candidates: int = 0, filtered: int = 0) -> Answer:
        resolved = self.question if self.question != self.asked else None
        if self.session_id is not None:
            self.record(ans)
        total = (time.perf_counter() - self.start) * 1000
        self.timings["total"] = round(total, 2)
        result = Answer(
            question=self.asked, trace_id=self.trace, timings_ms=self.timings, resolved_question=resolved, **ans
        )
        self.orchestrator._audit(result, self.kbs, self.agent, candidates, filtered, total)
        log.debug(
            json.dumps(
                {
                    "event": "ask",
                    "trace_id": str(self.trace),
                    "answer_source": result.answer_source,
                    "reason": result.reason,
                    "confidence": result.confidence,
                    "timings_ms": self.timings,
                }
            )
        )
        return result


@dataclass
class _Ready:
    """A turn whose evidence holds an answer, waiting for its generator."""

    turn: _Turn
    decision: dict[str, Any]
    generator: Generator
    use_cache: bool
    counts: tuple[int, int]

    @property
    def evidence(self) -> list[dict[str, Any]]:
        return list(self.decision["evidence"])

    @property
    def generator_config(self) -> dict[str, Any]:
        return {**self.turn.cfg, **self.turn.context}


class StreamEvent(BaseModel):
    """One event of :meth:`Orchestrator.ask_stream`: ``decision`` (``decision``: trace_id,
    decision, answer_source, confidence, evidence: [{n, document, source_uri, chunk_id}]),
    ``delta`` (``text``: the answer's next characters), ``answer`` or ``refusal`` (``answer``:
    the final :class:`Answer`)."""

    event: Literal["decision", "delta", "answer", "refusal"]
    decision: dict[str, Any] | None = None
    text: str | None = None
    answer: Answer | None = None

    def data(self) -> dict[str, Any]:
        """The event's JSON body: the decision, {"text": …}, or the answer."""
        if self.answer is not None:
            return dict(json.loads(self.answer.model_dump_json()))
        return self.decision if self.decision is not None else {"text": self.text or ""}


def _stream_decision(ready: _Ready) -> dict[str, Any]:
    """What a streamed answer says before its text: its trace id, that the evidence holds an
    answer, who writes it, the confidence, and the numbered evidence its [n] markers point to."""
    return {
        "trace_id": str(ready.turn.trace),
        "decision": "answer",
        "answer_source": ready.generator.answer_source,
        "confidence": float(ready.decision["confidence"]),
        "evidence": [
            {
                "n": e.get("n"),
                "document": e.get("title"),
                "source_uri": e.get("source_uri"),
                "chunk_id": e.get("chunk_id"),
            }
            for e in ready.evidence
        ],
    }


def _personal(turn: _Turn) -> bool:
    """Whether this turn's answer is shaped by the person (so neither read from nor written to the
    tenant's shared cache): a style that changes the offline answer (max_quotes), or with a chat
    model (rag.provider openai / azure) any style note, recent turn or summary it reads."""
    ctx = turn.context
    if ctx.get("max_quotes"):
        return True
    chat = turn.cfg.get("provider") in ("openai", "azure")
    return chat and bool(ctx.get("style_notes") or ctx.get("turns") or ctx.get("summary"))


def _passages(decision: dict[str, Any], confidence: float, conflicts: list[dict[str, Any]]) -> dict[str, Any]:
    """The reply when the gate cannot confirm an answer but retrieval found passages on the
    question's topic (``answer_evidence``'s decision passages, issue 61 §1): its text and its
    cited passages, not a refusal; ``reason`` keeps why there is no exact answer. Not cached."""
    keys = ("n", "document", "document_id", "source_uri", "chunk_id", "excerpt", "score", "support")
    return {
        "answer": str(decision["reply"]),
        "refused": False,
        "reason": decision["reason"],
        "confidence": confidence,
        "sources": [Source(**{k: p[k] for k in keys}).model_dump(mode="json") for p in decision["passages"]],
        "conflicts": conflicts,
        "answer_source": "PASSAGES",
    }


def _record(turn: _Turn, ans: dict[str, Any]) -> None:
    """Record the turn in its session (``hipocampo.session_record_turn``, which also rolls the
    conversation's summary when it is due); a failure is logged and the answer stands."""
    client = turn.orchestrator.client
    answer = {**ans, "trace_id": str(turn.trace)}
    args = {"session_id": turn.session_id, "question": turn.asked, "resolved_question": turn.question, "answer": answer}
    try:
        recorded = dict(client.rpc("session_record_turn", args) or {})
    except HipocampoError as exc:
        log.warning("turn of trace %s not recorded in its session: %s", turn.trace, exc)
        return
    turn.lap("session_record")
    if recorded.get("summary_updated") and turn.cfg.get("provider") in ("openai", "azure"):
        _chat_summary(turn, recorded)
    if turn.cfg.get("provider") in ("openai", "azure") and recorded.get("question_message_id"):
        _chat_memories(turn, int(recorded["question_message_id"]))


def _chat_memories(turn: _Turn, message_id: int) -> int:
    """With a chat model, the memories it proposes from the user's message (issue 59 §6;
    ``ChatAnswerer.memory_candidates``), each through the memory gate (``remember``, source
    conversation, the message as source_ref, confidence at most 0.9): only for a signed-in user
    who consented (``memory_consent``; no model call otherwise). The offline rules already ran on
    the message (add_message). Each candidate's description is embedded (one call for all) and sent
    with it, as ``Memory.remember`` does, so the gate's semantic-duplicate check applies and the
    memory is found by recall at once. Returns how many the gate took; a failure is logged, the
    answer stands."""
    client = turn.orchestrator.client
    generator = turn.orchestrator.generator or generator_for(turn.cfg, client)
    propose = getattr(generator, "memory_candidates", None)
    if propose is None or client.actor.role != "authenticated":
        return 0
    taken = 0
    try:
        if not client.rpc("memory_consent", {}):
            return 0
        found = list(propose(turn.asked))
        vectors = turn.orchestrator.embedder.embed_documents([c.description for c in found]) if found else []
        for c, vector in zip(found, vectors, strict=True):
            args = {
                "key": c.key,
                "value": json.dumps(c.value),
                "description": c.description,
                "category": c.category,
                "confidence": min(c.confidence, 0.9),
                "source": "conversation",
                "source_ref": f"message:{message_id}",
                "conversation_id": turn.conversation_id,
                "tags": [c.category, "from_conversation"],
                "embedding": str(Vector(vector).to_text()),
            }
            taken += dict(client.rpc("remember", args) or {}).get("status") in ("created", "updated", "staged")
    except (HipocampoError, GenerationError) as exc:
        log.warning("memory candidates of trace %s not proposed: %s", turn.trace, exc)
    turn.lap("memory_candidates")
    return taken


def _chat_summary(turn: _Turn, recorded: dict[str, Any]) -> None:
    """With a chat model (rag.provider openai / azure), the conversation's rolling summary is the
    model's, written over the extractive one session_record_turn stored; a failure leaves that one."""
    client = turn.orchestrator.client
    generator = turn.orchestrator.generator or generator_for(turn.cfg, client)
    summarize = getattr(generator, "summarize", None)
    if summarize is None or turn.conversation_id is None:
        return
    try:
        text = summarize(str(recorded.get("summary") or ""), int(recorded["summary_max_chars"]))
        args = {
            "conversation_id": turn.conversation_id,
            "summary": text,
            "through_message_id": int(recorded["answer_message_id"]),
        }
        client.rpc("update_conversation_summary", args, "none")
    except (HipocampoError, GenerationError) as exc:
        log.warning("chat summary of trace %s not written (the extractive one stands): %s", turn.trace, exc)


def question_refusal(client: Hipocampo, question: str, min_chars: int, max_chars: int) -> str | None:
    """The guardrails' refusal reason for ``question`` (``hipocampo.question_refusal``), or None.

    Args:
        client: any caller (the RPC is pure).
        question: the question as typed.
        min_chars / max_chars: length bounds in characters (rag.question_min_chars = 3,
            rag.question_max_chars = 2,000; config.toml [rag]).

    Returns:
        ``invalid_question`` (length, control characters; a NUL character, which PostgreSQL text
        cannot hold, is refused here), ``prompt_injection``, ``secret``, ``sensitive_data``, or None.
    """
    if "\x00" in question:
        return "invalid_question"
    reason = client.rpc("question_refusal", {"question": question, "min_chars": min_chars, "max_chars": max_chars})
    return str(reason) if reason else None
