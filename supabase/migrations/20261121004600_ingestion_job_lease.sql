-- Ingestion jobs hold a lease (issue 16 §1.8, §2 "Ingest crash recovery"). A crash mid-ingest
-- (kill -9 of the CLI, or of the server) left the job row 'running' forever and the knowledge
-- base 'indexing'. The data itself was safe (one transaction per document) and stays so.
-- - ingestion_jobs.heartbeat_at: set at start and by heartbeat_ingestion_job, which the Python
--   pipeline calls before each embedding batch (every ~64 chunks);
-- - recover_ingestion_jobs(now): a running job whose heartbeat is older than
--   maintenance.ingestion_lease_seconds (300) is marked failed with an "interrupted" error, and
--   each knowledge base left 'indexing' with no running job gets its status back from what it
--   holds (ready with documents, error without). It runs at the start of every ingestion job
--   (for that knowledge base), in `hipocampo worker`, and from pg_cron
--   (maintenance.ingestion_recovery_cron, added to schedule_maintenance).

alter table hipocampo_private.ingestion_jobs add column heartbeat_at timestamptz not null default now();

create index ingestion_jobs_running_idx on hipocampo_private.ingestion_jobs (heartbeat_at)
where status = 'running';

comment on column hipocampo_private.ingestion_jobs.heartbeat_at is
'Last sign of life of the running job (start, heartbeat_ingestion_job); a job silent for longer than maintenance.ingestion_lease_seconds is interrupted.';

/*
heartbeat_ingestion_job(job_id uuid) -> void

Purpose: renew a running job's lease (heartbeat_at = now()). Clients call it at least every
  maintenance.ingestion_lease_seconds (300 s) while they work.
Errors: 42501 as _caller; P0002 "ingestion job … is not running" (unknown, finished, or already
  marked interrupted: the client should stop and report it).
Example: select hipocampo.heartbeat_ingestion_job('…');
*/
create function hipocampo.heartbeat_ingestion_job(job_id uuid)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._caller();
    update hipocampo_private.ingestion_jobs as j set heartbeat_at = now()
    where j.id = heartbeat_ingestion_job.job_id and j.status = 'running';
    if not found then
        raise exception 'ingestion job % is not running', job_id using errcode = 'P0002';
    end if;
end;
$$;

/*
recover_ingestion_jobs(now timestamptz default now(), kb_id uuid default null) -> jsonb

Purpose: mark running jobs whose lease expired (heartbeat_at older than
  maintenance.ingestion_lease_seconds) as failed, with the error {"error": "interrupted: no
  heartbeat since …"}, and give each of their knowledge bases left 'indexing' with no running
  job its status back: ready when it holds documents, error otherwise. Optionally only one
  knowledge base.
Parameters: now - the time to judge leases by (service_role only; users always use now());
  kb_id - only this knowledge base (null: every one the caller sees: a tenant admin their
  tenant's, service_role all).
Returns: {"interrupted": n jobs, "knowledge_bases": n statuses recomputed}.
Errors: 42501 as _caller; 55000 "maintenance config is incomplete: ingestion_lease_seconds …".
Example: select hipocampo.recover_ingestion_jobs();
*/
create function hipocampo.recover_ingestion_jobs(now timestamptz default now(), kb_id uuid default null)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
    lease integer := (select (s.config -> 'maintenance' ->> 'ingestion_lease_seconds')::integer
                      from hipocampo_private.settings as s where s.tenant_id is null);
    at timestamptz := case when c.kind = 'service' then coalesce(recover_ingestion_jobs.now, now()) else now() end;
    kbs uuid [];
    n_jobs integer;
    n_kbs integer;
begin
    if lease is null then
        raise exception 'maintenance config is incomplete: ingestion_lease_seconds (seed it from config.toml: hipocampo db migrate)'
            using errcode = '55000';
    end if;
    -- RLS limits a tenant admin to their tenant's jobs and knowledge bases.
    with gone as (
        update hipocampo_private.ingestion_jobs as j set
            status = 'failed',
            finished_at = at,
            errors = j.errors || jsonb_build_array(jsonb_build_object(
                'error', format('interrupted: no heartbeat since %s (lease %s s)', j.heartbeat_at, lease)))
        where j.status = 'running' and j.heartbeat_at < at - make_interval(secs => lease)
          and (recover_ingestion_jobs.kb_id is null or j.kb_id = recover_ingestion_jobs.kb_id)
        returning j.kb_id
    )
    select count(*), array_agg(distinct g.kb_id) into n_jobs, kbs from gone as g;
    update hipocampo_private.knowledge_bases as k set
        status = case when exists (select 1 from hipocampo_private.documents as d where d.kb_id = k.id)
            then 'ready' else 'error' end
    where k.status = 'indexing' and k.id = any(kbs)
      and not exists (select 1 from hipocampo_private.ingestion_jobs as j where j.kb_id = k.id and j.status = 'running');
    get diagnostics n_kbs = row_count;
    return jsonb_build_object('interrupted', n_jobs, 'knowledge_bases', n_kbs);
end;
$$;

/*
start_ingestion_job(kb_id uuid, documents_total integer) -> uuid

Purpose: open an ingestion run (status running, lease renewed by heartbeat_ingestion_job). 004600:
  first recovers the knowledge base's interrupted jobs (recover_ingestion_jobs), so a run after a
  crash finds the earlier job failed (interrupted) instead of running forever.
Errors: 42501 as _caller (before any other work); P0002 unknown knowledge base; 22023
  "documents_total must be >= 0".
Example: select hipocampo.start_ingestion_job(kb, 12);
*/
create or replace function hipocampo.start_ingestion_job(kb_id uuid, documents_total integer)
returns uuid
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(start_ingestion_job.kb_id);
    job uuid;
begin
    if documents_total is null or documents_total < 0 then
        raise exception 'documents_total must be >= 0 (got %)', documents_total using errcode = '22023';
    end if;
    perform hipocampo.recover_ingestion_jobs(now(), k.id);
    insert into hipocampo_private.ingestion_jobs (tenant_id, kb_id, documents_total, created_by)
    values (k.tenant_id, k.id, documents_total, (select auth.uid()))
    returning id into job;
    return job;
end;
$$;

/*
schedule_maintenance() -> jsonb

Purpose, returns and errors: as in migration 003200, with a fifth job:
  hipocampo-interrupted-ingestion (recover_ingestion_jobs, maintenance.ingestion_recovery_cron).
Example: select hipocampo.schedule_maintenance();
*/
create or replace function hipocampo.schedule_maintenance()
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    cfg jsonb := (select s.config -> 'maintenance' from hipocampo_private.settings as s where s.tenant_id is null);
    jobs jsonb;
    job record;
begin
    if not exists (select 1 from pg_catalog.pg_extension where extname = 'pg_cron') then
        raise exception 'pg_cron is not installed: enable it (on Supabase: Integrations → Cron), then call '
            'hipocampo.schedule_maintenance() again' using errcode = '55000';
    end if;
    jobs := jsonb_build_object(
        'hipocampo-memory-maintenance',
        jsonb_build_array(cfg ->> 'memory_cron', 'select hipocampo.run_memory_maintenance()'),
        'hipocampo-session-purge',
        jsonb_build_array(cfg ->> 'session_purge_cron', 'select hipocampo.purge_sessions()'),
        'hipocampo-retention-purge',
        jsonb_build_array(cfg ->> 'retention_cron', 'select hipocampo.purge_expired()'),
        'hipocampo-transient-purge',
        jsonb_build_array(cfg ->> 'transient_purge_cron', 'select hipocampo.purge_transient_state()'),
        'hipocampo-interrupted-ingestion',
        jsonb_build_array(cfg ->> 'ingestion_recovery_cron', 'select hipocampo.recover_ingestion_jobs()')
    );
    if exists (select 1 from jsonb_each(jobs) as j where j.value ->> 0 is null) then
        raise exception 'maintenance config is incomplete: seed it from config.toml (hipocampo db migrate)'
            using errcode = '55000';
    end if;
    for job in select j.key, j.value from jsonb_each(jobs) as j loop
        perform cron.schedule(job.key, job.value ->> 0, job.value ->> 1);
    end loop;
    return (select jsonb_object_agg(j.key, j.value -> 0) from jsonb_each(jobs) as j);
end;
$$;

grant execute on function hipocampo.heartbeat_ingestion_job(uuid) to authenticated, service_role;
grant execute on function hipocampo.recover_ingestion_jobs(timestamptz, uuid) to authenticated, service_role;

comment on function hipocampo.heartbeat_ingestion_job(uuid) is 'Renew a running ingestion job''s lease.';
comment on function hipocampo.recover_ingestion_jobs(timestamptz, uuid) is
'Mark running ingestion jobs whose lease expired as failed (interrupted) and recompute their knowledge bases'' status.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
