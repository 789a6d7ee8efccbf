-- effective config calibrated ranges.
-- issue 58 §2: the settings form shows what a calibrated key accepts, as every other key's bound
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
            where k.id = effective_config.kb_id and k.tenant_id = t
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
    -- has none for them; _check_config_patch reads the same _calibrated_range).
    for section in select jsonb_object_keys(hipocampo_private._calibrated_keys()) loop
        cfg := jsonb_set(cfg, array[section], coalesce(cfg -> section, '{}'::jsonb) || coalesce((
            select jsonb_object_agg(k.key || '_range', hipocampo_private._calibrated_range(k.key))
            from jsonb_array_elements_text(hipocampo_private._calibrated_keys() -> section) as k (key)
        ), '{}'::jsonb));
    end loop;
    return cfg;
end;
$function$;
