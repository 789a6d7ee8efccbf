-- ingestion job held by session.
-- a job started with hold_session is interrupted as soon as the client's session ends, not after its 300 s lease (issue 44 §5)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo.start_ingestion_job(kb_id uuid, documents_total integer);

alter table hipocampo_private.ingestion_jobs add column session_bound boolean not null default false;

set check_function_bodies = off;

create or replace function hipocampo.start_ingestion_job(kb_id uuid, documents_total integer, hold_session boolean default false)
returns uuid
language plpgsql
set search_path to ''
as $function$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(start_ingestion_job.kb_id);
    job uuid;
begin
    if documents_total is null or documents_total < 0 then
        raise exception 'documents_total must be >= 0 (got %)', documents_total using errcode = '22023';
    end if;
    perform hipocampo.recover_ingestion_jobs(now(), k.id);
    insert into hipocampo_private.ingestion_jobs (tenant_id, kb_id, documents_total, created_by, session_bound)
    values (k.tenant_id, k.id, documents_total, (select auth.uid()), coalesce(hold_session, false))
    returning id into job;
    if hold_session then
        perform pg_catalog.pg_advisory_lock(k1, k2) from hipocampo_private._job_lock_key(job);
    end if;
    return job;
end;
$function$;

create or replace function hipocampo_private._job_lock_key(job_id uuid)
returns table (k1 integer, k2 integer)
language sql
immutable parallel safe
set search_path to ''
as $function$
    -- 1751740515 is 'hipc' in ASCII.
    select 1751740515, pg_catalog.hashtext(_job_lock_key.job_id::text)
$function$;

create or replace function hipocampo_private._job_session_alive(job_id uuid)
returns boolean
language sql
stable
set search_path to ''
as $function$
    select exists (
        select 1
        from hipocampo_private._job_lock_key(_job_session_alive.job_id) as key
        inner join pg_catalog.pg_locks as l
            on l.locktype = 'advisory' and l.classid = key.k1::oid and l.objid = key.k2::oid
            and l.objsubid = 2 and l.granted
        where l.database = (select d.oid from pg_catalog.pg_database as d where d.datname = pg_catalog.current_database())
    )
$function$;

create or replace function hipocampo.finish_ingestion_job(job_id uuid, status text, counts jsonb default '{}'::jsonb, errors jsonb default '[]'::jsonb)
returns void
language plpgsql
set search_path to ''
as $function$
begin
    perform hipocampo_private._caller();
    update hipocampo_private.ingestion_jobs as j set
        status = finish_ingestion_job.status,
        documents_ingested = coalesce((counts ->> 'documents_ingested')::integer, 0),
        documents_unchanged = coalesce((counts ->> 'documents_unchanged')::integer, 0),
        documents_failed = coalesce((counts ->> 'documents_failed')::integer, 0),
        chunks_written = coalesce((counts ->> 'chunks_written')::integer, 0),
        errors = coalesce(finish_ingestion_job.errors, '[]'::jsonb),
        finished_at = now()
    where j.id = finish_ingestion_job.job_id;
    if not found then
        raise exception 'unknown ingestion job: %', job_id using errcode = 'P0002';
    end if;
    -- The session that started the job with hold_session lets its lock go (no-op elsewhere).
    perform pg_catalog.pg_advisory_unlock(key.k1, key.k2)
    from hipocampo_private._job_lock_key(finish_ingestion_job.job_id) as key
    inner join pg_catalog.pg_locks as l
        on l.locktype = 'advisory' and l.pid = pg_catalog.pg_backend_pid() and l.classid = key.k1::oid
        and l.objid = key.k2::oid and l.objsubid = 2 and l.granted;
end;
$function$;

create or replace function hipocampo.recover_ingestion_jobs(now timestamp with time zone default now(), kb_id uuid default null::uuid)
returns jsonb
language plpgsql
set search_path to ''
as $function$
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
                'error', case when j.heartbeat_at < at - make_interval(secs => lease)
                    then format('interrupted: no heartbeat since %s (lease %s s)', j.heartbeat_at, lease)
                    else format('interrupted: the session that ran it ended (last heartbeat %s)', j.heartbeat_at)
                end))
        where j.status = 'running'
          and (j.heartbeat_at < at - make_interval(secs => lease)
               or (j.session_bound and not hipocampo_private._job_session_alive(j.id)))
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
$function$;

revoke execute on function hipocampo.start_ingestion_job(kb_id uuid, documents_total integer, hold_session boolean) from public;
revoke execute on function hipocampo_private._job_lock_key(job_id uuid) from public;
revoke execute on function hipocampo_private._job_session_alive(job_id uuid) from public;
grant execute on function hipocampo.start_ingestion_job(kb_id uuid, documents_total integer, hold_session boolean) to authenticated;
grant execute on function hipocampo.start_ingestion_job(kb_id uuid, documents_total integer, hold_session boolean) to service_role;
grant execute on function hipocampo_private._job_lock_key(job_id uuid) to authenticated;
grant execute on function hipocampo_private._job_lock_key(job_id uuid) to service_role;
grant execute on function hipocampo_private._job_session_alive(job_id uuid) to authenticated;
grant execute on function hipocampo_private._job_session_alive(job_id uuid) to service_role;
comment on function hipocampo.start_ingestion_job(pg_catalog.uuid, integer, boolean) is 'Open an ingestion-job record.';
