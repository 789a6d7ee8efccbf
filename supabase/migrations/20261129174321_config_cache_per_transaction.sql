-- config cache per transaction.
-- effective_config merges once per transaction for a tenant, knowledge base and caller (_merged_config), kept in the transaction-local setting hipocampo.config_cache, which a write to settings, model_calibrations, knowledge_bases or embedding_models empties (issue 60 §1)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._forget_config_cache()
returns trigger
language plpgsql
set search_path to ''
as $function$
begin
    perform set_config('hipocampo.config_cache', '', true);
    return null;
end;
$function$;

create or replace function hipocampo_private._merged_config(tenant_id uuid, kb_id uuid)
returns jsonb
language plpgsql
stable
set search_path to ''
as $function$
declare
    t uuid := _merged_config.tenant_id;
    active text := (select e.name from hipocampo_private.embedding_models as e where e.active);
    cfg jsonb;
    layer jsonb;
    section text;
begin
    select s.config into cfg from hipocampo_private.settings as s where s.tenant_id is null;
    cfg := coalesce(cfg, '{}'::jsonb);
    for layer in
        select x.config from (
            select 1 as ord, hipocampo_private._calibration() as config
            union all
            -- The tenant's tuning for the active model, then its row: one row read.
            select l.ord, l.config
            from hipocampo_private.settings as s
            cross join lateral (values (2, coalesce(s.tuning -> active, '{}')), (3, s.config)) as l (ord, config)
            where s.tenant_id = t
            union all
            -- The knowledge base's tuning for the active model, then its overrides: one row read.
            select l.ord, l.config
            from hipocampo_private.knowledge_bases as k
            cross join lateral (values (4, coalesce(k.tuning -> active, '{}')), (5, k.overrides)) as l (ord, config)
            where k.id = _merged_config.kb_id and k.tenant_id = t
        ) as x
        order by x.ord
    loop
        for section in select jsonb_object_keys(layer) loop
            if jsonb_typeof(layer -> section) = 'object' then
                cfg := jsonb_set(
                    cfg, array[section],
                    coalesce(cfg -> section, '{}'::jsonb) || (layer -> section)
                );
            else
                cfg := jsonb_set(cfg, array[section], layer -> section);
            end if;
        end loop;
    end loop;
    -- What each calibrated key accepts, beside it as every other key's bound is (the global row
    -- has none for them; _check_config_patch reads the same _calibrated_bounds).
    for section in select jsonb_object_keys(hipocampo_private._calibrated_keys()) loop
        cfg := jsonb_set(cfg, array[section], coalesce(cfg -> section, '{}'::jsonb) || hipocampo_private._calibrated_bounds(section));
    end loop;
    return cfg;
end;
$function$;

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
    perform set_config('hipocampo.config_cache', (coalesce(cache, '{}'::jsonb) || jsonb_build_object(key, cfg))::text, true);
    return cfg;
end;
$function$;

create trigger embedding_models_forget_config_cache after insert or delete or update or truncate on hipocampo_private.embedding_models for each statement execute function hipocampo_private._forget_config_cache();

create trigger knowledge_bases_forget_config_cache after insert or delete or update or truncate on hipocampo_private.knowledge_bases for each statement execute function hipocampo_private._forget_config_cache();

create trigger model_calibrations_forget_config_cache after insert or delete or update or truncate on hipocampo_private.model_calibrations for each statement execute function hipocampo_private._forget_config_cache();

create trigger settings_forget_config_cache after insert or delete or update or truncate on hipocampo_private.settings for each statement execute function hipocampo_private._forget_config_cache();

revoke execute on function hipocampo_private._forget_config_cache() from public;
revoke execute on function hipocampo_private._merged_config(tenant_id uuid, kb_id uuid) from public;
grant execute on function hipocampo_private._merged_config(tenant_id uuid, kb_id uuid) to authenticated;
grant execute on function hipocampo_private._merged_config(tenant_id uuid, kb_id uuid) to service_role;
