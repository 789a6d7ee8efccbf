-- A knowledge base's values chosen for one embedding model (issue 22 §2): `hipocampo kb eval
-- --tune --write` chose a knowledge base's dense weight and answer threshold under the active model
-- and stored them as plain overrides, which stayed in force after a model switch. They now go to
-- knowledge_bases.tuning, keyed by model, merged after the tenant's row and before the knowledge
-- base's overrides only while that model is searched. Plain overrides are unchanged (an explicit
-- setting, whatever the model). Restated from supabase/schemas/02_config.sql and
-- 03_knowledge_bases.sql; re-runnable.

alter table hipocampo_private.knowledge_bases add column if not exists tuning jsonb not null default '{}'::jsonb;
alter table hipocampo_private.knowledge_bases drop constraint if exists knowledge_bases_tuning_is_object;
alter table hipocampo_private.knowledge_bases add constraint knowledge_bases_tuning_is_object
check (jsonb_typeof(tuning) = 'object');

comment on column hipocampo_private.knowledge_bases.tuning is
'Per embedding model: values chosen for this knowledge base (set_knowledge_base_tuning), in force while that model is searched.';

/*
effective_config(tenant_id uuid default null, kb_id uuid default null) -> jsonb

Purpose: the configuration in force: the global row, overridden per section by the active
  embedding model's calibration (model_calibrations: its cosine thresholds and dense weights),
  then by the tenant's row, then by the knowledge base's tuning for the active model
  (set_knowledge_base_tuning), then by the knowledge base's overrides.
Parameters: tenant_id - null = the caller's tenant; kb_id - optional knowledge base.
Returns: a jsonb object with sections retrieval, chunking, embedding, memory, ….
Errors: 42501 as _resolve_tenant.
Example: select hipocampo.effective_config() -> 'retrieval' ->> 'min_similarity';
*/
create or replace function hipocampo.effective_config(tenant_id uuid default null, kb_id uuid default null)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(effective_config.tenant_id);
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
            select 2, s.config from hipocampo_private.settings as s where s.tenant_id = t
            union all
            -- The knowledge base's tuning for the active model, then its overrides: one row read.
            select l.ord, l.config
            from hipocampo_private.knowledge_bases as k
            cross join lateral (
                values (3, coalesce(
                    k.tuning -> (select e.name from hipocampo_private.embedding_models as e where e.active), '{}'
                )), (4, k.overrides)
            ) as l (ord, config)
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
    return cfg;
end;
$$;

/*
_config_section(tenant_id uuid, kb_id uuid, section text, model text) -> jsonb

Purpose: one section of effective_config for a tenant already resolved by the caller and a given
  embedding model: the global row's keys, overridden by the model's calibration, by the tenant
  row's, by the knowledge base's tuning for that model and then its overrides (when kb_id is
  given and belongs to the tenant) -
  effective_config's precedence, without resolving the caller again nor merging the other
  sections, and with the calibration of the model searched rather than the active one (a
  knowledge base searched by name with another model takes that model's thresholds). Granted to
  nobody: for definer functions that have resolved the tenant (hybrid_search).
Parameters: tenant_id - the resolved tenant; kb_id - a knowledge base of it, or null; section -
  e.g. 'retrieval'; model - an embedding model's name.
Returns: the section as a jsonb object ({} when no row has it).
Errors: none.
Example: select hipocampo_private._config_section(t, kb, 'retrieval', 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo_private._config_section(tenant_id uuid, kb_id uuid, section text, model text)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    select coalesce((select g.config -> section from hipocampo_private.settings as g where g.tenant_id is null), '{}')
        || coalesce(hipocampo_private._calibration(_config_section.model) -> section, '{}')
        || coalesce((
            select s.config -> section from hipocampo_private.settings as s
            where s.tenant_id = _config_section.tenant_id
        ), '{}')
        || coalesce((
            -- The knowledge base's tuning for the model, then its overrides: one row read.
            select coalesce(k.tuning -> _config_section.model -> section, '{}')
                || coalesce(k.overrides -> section, '{}')
            from hipocampo_private.knowledge_bases as k
            where k.id = _config_section.kb_id and k.tenant_id = _config_section.tenant_id
        ), '{}')
$$;

/*
set_knowledge_base_tuning(kb_id uuid, model text, section text, patch jsonb) -> jsonb

Purpose: a knowledge base's values chosen for one embedding model (issue 22 §2), e.g. the dense
  weight and answer threshold `hipocampo kb eval --tune --write` confirms on the knowledge base's
  own judged questions. They are in force only while that model is the one searched
  (effective_config, _config_section: after the tenant's row, before the knowledge base's
  overrides), so switching the active model switches them with its calibration. Only keys whose
  value depends on the model's scores: retrieval.min_similarity, dense_weight, dedupe_threshold;
  rag.min_score, min_confidence, sentence_weight, sentence_cosine_low, sentence_cosine_high. A
  null value removes one; values are validated like the tenant's (types, ranges).
Parameters: kb_id of the caller's tenant; model - a registered embedding model's name; section
  'retrieval' | 'rag'; patch a json object.
Returns: the knowledge base's tuning of that section for that model after the change.
Errors: 42501 as _caller (before any other work); 42501 not an admin; P0002 "unknown knowledge
  base: <id>"; P0002 "unknown embedding model: <m>"; 22023 "<section>.<key> is not tuned per model
  (keys: …)"; 22023 / 22003 as _check_config_patch.
Example: select hipocampo.set_knowledge_base_tuning(kb, 'all-MiniLM-L6-v2', 'rag', '{"min_confidence": 0.5}');
*/
create or replace function hipocampo.set_knowledge_base_tuning(kb_id uuid, model text, section text, patch jsonb)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(set_knowledge_base_tuning.kb_id);
    tunable jsonb := hipocampo_private._calibrated_keys() - 'memory' - 'conversations'
        || jsonb_build_object(
            'rag', '["min_score", "min_confidence"]'::jsonb || (hipocampo_private._calibrated_keys() -> 'rag')
        );
    bad text;
    current jsonb;
    entry jsonb;
begin
    perform hipocampo_private._require_admin();
    if not exists (
        select 1 from hipocampo_private.embedding_models as e where e.name = set_knowledge_base_tuning.model
    ) then
        raise exception 'unknown embedding model: %', model using errcode = 'P0002';
    end if;
    perform hipocampo_private._check_config_patch(set_knowledge_base_tuning.section, patch);
    select p.key into bad from jsonb_object_keys(patch) as p (key)
    where not coalesce(tunable -> set_knowledge_base_tuning.section, '[]'::jsonb) ? p.key
    order by p.key
    limit 1;
    if bad is not null then
        raise exception '%.% is not tuned per model (keys: %)', section, bad, coalesce((
            select string_agg(x.key, ', ' order by x.n)
            from jsonb_array_elements_text(tunable -> set_knowledge_base_tuning.section) with ordinality as x (key, n)
        ), 'none') using errcode = '22023';
    end if;
    current := jsonb_strip_nulls(coalesce(k.tuning #> array[model, section], '{}'::jsonb) || patch);
    -- The model's entry after the change; an empty section, then an empty entry, is removed.
    entry := coalesce(k.tuning -> model, '{}'::jsonb) - section;
    if current <> '{}'::jsonb then
        entry := entry || jsonb_build_object(section, current);
    end if;
    update hipocampo_private.knowledge_bases as b
    set tuning = case when entry = '{}'::jsonb then b.tuning - model else jsonb_set(b.tuning, array[model], entry) end,
        updated_at = now()
    where b.id = k.id;
    return current;
end;
$$;

comment on function hipocampo.effective_config(uuid, uuid) is
'Config in force for a tenant (and KB): global row <- model calibration <- tenant row <- KB tuning for the model <- KB overrides.';

comment on function hipocampo.set_knowledge_base_tuning(uuid, text, text, jsonb) is
'Tenant admins store a knowledge base''s model-dependent values for one embedding model (in force while it is searched).';

revoke execute on function hipocampo.set_knowledge_base_tuning(uuid, text, text, jsonb) from public;
grant execute on function hipocampo.set_knowledge_base_tuning(kb_id uuid, model text, section text, patch jsonb)
to authenticated, service_role;
-- set_knowledge_base_tuning is security invoker and reads which keys are calibrated (a constant).
grant execute on function hipocampo_private._calibrated_keys() to authenticated;
