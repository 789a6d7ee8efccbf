"""Pydantic models returned by the client."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, computed_field

__all__ = [
    "REFUSAL_REASONS",
    "Answer",
    "CitedDocument",
    "ClosestPassage",
    "Consent",
    "ContextMessage",
    "ContextPack",
    "ConversationContext",
    "DocumentResult",
    "ErasureReport",
    "FeedbackRecorded",
    "FeedbackSummary",
    "Forgotten",
    "HistoryHit",
    "IngestSummary",
    "JudgedQuestion",
    "KnowledgeBase",
    "MarkedReply",
    "MemoryHit",
    "MemoryRecord",
    "PackChunk",
    "PackDropped",
    "PackMemory",
    "PackRag",
    "PackWindow",
    "PassageHit",
    "Recall",
    "RememberResult",
    "ScrubResult",
    "SearchHit",
    "Source",
    "UserExport",
    "WeekOfFeedback",
]


class TenantRow(BaseModel):
    """A tenant as ``list_tenants`` returns it (service_role): its member and knowledge-base counts."""

    id: UUID
    name: str
    slug: str
    members: int = 0
    knowledge_bases: int = 0
    created_at: datetime


class MemberRow(BaseModel):
    """A tenant's member (``list_members``): role ``admin`` | ``member``."""

    user_id: UUID
    role: str
    created_at: datetime


class TenantDeletion(BaseModel):
    """What ``delete_tenant`` deleted: the tenant and counts of its rows."""

    tenant_id: UUID
    slug: str
    knowledge_bases: int = 0
    documents: int = 0
    chunks: int = 0
    memories: int = 0
    messages: int = 0
    members: int = 0
    audit_rows: int = 0


class KnowledgeBaseDeletion(BaseModel):
    """What ``delete_knowledge_base`` deleted: the knowledge base and counts of its rows."""

    kb_id: UUID
    name: str
    documents: int = 0
    chunks: int = 0


class KnowledgeBase(BaseModel):
    """A knowledge base with its document and chunk counts, and ``overrides``: the config it sets
    itself, ``{section: {key: value}}`` (its tuning is not in them; ``effective_config(kb_id)``
    gives what is in force)."""

    id: UUID
    name: str
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    status: str
    language: str
    documents: int = 0
    chunks: int = 0
    updated_at: datetime | None = None
    overrides: dict[str, Any] = Field(default_factory=dict)


class AgentBinding(BaseModel):
    """An assistant of a tenant (``hipocampo.list_agent_bindings``): the knowledge bases it answers
    from (ids, and names in the same order; None for one deleted since) and its overrides of the
    rag section."""

    id: UUID
    name: str
    kb_ids: list[UUID] = Field(default_factory=list)
    kb_names: list[str | None] = Field(default_factory=list)
    rag_overrides: dict[str, Any] = Field(default_factory=dict)
    updated_at: datetime | None = None


class DocumentRow(BaseModel):
    """A document of a knowledge base as ``list_documents`` and ``get_document`` return it.

    ``trust_score`` lies in 0..1; ``chunk_count`` counts its chunks of every model;
    ``quarantine`` is ``{"kind", "reason", "at"}`` for a quarantined document (status
    ``quarantined``), else None; ``kb_id`` and ``kb_name`` are set by ``get_document`` only."""

    id: UUID
    title: str
    source_uri: str
    source_type: str
    doc_type: str | None = None
    status: str
    trust_score: float
    chunk_count: int = 0
    content_hash: str | None = None
    published_at: datetime | None = None
    expires_at: datetime | None = None
    created_at: datetime
    updated_at: datetime
    pii_replacements: int = 0
    quarantine: dict[str, Any] | None = None
    kb_id: UUID | None = None
    kb_name: str | None = None


class DocumentWrite(BaseModel):
    """What ``ingest_document`` / ``ingest_documents`` did with one document: status
    ``inserted`` | ``replaced`` (another text: every model's chunks replaced) | ``embedded`` (the
    same text, chunks of a model it lacked) | ``unchanged`` | ``quarantined`` (the database's
    forbidden-sources check found its text of a kind the config quarantines: ``quarantine`` gives
    ``{"kind", "reason"}``, no text is kept; issue 57 §6); ``chunks`` written and ``skipped``
    (chunks whose text the tenant already holds with this model, or all of a quarantined one's)."""

    document_id: UUID
    status: str
    chunks: int = 0
    skipped: int = 0
    quarantine: dict[str, str] | None = None


class StoredDocument(BaseModel):
    """What ingestion compares a file with (``document_hashes``): the stored document's hash of
    title, chunking rule and scrubbed text, its source type and trust (0..1), and whether it has
    chunks of the model being written (``embedded``), and its ``version`` as written (a web
    page's HTTP validator, ``etag:…`` or ``last-modified:…``, which the next sync sends back)."""

    document_id: UUID
    source_uri: str
    content_hash: str | None = None
    source_type: str
    trust_score: float
    expires_at: datetime | None = None
    embedded: bool = False
    version: str | None = None


class DocumentMetadataChange(BaseModel):
    """A document's metadata after ``set_document_metadata``: ``updated`` names the keys it changed."""

    document_id: UUID
    source_type: str
    trust_score: float
    expires_at: datetime | None = None
    updated: list[str] = Field(default_factory=list)


class QueueKind(BaseModel):
    """One kind of row of the embedding queue (chunks | memories | memory_staging | messages):
    rows waiting for a vector, retrying after a failure, and dead (failed too often)."""

    kind: str
    waiting: int = 0
    retrying: int = 0
    dead: int = 0


class DeadLetter(BaseModel):
    """A row the embedding backfill gave up on, with its last error."""

    kind: str
    row_id: str
    attempts: int = 0
    last_error: str | None = None
    updated_at: datetime | None = None


class EmbeddingQueue(BaseModel):
    """The tenant's embedding queue (``tenant_embedding_queue``): the four kinds in order, and
    at most 100 dead letters, newest first."""

    kinds: list[QueueKind] = Field(default_factory=list)
    dead_letters: list[DeadLetter] = Field(default_factory=list)


class DocumentTextChunk(BaseModel):
    """One chunk of a document's stored (scrubbed) text (``document_text``), in order."""

    chunk_index: int
    section: str | None = None
    content: str


class NotLanguageDocument(BaseModel):
    """A document whose text does not read as language (``documents_not_language``):
    ``text_measures`` is ``{"words", "word_order"}`` (word_order in bits: `_text_measures`)."""

    document_id: UUID
    source_uri: str
    title: str
    text_measures: dict[str, Any] = Field(default_factory=dict)


class SearchHit(BaseModel):
    """One row of ``hipocampo.hybrid_search``: the chunk, its document (for citation), scores.

    ``dense_score`` is a cosine similarity (-1..1) or None when the dense leg did not find it;
    ``lexical_score`` is Okapi BM25 (>= 0) or None; ``fused_score`` z-score sum or RRF;
    ``final_score`` after the optional rerank; ``rank`` is 1-based.
    """

    chunk_id: int
    document_id: UUID
    kb_id: UUID
    chunk_index: int
    content: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    title: str
    source_uri: str
    source_type: str
    author: str | None = None
    published_at: datetime | None = None
    trust_score: float
    dense_score: float | None = None
    lexical_score: float | None = None
    fused_score: float
    final_score: float
    rank: int


class ScrubResult(BaseModel):
    """One text through the database's PII scrubber (``hipocampo.scrub_pii``):
    ``text`` with CPF, CNPJ, RG, e-mail, phone and card numbers replaced by ``[CPF]``-style
    placeholders, and ``counts`` per kind (``{"CPF": 1, "EMAIL": 2}``); docs/SECURITY.md §PII."""

    text: str
    counts: dict[str, int] = Field(default_factory=dict)

    @property
    def total(self) -> int:
        """Number of replacements."""
        return sum(self.counts.values())


class DocumentResult(BaseModel):
    """Outcome of one document: ``status`` inserted | replaced (new text) | embedded (same text,
    chunks of another model added: a model switch) | metadata_updated (source type or trust
    changed, nothing re-embedded) | unchanged | failed | refused / quarantined (of a forbidden
    ``forbidden`` kind: credentials, transcript, financial_statement, biometric; ``error`` gives
    the reason; issue 45 §4)."""

    source_uri: str
    title: str
    status: str
    chunks: int = 0
    pii_replaced: int = 0
    error: str | None = None
    forbidden: str | None = None


class IngestSummary(BaseModel):
    """Totals of an ingestion run (``documents_failed`` counts the refused ones too);
    ``seconds`` wall time, ``chunks_per_second`` over it;
    ``kb_deleted``: the run created the knowledge base, every document failed, and it was dropped
    again (no empty knowledge base is left behind)."""

    kb: str
    job_id: UUID | None = None
    kb_deleted: bool = False
    documents_total: int = 0
    documents_ingested: int = 0
    documents_unchanged: int = 0
    documents_updated: int = 0
    documents_failed: int = 0
    documents_refused: int = 0
    documents_quarantined: int = 0
    chunks_written: int = 0
    embedding_calls: int = 0
    pii_replaced: int = 0
    seconds: float = 0.0
    chunks_per_second: float = 0.0
    documents: list[DocumentResult] = Field(default_factory=list)
    # Source URIs this run deleted: a folder's files that are gone (--prune), a site's pages that
    # answer 404 / 410 or, with --prune, that the crawl no longer reaches.
    pruned: list[str] = Field(default_factory=list)
    # URLs robots.txt keeps hipocampo from fetching (not fetched, not counted as documents).
    disallowed: list[str] = Field(default_factory=list)


class RememberResult(BaseModel):
    """What ``hipocampo.remember`` / ``promote_memory`` / ``correct_memory`` did.

    ``status``: created | updated | unchanged | duplicate | staged | kept | corrected (a refusal
    raises :class:`hipocampo.errors.MemoryRejected` instead). ``memory_id`` is the stored (or
    existing duplicate) row; ``superseded`` the row it replaced; ``expires_at`` for staged items.
    """

    status: str
    memory_id: UUID | None = None
    superseded: UUID | None = None
    expires_at: datetime | None = None
    promoted_from: UUID | None = None
    intensity: float | None = None


class MemoryRecord(BaseModel):
    """A memory row (long-term or staged), without its embedding."""

    id: UUID
    tier: str = "long_term"
    user_id: UUID
    scope: str
    category: str
    key: str
    value: Any
    description: str
    confidence: float
    status: str
    source: str
    source_ref: str | None = None
    pinned: bool = False
    tags: list[str] = Field(default_factory=list)
    emotion: str | None = None
    intensity: float | None = None
    life_domain: str | None = None
    valid_from: datetime
    valid_to: datetime | None = None
    supersedes: UUID | None = None
    access_count: int = 0
    expires_at: datetime | None = None


class MemoryHit(BaseModel):
    """One row of ``hipocampo.search_memories``: cosine ``similarity`` (-1..1), ``score`` =
    similarity + pinned bonus, 1-based ``rank``, ``tier`` long_term | staging."""

    memory_id: UUID
    key: str
    value: Any
    description: str
    category: str
    scope: str
    tags: list[str]
    pinned: bool
    confidence: float
    similarity: float
    score: float
    rank: int
    tier: str


class Recall(BaseModel):
    """Memory search result: the hits, and ``fallback`` ('empty_tags' | 'no_memory_with_tags')
    when a tag filter was dropped rather than returning a silent empty list."""

    hits: list[MemoryHit] = Field(default_factory=list)
    fallback: str | None = None


class HistoryHit(BaseModel):
    """One row of ``hipocampo.search_history``: cosine ``dense_score``, BM25 ``lexical_score``
    (None when that leg did not find it), ranking ``score`` (fused, or re-ranked), 1-based
    ``rank``, ``token_score`` (late-interaction MaxSim in [-1, 1]; None without the re-rank)."""

    message_id: int
    conversation_id: UUID
    role: str
    content: str
    modality: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    dense_score: float | None = None
    lexical_score: float | None = None
    score: float
    rank: int
    token_score: float | None = None


class ContextMessage(BaseModel):
    """One message of a conversation's context (``conversation_context``), oldest first."""

    id: int
    role: str = Field(description="user | assistant | system | tool")
    content: str
    modality: str = Field(description="chat | voice")
    attachments: list[Any] = Field(default_factory=list)
    created_at: datetime


class ConversationContext(BaseModel):
    """What an assistant needs of a conversation (``Memory.context``, ``conversation_context``):
    its rolling summary, the id of the last message the summary covers, how many messages came
    after it, and the last N messages (``sessions.last_messages``, 20), oldest first."""

    conversation_id: UUID
    summary: str | None = None
    summary_through: int | None = Field(default=None, description="message id the summary covers up to")
    unsummarized: int = Field(default=0, ge=0, description="messages after the summary")
    messages: list[ContextMessage] = Field(default_factory=list)


class PackWindow(BaseModel):
    """Which of a conversation's messages a ContextPack holds (config ``context_pack``)."""

    policy: Literal["all", "recent_with_summary", "recent_long"] = Field(
        description="all (< all_below messages), the last recent_with_summary + the summary (up to "
        "summary_above), or the last recent_long + the summary"
    )
    total_messages: int = Field(ge=0, description="the conversation's messages")
    included: int = Field(ge=0, description="messages in the pack, after the token budget")


class PackMemory(BaseModel):
    """A memory of the user in a ContextPack: preferences first, then by cosine."""

    memory_id: UUID
    key: str
    value: Any
    description: str | None = None
    category: str
    scope: str = Field(description="personal | tenant_shared")
    similarity: float | None = Field(default=None, description="cosine to the query, -1..1")
    preference: bool = Field(description="category preference or style, or a prefs.* key")


class PackChunk(BaseModel):
    """A knowledge-base passage in a ContextPack, numbered for citation ([n] title)."""

    n: int = Field(ge=1, description="citation number, 1-based")
    chunk_id: int
    document_id: UUID
    title: str
    source_uri: str
    content: str
    score: float = Field(description="hybrid_search's final score")
    citation: str = Field(description="'[n] title'")


class PackRag(BaseModel):
    """Whether the pack searched the knowledge bases, and why not."""

    skipped: bool
    reason: str | None = Field(
        default=None,
        description="no_knowledge_base | no_query_embedding | rag_disabled | covered_by_session (null: searched)",
    )


class PackDropped(BaseModel):
    """Items left out because they did not fit the token budget."""

    memories: int = Field(ge=0)
    messages: int = Field(ge=0)
    chunks: int = Field(ge=0)


class ContextPack(BaseModel):
    """Everything an assistant puts in its prompt for one turn (``hipocampo.context_pack``), within
    a token budget: memories, the conversation's summary and recent messages, the live session's
    state, and knowledge-base passages with citations. ``tokens_used <= token_budget`` always
    (tokens as ``_pack_tokens`` estimates them)."""

    conversation_id: UUID
    modality: Literal["chat", "voice"]
    query: str
    token_budget: int = Field(ge=1, description="tokens")
    tokens_used: int = Field(ge=0, description="tokens")
    retrieval_order: list[str] = Field(description="the order the pack's parts were filled in")
    window: PackWindow
    summary: str | None = None
    messages: list[ContextMessage] = Field(default_factory=list, description="newest kept, oldest first")
    memories: list[PackMemory] = Field(default_factory=list)
    session: dict[str, Any] | None = Field(
        default=None, description="the live session: tools used, pending confirmations, summary (no messages)"
    )
    chunks: list[PackChunk] = Field(default_factory=list)
    rag: PackRag
    dropped: PackDropped


class PassageHit(BaseModel):
    """A passage as the MCP tool ``search_knowledge_base`` returns it: a SearchHit's citation
    fields and scores, the chunk's text without markup (``excerpt``)."""

    rank: int = Field(ge=1)
    title: str
    source_uri: str
    excerpt: str
    dense_score: float | None = Field(default=None, description="cosine -1..1; null: not found by the dense leg")
    lexical_score: float | None = Field(default=None, description="BM25 >= 0; null: not found by the lexical leg")
    final_score: float = Field(description="the fused ranking score")
    document_id: UUID
    chunk_id: int


class FeedbackRecorded(BaseModel):
    """What marking a reply gives back (the MCP ``feedback`` tool, POST /feedback): its trace id."""

    trace_id: UUID


class Forgotten(BaseModel):
    """The MCP tool ``forget``'s result: whether the memory was active and is now forgotten."""

    forgotten: bool
    memory_id: UUID


class Consent(BaseModel):
    """The user's consent to long-term memory after the call (LGPD art. 7 I)."""

    granted: bool


class UserExport(BaseModel):
    """Everything held about one user in one tenant (``Memory.export``, ``export_user_data``, LGPD
    art. 18 II/V), format ``hipocampo.user_export.v1``. The rows are the tables' rows as JSON
    objects (embeddings and token vectors left out); ``consent`` is the consent row or None."""

    model_config = ConfigDict(extra="allow")

    format: Literal["hipocampo.user_export.v1"]
    exported_at: datetime
    tenant_id: UUID
    user_id: UUID
    consent: dict[str, Any] | None = None
    memories: list[dict[str, Any]] = Field(default_factory=list, description="with history, by key")
    staged_memories: list[dict[str, Any]] = Field(default_factory=list)
    messages: list[dict[str, Any]] = Field(default_factory=list)
    conversation_summaries: list[dict[str, Any]] = Field(default_factory=list)
    sessions: list[dict[str, Any]] = Field(default_factory=list)
    events: list[dict[str, Any]] = Field(default_factory=list)
    feedback: list[dict[str, Any]] = Field(default_factory=list, description="the user's verdicts on replies")


class ErasureReport(BaseModel):
    """What ``Memory.erase`` (``erase_user``, LGPD art. 18 VI) deleted, rows per kind, and
    ``user_ref``: the keyed HMAC that names the user in the one audit record left
    (docs/SECURITY.md §Erasure). Shared memories are kept, their author pseudonymised."""

    user_ref: str
    memories: int = Field(ge=0)
    shared_memories_pseudonymised: int = Field(ge=0)
    staged_memories: int = Field(ge=0)
    messages: int = Field(ge=0)
    conversation_summaries: int = Field(ge=0)
    sessions: int = Field(ge=0)
    feedback: int = Field(ge=0, default=0)
    events: int = Field(ge=0)
    memberships: int = Field(ge=0)


AnswerSource = Literal["CACHE", "SESSION", "LLM", "EXTRACTIVE", "PASSAGES", "REFUSAL"]


class WeekOfFeedback(BaseModel):
    """One week of feedback (``feedback_summary``): replies marked useful and not, and the share
    useful (0..1); ``week`` is its Monday."""

    week: date
    useful: int = Field(ge=0)
    not_useful: int = Field(ge=0)
    share_useful: float = Field(ge=0, le=1)


class CitedDocument(BaseModel):
    """A document a reply cited (``feedback_summary``'s ``cited``)."""

    document_id: UUID
    title: str | None = None
    source_uri: str
    kb_id: UUID


class MarkedReply(BaseModel):
    """A reply marked not useful with its question (``feedback_summary``'s ``worst``): what the
    user asked and said, what answered (``answer_source``), the documents cited, and whether an
    admin has made it a judged question (``judged``)."""

    trace_id: UUID
    question: str
    comment: str | None = None
    answer_source: AnswerSource
    created_at: datetime
    kb_ids: list[UUID] = Field(default_factory=list)
    judged: bool = False
    cited: list[CitedDocument] = Field(default_factory=list)


class FeedbackSummary(BaseModel):
    """What a tenant's users said of its replies (``Hipocampo.feedback_summary``, issue 59 §5):
    ``weeks`` oldest first (weeks without feedback left out), ``worst`` the newest 20 replies
    marked not useful that carry their question."""

    weeks: list[WeekOfFeedback] = Field(default_factory=list)
    worst: list[MarkedReply] = Field(default_factory=list)


class JudgedQuestion(BaseModel):
    """A judged question stored from feedback (``judge_feedback``): kb eval's judged-file terms,
    the question and the ``source_uri`` of each document that answers it."""

    id: int
    question: str
    relevant_uris: list[str]
    from_trace_id: UUID | None = None
    created_at: datetime


class Source(BaseModel):
    """A cited source of an answer: ``n`` is its citation marker (``[n]`` in the answer text)."""

    n: int
    document: str
    document_id: UUID
    source_uri: str
    chunk_id: int
    excerpt: str
    score: float
    support: float = 0.0


class ClosestPassage(BaseModel):
    """What a refusal shows as "the closest passage I found" (``answer_evidence``'s ``closest``):
    the best-ranked passage retrieval found, which did not support the question enough; ``article``
    and ``section`` (heading path) where the document has them, ``excerpt`` at most 300 characters
    of plain text."""

    document: str
    document_id: UUID
    source_uri: str
    chunk_id: int
    excerpt: str
    article: str | None = None
    section: str | None = None
    score: float | None = None
    support: float | None = None


#: Each refusal reason in words (what ``hipocampo ask`` prints and ``Answer.explanation`` holds);
#: the thresholds they name are the rag config rows' (docs/design.md §answers).
REFUSAL_REASONS: dict[str, str] = {
    "invalid_question": "the question is too short or too long",
    "prompt_injection": "the question tries to change the assistant's instructions",
    "sensitive_data": "the question carries personal data (CPF, e-mail, phone, card…)",
    "secret": "the question carries what looks like a password, key or token",
    "rate_limited": "too many questions in the last minute; try again shortly",
    "rag_disabled": "answers are turned off for this tenant or agent (rag.enabled)",
    "no_evidence": "no passage of the knowledge bases matches the question",
    "low_confidence": "passages were found, but none supports the question enough (rag.min_confidence)",
    "conflicting_sources": "the sources disagree and none is trusted enough above the others",
    "cross_check_failed": (
        "only one document supports the answer and it is not authoritative (a source type of"
        " rag.authoritative_source_types with trust >= rag.authoritative_trust); raise its trust"
        " (`hipocampo doc update <id> --trust 0.9`) or add a second source"
    ),
    "number_not_in_evidence": "the drafted answer holds a number the sources do not",
    "not_in_sources": "the chat model read the sources found and says they do not answer the question",
    "generation_failed": "the answer model failed",
    "database_unavailable": "the database is unavailable",
    "not_configured": "the server is not configured",
}


class Answer(BaseModel):
    """The result of ``Orchestrator.ask``: a cited answer, or a refusal with its reason code.

    ``answer`` is the text to show: the answer with citation markers ``[n]``; for passages (the gate
    could not confirm an answer, but retrieval found passages on the question's topic: issue 61 §1)
    rag.passages_message ("Não encontrei uma resposta exata; estes trechos tratam do assunto:")
    and one cited quote per passage; or for a refusal the standard message (rag.refusal_message,
    "Não encontrei informações confiáveis para responder essa pergunta."), followed for conflicts
    by what the sources disagree on.

    ``answer_source``: CACHE | SESSION (the session's earlier answer to the same question) | LLM |
    EXTRACTIVE | PASSAGES (``refused`` false; ``reason`` says why no exact answer:
    low_confidence or cross_check_failed) | REFUSAL (the HTTP header X-Answer-Source). ``resolved_question``: within a
    session, the question as it was searched when it was a follow-up ("qual o horário da piscina?
    e aos domingos?"), else None.
    ``reason`` (refusals): invalid_question, prompt_injection, sensitive_data, secret, rate_limited,
    rag_disabled, no_evidence, low_confidence, conflicting_sources, cross_check_failed,
    number_not_in_evidence, not_in_sources (a chat model's reading), generation_failed,
    database_unavailable / not_configured (HTTP only;
    docs/design.md §answers).
    ``confidence`` in [0, 1]; ``timings_ms`` per step (ms); ``trace_id`` = the audit row's key;
    ``closest`` (a refusal after retrieval found passages): the closest passage, which did not
    support the question enough (:class:`ClosestPassage`).
    """

    question: str
    answer: str
    refused: bool
    reason: str | None = None
    confidence: float = 0.0
    sources: list[Source] = Field(default_factory=list)
    conflicts: list[dict[str, Any]] = Field(default_factory=list)
    answer_source: AnswerSource
    trace_id: UUID
    retry_after_ms: int | None = None
    closest: ClosestPassage | None = None
    resolved_question: str | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def explanation(self) -> str | None:
        """A refusal's reason, or why passages stand for an answer, in words (REFUSAL_REASONS);
        None for an answer."""
        if self.reason is None or not (self.refused or self.answer_source == "PASSAGES"):
            return None
        return REFUSAL_REASONS.get(self.reason, self.reason)
