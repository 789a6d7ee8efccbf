-- The periodic jobs, scheduled with pg_cron whenever it is there. Migrations 001100 and 001500
-- schedule memory maintenance and the session purge only if pg_cron already exists when they
-- run; on a Supabase project pg_cron is usually enabled later (Integrations → Cron), and then
-- nothing was scheduled, and retention (purge_expired) never was. schedule_maintenance() sets
-- all three jobs from the [maintenance] config (cron expressions seeded from config.toml) and can
-- be called again at any time; `hipocampo db migrate` calls it after seeding where pg_cron exists.

/*
schedule_maintenance() -> jsonb

Purpose: (re)schedule hipocampo's periodic jobs with pg_cron, from the global [maintenance]
  config: hipocampo-memory-maintenance (run_memory_maintenance, maintenance.memory_cron),
  hipocampo-session-purge (purge_sessions, maintenance.session_purge_cron) and
  hipocampo-retention-purge (purge_expired, maintenance.retention_cron). Idempotent: pg_cron
  replaces a job of the same name.
Run as: the database owner (postgres, e.g. in the SQL editor once pg_cron is enabled); no API
  role is granted it, since scheduling needs pg_cron's privileges.
Returns: {"<job name>": "<cron expression>", …} for the three jobs.
Errors: 55000 "pg_cron is not installed: …" (enable it, then call this again);
  55000 "maintenance config is incomplete: …" (seed it: hipocampo db migrate);
  pg_cron's own error on an invalid cron expression.
Example: select hipocampo.schedule_maintenance();
*/
create function hipocampo.schedule_maintenance()
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
        jsonb_build_array(cfg ->> 'retention_cron', 'select hipocampo.purge_expired()')
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

comment on function hipocampo.schedule_maintenance() is
'(Re)schedule memory maintenance, the session purge and retention with pg_cron, from the [maintenance] config.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the owner runs it (no grants).
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
