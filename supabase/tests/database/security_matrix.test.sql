-- The security matrix: every function of the exposed schema (hipocampo), every security definer
-- function of hipocampo_private, and every table and view of both, run as each of nine callers
-- against tenant A (the victim), as PostgREST runs a request (`set local role` + request.jwt.claims).
--
-- Callers, in this order in every row of expectations below:
--   anon | authenticated without sub | authenticated without a tenant claim (member A's sub) |
--   a member of tenant B | a removed member of A (token still names A) | a plain member of A |
--   the admin of B | the admin of A | service_role
-- Outcomes:
--   a SQLSTATE (42501 refused, P0002 not found, …) when the call raised one;
--   none   - it ran and neither returned tenant A's secret nor changed any of tenant A's rows;
--   read   - the answer holds tenant A's secret (the word segredoalfa in A's chunks, memories,
--            messages, cached answer) or, for a table or view, A's rows were visible;
--   write  - it changed tenant A's rows (any table, compared as the owner before and after), or
--            for a table, the insert, update or delete reached at least one row;
--   read+write - both.
-- Each case runs in a subtransaction that is rolled back, so every case sees the same data.
-- A function, table or view with no row of expectations fails the suite (so a new RPC cannot
-- ship without its row), as does a row for something that no longer exists. A second table (at
-- the end) runs every function as a plain member of A against A's shared state: what it changes
-- of A's rows that are not the member's own; every function has its row there too.
begin;
select * from no_plan();

create function pg_temp.unit_vector(k integer) returns extensions.vector
language sql as $$
    select (array_fill(0::real, array[k - 1]) || 1::real
        || array_fill(0::real, array[(select e.dims from hipocampo_private.embedding_models as e where e.active) - k])
    )::extensions.vector
$$;

create function pg_temp.act(role text, sub text, tenant text) returns void
language plpgsql as $$
begin
    perform set_config('role', act.role, true);
    perform set_config('request.jwt.claims', jsonb_strip_nulls(jsonb_build_object(
        'role', act.role, 'sub', act.sub, 'app_metadata', jsonb_strip_nulls(jsonb_build_object('tenant_id', act.tenant))
    ))::text, true);
end;
$$;

create function pg_temp.t(name text) returns text
language sql as $$ select current_setting('t.' || name) $$;

-- Tenant A (victim: admin, member, removed member) and tenant B (admin, member), with data of
-- tenant A in every table that holds tenant data.
select pg_temp.act('service_role', null, null);
do $$
declare
    admin_a uuid := gen_random_uuid();
    member_a uuid := gen_random_uuid();
    removed_a uuid := gen_random_uuid();
    admin_b uuid := gen_random_uuid();
    member_b uuid := gen_random_uuid();
    tenant_a uuid := hipocampo.create_tenant('Matrix A', 'matrix-a-' || left(gen_random_uuid()::text, 8), admin_a);
    tenant_b uuid := hipocampo.create_tenant('Matrix B', 'matrix-b-' || left(gen_random_uuid()::text, 8), admin_b);
    kb_a uuid := hipocampo.create_knowledge_base('kb', tenant_id => tenant_a);
    kb_b uuid := hipocampo.create_knowledge_base('kb', tenant_id => tenant_b);
    model text := (select e.name from hipocampo_private.embedding_models as e where e.active);
    doc_a uuid;
    conv_a uuid := gen_random_uuid();
    memory_a uuid;
    staged_a uuid;
    session_a uuid;
    message_a bigint;
    trace_a uuid := gen_random_uuid();
begin
    perform hipocampo.add_member(tenant_a, member_a, 'member');
    perform hipocampo.add_member(tenant_a, removed_a, 'member');
    perform hipocampo.add_member(tenant_b, member_b, 'member');
    doc_a := (hipocampo.ingest_document(
        kb_a,
        '{"title": "regulamento segredoalfa", "source_uri": "matrix://a", "content_hash": "matrix-a"}',
        jsonb_build_array(jsonb_build_object(
            'chunk_index', 0, 'content', 'Prazo de trancamento segredoalfa: 30 dias.',
            'content_hash', 'matrix-a-0', 'token_count', 6, 'embedding', pg_temp.unit_vector(1)::text::jsonb
        )),
        model
    ) ->> 'document_id')::uuid;
    -- A's knowledge base weighs sentences (whatever the model's calibration): its chunk, which
    -- has none, is on the sentence backfill's work list.
    perform hipocampo.set_knowledge_base_config(kb_a, 'rag', '{"sentence_weight": 0.5}');
    perform hipocampo.start_ingestion_job(kb_a, 1);
    perform hipocampo.set_agent_binding('atendente', array[kb_a], tenant_id => tenant_a);
    perform hipocampo.cache_put('prazo segredoalfa', array[kb_a],
        '{"answer": "segredoalfa: 30 dias", "sources": []}', tenant_id => tenant_a);
    perform hipocampo.record_answer(trace_a, 'prazo segredoalfa', 'LLM', null, 0.9, 1, 1, null, '{}', 1, array[kb_a],
        user_id => member_a, tenant_id => tenant_a);
    perform hipocampo.record_feedback(trace_a, false, 'errado segredoalfa', 'prazo segredoalfa', member_a, tenant_a);
    perform hipocampo.judge_feedback(trace_a, array[doc_a], tenant_a);
    perform hipocampo.take_rate_limit(1, member_a, tenant_a);
    perform hipocampo.set_memory_consent(true, member_a, tenant_a);
    memory_a := (hipocampo.remember('prefs.cafe', '"forte"', 'Gosta de café forte segredoalfa', 'preference',
        pg_temp.unit_vector(2), user_id => member_a, tenant_id => tenant_a) ->> 'memory_id')::uuid;
    staged_a := (hipocampo.remember('projects.horta', '"horta"', 'Começou uma horta segredoalfa', 'projects',
        pg_temp.unit_vector(3), intensity => 3, user_id => member_a, tenant_id => tenant_a) ->> 'memory_id')::uuid;
    perform hipocampo.add_message(conv_a, 'user', 'Meu voo segredoalfa sai às 9h', embedding => pg_temp.unit_vector(4),
        user_id => member_a, tenant_id => tenant_a);
    message_a := (select max(m.id) from hipocampo_private.messages as m where m.tenant_id = tenant_a);
    perform hipocampo.update_conversation_summary(conv_a, 'Voo segredoalfa', message_a, member_a, tenant_a);
    session_a := (hipocampo.open_session(conv_a, member_a, tenant_a) ->> 'session_id')::uuid;
    perform hipocampo.hybrid_search('prazo', pg_temp.unit_vector(1), tenant_id => tenant_a);
    -- a memory read of the conversation (memory_search_similarity)
    perform hipocampo.context_pack(conv_a, 'café', pg_temp.unit_vector(2), user_id => member_a, tenant_id => tenant_a);
    perform hipocampo.drain_read_queue();  -- into the access log and chunk_access
    perform hipocampo.hybrid_search('prazo', pg_temp.unit_vector(1), tenant_id => tenant_a);  -- queued
    delete from hipocampo_private.memberships as m where m.tenant_id = tenant_a and m.user_id = removed_a;
    perform set_config('t.admin_a', admin_a::text, true), set_config('t.member_a', member_a::text, true),
        set_config('t.removed_a', removed_a::text, true), set_config('t.admin_b', admin_b::text, true),
        set_config('t.member_b', member_b::text, true), set_config('t.tenant_a', tenant_a::text, true),
        set_config('t.tenant_b', tenant_b::text, true), set_config('t.kb_a', kb_a::text, true),
        set_config('t.doc_a', doc_a::text, true), set_config('t.conv_a', conv_a::text, true),
        set_config('t.memory_a', memory_a::text, true), set_config('t.staged_a', staged_a::text, true),
        set_config('t.session_a', session_a::text, true), set_config('t.message_a', message_a::text, true),
        set_config('t.model', model, true), set_config('t.trace_a', trace_a::text, true),
        set_config('t.judged_a', (select min(j.id) from hipocampo_private.judged_questions as j where j.tenant_id = tenant_a)::text, true),
        set_config('t.chunk_a', (select min(c.id) from hipocampo_private.chunks as c where c.kb_id = kb_a)::text, true),
        set_config('t.job_a', (select j.id from hipocampo_private.ingestion_jobs as j where j.kb_id = kb_a)::text, true),
        set_config('t.v1', pg_temp.unit_vector(1)::text, true),
        set_config('t.v2', pg_temp.unit_vector(2)::text, true),
        set_config('t.v5', pg_temp.unit_vector(5)::text, true),
        set_config('t.bits', repeat('1', (select e.dims from hipocampo_private.embedding_models as e where e.active)), true);
end;
$$;
select
    set_config('role', 'none', true) as role_reset,
    set_config('request.jwt.claims', '', true) as claims_reset;

create temp table callers (pos integer primary key, name text, role text, sub text, tenant text);
insert into callers values
(1, 'anon', 'anon', null, null),
(2, 'no sub', 'authenticated', null, pg_temp.t('tenant_a')),
(3, 'no tenant claim', 'authenticated', pg_temp.t('member_a'), null),
(4, 'member of B', 'authenticated', pg_temp.t('member_b'), pg_temp.t('tenant_b')),
(5, 'removed member of A', 'authenticated', pg_temp.t('removed_a'), pg_temp.t('tenant_a')),
(6, 'member of A', 'authenticated', pg_temp.t('member_a'), pg_temp.t('tenant_a')),
(7, 'admin of B', 'authenticated', pg_temp.t('admin_b'), pg_temp.t('tenant_b')),
(8, 'admin of A', 'authenticated', pg_temp.t('admin_a'), pg_temp.t('tenant_a')),
(9, 'service_role', 'service_role', null, null);

-- What each function is called with: tenant A's ids wherever the signature takes them.
-- {name} stands for pg_temp.t('name') as a literal.
create temp table calls (object text primary key, call text not null);
insert into calls values
('hipocampo.activate_embedding_model', 'select hipocampo.activate_embedding_model({model})'),
('hipocampo.build_model_index', 'select hipocampo.build_model_index({model})'),
('hipocampo.build_tenant_graphs', 'select hipocampo.build_tenant_graphs()'),
('hipocampo_private._create_tenant_graph', 'select hipocampo_private._create_tenant_graph({model}, {tenant_a})'),
('hipocampo_private._drop_tenant_graph', 'select hipocampo_private._drop_tenant_graph(''chunks_hnsw_'' || repeat(''0'', 12) || ''_'' || repeat(''0'', 32))'),
('hipocampo.defer_model_index', 'select hipocampo.defer_model_index({model})'),
('hipocampo_private._drop_model_index', 'select hipocampo_private._drop_model_index({model})'),
('hipocampo.add_member', 'select hipocampo.add_member({tenant_a}, gen_random_uuid(), ''admin'')'),
('hipocampo.delete_knowledge_base', 'select hipocampo.delete_knowledge_base({kb_a})'),
('hipocampo.delete_tenant', 'select hipocampo.delete_tenant({tenant_a})'),
('hipocampo.list_tenants', 'select count(*) from hipocampo.list_tenants()'),
('hipocampo.current_tenant', 'select count(*) from hipocampo.current_tenant({tenant_a})'),
('hipocampo.list_members', 'select count(*) from hipocampo.list_members({tenant_a})'),
('hipocampo.remove_member', 'select hipocampo.remove_member({tenant_a}, {member_a})'),
('hipocampo.add_message', 'select hipocampo.add_message({conv_a}, ''user'', ''Oi'', user_id => {member_a}, tenant_id => {tenant_a})'),
('hipocampo.add_pending_confirmation', 'select hipocampo.add_pending_confirmation({session_a}, ''pagar'', ''{}'')'),
('hipocampo.answer_evidence', 'select hipocampo.answer_evidence(''prazo segredoalfa'', {v1}, array[{kb_a}]::uuid[], tenant_id => {tenant_a})'),
('hipocampo.cache_get', 'select hipocampo.cache_get(''prazo segredoalfa'', array[{kb_a}]::uuid[], tenant_id => {tenant_a})'),
('hipocampo.cache_put', 'select hipocampo.cache_put(''outra'', array[{kb_a}]::uuid[], ''{"answer": "x", "sources": []}'', tenant_id => {tenant_a})'),
('hipocampo.search_model', 'select hipocampo.search_model(array[{kb_a}]::uuid[], {tenant_a})'),
('hipocampo.documents_not_language', 'select count(*) from hipocampo.documents_not_language({kb_a})'),
('hipocampo.close_session', 'select hipocampo.close_session({session_a})'),
('hipocampo.context_pack', 'select hipocampo.context_pack({conv_a}, ''prazo segredoalfa'', {v1}, user_id => {member_a}, tenant_id => {tenant_a})'),
('hipocampo.conversation_context', 'select hipocampo.conversation_context({conv_a}, 10, {member_a}, {tenant_a})'),
('hipocampo.correct_memory', 'select hipocampo.correct_memory({memory_a}, ''"fraco"'', ''Gosta de café fraco'')'),
('hipocampo.create_knowledge_base', 'select hipocampo.create_knowledge_base(''outra'', tenant_id => {tenant_a})'),
('hipocampo.create_tenant', 'select hipocampo.create_tenant(''C'', ''matrix-c'', {member_a})'),
('hipocampo.delete_document', 'select hipocampo.delete_document({doc_a})'),
('hipocampo.get_document', 'select * from hipocampo.get_document({doc_a}, {tenant_a})'),
('hipocampo.document_text', 'select * from hipocampo.document_text({doc_a}, {tenant_a})'),
('hipocampo.detect_conflicts', 'select hipocampo.detect_conflicts(''prazo'', array[{chunk_a}]::bigint[])'),
('hipocampo.document_hashes', 'select * from hipocampo.document_hashes({kb_a})'),
('hipocampo.drop_embedding_model', 'select hipocampo.drop_embedding_model(''matrix-unknown'')'),
('hipocampo.effective_config', 'select hipocampo.effective_config({tenant_a}, {kb_a})'),
('hipocampo.erase_user', 'select hipocampo.erase_user({member_a}, {tenant_a})'),
('hipocampo.evidence_support', 'select * from hipocampo.evidence_support(''prazo'', array[{chunk_a}]::bigint[])'),
('hipocampo.export_user_data', 'select hipocampo.export_user_data({member_a}, {tenant_a})'),
('hipocampo.inspect_user_memory', 'select hipocampo.inspect_user_memory({member_a}, ''user.name'', 100, {tenant_a})'),
('hipocampo.forget_user_memory', 'select hipocampo.forget_user_memory({memory_a}, {tenant_a})'),
('hipocampo.promote_user_memory', 'select hipocampo.promote_user_memory({staged_a}, 8, true, {tenant_a})'),
('hipocampo.correct_user_memory', 'select hipocampo.correct_user_memory({memory_a}, ''"Outro"'', ''O nome do usuário é Outro'', null, {tenant_a})'),
('hipocampo.finish_ingestion_job', 'select hipocampo.finish_ingestion_job({job_a}, ''failed'', ''{}'', ''[]'')'),
('hipocampo.forget_memory', 'select hipocampo.forget_memory({memory_a})'),
('hipocampo.get_session', 'select hipocampo.get_session({session_a})'),
('hipocampo.hard_delete_memory', 'select hipocampo.hard_delete_memory({memory_a})'),
('hipocampo.heartbeat_ingestion_job', 'select hipocampo.heartbeat_ingestion_job({job_a})'),
('hipocampo.recover_ingestion_jobs', 'select hipocampo.recover_ingestion_jobs(now() + interval ''3650 days'')'),
('hipocampo.tenant_by_slug', 'select hipocampo.tenant_by_slug((select slug from hipocampo_private.tenants where id = {tenant_a}))'),
('hipocampo.tenant_metrics', 'select hipocampo.tenant_metrics(30, {tenant_a})'),
('hipocampo.update_knowledge_base', 'select hipocampo.update_knowledge_base({kb_a}, ''renomeada'', ''descrição'')'),
('hipocampo.list_documents', 'select * from hipocampo.list_documents({kb_a})'),
('hipocampo.forbidden_content', 'select * from hipocampo.forbidden_content(array[''Usuário: oi''], {kb_a})'),
('hipocampo.quarantine_document', 'select hipocampo.quarantine_document({kb_a}, ''matrix://q'', ''q'', ''other'', ''credentials'', ''a key on line 1'', ''h'')'),
('hipocampo.membership_role', 'select hipocampo.membership_role({member_a}, {tenant_a})'),
('hipocampo.memories_without_embedding', 'select * from hipocampo.memories_without_embedding(null, {member_a}, {tenant_a})'),
('hipocampo.active_embedding_model', 'select * from hipocampo.active_embedding_model()'),
('hipocampo.hybrid_search', 'select * from hipocampo.hybrid_search(''prazo segredoalfa'', {v1}, tenant_id => {tenant_a})'),
('hipocampo.ingest_document', 'select hipocampo.ingest_document({kb_a}, ''{"title": "t", "source_uri": "matrix://x", "content_hash": "x"}'', jsonb_build_array(jsonb_build_object(''chunk_index'', 0, ''content'', ''Outro'', ''content_hash'', ''x0'', ''token_count'', 1, ''embedding'', {v5}::jsonb)), {model})'),
('hipocampo.ingest_documents', 'select hipocampo.ingest_documents({kb_a}, jsonb_build_array(jsonb_build_object(''document'', ''{"title": "t", "source_uri": "matrix://y", "content_hash": "y"}''::jsonb, ''chunks'', jsonb_build_array(jsonb_build_object(''chunk_index'', 0, ''content'', ''Outro'', ''content_hash'', ''y0'', ''token_count'', 1, ''embedding'', {v5}::text)))), {model})'),
('hipocampo.knowledge_base_id', 'select hipocampo.knowledge_base_id(''kb'', {tenant_a})'),
('hipocampo.list_knowledge_bases', 'select * from hipocampo.list_knowledge_bases({tenant_a})'),
('hipocampo.lookup_memories', 'select * from hipocampo.lookup_memories(''prefs.cafe'')'),
('hipocampo.messages_without_tokens', 'select * from hipocampo.messages_without_tokens(10, {tenant_a})'),
('hipocampo.question_refusal', 'select hipocampo.question_refusal(''Qual é o prazo?'', 3, 2000)'),
('hipocampo.numbers_absent', 'select hipocampo.numbers_absent(''R$ 900'', ''[{"content": "R$ 1.200"}]'')'),
('hipocampo.plain_text', 'select hipocampo.plain_text(''**multa**'')'),
('hipocampo.extractive_answer', 'select hipocampo.extractive_answer(''[{"n": 1, "content": "prazo de 15 dias"}]'', 0.3)'),
('hipocampo.answer_sources', 'select hipocampo.answer_sources(''x [1]'', ''[{"n": 1, "content": "c", "chunk_id": 1}]'')'),
('hipocampo.refusal_text', 'select hipocampo.refusal_text(''conflicting_sources'', ''[]'', ''Não sei.'')'),
('hipocampo.memory_consent', 'select hipocampo.memory_consent({member_a}, {tenant_a})'),
('hipocampo.normalize_question', 'select hipocampo.normalize_question(''Qual é o prazo?'')'),
('hipocampo.scrub_pii', 'select * from hipocampo.scrub_pii(array[''CPF 529 982 247 25''])'),
('hipocampo.open_session', 'select hipocampo.open_session({conv_a}, {member_a}, {tenant_a})'),
('hipocampo.promote_memory', 'select hipocampo.promote_memory({staged_a}, 9)'),
('hipocampo.purge_expired', 'select hipocampo.purge_expired(now() + interval ''3650 days'')'),
('hipocampo.purge_sessions', 'select hipocampo.purge_sessions(now() + interval ''3650 days'')'),
('hipocampo.purge_transient_state', 'select hipocampo.purge_transient_state(now() + interval ''3650 days'')'),
('hipocampo.drain_read_queue', 'select hipocampo.drain_read_queue()'),
('hipocampo.tenant_digest', 'select hipocampo.tenant_digest({tenant_a})'),
('hipocampo.rag_config', 'select hipocampo.rag_config({kb_a}, tenant_id => {tenant_a})'),
('hipocampo.record_answer', 'select hipocampo.record_answer(gen_random_uuid(), ''q'', ''LLM'', null, 0.9, 1, 1, null, ''{}'', 1, null, tenant_id => {tenant_a})'),
('hipocampo.record_feedback', 'select hipocampo.record_feedback({trace_a}, true, user_id => {member_a}, tenant_id => {tenant_a})'),
('hipocampo.my_tenants', 'select * from hipocampo.my_tenants()'),
('hipocampo.feedback_summary', 'select hipocampo.feedback_summary({kb_a}, 4, {tenant_a})'),
('hipocampo.judge_feedback', 'select hipocampo.judge_feedback({trace_a}, array[{doc_a}]::uuid[], {tenant_a})'),
('hipocampo.judged_questions', 'select * from hipocampo.judged_questions({kb_a}, {tenant_a})'),
('hipocampo.delete_judged_question', 'select hipocampo.delete_judged_question({judged_a}, {tenant_a})'),
('hipocampo.register_embedding_model', 'select hipocampo.register_embedding_model(''matrix-model'', ''local'', 8)'),
('hipocampo.remember', 'select hipocampo.remember(''prefs.cha'', ''"verde"'', ''Gosta de chá verde'', ''preference'', user_id => {member_a}, tenant_id => {tenant_a})'),
('hipocampo.resolve_pending_confirmation', 'select hipocampo.resolve_pending_confirmation({session_a}, gen_random_uuid())'),
('hipocampo.rows_to_embed', 'select * from hipocampo.rows_to_embed(''memories'', 10)'),
('hipocampo.run_memory_maintenance', 'select hipocampo.run_memory_maintenance(now() + interval ''3650 days'')'),
('hipocampo.schedule_maintenance', 'select hipocampo.schedule_maintenance()'),
('hipocampo.schedule_embedding_queue', 'select hipocampo.schedule_embedding_queue()'),
('hipocampo.memory_quota_use', 'select * from hipocampo.memory_quota_use({tenant_a})'),
('hipocampo.tenant_embedding_queue', 'select hipocampo.tenant_embedding_queue({tenant_a})'),
('hipocampo.requeue_tenant_embeddings', 'select hipocampo.requeue_tenant_embeddings(null, {tenant_a})'),
('hipocampo.search_history', 'select * from hipocampo.search_history(''voo segredoalfa'', user_id => {member_a}, tenant_id => {tenant_a})'),
('hipocampo.search_memories', 'select * from hipocampo.search_memories({v2}::extensions.vector, min_score => -1)'),
('hipocampo.seed_profile', 'select hipocampo.seed_profile(''{"user.name": "Ana"}'', user_id => {member_a}, tenant_id => {tenant_a})'),
('hipocampo.session_add_message', 'select hipocampo.session_add_message({session_a}, ''user'', ''Oi'')'),
('hipocampo.session_turn', 'select hipocampo.session_turn({session_a}, ''e aos domingos?'')'),
('hipocampo.session_record_turn', 'select hipocampo.session_record_turn({session_a}, ''Oi'', ''Oi'', ''{"answer": "Olá", "refused": false}'')'),
('hipocampo.set_agent_binding', 'select hipocampo.set_agent_binding(''atendente'', array[{kb_a}]::uuid[], tenant_id => {tenant_a})'),
('hipocampo.list_agent_bindings', 'select * from hipocampo.list_agent_bindings({tenant_a})'),
('hipocampo.delete_agent_binding', 'select hipocampo.delete_agent_binding(''atendente'', {tenant_a})'),
('hipocampo.set_document_metadata', 'select hipocampo.set_document_metadata({doc_a}, ''{"trust_score": 0.95}'')'),
('hipocampo.set_document_status', 'select hipocampo.set_document_status({doc_a}, ''archived'')'),
('hipocampo.set_knowledge_base_config', 'select hipocampo.set_knowledge_base_config({kb_a}, ''rag'', ''{"top_k": 3}'')'),
('hipocampo.set_knowledge_base_tuning', 'select hipocampo.set_knowledge_base_tuning({kb_a}, {model}, ''rag'', ''{"min_confidence": 0.5}'')'),
('hipocampo.set_knowledge_base_status', 'select hipocampo.set_knowledge_base_status({kb_a}, ''error'')'),
('hipocampo.set_memory_consent', 'select hipocampo.set_memory_consent(false, {member_a}, {tenant_a})'),
('hipocampo.set_model_calibration', 'select hipocampo.set_model_calibration(''matrix-model'', (select c.config from hipocampo_private.model_calibrations as c where c.embedding_model = {model}))'),
('hipocampo.set_memory_embeddings', 'select hipocampo.set_memory_embeddings(jsonb_build_array(jsonb_build_object(''memory_id'', {memory_a}, ''embedding'', {v5}::jsonb, ''model'', {model})))'),
('hipocampo.set_message_tokens', 'select hipocampo.set_message_tokens({message_a}::bigint, array[1], array[{bits}]::bit varying[])'),
('hipocampo.set_row_embeddings', 'select hipocampo.set_row_embeddings(''memories'', ''[]'')'),
('hipocampo.chunks_without_sentences', 'select * from hipocampo.chunks_without_sentences(10, {tenant_a})'),
('hipocampo.set_chunk_sentences', 'select hipocampo.set_chunk_sentences(jsonb_build_array(jsonb_build_object(''id'', {chunk_a}, ''sentence_embeddings'', jsonb_build_array(pg_temp.unit_vector(1)::text))))'),
('hipocampo.record_embedding_failure', 'select hipocampo.record_embedding_failure(''memories'', array[''x''], ''boom'')'),
('hipocampo.requeue_embedding_failures', 'select hipocampo.requeue_embedding_failures()'),
('hipocampo.set_tenant_config', 'select hipocampo.set_tenant_config(''rag'', ''{"enabled": false}'', {tenant_a})'),
('hipocampo.set_tenant_tuning', 'select hipocampo.set_tenant_tuning({model}, ''rag'', ''{"min_confidence": 0.5}'', {tenant_a})'),
('hipocampo.staged_memories', 'select * from hipocampo.staged_memories()'),
('hipocampo.start_ingestion_job', 'select hipocampo.start_ingestion_job({kb_a}, 1)'),
('hipocampo.take_ip_rate_limit', 'select hipocampo.take_ip_rate_limit(''203.0.113.7'')'),
('hipocampo.take_embedding_budget', 'select hipocampo.take_embedding_budget(''authenticated:matrix'', 10)'),
('hipocampo.take_rate_limit', 'select hipocampo.take_rate_limit(1, {member_a}, {tenant_a})'),
('hipocampo.update_conversation_summary', 'select hipocampo.update_conversation_summary({conv_a}, ''Outro'', {message_a}::bigint, {member_a}, {tenant_a})'),
('hipocampo.update_session', 'select hipocampo.update_session({session_a}, ''Outro resumo'')'),
('hipocampo_private._pseudonym', 'select hipocampo_private._pseudonym(''203.0.113.7'')'),
('hipocampo_private._caller', 'select hipocampo_private._caller()'),
('hipocampo_private.current_tenant_id', 'select hipocampo_private.current_tenant_id()'),
('hipocampo_private.current_tenant_role', 'select hipocampo_private.current_tenant_role()'),
('hipocampo_private._memory_event', 'select hipocampo_private._memory_event({tenant_a}, {member_a}, null, ''memory.consent'', null, ''{}'')'),
('hipocampo_private._record_read', 'select hipocampo_private._record_read({tenant_a}, ''forged'', 1, ''x'', 1, memory_ids => array[{memory_a}]::uuid[])'),
('hipocampo_private._opaque_id', 'select hipocampo_private._opaque_id()'),
('hipocampo_private._enqueue_standby_read', 'select hipocampo_private._enqueue_standby_read({tenant_a}, ''forged'', 1, null, 1, ''{}'', ''{}'', now(), {member_a}, ''authenticated'', null, null)'),
('extensions.dblink', 'select * from extensions.dblink(''dbname=postgres'', ''select current_user'') as r (u text)'),
('extensions.dblink_exec', 'select extensions.dblink_exec(''dbname=postgres'', ''select 1'')'),
('extensions.dblink_connect', 'select extensions.dblink_connect(''matrix'', ''dbname=postgres'')'),
('hipocampo_private._ensure_model_index', 'select hipocampo_private._ensure_model_index({model})'),
('hipocampo_private._invalidate_answer_cache', 'select hipocampo_private._invalidate_answer_cache()'),
('hipocampo_private._chunks_stats_after_insert', 'select hipocampo_private._chunks_stats_after_insert()'),
('hipocampo_private._refuse_moving_tenant', 'select hipocampo_private._refuse_moving_tenant()'),
('hipocampo_private._chunks_stats_after_delete', 'select hipocampo_private._chunks_stats_after_delete()'),
('hipocampo_private._chunks_access_after_delete', 'select hipocampo_private._chunks_access_after_delete()'),
('hipocampo_private._measure_documents_text', 'select hipocampo_private._measure_documents_text()');

-- What is checked: every function of hipocampo, every security definer function of
-- hipocampo_private and dblink's three entry points (op 'call'); every table and view of both schemas (select, and for tables
-- insert - a copy of one of A's rows -, update and delete of A's rows).
create temp table objects as
select p.oid::regproc::text as object, 'call' as op, 1 as ord
from pg_catalog.pg_proc as p
where
    p.pronamespace = 'hipocampo'::regnamespace
    or (p.pronamespace = 'hipocampo_private'::regnamespace and p.prosecdef)
union all
select c.oid::regclass::text, o.op, o.ord
from pg_catalog.pg_class as c
cross join (values ('select', 2), ('insert', 3), ('update', 4), ('delete', 5)) as o (op, ord)
where
    c.relnamespace in ('hipocampo'::regnamespace, 'hipocampo_private'::regnamespace)
    and (c.relkind in ('r', 'p') or (c.relkind in ('v', 'm') and o.op = 'select'))
union all
-- dblink's entry points (issue 57 §1: no API role executes them; the catalog test checks the rest
-- of the extensions schema)
select distinct
    'extensions.' || p.proname as object,
    'call' as op,
    1 as ord
from pg_catalog.pg_proc as p
where p.pronamespace = 'extensions'::regnamespace and p.proname in ('dblink', 'dblink_exec', 'dblink_connect');

-- Tenant A's rows of a table or view: by tenant_id, else id (tenants), else all (global tables).
create function pg_temp.victim_rows(rel regclass) returns text
language sql stable as $$
    select case
        when exists (select 1 from pg_catalog.pg_attribute as a
                     where a.attrelid = rel and a.attname = 'tenant_id' and not a.attisdropped)
            then format('tenant_id = %L', pg_temp.t('tenant_a'))
        when rel = 'hipocampo_private.tenants'::regclass then format('id = %L', pg_temp.t('tenant_a'))
        when rel = 'hipocampo_private.rate_limit_buckets'::regclass
            then format('bucket like %L', '%' || pg_temp.t('tenant_a') || '%')
        else 'true'
    end
$$;

-- Tenant A's rows that are not member A's own (their user_id, user_ref or rate-limit bucket):
-- the shared state of the second table below.
create function pg_temp.shared_rows(rel regclass) returns text
language sql stable as $$
    select pg_temp.victim_rows(rel) || case
        when exists (select 1 from pg_catalog.pg_attribute as a
                     where a.attrelid = rel and a.attname = 'user_id' and not a.attisdropped)
            then format(' and user_id is distinct from %L', pg_temp.t('member_a'))
        when exists (select 1 from pg_catalog.pg_attribute as a
                     where a.attrelid = rel and a.attname = 'user_ref' and not a.attisdropped)
            then format(' and user_ref is distinct from %L', hipocampo_private._user_ref(
                pg_temp.t('tenant_a')::uuid, pg_temp.t('member_a')::uuid))
        when rel = 'hipocampo_private.rate_limit_buckets'::regclass
            then format(' and bucket not like %L', '%' || hipocampo_private._user_ref(
                pg_temp.t('tenant_a')::uuid, pg_temp.t('member_a')::uuid) || '%')
        else ''
    end
$$;

-- Everything of tenant A, as the owner sees it: compared before and after each case (shared: only
-- A's rows that are not member A's own, pg_temp.shared_rows below).
create function pg_temp.fingerprint(shared boolean default false) returns text
language plpgsql as $$
declare
    rel regclass;
    acc text := '';
    part text;
begin
    for rel in
        select c.oid from pg_catalog.pg_class as c
        where c.relnamespace = 'hipocampo_private'::regnamespace and c.relkind = 'r'
        order by c.relname
    loop
        execute format('select md5(coalesce(string_agg(x::text, ''|'' order by x::text), '''')) from %s as x where %s',
            rel, case when shared then pg_temp.shared_rows(rel) else pg_temp.victim_rows(rel) end) into part;
        acc := acc || part;
    end loop;
    return md5(acc);
end;
$$;

-- The statement of one (object, op), with tenant A's ids filled in.
create function pg_temp.statement(object text, op text) returns text
language plpgsql as $$
declare
    s text;
    k text;
    cols text;
begin
    if op = 'call' then
        select c.call into s from calls as c where c.object = statement.object;
        if s is null then
            return null;
        end if;
        for k in select m[1] from regexp_matches(s, '\{(\w+)\}', 'g') as m loop
            s := replace(s, '{' || k || '}', quote_literal(pg_temp.t(k)));
        end loop;
        return format('select coalesce(string_agg(r::text, '',''), '''') from (%s) as r', s);
    elsif op = 'select' then
        return format('select count(*)::text from %s where %s', object, pg_temp.victim_rows(object::regclass));
    elsif op = 'update' then
        select format('%I = %I', a.attname, a.attname) into cols
        from pg_catalog.pg_attribute as a
        where a.attrelid = object::regclass and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
          and a.attidentity = ''
        order by a.attnum limit 1;
        return format('with w as (update %s set %s where %s returning 1) select count(*)::text from w',
            object, cols, pg_temp.victim_rows(object::regclass));
    elsif op = 'delete' then
        return format('with w as (delete from %s where %s returning 1) select count(*)::text from w',
            object, pg_temp.victim_rows(object::regclass));
    else
        -- insert: one of A's rows again, but for identity and defaulted key columns.
        select string_agg(format('%I', a.attname), ', ' order by a.attnum) into cols
        from pg_catalog.pg_attribute as a
        where a.attrelid = object::regclass and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
          and a.attidentity = ''
          and not (a.atthasdef and exists (
              select 1 from pg_catalog.pg_index as i where i.indrelid = a.attrelid and i.indisprimary
                and a.attnum = any(i.indkey)));
        return format('with w as (insert into %s (%s) select %s from pg_temp.copy_row returning 1) '
            'select count(*)::text from w', object, cols, cols);
    end if;
end;
$$;

-- Run one statement as one caller; the outcome as defined at the top.
create function pg_temp.outcome(object text, op text, caller_pos integer) returns text
language plpgsql as $$
declare
    c callers;
    stmt text := pg_temp.statement(object, op);
    before text := pg_temp.fingerprint();
    answer text;
    result text;
    state text;
    msg text;
begin
    select * into c from callers as x where x.pos = caller_pos;
    begin
        if op = 'insert' then
            execute format('create temp table copy_row on commit drop as select * from %s where %s limit 1',
                object, pg_temp.victim_rows(object::regclass));
        end if;
        if op = 'insert' then
            grant select on pg_temp.copy_row to public;
        end if;
        perform pg_temp.act(c.role, c.sub, c.tenant);
        execute stmt into answer;
        perform set_config('role', 'none', true), set_config('request.jwt.claims', '', true);
        if op = 'call' then
            result := case when answer like '%segredoalfa%' then 'read' end;
        elsif op = 'select' then
            result := case when answer <> '0' then 'read' end;
        elsif answer <> '0' then
            result := 'write';
        end if;
        if result is distinct from 'write' and pg_temp.fingerprint() <> before then
            result := coalesce(result || '+', '') || 'write';
        end if;
        raise exception using errcode = 'HM000', message = coalesce(result, 'none');
    exception when others then
        get stacked diagnostics state = returned_sqlstate, msg = message_text;
        return case when state = 'HM000' then msg else state end;
    end;
end;
$$;

-- Expected outcomes: one row per (object, op), nine outcomes in the callers' order.
create temp table expected (object text, op text, outcomes text, primary key (object, op));
-- (object, op, outcomes of: anon, no sub, no tenant claim, member of B, removed member of A,
--  member of A, admin of B, admin of A, service_role)
insert into expected values
('hipocampo.activate_embedding_model', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.build_model_index', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo.build_tenant_graphs', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo_private._create_tenant_graph', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo_private._drop_tenant_graph', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo.defer_model_index', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo_private._drop_model_index', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo.add_member', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.delete_knowledge_base', 'call', '42501 42501 42501 42501 42501 42501 P0002 write write'),
('hipocampo.delete_tenant', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.list_tenants', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo.current_tenant', 'call', '42501 42501 42501 42501 42501 none 42501 none none'),
('hipocampo.list_members', 'call', '42501 42501 42501 42501 42501 42501 42501 none none'),
('hipocampo.remove_member', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.add_message', 'call', '42501 42501 42501 42501 42501 write 42501 42501 write'),
('hipocampo.add_pending_confirmation', 'call', '42501 42501 42501 P0002 42501 write P0002 P0002 write'),
('hipocampo.answer_evidence', 'call', '42501 42501 42501 42501 42501 read+write 42501 read+write read+write'),
('hipocampo.cache_get', 'call', '42501 42501 42501 42501 42501 read 42501 read read'),
('hipocampo.cache_put', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.search_model', 'call', '42501 42501 42501 42501 42501 none 42501 none none'),
('hipocampo.documents_not_language', 'call', '42501 42501 42501 P0002 42501 none P0002 none none'),
('hipocampo.close_session', 'call', '42501 42501 42501 none 42501 write none none write'),
('hipocampo.context_pack', 'call', '42501 42501 42501 42501 42501 read+write 42501 42501 read+write'),
('hipocampo.conversation_context', 'call', '42501 42501 42501 42501 42501 read 42501 42501 read'),
('hipocampo.correct_memory', 'call', '42501 42501 42501 P0002 42501 write P0002 P0002 write'),
('hipocampo.create_knowledge_base', 'call', '42501 42501 42501 42501 42501 42501 42501 write write'),
('hipocampo.create_tenant', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo.delete_document', 'call', '42501 42501 42501 none 42501 none none write write'),
('hipocampo.get_document', 'call', '42501 42501 42501 42501 42501 read 42501 read read'),
('hipocampo.document_text', 'call', '42501 42501 42501 42501 42501 read 42501 read read'),
('hipocampo.detect_conflicts', 'call', '42501 42501 42501 none 42501 none none none none'),
('hipocampo.document_hashes', 'call', '42501 42501 42501 P0002 42501 none P0002 none none'),
('hipocampo.drop_embedding_model', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 P0002'),
('hipocampo.effective_config', 'call', '42501 42501 42501 42501 42501 none 42501 none none'),
('hipocampo.erase_user', 'call', '42501 42501 42501 42501 42501 write 42501 write write'),
('hipocampo.evidence_support', 'call', '42501 42501 42501 none 42501 read none read read'),
('hipocampo.export_user_data', 'call', '42501 42501 42501 42501 42501 read+write 42501 read+write read+write'),
('hipocampo.inspect_user_memory', 'call', '42501 42501 42501 42501 42501 read+write 42501 read+write read+write'),
('hipocampo.forget_user_memory', 'call', '42501 42501 42501 42501 42501 write 42501 write write'),
('hipocampo.promote_user_memory', 'call', '42501 42501 42501 42501 42501 write 42501 write write'),
('hipocampo.correct_user_memory', 'call', '42501 42501 42501 42501 42501 write 42501 write write'),
('hipocampo.finish_ingestion_job', 'call', '42501 42501 42501 P0002 42501 P0002 P0002 write write'),
('hipocampo.forget_memory', 'call', '42501 42501 42501 none 42501 write none none write'),
('hipocampo.get_session', 'call', '42501 42501 42501 P0002 42501 none P0002 P0002 none'),
('hipocampo.hard_delete_memory', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.hybrid_search', 'call', '42501 42501 42501 42501 42501 read+write 42501 read+write read+write'),
('hipocampo.ingest_document', 'call', '42501 42501 42501 P0002 42501 42501 P0002 write write'),
('hipocampo.ingest_documents', 'call', '42501 42501 42501 P0002 42501 42501 P0002 write write'),
('hipocampo.knowledge_base_id', 'call', '42501 42501 42501 42501 42501 none 42501 none none'),
('hipocampo.list_knowledge_bases', 'call', '42501 42501 42501 42501 42501 none 42501 none none'),
('hipocampo.lookup_memories', 'call', '42501 42501 42501 none 42501 read+write none write 42501'),
('hipocampo.messages_without_tokens', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 read'),
('hipocampo.heartbeat_ingestion_job', 'call', '42501 42501 42501 P0002 42501 P0002 P0002 none none'),
('hipocampo.recover_ingestion_jobs', 'call', '42501 42501 42501 none 42501 none none none write'),
('hipocampo.tenant_by_slug', 'call', '42501 42501 42501 22023 42501 none 22023 none none'),
('hipocampo.tenant_metrics', 'call', '42501 42501 42501 42501 42501 42501 42501 none none'),
('hipocampo.update_knowledge_base', 'call', '42501 42501 42501 42501 42501 42501 P0002 write write'),
('hipocampo.list_documents', 'call', '42501 42501 42501 P0002 42501 read P0002 read read'),
('hipocampo.forbidden_content', 'call', '42501 42501 42501 P0002 42501 none P0002 none none'),
('hipocampo.quarantine_document', 'call', '42501 42501 42501 P0002 42501 42501 P0002 write write'),
('hipocampo.membership_role', 'call', '42501 42501 42501 42501 42501 none 42501 42501 none'),
('hipocampo.memories_without_embedding', 'call', '42501 42501 42501 42501 42501 none 42501 42501 none'),
('hipocampo.active_embedding_model', 'call', '42501 42501 42501 none 42501 none none none none'),
('hipocampo.question_refusal', 'call', '42501 none none none none none none none none'),
('hipocampo.numbers_absent', 'call', '42501 none none none none none none none none'),
('hipocampo.plain_text', 'call', '42501 none none none none none none none none'),
('hipocampo.extractive_answer', 'call', '42501 none none none none none none none none'),
('hipocampo.answer_sources', 'call', '42501 none none none none none none none none'),
('hipocampo.refusal_text', 'call', '42501 none none none none none none none none'),
('hipocampo.memory_consent', 'call', '42501 42501 42501 42501 42501 none 42501 42501 none'),
('hipocampo.normalize_question', 'call', '42501 none none none none none none none none'),
('hipocampo.scrub_pii', 'call', '42501 none none none none none none none none'),
('hipocampo.open_session', 'call', '42501 42501 42501 42501 42501 write 42501 42501 write'),
('hipocampo.promote_memory', 'call', '42501 42501 42501 P0002 42501 write P0002 P0002 write'),
('hipocampo.purge_expired', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.purge_sessions', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.purge_transient_state', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.drain_read_queue', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.tenant_digest', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo.rag_config', 'call', '42501 42501 42501 42501 42501 none 42501 none none'),
('hipocampo.record_answer', 'call', '42501 42501 42501 42501 42501 write 42501 write write'),
('hipocampo.record_feedback', 'call', '42501 42501 42501 42501 42501 write 42501 P0002 write'),
('hipocampo.my_tenants', 'call', '42501 42501 42501 none 42501 none none none 42501'),
('hipocampo.feedback_summary', 'call', '42501 42501 42501 42501 42501 42501 42501 read read'),
('hipocampo.judge_feedback', 'call', '42501 42501 42501 42501 42501 42501 42501 none none'),  -- judged already: the same documents again
('hipocampo.judged_questions', 'call', '42501 42501 42501 42501 42501 42501 42501 read read'),
('hipocampo.delete_judged_question', 'call', '42501 42501 42501 42501 42501 42501 42501 write write'),
('hipocampo.register_embedding_model', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.remember', 'call', '42501 42501 42501 42501 42501 write 42501 42501 write'),
('hipocampo.resolve_pending_confirmation', 'call', '42501 42501 42501 P0002 42501 P0002 P0002 P0002 P0002'),
('hipocampo.rows_to_embed', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo.run_memory_maintenance', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.schedule_maintenance', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo.schedule_embedding_queue', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo.memory_quota_use', 'call', '42501 42501 42501 42501 42501 42501 42501 none none'),
('hipocampo.tenant_embedding_queue', 'call', '42501 42501 42501 42501 42501 42501 42501 none none'),
('hipocampo.requeue_tenant_embeddings', 'call', '42501 42501 42501 42501 42501 42501 42501 none none'),
('hipocampo.search_history', 'call', '42501 42501 42501 42501 42501 read+write 42501 42501 read+write'),
('hipocampo.search_memories', 'call', '42501 42501 42501 none 42501 read+write none write 42501'),
('hipocampo.seed_profile', 'call', '42501 42501 42501 42501 42501 write 42501 42501 write'),
('hipocampo.session_add_message', 'call', '42501 42501 42501 P0002 42501 write P0002 P0002 write'),
('hipocampo.session_turn', 'call', '42501 42501 42501 P0002 42501 read P0002 P0002 read'),
('hipocampo.session_record_turn', 'call', '42501 42501 42501 P0002 42501 write P0002 P0002 write'),
('hipocampo.set_agent_binding', 'call', '42501 42501 42501 42501 42501 42501 42501 none none'),
('hipocampo.list_agent_bindings', 'call', '42501 42501 42501 42501 42501 none 42501 none none'),
('hipocampo.delete_agent_binding', 'call', '42501 42501 42501 42501 42501 42501 42501 write write'),
('hipocampo.set_document_metadata', 'call', '42501 42501 42501 42501 42501 42501 P0002 write write'),
('hipocampo.set_document_status', 'call', '42501 42501 42501 42501 42501 42501 P0002 write write'),
('hipocampo.set_knowledge_base_config', 'call', '42501 42501 42501 P0002 42501 42501 P0002 write write'),
('hipocampo.set_knowledge_base_tuning', 'call', '42501 42501 42501 P0002 42501 42501 P0002 write write'),
('hipocampo.set_knowledge_base_status', 'call', '42501 42501 42501 P0002 42501 none P0002 write write'),
('hipocampo.set_memory_consent', 'call', '42501 42501 42501 42501 42501 write 42501 42501 write'),
('hipocampo.set_model_calibration', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.set_memory_embeddings', 'call', '42501 42501 42501 none 42501 none none none none'),
('hipocampo.set_message_tokens', 'call', '42501 42501 42501 P0002 42501 write P0002 P0002 write'),
('hipocampo.set_row_embeddings', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo.chunks_without_sentences', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 read'),
('hipocampo.set_chunk_sentences', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.record_embedding_failure', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo.requeue_embedding_failures', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo.set_tenant_config', 'call', '42501 42501 42501 42501 42501 42501 42501 write write'),
('hipocampo.set_tenant_tuning', 'call', '42501 42501 42501 42501 42501 42501 42501 write write'),
('hipocampo.staged_memories', 'call', '42501 42501 42501 none 42501 read none none 42501'),
('hipocampo.start_ingestion_job', 'call', '42501 42501 42501 P0002 42501 42501 P0002 write write'),
('hipocampo.take_ip_rate_limit', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo.take_embedding_budget', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo.take_rate_limit', 'call', '42501 42501 42501 42501 42501 write 42501 write write'),
('hipocampo.update_conversation_summary', 'call', '42501 42501 42501 42501 42501 write 42501 42501 write'),
('hipocampo.update_session', 'call', '42501 42501 42501 P0002 42501 write P0002 P0002 write'),
('hipocampo_private._caller', 'call', '42501 42501 42501 none 42501 none none none none'),
('hipocampo_private._pseudonym', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo_private._chunks_stats_after_delete', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private._chunks_access_after_delete', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private._measure_documents_text', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private._chunks_stats_after_insert', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private._refuse_moving_tenant', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private._ensure_model_index', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo_private._invalidate_answer_cache', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private._record_read', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private._opaque_id', 'call', '42501 none none none none none none none none'),
('hipocampo_private._enqueue_standby_read', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('extensions.dblink', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('extensions.dblink_exec', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('extensions.dblink_connect', 'call', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private._memory_event', 'call', '42501 42501 42501 42501 42501 write 42501 write write'),
('hipocampo_private.current_tenant_id', 'call', '42501 none none none none none none none none'),
('hipocampo_private.current_tenant_role', 'call', '42501 none none none none none none none none'),
('hipocampo.embedding_stats', 'select', '42501 none none none none read none read read'),
('hipocampo.embedding_queue', 'select', '42501 42501 42501 42501 42501 42501 42501 42501 read'),
('hipocampo.memory_events_daily', 'select', '42501 none none none none read none read read'),
('hipocampo.memory_metrics', 'select', '42501 none none none none read none read read'),
('hipocampo.memory_rejections', 'select', '42501 none none none none none none none none'),
('hipocampo.memory_top_categories', 'select', '42501 none none none none read none none read'),
('hipocampo.rag_answer_stats', 'select', '42501 none none none none none none read read'),
('hipocampo.rag_refusals', 'select', '42501 none none none none none none none none'),
('hipocampo.rag_search_stats', 'select', '42501 none none none none none none read read'),
('hipocampo.read_stats', 'select', '42501 none none none none none none read read'),
('hipocampo.memory_search_similarity', 'select', '42501 none none none none none none read read'),
('hipocampo_private.agent_bindings', 'select', '42501 none none none none read none read read'),
('hipocampo_private.answer_audit', 'select', '42501 none none none none none none read read'),
('hipocampo_private.answer_feedback', 'select', '42501 none none none none read none read read'),
('hipocampo_private.judged_questions', 'select', '42501 none none none none none none read read'),
('hipocampo_private.answer_cache', 'select', '42501 42501 42501 42501 42501 42501 42501 42501 read'),
('hipocampo_private.read_queue', 'select', '42501 42501 42501 42501 42501 42501 42501 42501 read'),
('hipocampo_private.tenant_moves', 'select', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo_private.id_keys', 'select', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private.chunks', 'select', '42501 none none none none read none read read'),
('hipocampo_private.conversation_summaries', 'select', '42501 none none none none read none none read'),
('hipocampo_private.data_access_log', 'select', '42501 none none none none none none read read'),
('hipocampo_private.documents', 'select', '42501 none none none none read none read read'),
('hipocampo_private.embedding_models', 'select', '42501 read read read read read read read read'),
('hipocampo_private.model_calibrations', 'select', '42501 read read read read read read read read'),
('hipocampo_private.ingestion_jobs', 'select', '42501 none none none none read none read read'),
('hipocampo_private.kb_postings', 'select', '42501 none none none none read none read read'),
('hipocampo_private.chunk_access', 'select', '42501 none none none none read none read read'),
('hipocampo_private.kb_term_stats', 'select', '42501 none none none none read none read read'),
('hipocampo_private.kb_text_stats', 'select', '42501 none none none none read none read read'),
('hipocampo_private.knowledge_bases', 'select', '42501 none none none none read none read read'),
('hipocampo_private.memberships', 'select', '42501 none read none none read none read read'),
('hipocampo_private.memories', 'select', '42501 none none none none read none none read'),
('hipocampo_private.memory_consents', 'select', '42501 none none none none read none none read'),
('hipocampo_private.memory_events', 'select', '42501 none none none none read none read read'),
('hipocampo_private.memory_staging', 'select', '42501 none none none none read none none read'),
('hipocampo_private.messages', 'select', '42501 none none none none read none none read'),
('hipocampo_private.project_secrets', 'select', '42501 42501 42501 42501 42501 42501 42501 42501 read'),
('hipocampo_private.rate_limit_buckets', 'select', '42501 42501 42501 42501 42501 42501 42501 42501 read'),
('hipocampo_private.embedding_failures', 'select', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo_private.sessions', 'select', '42501 none none none none read none none read'),
('hipocampo_private.settings', 'select', '42501 none none none none read none read read'),
('hipocampo_private.tenants', 'select', '42501 none none none none read none read read'),
('hipocampo_private.agent_bindings', 'insert', '42501 42501 42501 42501 42501 42501 42501 23505 23505'),
('hipocampo_private.answer_audit', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 23505'),
('hipocampo_private.answer_feedback', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 23505'),
('hipocampo_private.judged_questions', 'insert', '42501 42501 42501 42501 42501 42501 42501 23505 23505'),
('hipocampo_private.answer_cache', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 23505'),
('hipocampo_private.read_queue', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.tenant_moves', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo_private.id_keys', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private.chunks', 'insert', '42501 42501 42501 42501 42501 42501 42501 23505 23505'),
('hipocampo_private.conversation_summaries', 'insert', '42501 42501 42501 42501 42501 23505 42501 42501 23505'),
('hipocampo_private.data_access_log', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.documents', 'insert', '42501 42501 42501 42501 42501 42501 42501 23505 23505'),
('hipocampo_private.embedding_models', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 23505'),
('hipocampo_private.model_calibrations', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 23505'),
('hipocampo_private.ingestion_jobs', 'insert', '42501 42501 42501 42501 42501 42501 42501 write write'),
('hipocampo_private.kb_postings', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 23505'),
('hipocampo_private.chunk_access', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 23505'),
('hipocampo_private.kb_term_stats', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 23505'),
('hipocampo_private.kb_text_stats', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 23505'),
('hipocampo_private.knowledge_bases', 'insert', '42501 42501 42501 42501 42501 42501 42501 23505 23505'),
('hipocampo_private.memberships', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 23505'),
('hipocampo_private.memories', 'insert', '42501 42501 42501 42501 42501 23505 42501 42501 23505'),
('hipocampo_private.memory_consents', 'insert', '42501 42501 42501 42501 42501 23505 42501 42501 23505'),
('hipocampo_private.memory_events', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.memory_staging', 'insert', '42501 42501 42501 42501 42501 23505 42501 42501 23505'),
('hipocampo_private.messages', 'insert', '42501 42501 42501 42501 42501 write 42501 42501 write'),
('hipocampo_private.project_secrets', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private.rate_limit_buckets', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 23505'),
('hipocampo_private.embedding_failures', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo_private.sessions', 'insert', '42501 42501 42501 42501 42501 write 42501 42501 write'),
('hipocampo_private.settings', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 23505'),
('hipocampo_private.tenants', 'insert', '42501 42501 42501 42501 42501 42501 42501 42501 23505'),
('hipocampo_private.agent_bindings', 'update', '42501 none none none none none none write write'),
('hipocampo_private.answer_audit', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.answer_feedback', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.judged_questions', 'update', '42501 none none none none none none write write'),
('hipocampo_private.answer_cache', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.read_queue', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.tenant_moves', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo_private.id_keys', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private.chunks', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.conversation_summaries', 'update', '42501 none none none none write none none write'),
('hipocampo_private.data_access_log', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.documents', 'update', '42501 none none none none none none write write'),
('hipocampo_private.embedding_models', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.model_calibrations', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.ingestion_jobs', 'update', '42501 none none none none none none write write'),
('hipocampo_private.kb_postings', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.chunk_access', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.kb_term_stats', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.kb_text_stats', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.knowledge_bases', 'update', '42501 none none none none none none write write'),
('hipocampo_private.memberships', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.memories', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.memory_consents', 'update', '42501 none none none none write none none write'),
('hipocampo_private.memory_events', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.memory_staging', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.messages', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.project_secrets', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private.rate_limit_buckets', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.embedding_failures', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo_private.sessions', 'update', '42501 none none none none write none none write'),
('hipocampo_private.settings', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.tenants', 'update', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.agent_bindings', 'delete', '42501 none none none none none none write write'),
('hipocampo_private.answer_audit', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.answer_feedback', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.judged_questions', 'delete', '42501 none none none none none none write write'),
('hipocampo_private.answer_cache', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.read_queue', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.tenant_moves', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo_private.id_keys', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private.chunks', 'delete', '42501 none none none none none none write write'),
('hipocampo_private.conversation_summaries', 'delete', '42501 none none none none write none none write'),
('hipocampo_private.data_access_log', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.documents', 'delete', '42501 none none none none none none write write'),
('hipocampo_private.embedding_models', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 23503'),
('hipocampo_private.model_calibrations', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.ingestion_jobs', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.kb_postings', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.chunk_access', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.kb_term_stats', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.kb_text_stats', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.knowledge_bases', 'delete', '42501 none none none none none none write write'),
('hipocampo_private.memberships', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.memories', 'delete', '42501 none none none none write none none write'),
('hipocampo_private.memory_consents', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.memory_events', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.memory_staging', 'delete', '42501 none none none none write none none write'),
('hipocampo_private.messages', 'delete', '42501 none none none none write none none write'),
('hipocampo_private.project_secrets', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 42501'),
('hipocampo_private.rate_limit_buckets', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.embedding_failures', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 none'),
('hipocampo_private.sessions', 'delete', '42501 none none none none write none none write'),
('hipocampo_private.settings', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write'),
('hipocampo_private.tenants', 'delete', '42501 42501 42501 42501 42501 42501 42501 42501 write');

create temp table observed as
select o.object, o.op, o.ord, string_agg(pg_temp.outcome(o.object, o.op, c.pos), ' ' order by c.pos) as outcomes
from objects as o cross join callers as c
where
    o.op <> 'call' or exists (
        select 1 from calls as k
        where k.object = o.object
    )
group by o.object, o.op, o.ord;

select is_empty(
    $$ select o.object || ' ' || o.op from objects as o
       left join expected as e on e.object = o.object and e.op = o.op where e.object is null $$,
    'every function, table and view has its row of expected outcomes'
);
select is_empty(
    $$ select o.object from objects as o
       where o.op = 'call' and not exists (select 1 from calls as k where k.object = o.object) $$,
    'every function has its call'
);
select is_empty(
    $$ select e.object || ' ' || e.op from expected as e
       left join objects as o on o.object = e.object and o.op = e.op where o.object is null $$,
    'no row of expectations names something that does not exist'
);
select is(ob.outcomes, e.outcomes, ob.object || ' ' || ob.op)
from observed as ob inner join expected as e on ob.object = e.object and ob.op = e.op
order by ob.ord, ob.object;

select diag(format(
    'security matrix: %s objects x %s callers = %s cases; outcomes: %s',
    (select count(*) from observed), (select count(*) from callers),
    (select count(*) * (select count(*) from callers) from observed),
    (
        select string_agg(format('%s %s', n, outcome), ', ' order by n desc)
        from (
            select x as outcome, count(*) as n
            from observed, unnest(string_to_array(outcomes, ' ')) as x
            group by x
        ) as t
    )
));
select ok(
    (select count(*) * (select count(*) from callers) from observed) >= 1500,
    'the matrix runs at least 1,500 (object x caller) cases'
);
select diag(format('%-60s %s', 'observed: ' || object || ' ' || op, outcomes))
from observed as ob
where
    not exists (
        select 1 from expected as e
        where e.object = ob.object and e.op = ob.op and e.outcomes = ob.outcomes
    )
order by ord, object;


-- The member against the tenant's shared state (issue 44): what a plain member of A changes of
-- A's rows that are not their own - the answer cache, config, knowledge bases and documents, the
-- audit trail, the tenant's rate-limit bucket, other users' rows - as opposed to their own
-- memories, messages, sessions and audit rows about themselves. Every function has its row here
-- too. Outcomes: a SQLSTATE; none - no shared row changed; shared - some shared row changed.


create function pg_temp.shared_outcome(object text) returns text
language plpgsql as $$
declare
    stmt text := pg_temp.statement(object, 'call');
    before text := pg_temp.fingerprint(true);
    answer text;
    state text;
    msg text;
begin
    begin
        perform pg_temp.act('authenticated', pg_temp.t('member_a'), pg_temp.t('tenant_a'));
        execute stmt into answer;
        perform set_config('role', 'none', true), set_config('request.jwt.claims', '', true);
        raise exception using errcode = 'HM000',
            message = case when pg_temp.fingerprint(true) <> before then 'shared' else 'none' end;
    exception when others then
        get stacked diagnostics state = returned_sqlstate, msg = message_text;
        return case when state = 'HM000' then msg else state end;
    end;
end;
$$;

-- Expected: what a plain member of A may do to A's shared state, per function.
create temp table shared_expected (object text primary key, outcome text not null);
insert into shared_expected values
('hipocampo.activate_embedding_model', '42501'),
('hipocampo.active_embedding_model', 'none'),
('hipocampo.add_member', '42501'),
('hipocampo.add_message', 'none'),
('hipocampo.add_pending_confirmation', 'none'),
-- the chunks it returns: their access times (chunk_access)
('hipocampo.answer_evidence', 'shared'),
('hipocampo.answer_sources', 'none'),
('hipocampo.build_model_index', '42501'),
('hipocampo.build_tenant_graphs', '42501'),
('hipocampo.cache_get', 'none'),
('hipocampo.cache_put', '42501'),
('hipocampo.chunks_without_sentences', '42501'),
('hipocampo.close_session', 'none'),
-- a read-queue row of tenant A about the member's read (the memories' access counters, once drained)
('hipocampo.context_pack', 'shared'),
('hipocampo.conversation_context', 'none'),
('hipocampo.correct_memory', 'none'),
('hipocampo.correct_user_memory', 'none'),
('hipocampo.create_knowledge_base', '42501'),
('hipocampo.create_tenant', '42501'),
('hipocampo.defer_model_index', '42501'),
('hipocampo.delete_document', 'none'),
('hipocampo.delete_knowledge_base', '42501'),
('hipocampo.delete_tenant', '42501'),
('hipocampo.detect_conflicts', 'none'),
('hipocampo.document_hashes', 'none'),
('hipocampo.drop_embedding_model', '42501'),
('hipocampo.effective_config', 'none'),
-- their own erasure: the tenant-wide audit record of it
('hipocampo.erase_user', 'shared'),
('hipocampo.evidence_support', 'none'),
('hipocampo.export_user_data', 'none'),
('hipocampo.extractive_answer', 'none'),
('hipocampo.finish_ingestion_job', 'P0002'),
('hipocampo.forget_memory', 'none'),
('hipocampo.forget_user_memory', 'none'),
('hipocampo.get_document', 'none'),
('hipocampo.document_text', 'none'),
('hipocampo.get_session', 'none'),
('hipocampo.hard_delete_memory', '42501'),
('hipocampo.heartbeat_ingestion_job', 'P0002'),
-- a read-queue row of tenant A about the member's read (the access log and chunk_access, once drained)
('hipocampo.hybrid_search', 'shared'),
('hipocampo.ingest_document', '42501'),
('hipocampo.ingest_documents', '42501'),
('hipocampo.inspect_user_memory', 'none'),
('hipocampo.knowledge_base_id', 'none'),
('hipocampo.list_documents', 'none'),
('hipocampo.forbidden_content', 'none'),
('hipocampo.quarantine_document', '42501'),
('hipocampo.list_knowledge_bases', 'none'),
('hipocampo.current_tenant', 'none'),
('hipocampo.list_members', '42501'),
('hipocampo.list_tenants', '42501'),
-- a read-queue row (as context_pack)
('hipocampo.lookup_memories', 'shared'),
('hipocampo.membership_role', 'none'),
('hipocampo.memories_without_embedding', 'none'),
('hipocampo.memory_consent', 'none'),
('hipocampo.messages_without_tokens', '42501'),
('hipocampo.normalize_question', 'none'),
('hipocampo.numbers_absent', 'none'),
('hipocampo.open_session', 'none'),
('hipocampo.plain_text', 'none'),
('hipocampo.promote_memory', 'none'),
('hipocampo.promote_user_memory', 'none'),
('hipocampo.purge_expired', '42501'),
('hipocampo.purge_sessions', '42501'),
('hipocampo.purge_transient_state', '42501'),
('hipocampo.drain_read_queue', '42501'),
('hipocampo.tenant_digest', '42501'),
('hipocampo.question_refusal', 'none'),
('hipocampo.rag_config', 'none'),
('hipocampo.record_answer', 'none'),
('hipocampo.record_feedback', 'none'),
('hipocampo.my_tenants', 'none'),
('hipocampo.feedback_summary', '42501'),
('hipocampo.judge_feedback', '42501'),
('hipocampo.judged_questions', '42501'),
('hipocampo.delete_judged_question', '42501'),
('hipocampo.record_embedding_failure', '42501'),
('hipocampo.recover_ingestion_jobs', 'none'),
('hipocampo.refusal_text', 'none'),
('hipocampo.register_embedding_model', '42501'),
('hipocampo.remember', 'none'),
('hipocampo.remove_member', '42501'),
('hipocampo.requeue_embedding_failures', '42501'),
('hipocampo.resolve_pending_confirmation', 'P0002'),
('hipocampo.rows_to_embed', '42501'),
('hipocampo.run_memory_maintenance', '42501'),
('hipocampo.schedule_embedding_queue', '42501'),
('hipocampo.schedule_maintenance', '42501'),
('hipocampo.scrub_pii', 'none'),
('hipocampo.memory_quota_use', '42501'),
('hipocampo.tenant_embedding_queue', '42501'),
('hipocampo.requeue_tenant_embeddings', '42501'),
-- a read-queue row of tenant A about the member's read (its latency in read_stats, once drained)
('hipocampo.search_history', 'shared'),
-- a read-queue row (as context_pack)
('hipocampo.search_memories', 'shared'),
('hipocampo.search_model', 'none'),
('hipocampo.documents_not_language', 'none'),
('hipocampo.seed_profile', 'none'),
('hipocampo.session_add_message', 'none'),
('hipocampo.session_turn', 'none'),
('hipocampo.session_record_turn', 'none'),
('hipocampo.set_agent_binding', '42501'),
('hipocampo.list_agent_bindings', 'none'),
('hipocampo.delete_agent_binding', '42501'),
('hipocampo.set_chunk_sentences', '42501'),
('hipocampo.set_document_metadata', '42501'),
('hipocampo.set_document_status', '42501'),
('hipocampo.set_knowledge_base_config', '42501'),
('hipocampo.set_knowledge_base_status', 'none'),
('hipocampo.set_knowledge_base_tuning', '42501'),
('hipocampo.set_memory_consent', 'none'),
('hipocampo.set_memory_embeddings', 'none'),
('hipocampo.set_message_tokens', 'none'),
('hipocampo.set_model_calibration', '42501'),
('hipocampo.set_row_embeddings', '42501'),
('hipocampo.set_tenant_config', '42501'),
('hipocampo.set_tenant_tuning', '42501'),
('hipocampo.staged_memories', 'none'),
('hipocampo.start_ingestion_job', '42501'),
('hipocampo.take_ip_rate_limit', '42501'),
('hipocampo.take_embedding_budget', '42501'),
-- a token of the tenant-wide bucket (rag.tenant_rate_limit_per_minute)
('hipocampo.take_rate_limit', 'shared'),
('hipocampo.tenant_by_slug', 'none'),
('hipocampo.tenant_metrics', '42501'),
('hipocampo.update_conversation_summary', 'none'),
('hipocampo.update_knowledge_base', '42501'),
('hipocampo.update_session', 'none'),
('hipocampo_private._caller', 'none'),
('hipocampo_private._chunks_access_after_delete', '42501'),
('hipocampo_private._measure_documents_text', '42501'),
('hipocampo_private._chunks_stats_after_delete', '42501'),
('hipocampo_private._chunks_stats_after_insert', '42501'),
('hipocampo_private._refuse_moving_tenant', '42501'),
('hipocampo_private._drop_model_index', '42501'),
('hipocampo_private._create_tenant_graph', '42501'),
('hipocampo_private._drop_tenant_graph', '42501'),
('hipocampo_private._ensure_model_index', '42501'),
('hipocampo_private._invalidate_answer_cache', '42501'),
-- written only by the read it records (issue 57 §4): never called directly
('hipocampo_private._record_read', '42501'),
-- a new id: nothing stored (the key exists once a message was written)
('hipocampo_private._opaque_id', 'none'),
-- the read link's role alone executes it; dblink, nobody of the API (issue 57 §1)
('hipocampo_private._enqueue_standby_read', '42501'),
('extensions.dblink', '42501'),
('extensions.dblink_exec', '42501'),
('extensions.dblink_connect', '42501'),
('hipocampo_private._memory_event', 'none'),
('hipocampo_private._pseudonym', '42501'),
('hipocampo_private.current_tenant_id', 'none'),
('hipocampo_private.current_tenant_role', 'none');

create temp table shared_observed as
select o.object, pg_temp.shared_outcome(o.object) as outcome
from objects as o
where o.op = 'call' and exists (
    select 1 from calls as k
    where k.object = o.object
);

select is_empty(
    $$ select o.object from objects as o
       left join shared_expected as e on e.object = o.object where o.op = 'call' and e.object is null $$,
    'every function has its row for the member against the tenant''s shared state'
);
select is_empty(
    $$ select e.object from shared_expected as e
       left join objects as o on o.object = e.object and o.op = 'call' where o.object is null $$,
    'no shared-state row names a function that does not exist'
);
select is(ob.outcome, e.outcome, 'member of A against A''s shared state: ' || ob.object)
from shared_observed as ob inner join shared_expected as e on ob.object = e.object
order by ob.object;
select diag(format(
    'member against the tenant''s shared state: %s functions; outcomes: %s',
    (select count(*) from shared_observed),
    (
        select string_agg(format('%s %s', n, outcome), ', ' order by n desc)
        from (
            select outcome, count(*) as n from shared_observed
            group by outcome
        ) as t
    )
));
select diag(format('%-60s %s', 'shared observed: ' || ob.object, ob.outcome))
from shared_observed as ob
where
    not exists (
        select 1 from shared_expected as e
        where e.object = ob.object and e.outcome = ob.outcome
    )
order by ob.object;

select * from finish();
rollback;
