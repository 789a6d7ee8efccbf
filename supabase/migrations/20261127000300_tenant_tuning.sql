-- A tenant's values chosen for one embedding model (issue 22 §2): a tenant admin's override of a
-- model-dependent key (a cosine threshold, a dense weight, the answer gate's min_score /
-- min_confidence) was one value whatever the model, so it stayed in force after a model switch.
-- settings.tuning keeps such values per model, merged after the model's calibration and before
-- the tenant's plain row while that model is active (effective_config) or searched
-- (_config_section); set_tenant_tuning writes them. set_knowledge_base_tuning and it share
-- _tuning_after (the checks and the merge) and _tuned_keys (the keys). Plain tenant overrides are
-- unchanged (an explicit setting, whatever the model). Restated from supabase/schemas/02_config.sql
-- and 03_knowledge_bases.sql; re-runnable.

alter table hipocampo_private.settings add column if not exists tuning jsonb not null default '{}'::jsonb;
alter table hipocampo_private.settings drop constraint if exists settings_tuning_is_object;
alter table hipocampo_private.settings add constraint settings_tuning_is_object
check (jsonb_typeof(tuning) = 'object');

comment on column hipocampo_private.settings.tuning is
'Per embedding model: a tenant''s values of the model-dependent keys (set_tenant_tuning), in force while that model is searched.';

/*
_tuned_keys() -> jsonb

Purpose: the config keys a tenant or a knowledge base may set per embedding model (issue 22 §2):
  every calibrated key (_calibrated_keys) and the answer gate's rag.min_score and
  rag.min_confidence, whose right values also follow the model's scores. A knowledge base takes
  the retrieval and rag ones (set_knowledge_base_tuning), a tenant all of them (set_tenant_tuning).
Returns: {section: [key, …]}.
Errors: none.
Example: select hipocampo_private._tuned_keys() -> 'rag';
*/
create or replace function hipocampo_private._tuned_keys()
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
    select hipocampo_private._calibrated_keys() || jsonb_build_object(
        'rag', '["min_score", "min_confidence"]'::jsonb || (hipocampo_private._calibrated_keys() -> 'rag')
    )
$$;

/*
_tuning_after(tuning jsonb, model text, section text, patch jsonb, tunable jsonb) -> jsonb

Purpose: a tuning object ({"<model>": {section: {key: value}}}: knowledge_bases.tuning,
  settings.tuning) after `patch` is merged into one model's section. The model must be
  registered; only the keys `tunable` lists for the section are taken, validated as
  _check_config_patch validates any patch (types, ranges); a null value removes a key, and an
  empty section, then an empty model entry, is removed.
Parameters: tuning - the stored object; model - an embedding model's name; section - e.g. 'rag';
  patch - a json object; tunable - {section: [key, …]} (_tuned_keys or a part of it).
Returns: the new tuning object.
Errors: P0002 "unknown embedding model: <m>"; 22023 "<section>.<key> is not tuned per model (keys:
  …)"; 22023 / 22003 as _check_config_patch.
Example: select hipocampo_private._tuning_after('{}', 'all-MiniLM-L6-v2', 'rag', '{"min_confidence": 0.5}',
  hipocampo_private._tuned_keys());
*/
create or replace function hipocampo_private._tuning_after(
    tuning jsonb, model text, section text, patch jsonb, tunable jsonb
)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    bad text;
    current jsonb;
    entry jsonb;
begin
    if not exists (select 1 from hipocampo_private.embedding_models as e where e.name = _tuning_after.model) then
        raise exception 'unknown embedding model: %', model using errcode = 'P0002';
    end if;
    perform hipocampo_private._check_config_patch(_tuning_after.section, patch);
    select p.key into bad from jsonb_object_keys(patch) as p (key)
    where not coalesce(tunable -> _tuning_after.section, '[]'::jsonb) ? p.key
    order by p.key
    limit 1;
    if bad is not null then
        raise exception '%.% is not tuned per model (keys: %)', section, bad, coalesce((
            select string_agg(x.key, ', ' order by x.n)
            from jsonb_array_elements_text(tunable -> _tuning_after.section) with ordinality as x (key, n)
        ), 'none') using errcode = '22023';
    end if;
    current := jsonb_strip_nulls(coalesce(tuning #> array[model, section], '{}'::jsonb) || patch);
    -- The model's entry after the change; an empty section, then an empty entry, is removed.
    entry := coalesce(tuning -> model, '{}'::jsonb) - section;
    if current <> '{}'::jsonb then
        entry := entry || jsonb_build_object(section, current);
    end if;
    return case when entry = '{}'::jsonb then tuning - model else jsonb_set(tuning, array[model], entry) end;
end;
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
    after jsonb;
begin
    perform hipocampo_private._require_admin();
    after := hipocampo_private._tuning_after(
        k.tuning, model, section, patch, hipocampo_private._tuned_keys() - 'memory' - 'conversations'
    );
    update hipocampo_private.knowledge_bases as b set tuning = after, updated_at = now()
    where b.id = k.id;
    return coalesce(after #> array[model, section], '{}'::jsonb);
end;
$$;

/*
set_tenant_tuning(model text, section text, patch jsonb, tenant_id uuid default null) -> jsonb

Purpose: a tenant's values chosen for one embedding model (issue 22 §2): what set_tenant_config
  does for the keys whose value depends on the model's scores, kept apart per model so that
  switching the active model switches them with its calibration. In force only while that model
  is the active one (effective_config) or the one searched (_config_section), after the model's
  calibration and before the tenant's plain row (which holds whatever the model). Keys
  (_tuned_keys): retrieval.min_similarity, dense_weight, dedupe_threshold; memory.context_threshold,
  answer_threshold, duplicate_cosine; conversations.dense_weight; rag.min_score, min_confidence,
  sentence_weight, sentence_cosine_low, sentence_cosine_high. A null value removes one; values are
  validated like any config patch (types, ranges).
Parameters: model - a registered embedding model's name; section 'retrieval' | 'memory' |
  'conversations' | 'rag'; patch - a json object; tenant_id only for service_role.
Returns: the tenant's tuning of that section for that model after the change.
Errors: 42501 as _resolve_tenant; 42501 "only tenant admins can change the tenant's
  configuration"; P0002 "unknown embedding model: <m>"; 22023 "<section>.<key> is not tuned per
  model (keys: …)"; 22023 / 22003 as _check_config_patch.
Example: select hipocampo.set_tenant_tuning('multilingual-e5-small', 'memory', '{"answer_threshold": 0.86}');
*/
-- definer because tenant admins change their tenant's settings row, which no client role may write directly.
create or replace function hipocampo.set_tenant_tuning(model text, section text, patch jsonb, tenant_id uuid default null)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
#variable_conflict use_column
declare
    t uuid := hipocampo_private._resolve_tenant(set_tenant_tuning.tenant_id);
    after jsonb;
begin
    perform hipocampo_private._require_admin();
    insert into hipocampo_private.settings (tenant_id, config) values (t, '{}'::jsonb)
    on conflict (coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid)) do nothing;
    select hipocampo_private._tuning_after(
        s.tuning, set_tenant_tuning.model, set_tenant_tuning.section, set_tenant_tuning.patch,
        hipocampo_private._tuned_keys()
    ) into after
    from hipocampo_private.settings as s where s.tenant_id = t;
    update hipocampo_private.settings as s set tuning = after, updated_at = now()
    where s.tenant_id = t;
    return coalesce(after #> array[set_tenant_tuning.model, set_tenant_tuning.section], '{}'::jsonb);
end;
$$;

/*
effective_config(tenant_id uuid default null, kb_id uuid default null) -> jsonb

Purpose: the configuration in force: the global row, overridden per section by the active
  embedding model's calibration (model_calibrations: its cosine thresholds and dense weights),
  then by the tenant's tuning for the active model (set_tenant_tuning), then by the tenant's
  row, then by the knowledge base's tuning for the active model (set_knowledge_base_tuning),
  then by the knowledge base's overrides.
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
    return cfg;
end;
$$;

/*
_config_section(tenant_id uuid, kb_id uuid, section text, model text) -> jsonb

Purpose: one section of effective_config for a tenant already resolved by the caller and a given
  embedding model: the global row's keys, overridden by the model's calibration, by the tenant's
  tuning for that model and then its row, by the knowledge base's tuning for that model and then
  its overrides (when kb_id is given and belongs to the tenant) - effective_config's precedence,
  without resolving the caller again nor merging the other sections, and with the calibration of the model searched rather than the active one (a
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
            -- The tenant's tuning for the model, then its row: one row read.
            select coalesce(s.tuning -> _config_section.model -> section, '{}') || coalesce(s.config -> section, '{}')
            from hipocampo_private.settings as s
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

comment on function hipocampo.effective_config(uuid, uuid) is
'Config in force for a tenant (and KB): global row <- model calibration <- tenant tuning for the model <- tenant row <- KB tuning for the model <- KB overrides.';

comment on function hipocampo.set_tenant_tuning(text, text, jsonb, uuid) is
'Tenant admins store the tenant''s model-dependent values for one embedding model (in force while it is searched).';

revoke execute on function hipocampo.set_tenant_tuning(text, text, jsonb, uuid) from public;
grant execute on function hipocampo.set_tenant_tuning(model text, section text, patch jsonb, tenant_id uuid)
to authenticated, service_role;
-- set_knowledge_base_tuning is security invoker: its caller runs these two.
revoke execute on function hipocampo_private._tuned_keys() from public;
revoke execute on function hipocampo_private._tuning_after(jsonb, text, text, jsonb, jsonb) from public;
grant execute on function hipocampo_private._tuned_keys() to authenticated, service_role;
grant execute on function hipocampo_private._tuning_after(tuning jsonb, model text, section text, patch jsonb, tunable jsonb)
to authenticated, service_role;
