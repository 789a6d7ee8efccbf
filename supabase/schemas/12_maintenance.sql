-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

/*
schedule_maintenance() -> jsonb

Purpose: (re)schedule hipocampo's periodic jobs with pg_cron, from the global [maintenance]
  config: hipocampo-memory-maintenance (run_memory_maintenance, maintenance.memory_cron),
  hipocampo-session-purge (purge_sessions, maintenance.session_purge_cron),
  hipocampo-retention-purge (purge_expired, maintenance.retention_cron),
  hipocampo-transient-purge (purge_transient_state, maintenance.transient_purge_cron),
  hipocampo-interrupted-ingestion (recover_ingestion_jobs, maintenance.ingestion_recovery_cron),
  hipocampo-read-queue (drain_read_queue, maintenance.read_queue_cron) and
  hipocampo-tenant-graphs (build_tenant_graphs, maintenance.tenant_graphs_cron).
  Idempotent: pg_cron replaces a job of the same name.
Run as: the database owner (postgres, e.g. in the SQL editor once pg_cron is enabled); no API
  role is granted it, since scheduling needs pg_cron's privileges.
Returns: {"<job name>": "<cron expression>", …} for the seven jobs.
Errors: 55000 "pg_cron is not installed: …" (enable it, then call this again);
  55000 "maintenance config is incomplete: …" (seed it: hipocampo db migrate);
  pg_cron's own error on an invalid cron expression.
Example: select hipocampo.schedule_maintenance();
*/
create or replace function hipocampo.schedule_maintenance()
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
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
        jsonb_build_array(cfg ->> 'ingestion_recovery_cron', 'select hipocampo.recover_ingestion_jobs()'),
        'hipocampo-read-queue',
        jsonb_build_array(cfg ->> 'read_queue_cron', 'select hipocampo.drain_read_queue()'),
        'hipocampo-tenant-graphs',
        jsonb_build_array(cfg ->> 'tenant_graphs_cron', 'select hipocampo.build_tenant_graphs()')
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

/*
schedule_embedding_queue() -> jsonb

Purpose: (re)schedule the drain of the embedding queue by the embed edge function, for an active
  model served by OpenAI / Azure OpenAI (the offline model is drained by `hipocampo worker
  --embed-missing`): the pg_cron job hipocampo-embed-queue (maintenance.embed_cron) POSTs {} to
  <functions URL>/embed with pg_net. The functions URL and the service_role key are read from
  Supabase Vault when the job runs, by the secret names maintenance.embed_url_secret and
  maintenance.embed_key_secret: the job's command holds no secret. Idempotent: pg_cron replaces
  a job of the same name.
Run as: the database owner (postgres, e.g. in the SQL editor), as schedule_maintenance; no API
  role is granted it.
Returns: {"hipocampo-embed-queue": "<cron expression>"}.
Errors: 55000 "pg_cron is not installed: …"; 55000 "pg_net is not installed: …"; 55000 "Supabase
  Vault is not installed: …"; 55000 "maintenance config is incomplete: …" (hipocampo db migrate
  seeds it); pg_cron's own error on an invalid cron expression.
Example: select vault.create_secret('https://<ref>.supabase.co/functions/v1', 'hipocampo_functions_url');
  select vault.create_secret('<service_role key>', 'hipocampo_service_role_key');
  select hipocampo.schedule_embedding_queue();
*/
create or replace function hipocampo.schedule_embedding_queue()
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    cfg jsonb := (select s.config -> 'maintenance' from hipocampo_private.settings as s where s.tenant_id is null);
    secret text := 'select s.decrypted_secret from vault.decrypted_secrets as s where s.name = %L';
begin
    if not exists (select 1 from pg_catalog.pg_extension where extname = 'pg_cron') then
        raise exception 'pg_cron is not installed: enable it (on Supabase: Integrations → Cron), then call '
            'hipocampo.schedule_embedding_queue() again' using errcode = '55000';
    end if;
    if not exists (select 1 from pg_catalog.pg_extension where extname = 'pg_net') then
        raise exception 'pg_net is not installed: enable it (on Supabase: Database → Extensions → pg_net), then '
            'call hipocampo.schedule_embedding_queue() again' using errcode = '55000';
    end if;
    if pg_catalog.to_regclass('vault.decrypted_secrets') is null then
        raise exception 'Supabase Vault is not installed: the job reads the functions URL and the service_role '
            'key from it (supabase_vault)' using errcode = '55000';
    end if;
    if cfg ->> 'embed_cron' is null or cfg ->> 'embed_url_secret' is null or cfg ->> 'embed_key_secret' is null then
        raise exception 'maintenance config is incomplete: seed it from config.toml (hipocampo db migrate)'
            using errcode = '55000';
    end if;
    perform cron.schedule(
        'hipocampo-embed-queue',
        cfg ->> 'embed_cron',
        format(
            'select net.http_post(url := (%s) || %L, body := %L::jsonb, headers := jsonb_build_object('
            '''Content-Type'', ''application/json'', ''Authorization'', ''Bearer '' || (%s)), '
            'timeout_milliseconds := 60000)',
            format(secret, cfg ->> 'embed_url_secret'), '/embed', '{}', format(secret, cfg ->> 'embed_key_secret')
        )
    );
    return jsonb_build_object('hipocampo-embed-queue', cfg ->> 'embed_cron');
end;
$$;

comment on function hipocampo.schedule_embedding_queue() is
'(Re)schedule the embed edge function with pg_cron + pg_net, its URL and key read from Supabase Vault by name.';

/*
purge_transient_state(now timestamptz default now()) -> jsonb

Purpose: delete answer-cache entries past expires_at, and rate-limit buckets idle for at least a
  minute. Deleting such a bucket loses nothing: a bucket refills its whole capacity in 60 s
  (per_minute / 60 tokens per second, _take_token), and a missing bucket is created full.
Parameters: now - the clock (tests pass a frozen one).
Returns: {"answer_cache": n, "rate_limit_buckets": n} (rows deleted).
Errors: none.
Example: select hipocampo.purge_transient_state();
*/
create or replace function hipocampo.purge_transient_state(now timestamptz default now())
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    n_cache integer;
    n_buckets integer;
begin
    delete from hipocampo_private.answer_cache as c where c.expires_at <= purge_transient_state.now;
    get diagnostics n_cache = row_count;
    delete from hipocampo_private.rate_limit_buckets as r
    where r.updated_at <= purge_transient_state.now - interval '1 minute';
    get diagnostics n_buckets = row_count;
    return jsonb_build_object('answer_cache', n_cache, 'rate_limit_buckets', n_buckets);
end;
$$;

comment on function hipocampo.purge_transient_state(timestamptz) is
'Delete expired answer-cache entries and idle (full) rate-limit buckets.';
