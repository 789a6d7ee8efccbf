-- config cache bounded.
-- effective_config's cache for the transaction holds at most four entries (a fifth starts it again): a transaction over many tenants (the maintenance jobs) parsed a cache that grew with each tenant on every call
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo.effective_config(tenant_id uuid default null::uuid, kb_id uuid default null::uuid)
returns jsonb
language plpgsql
stable
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(effective_config.tenant_id);
    -- The merge depends on the tenant, the knowledge base and what the caller may read (RLS):
    -- the key names all three, so a role or claims change within the transaction merges again.
    key text := md5(concat_ws('/', t, effective_config.kb_id, current_user, current_setting('request.jwt.claims', true)));
    cache jsonb := nullif(current_setting('hipocampo.config_cache', true), '')::jsonb;
    cfg jsonb;
begin
    if cache ? key then
        return cache -> key;
    end if;
    cfg := hipocampo_private._merged_config(t, effective_config.kb_id);
    -- At most four entries (a call reads two or three): a transaction that walks many tenants
    -- (the maintenance jobs) starts the cache again rather than parse a growing one each time.
    if cache is null or (select count(*) from jsonb_object_keys(cache)) >= 4 then
        cache := '{}'::jsonb;
    end if;
    perform set_config('hipocampo.config_cache', (cache || jsonb_build_object(key, cfg))::text, true);
    return cfg;
end;
$function$;
