-- The embed edge function on a pg_cron schedule through pg_net (issue 20 §4):
-- hipocampo.schedule_embedding_queue(), its URL and key read from Supabase Vault by the names in
-- the [maintenance] config (embed_cron, embed_url_secret, embed_key_secret; seeded by hipocampo db
-- migrate from config.toml). Restated from supabase/schemas/12_maintenance.sql; re-runnable, as
-- every migration after the baseline.
set local check_function_bodies = off;

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

revoke execute on function hipocampo.schedule_embedding_queue() from public;
