-- rpcs without jit.
-- every RPC of the hipocampo schema sets jit = off: compiling their plans cost up to 0.5 s a call on a server built with LLVM (history search's lexical leg on PostgreSQL 15); make migration writes a function's settings, which migra leaves out
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo.detect_conflicts(query_text text, chunk_ids bigint[], trust_margin double precision default null::double precision, stopwords jsonb default null::jsonb, subject_overlap double precision default null::double precision)
returns jsonb
language sql
stable
set search_path to ''
set jit to 'off'
as $function$
    select hipocampo_private._caller();
    with cfg as (
        select s.config -> 'rag' as rag from hipocampo_private.settings as s where s.tenant_id is null
    ),

    question_scope as (
        select case
            when hipocampo_private._scope_of(detect_conflicts.query_text) = 'geral' then null
            else hipocampo_private._scope_of(detect_conflicts.query_text)
        end as scope
    ),

    facts as (
        select f.* from hipocampo_private._topic_facts(
            detect_conflicts.query_text, detect_conflicts.chunk_ids,
            coalesce(detect_conflicts.stopwords, (select cfg.rag -> 'question_stopwords' from cfg))
        ) as f
    ),

    scoped as (
        select f.* from facts as f, question_scope as qs
        where qs.scope is null or f.scope = qs.scope
    ),

    -- The facts another document contradicts about the same subject.
    conflicting as (
        select g.* from scoped as g
        where exists (
            select 1 from scoped as o
            where o.kind = g.kind and o.scope = g.scope
              and o.document_id <> g.document_id and o.value <> g.value
              and (
                  select count(*) from (select unnest(o.words) intersect select unnest(g.words)) as i
              )::double precision / greatest((
                  select count(*) from (select unnest(o.words) union select unnest(g.words)) as u
              ), 1) >= coalesce(
                  detect_conflicts.subject_overlap,
                  ((select cfg.rag ->> 'conflict_subject_overlap' from cfg))::double precision
              )
        )
    ),

    groups as (
        select g.kind, g.scope from conflicting as g group by g.kind, g.scope
    ),

    ranked as (
        select gr.kind, gr.scope, d.document_id, d.trust_score,
               row_number() over (partition by gr.kind, gr.scope order by d.trust_score desc, d.document_id) as rn
        from groups as gr
        cross join lateral (
            select distinct s.document_id, s.trust_score from conflicting as s
            where s.kind = gr.kind and s.scope = gr.scope
        ) as d
    ),

    verdicts as (
        select r1.kind, r1.scope,
               r1.trust_score - coalesce(r2.trust_score, 0)
               >= coalesce(detect_conflicts.trust_margin, ((select cfg.rag ->> 'conflict_trust_margin' from cfg))::double precision)
               as resolved,
               r1.document_id as top_document
        from ranked as r1
        left join ranked as r2 on r2.kind = r1.kind and r2.scope = r1.scope and r2.rn = 2
        where r1.rn = 1
    )

    select coalesce(jsonb_agg(jsonb_build_object(
        'kind', v.kind,
        'scope', v.scope,
        'resolved', v.resolved,
        'winner_document_id', case when v.resolved then v.top_document end,
        'document_ids', (
            select jsonb_agg(distinct s.document_id) from conflicting as s where s.kind = v.kind and s.scope = v.scope
        ),
        'values', (
            select jsonb_agg(jsonb_build_object(
                'value', s.value, 'document_id', s.document_id, 'chunk_id', s.chunk_id, 'title', s.title,
                'trust_score', s.trust_score, 'sentence', s.sentence
            ) order by s.trust_score desc, s.chunk_id)
            from conflicting as s where s.kind = v.kind and s.scope = v.scope
        )
    ) order by v.kind, v.scope), '[]'::jsonb)
    from verdicts as v
$function$;

alter function hipocampo.activate_embedding_model(name text) set jit = off;
alter function hipocampo.active_embedding_model() set jit = off;
alter function hipocampo.add_member(tenant_id uuid, user_id uuid, role text) set jit = off;
alter function hipocampo.add_message(conversation_id uuid, role text, content text, modality text, attachments jsonb, embedding extensions.vector, metadata jsonb, language text, created_at timestamp with time zone, user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.add_pending_confirmation(session_id uuid, action text, payload jsonb) set jit = off;
alter function hipocampo.answer_evidence(query_text text, query_embedding extensions.vector, kb_ids uuid[], agent text, tenant_id uuid) set jit = off;
alter function hipocampo.answer_sources(answer text, evidence jsonb) set jit = off;
alter function hipocampo.build_model_index(embedding_model text) set jit = off;
alter function hipocampo.cache_get(question text, kb_ids uuid[], agent text, tenant_id uuid) set jit = off;
alter function hipocampo.cache_put(question text, kb_ids uuid[], answer jsonb, agent text, tenant_id uuid) set jit = off;
alter function hipocampo.chunks_without_sentences(batch_size integer, filter_tenant_id uuid, after_chunk_id bigint) set jit = off;
alter function hipocampo.close_session(session_id uuid) set jit = off;
alter function hipocampo.context_pack(conversation_id uuid, query text, query_embedding extensions.vector, modality text, token_budget integer, kb_ids uuid[], agent text, session_id uuid, user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.conversation_context(conversation_id uuid, last_n integer, user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.correct_memory(memory_id uuid, value jsonb, description text, embedding extensions.vector) set jit = off;
alter function hipocampo.correct_user_memory(memory_id uuid, value jsonb, description text, embedding extensions.vector, tenant_id uuid) set jit = off;
alter function hipocampo.create_knowledge_base(name text, description text, tags text[], language text, overrides jsonb, tenant_id uuid) set jit = off;
alter function hipocampo.create_tenant(name text, slug text, admin_user_id uuid) set jit = off;
alter function hipocampo.current_tenant(tenant_id uuid) set jit = off;
alter function hipocampo.defer_model_index(embedding_model text) set jit = off;
alter function hipocampo.delete_agent_binding(name text, tenant_id uuid) set jit = off;
alter function hipocampo.delete_document(document_id uuid) set jit = off;
alter function hipocampo.delete_knowledge_base(kb_id uuid) set jit = off;
alter function hipocampo.delete_tenant(tenant_id uuid) set jit = off;
alter function hipocampo.document_hashes(kb_id uuid, embedding_model text) set jit = off;
alter function hipocampo.document_text(document_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.documents_not_language(kb_id uuid, source_uris text[]) set jit = off;
alter function hipocampo.drain_read_queue(max_rows integer) set jit = off;
alter function hipocampo.drop_embedding_model(name text) set jit = off;
alter function hipocampo.effective_config(tenant_id uuid, kb_id uuid) set jit = off;
alter function hipocampo.erase_user(user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.evidence_support(query_text text, chunk_ids bigint[], stopwords jsonb) set jit = off;
alter function hipocampo.export_user_data(user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.extractive_answer(evidence jsonb, min_support double precision, max_quotes integer) set jit = off;
alter function hipocampo.finish_ingestion_job(job_id uuid, status text, counts jsonb, errors jsonb) set jit = off;
alter function hipocampo.forbidden_content(texts text[], kb_id uuid) set jit = off;
alter function hipocampo.forget_memory(memory_id uuid) set jit = off;
alter function hipocampo.forget_user_memory(memory_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.get_document(document_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.get_session(session_id uuid, renew boolean) set jit = off;
alter function hipocampo.hard_delete_memory(memory_id uuid) set jit = off;
alter function hipocampo.heartbeat_ingestion_job(job_id uuid) set jit = off;
alter function hipocampo.hybrid_search(query_text text, query_embedding extensions.vector, kb_ids uuid[], source_types text[], metadata_filter jsonb, match_count integer, min_similarity double precision, fusion text, dense_weight double precision, lexical_weight double precision, rerank text, mmr_lambda double precision, embedding_model text, tenant_id uuid) set jit = off;
alter function hipocampo.ingest_document(kb_id uuid, document jsonb, chunks jsonb, embedding_model text) set jit = off;
alter function hipocampo.ingest_documents(kb_id uuid, documents jsonb, embedding_model text) set jit = off;
alter function hipocampo.inspect_user_memory(user_id uuid, key text, history_limit integer, tenant_id uuid) set jit = off;
alter function hipocampo.knowledge_base_id(name text, tenant_id uuid) set jit = off;
alter function hipocampo.list_agent_bindings(tenant_id uuid) set jit = off;
alter function hipocampo.list_documents(kb_id uuid, after_source_uri text, max_rows integer) set jit = off;
alter function hipocampo.list_knowledge_bases(tenant_id uuid) set jit = off;
alter function hipocampo.list_members(tenant_id uuid) set jit = off;
alter function hipocampo.list_tenants() set jit = off;
alter function hipocampo.lookup_memories(key text, category text, include_history boolean) set jit = off;
alter function hipocampo.membership_role(user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.memories_without_embedding(keys text[], user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.memory_consent(user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.memory_quota_use(tenant_id uuid) set jit = off;
alter function hipocampo.messages_without_tokens(batch_size integer, filter_tenant_id uuid, after_message_id bigint) set jit = off;
alter function hipocampo.normalize_question(question text) set jit = off;
alter function hipocampo.numbers_absent(answer text, evidence jsonb) set jit = off;
alter function hipocampo.open_session(conversation_id uuid, user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.plain_text(content text) set jit = off;
alter function hipocampo.promote_memory(staging_id uuid, intensity numeric, override boolean) set jit = off;
alter function hipocampo.promote_user_memory(staging_id uuid, intensity numeric, override boolean, tenant_id uuid) set jit = off;
alter function hipocampo.purge_expired(now timestamp with time zone) set jit = off;
alter function hipocampo.purge_sessions(now timestamp with time zone) set jit = off;
alter function hipocampo.purge_transient_state(now timestamp with time zone) set jit = off;
alter function hipocampo.quarantine_document(kb_id uuid, source_uri text, title text, source_type text, kind text, reason text, content_hash text) set jit = off;
alter function hipocampo.question_refusal(question text, min_chars integer, max_chars integer) set jit = off;
alter function hipocampo.rag_config(kb_id uuid, agent text, tenant_id uuid) set jit = off;
alter function hipocampo.record_answer(trace_id uuid, question text, answer_source text, reason text, confidence real, candidates integer, filtered integer, evidence_chunk_ids bigint[], timings_ms jsonb, latency_ms real, kb_ids uuid[], agent text, user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.record_embedding_failure(kind text, row_ids text[], error text) set jit = off;
alter function hipocampo.recover_ingestion_jobs(now timestamp with time zone, kb_id uuid) set jit = off;
alter function hipocampo.refusal_text(reason text, conflicts jsonb, refusal_message text) set jit = off;
alter function hipocampo.register_embedding_model(name text, provider text, dims integer, activate boolean) set jit = off;
alter function hipocampo.remember(key text, value jsonb, description text, category text, embedding extensions.vector, scope text, confidence double precision, source text, source_ref text, conversation_id uuid, tags text[], emotion text, intensity numeric, life_domain text, pinned boolean, token_count integer, expires_at timestamp with time zone, user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.remove_member(tenant_id uuid, user_id uuid) set jit = off;
alter function hipocampo.requeue_embedding_failures(kind text) set jit = off;
alter function hipocampo.requeue_tenant_embeddings(kind text, tenant_id uuid) set jit = off;
alter function hipocampo.resolve_pending_confirmation(session_id uuid, confirmation_id uuid) set jit = off;
alter function hipocampo.rows_to_embed(kind text, batch_size integer, after_id text) set jit = off;
alter function hipocampo.run_memory_maintenance(now timestamp with time zone) set jit = off;
alter function hipocampo.schedule_embedding_queue() set jit = off;
alter function hipocampo.schedule_maintenance() set jit = off;
alter function hipocampo.scrub_pii(texts text[]) set jit = off;
alter function hipocampo.search_history(query_text text, query_embedding extensions.vector, filter_conversation_id uuid, match_count integer, filter_modality text, user_id uuid, tenant_id uuid, query_token_ids integer[], query_token_bits bit varying[]) set jit = off;
alter function hipocampo.search_memories(query_embedding extensions.vector, mode text, match_count integer, filter_tags text[], filter_emotion text, filter_life_domain text, filter_category text, filter_scope text, min_score double precision, include_staging boolean) set jit = off;
alter function hipocampo.search_model(kb_ids uuid[], tenant_id uuid) set jit = off;
alter function hipocampo.seed_profile(profile jsonb, source_ref text, user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.session_add_message(session_id uuid, role text, content text, modality text, attachments jsonb, embedding extensions.vector, metadata jsonb) set jit = off;
alter function hipocampo.session_record_turn(session_id uuid, question text, resolved_question text, answer jsonb) set jit = off;
alter function hipocampo.session_turn(session_id uuid, question text, query_embedding extensions.vector) set jit = off;
alter function hipocampo.set_agent_binding(name text, kb_ids uuid[], rag_overrides jsonb, tenant_id uuid) set jit = off;
alter function hipocampo.set_chunk_sentences(items jsonb) set jit = off;
alter function hipocampo.set_document_metadata(document_id uuid, metadata jsonb) set jit = off;
alter function hipocampo.set_document_status(document_id uuid, status text, trust_score real) set jit = off;
alter function hipocampo.set_knowledge_base_config(kb_id uuid, section text, patch jsonb) set jit = off;
alter function hipocampo.set_knowledge_base_status(kb_id uuid, status text) set jit = off;
alter function hipocampo.set_knowledge_base_tuning(kb_id uuid, model text, section text, patch jsonb) set jit = off;
alter function hipocampo.set_memory_consent(granted boolean, user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.set_memory_embeddings(items jsonb) set jit = off;
alter function hipocampo.set_message_tokens(message_id bigint, token_ids integer[], token_bits bit varying[]) set jit = off;
alter function hipocampo.set_model_calibration(model text, calibration jsonb) set jit = off;
alter function hipocampo.set_row_embeddings(kind text, items jsonb) set jit = off;
alter function hipocampo.set_tenant_config(section text, patch jsonb, tenant_id uuid) set jit = off;
alter function hipocampo.set_tenant_tuning(model text, section text, patch jsonb, tenant_id uuid) set jit = off;
alter function hipocampo.staged_memories() set jit = off;
alter function hipocampo.start_ingestion_job(kb_id uuid, documents_total integer, hold_session boolean) set jit = off;
alter function hipocampo.take_embedding_budget(caller text, characters integer) set jit = off;
alter function hipocampo.take_ip_rate_limit(ip inet) set jit = off;
alter function hipocampo.take_rate_limit(cost double precision, user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.tenant_by_slug(slug text) set jit = off;
alter function hipocampo.tenant_digest(tenant_id uuid) set jit = off;
alter function hipocampo.tenant_embedding_queue(tenant_id uuid) set jit = off;
alter function hipocampo.tenant_metrics(days integer, tenant_id uuid) set jit = off;
alter function hipocampo.update_conversation_summary(conversation_id uuid, summary text, through_message_id bigint, user_id uuid, tenant_id uuid) set jit = off;
alter function hipocampo.update_knowledge_base(kb_id uuid, name text, description text) set jit = off;
alter function hipocampo.update_session(session_id uuid, summary text, tool text) set jit = off;
