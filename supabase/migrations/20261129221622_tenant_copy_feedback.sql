-- tenant copy feedback.
-- tenant export, import and move carry the feedback on replies and the judged questions, and the import checks their references stay in the tenant
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._imported_reference_fault(tenant_id uuid)
returns text
language sql
stable
set search_path to ''
as $function$
    with
    kbs as (select b.id from hipocampo_private.knowledge_bases as b where b.tenant_id = _imported_reference_fault.tenant_id),
    foreign_memories as (
        select m.id from hipocampo_private.memories as m where m.tenant_id <> _imported_reference_fault.tenant_id
        union all
        select s.id from hipocampo_private.memory_staging as s where s.tenant_id <> _imported_reference_fault.tenant_id
    ),
    faults as (
        select 'chunks: chunk ' || c.id || ' names knowledge base ' || c.kb_id || ', not its document''s' as fault
        from hipocampo_private.chunks as c
        inner join hipocampo_private.documents as d on d.id = c.document_id
        where c.tenant_id = _imported_reference_fault.tenant_id and c.kb_id <> d.kb_id
        union all
        select 'chunk_access: chunk ' || a.chunk_id || ' is not the tenant''s'
        from hipocampo_private.chunk_access as a
        where a.tenant_id = _imported_reference_fault.tenant_id and not exists (
            select 1 from hipocampo_private.chunks as c
            where c.id = a.chunk_id and c.tenant_id = _imported_reference_fault.tenant_id
        )
        union all
        select 'agent_bindings: ' || g.name || ' names knowledge base ' || k.id || ', not the tenant''s'
        from hipocampo_private.agent_bindings as g cross join lateral unnest(g.kb_ids) as k (id)
        where g.tenant_id = _imported_reference_fault.tenant_id and k.id not in (select kbs.id from kbs)
        union all
        select 'memories: ' || m.id || ' supersedes another tenant''s memory'
        from hipocampo_private.memories as m
        where m.tenant_id = _imported_reference_fault.tenant_id and m.supersedes in (select f.id from foreign_memories as f)
        union all
        select 'memory_staging: ' || s.id || ' supersedes another tenant''s memory'
        from hipocampo_private.memory_staging as s
        where s.tenant_id = _imported_reference_fault.tenant_id and s.supersedes in (select f.id from foreign_memories as f)
        union all
        select 'memory_events: event ' || e.id || ' names another tenant''s memory'
        from hipocampo_private.memory_events as e
        where e.tenant_id = _imported_reference_fault.tenant_id and e.memory_id in (select f.id from foreign_memories as f)
        union all
        select 'conversation_summaries: through another tenant''s message ' || s.through_message_id
        from hipocampo_private.conversation_summaries as s
        inner join hipocampo_private.messages as m on m.id = s.through_message_id
        where s.tenant_id = _imported_reference_fault.tenant_id and m.tenant_id <> s.tenant_id
        union all
        select 'answer_audit: names another tenant''s knowledge base or chunk'
        from hipocampo_private.answer_audit as a
        where a.tenant_id = _imported_reference_fault.tenant_id and (
            exists (
                select 1 from hipocampo_private.knowledge_bases as b
                where b.id = any(a.kb_ids) and b.tenant_id <> a.tenant_id
            )
            or exists (
                select 1 from hipocampo_private.chunks as c
                where c.id = any(a.evidence_chunk_ids) and c.tenant_id <> a.tenant_id
            )
        )
        union all
        select 'answer_feedback: ' || f.trace_id || ' names another tenant''s answer, knowledge base or document'
        from hipocampo_private.answer_feedback as f
        where f.tenant_id = _imported_reference_fault.tenant_id and (
            exists (
                select 1 from hipocampo_private.answer_audit as a
                where a.trace_id = f.trace_id and a.tenant_id <> f.tenant_id
            )
            or exists (select 1 from unnest(f.kb_ids) as k (id) where k.id not in (select kbs.id from kbs))
            or exists (
                select 1 from hipocampo_private.documents as d
                where d.id = any(f.cited_document_ids) and d.tenant_id <> f.tenant_id
            )
        )
        union all
        select 'judged_questions: ' || j.question || ' names another tenant''s knowledge base'
        from hipocampo_private.judged_questions as j
        where j.tenant_id = _imported_reference_fault.tenant_id and j.kb_id not in (select kbs.id from kbs)
        union all
        select 'read_queue: read ' || q.id || ' names another tenant''s chunk or memory'
        from hipocampo_private.read_queue as q
        where q.tenant_id = _imported_reference_fault.tenant_id and (
            exists (
                select 1 from hipocampo_private.chunks as c
                where c.id = any(q.chunk_ids) and c.tenant_id <> q.tenant_id
            )
            or exists (select 1 from foreign_memories as f where f.id = any(q.memory_ids))
        )
    )
    select f.fault from faults as f limit 1
$function$;

create or replace function hipocampo_private._tenant_tables()
returns table (ord integer, name text, tenant_column text, reassigned text[], derived boolean)
language sql
immutable
set search_path to ''
as $function$
    select * from (values
        (1, 'tenants', 'id', '{}'::text[], false),
        (2, 'settings', 'tenant_id', '{id}', false),
        (3, 'memberships', 'tenant_id', '{}', false),
        (4, 'memory_consents', 'tenant_id', '{}', false),
        (5, 'knowledge_bases', 'tenant_id', '{}', false),
        (6, 'agent_bindings', 'tenant_id', '{}', false),
        (7, 'documents', 'tenant_id', '{}', false),
        (8, 'chunks', 'tenant_id', '{}', false),
        (9, 'kb_postings', 'tenant_id', '{}', true),
        (10, 'kb_term_stats', 'tenant_id', '{}', true),
        (11, 'kb_text_stats', 'tenant_id', '{}', true),
        (12, 'chunk_access', 'tenant_id', '{}', false),
        (13, 'ingestion_jobs', 'tenant_id', '{}', false),
        (14, 'memories', 'tenant_id', '{}', false),
        (15, 'memory_staging', 'tenant_id', '{}', false),
        (16, 'memory_events', 'tenant_id', '{id}', false),
        (17, 'messages', 'tenant_id', '{}', false),
        (18, 'conversation_summaries', 'tenant_id', '{}', false),
        (19, 'sessions', 'tenant_id', '{}', false),
        (20, 'answer_audit', 'tenant_id', '{}', false),
        (21, 'answer_feedback', 'tenant_id', '{}', false),
        (22, 'judged_questions', 'tenant_id', '{id}', false),
        (23, 'data_access_log', 'tenant_id', '{id}', false),
        (24, 'read_queue', 'tenant_id', '{id}', false)
    ) as t (ord, name, tenant_column, reassigned, derived);
$function$;
