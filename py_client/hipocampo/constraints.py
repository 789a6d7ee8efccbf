"""Every constraint of the schema in words (issue 58 §4: "violates check constraint
"tenants_slug_format"" reached people; a constraint's name never should).

:func:`in_words` rewrites a database error's message when it names a constraint (a direct write,
or an RPC that passes the violation on as "invalid document: …"): ``from_db_error`` applies it to
every error the client raises. ``tests/sql/test_constraint_words.py`` checks that every check,
unique, primary-key and foreign-key constraint in the catalog has its words here, and that no
words name a constraint.
"""

from __future__ import annotations

import re

__all__ = ["CONSTRAINTS", "TEXT_SEARCH_LANGUAGES", "in_words"]

# A knowledge base's or a document's text-search languages (knowledge_bases_language_check,
# documents_language_check), Portuguese first: the CLI's help, the hub's form and the words below.
TEXT_SEARCH_LANGUAGES = (
    "portuguese",
    "english",
    "spanish",
    "french",
    "german",
    "italian",
    "dutch",
    "danish",
    "finnish",
    "hungarian",
    "norwegian",
    "russian",
    "swedish",
    "turkish",
    "simple",
)
_LANGUAGES = ", ".join(TEXT_SEARCH_LANGUAGES)
_CATEGORIES = (
    "identity_profile, tenant_business, operating_model, goals_kpis, tools_integrations, people_contacts, projects,"
    " preference, pattern, style"
)
_EMOTIONS = (
    "alegria, tristeza, ansiedade, raiva, medo, surpresa, calma, nojo, frustracao, gratidao, esperanca, orgulho,"
    " vergonha, culpa, neutro"
)
_MEMORY_EVENTS = (
    "memory.write_rejected, memory.created, memory.updated, memory.duplicate, memory.unchanged, memory.corrected,"
    " memory.forgotten, memory.hard_deleted, memory.decayed, memory.expired, memory.consent, memory.staged,"
    " memory.promoted, memory.purged, memory.inspected, user.exported, user.erased"
)
_NO_ZERO = "an embedding must not be the zero vector (its norm is 0): the embedder returned nothing usable"

CONSTRAINTS: dict[str, str] = {
    # check constraints
    "agent_bindings_name_format": "an agent's name must be 1 to 63 characters: lower-case letters, digits, '_', '.'"
    " and '-', starting with a letter or a digit",
    "agent_bindings_overrides_is_object": "an agent's rag overrides must be a JSON object",
    "answer_audit_source_check": "an answer's source must be one of: CACHE, SESSION, LLM, EXTRACTIVE, PASSAGES,"
    " REFUSAL",
    "answer_audit_timings_is_object": "an answer's timings must be a JSON object",
    "answer_feedback_comment_length": "a comment on a reply must have 1 to 1000 characters",
    "answer_feedback_question_length": "the question of a reply's feedback must have 1 to 2000 characters",
    "judged_questions_question_length": "a judged question must have 1 to 2000 characters",
    "judged_questions_relevant_count": "a judged question names 1 to 20 documents that answer it",
    "answer_cache_answer_is_object": "a cached answer must be a JSON object",
    "chunks_chunk_index_check": "a chunk's chunk_index must be 0 or more",
    "chunks_content_length": "a chunk's content must have 1 to 100000 characters",
    "chunks_embedding_not_zero": _NO_ZERO,
    "chunks_metadata_is_object": "a chunk's metadata must be a JSON object",
    "chunks_sentence_embeddings_count": "a chunk has 1 to 64 sentence embeddings",
    "documents_language_check": f"a document's language must be one of: {_LANGUAGES}",
    "documents_data_classification_check": "a document's data_classification must be one of: public, internal,"
    " confidential, restricted",
    "documents_pii_replacements_nonnegative": "a document's pii_replacements must be 0 or more",
    "documents_quarantine_reason": "a quarantined document needs its quarantine reason, and only a quarantined one"
    " has one",
    "documents_source_type_check": "a document's source type must be one of: regulation, policy, assembly_minutes,"
    " reservation, decision, penalty, metric, faq, manual, other",
    "documents_status_check": "a document's status must be one of: active, superseded, archived, quarantined",
    "documents_title_length": "a document's title must have 1 to 500 characters",
    "documents_trust_score_range": "a document's trust must lie in [0, 1]",
    "embedding_failures_attempts_check": "an embedding failure counts 1 attempt or more",
    "embedding_failures_error_length": "an embedding failure's error has at most 2000 characters",
    "embedding_failures_kind_check": "an embedding failure's kind must be one of: chunks, memories, memory_staging,"
    " messages",
    "embedding_models_dims_check": "an embedding model's dimensions must lie in [1, 2000]",
    "embedding_models_distance_check": "an embedding model's distance must be cosine",
    "embedding_models_name_format": "an embedding model's name must be 1 to 128 characters: letters, digits, '.',"
    " '_', ':', '/' and '-', starting with a letter or a digit",
    "embedding_models_provider_check": "an embedding model's provider must be one of: local, openai, azure",
    "ingestion_jobs_errors_is_array": "an ingestion job's errors must be a JSON array",
    "ingestion_jobs_status_check": "an ingestion job's status must be one of: running, succeeded, partial, failed",
    "knowledge_bases_language_check": f"a knowledge base's language must be one of: {_LANGUAGES}",
    "knowledge_bases_name_length": "a knowledge base's name must have 1 to 200 characters",
    "knowledge_bases_overrides_is_object": "a knowledge base's overrides must be a JSON object",
    "knowledge_bases_status_check": "a knowledge base's status must be one of: draft, indexing, ready, error",
    "knowledge_bases_tuning_is_object": "a knowledge base's tuning must be a JSON object",
    "memberships_role_check": "a member's role must be one of: admin, member",
    "memories_category_check": f"a memory's category must be one of: {_CATEGORIES}",
    "memories_confidence_range": "a memory's confidence must lie in [0, 1]",
    "memories_embedding_model": "a memory's embedding and its model go together",
    "memories_embedding_not_zero": _NO_ZERO,
    "memories_emotion_check": f"a memory's emotion must be one of: {_EMOTIONS}",
    "memories_intensity_range": "a memory's intensity must lie in [0, 10]",
    "memories_key_format": "a memory's key must be dotted lower-case words, such as prefs.short_answers",
    "memories_life_domain_check": "a memory's life domain must be one of: trabalho, relacionamentos, saude, financas,"
    " outros",
    "memories_scope_check": "a memory's scope must be one of: personal, tenant_shared",
    "memories_source_check": "a memory's source must be one of: profile_seed, explicit_user, inferred, admin_system,"
    " conversation, behavior_analysis",
    "memories_status_check": "a memory's status must be one of: active, deprecated, deleted, expired",
    "memories_tags_check": "a memory needs 1 or more tags, each a lower-case word (letters, digits, '_')",
    "memories_tags_unique": "a memory's tags must not repeat",
    "memory_events_event_check": f"a memory event must be one of: {_MEMORY_EVENTS}",
    "memory_staging_embedding_not_zero": _NO_ZERO,
    "memory_staging_expiry_window": "a staged memory expires after it is staged and within 30 days",
    "memory_staging_status_check_active": "a staged memory is active until it is promoted or purged",
    "messages_attachments_is_array": "a message's attachments must be a JSON array",
    "messages_content_length": "a message's content must have 1 to 100000 characters",
    "messages_embedding_model": "a message's embedding and its model go together",
    "messages_embedding_not_zero": _NO_ZERO,
    "messages_metadata_is_object": "a message's metadata must be a JSON object",
    "messages_modality_check": "a message's modality must be one of: chat, voice",
    "messages_role_check": "a message's role must be one of: user, assistant, system, tool",
    "messages_tokens_need_embedding": "a message's token bits need its embedding",
    "messages_tokens_paired": "a message's token ids and token bits go together, one bit string per id",
    "model_calibrations_config_is_object": "a model calibration must be a JSON object",
    "model_calibrations_model_format": "a model calibration's model name must be 1 to 128 characters: letters,"
    " digits, '.', '_', ':', '/' and '-'",
    "model_calibrations_source_check": "a model calibration's source must be one of: config.toml,"
    " set_model_calibration",
    "project_secrets_value_length": "a project secret must be at least 32 bytes",
    "sessions_data_is_object": "a session's data must be a JSON object",
    "sessions_expiry_order": "a session's idle expiry cannot be after its absolute expiry",
    "sessions_pending_is_array": "a session's pending confirmations must be a JSON array",
    "settings_config_is_object": "a config must be a JSON object",
    "settings_tuning_is_object": "a tuning must be a JSON object",
    "tenants_name_length": "a tenant's name must have 1 to 200 characters",
    "tenants_slug_format": "a tenant's slug must be 1 to 63 characters: lower-case letters, digits, '_' and '-',"
    " starting with a letter or a digit (such as sol or condominio-sol)",
    # unique and primary keys
    "agent_bindings_tenant_name_key": "the tenant has an agent of that name already",
    "chunks_tenant_hash_model_key": "the tenant holds a chunk of that text with that model already",
    "documents_id_tenant_key": "that document exists already",
    "documents_kb_source_uri_key": "the knowledge base holds a document from that source already",
    "knowledge_bases_id_tenant_key": "that knowledge base exists already",
    "knowledge_bases_tenant_name_key": "the tenant has a knowledge base of that name already",
    "tenants_slug_key": "a tenant with that slug exists already",
    "judged_questions_kb_question_key": "the knowledge base has that judged question already",
    "agent_bindings_pkey": "that agent exists already",
    "answer_audit_pkey": "that answer's trace exists already",
    "answer_feedback_pkey": "that reply has feedback already",
    "judged_questions_pkey": "that judged question exists already",
    "answer_cache_pkey": "that answer is cached already",
    "chunk_access_pkey": "that chunk's access is recorded already",
    "chunks_pkey": "that chunk exists already",
    "conversation_summaries_pkey": "that conversation has a summary already",
    "data_access_log_pkey": "that access is logged already",
    "documents_pkey": "that document exists already",
    "embedding_failures_pkey": "that embedding failure is recorded already",
    "embedding_models_pkey": "an embedding model of that name is registered already",
    "id_keys_pkey": "that id key exists already",
    "ingestion_jobs_pkey": "that ingestion job exists already",
    "kb_postings_pkey": "that posting exists already",
    "kb_term_stats_pkey": "those term statistics exist already",
    "kb_text_stats_pkey": "those text statistics exist already",
    "knowledge_bases_pkey": "that knowledge base exists already",
    "memberships_pkey": "that user is a member of the tenant already",
    "memories_pkey": "that memory exists already",
    "memory_consents_pkey": "that user's consent is recorded already",
    "memory_events_pkey": "that memory event exists already",
    "memory_staging_pkey": "that staged memory exists already",
    "messages_pkey": "that message exists already",
    "model_calibrations_pkey": "that model is calibrated already",
    "project_secrets_pkey": "a project secret of that name exists already",
    "rate_limit_buckets_pkey": "that rate-limit bucket exists already",
    "read_queue_pkey": "that read is queued already",
    "sessions_pkey": "that session exists already",
    "settings_pkey": "that config row exists already",
    "tenant_moves_pkey": "that tenant is being moved already",
    "tenants_pkey": "that tenant exists already",
    # foreign keys
    "chunks_document_fkey": "the document of that chunk does not exist in the tenant",
    "chunks_embedding_model_fkey": "that embedding model is not registered (`hipocampo model list`)",
    "documents_kb_fkey": "that knowledge base does not exist in the tenant",
    "answer_feedback_trace_id_fkey": "that reply's trace does not exist",
    "judged_questions_kb_id_fkey": "that knowledge base does not exist",
    "ingestion_jobs_kb_fkey": "that knowledge base does not exist in the tenant",
    "memories_embedding_model_fkey": "that embedding model is not registered (`hipocampo model list`)",
    "memories_supersedes_fkey": "the memory it replaces does not exist",
    "messages_embedding_model_fkey": "that embedding model is not registered (`hipocampo model list`)",
    **{
        f"{table}_tenant_id_fkey": "that tenant does not exist"
        for table in (
            "agent_bindings",
            "answer_audit",
            "answer_cache",
            "answer_feedback",
            "judged_questions",
            "conversation_summaries",
            "documents",
            "ingestion_jobs",
            "knowledge_bases",
            "memberships",
            "memories",
            "memory_consents",
            "memory_staging",
            "messages",
            "sessions",
        )
    },
}

# PostgreSQL's wording of a violation ('new row for relation "t" violates check constraint "x"',
# 'duplicate key value violates unique constraint "x"', 'insert or update on table "t" violates
# foreign key constraint "x"'), wherever it sits in a message.
_VIOLATION = re.compile(
    r'(?:new row for relation "[^"]+" |duplicate key value |(?:insert or update|update or delete) on table "[^"]+" )?'
    r'violates (?:check|unique|foreign key|exclusion) constraint "(\w+)"(?: on table "[^"]+")?'
)


def in_words(message: str, constraint: str | None = None) -> str:
    """``message`` with the constraint it names said in words: 'new row for relation "tenants"
    violates check constraint "tenants_slug_format"' becomes "a tenant's slug must be 1 to 63
    characters: …", and what an RPC said around it stays ("invalid document: …"). ``constraint``
    (the error's diagnostic) is used when the message names none. A message naming no known
    constraint comes back as it was."""
    found = _VIOLATION.search(message)
    if found and found.group(1) in CONSTRAINTS:
        return message[: found.start()] + CONSTRAINTS[found.group(1)] + message[found.end() :]
    if found is None and constraint in CONSTRAINTS and "constraint" in message:
        return CONSTRAINTS[constraint]
    return message
