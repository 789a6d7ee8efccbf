-- Nothing kept forever by accident (issue 44 §6): the audit trail had no retention. purge_expired
-- (the retention job, maintenance.retention_cron) now also deletes data_access_log rows older than
-- maintenance.access_log_retention_days (180: the six months of Marco Civil da Internet art. 15),
-- answer_audit rows older than answer_audit_retention_days (365) and memory_events older than
-- memory_events_retention_days (730), seeded from config.toml. Restated from
-- supabase/schemas/03_knowledge_bases.sql (its docblock lives there); re-runnable.

create or replace function hipocampo.purge_expired(now timestamptz default now())
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    cfg jsonb := hipocampo_private._require_config(
        (select g.config -> 'maintenance' from hipocampo_private.settings as g where g.tenant_id is null), 'maintenance',
        array['access_log_retention_days', 'answer_audit_retention_days', 'memory_events_retention_days']
    );
    n_docs integer;
    n_chunks integer;
    n_access integer;
    n_audit integer;
    n_events integer;
begin
    delete from hipocampo_private.chunks as c where c.expires_at <= purge_expired.now;
    get diagnostics n_chunks = row_count;
    delete from hipocampo_private.documents as d where d.expires_at <= purge_expired.now;
    get diagnostics n_docs = row_count;
    delete from hipocampo_private.data_access_log as l
    where l.at < purge_expired.now - make_interval(days => (cfg ->> 'access_log_retention_days')::integer);
    get diagnostics n_access = row_count;
    delete from hipocampo_private.answer_audit as a
    where a.created_at < purge_expired.now - make_interval(days => (cfg ->> 'answer_audit_retention_days')::integer);
    get diagnostics n_audit = row_count;
    delete from hipocampo_private.memory_events as e
    where e.at < purge_expired.now - make_interval(days => (cfg ->> 'memory_events_retention_days')::integer);
    get diagnostics n_events = row_count;
    return jsonb_build_object('documents', n_docs, 'chunks', n_chunks, 'data_access_log', n_access,
        'answer_audit', n_audit, 'memory_events', n_events);
end;
$$;
