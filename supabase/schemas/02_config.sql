-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

create table hipocampo_private.settings (
    id bigint primary key default hipocampo_private._opaque_id(),
    tenant_id uuid,
    config jsonb not null default '{}'::jsonb,
    updated_at timestamptz not null default now(),
    -- A tenant's values chosen for one embedding model, {"<model>": {section: {key: value}}}: in
    -- force only while that model is the active one (or the one searched); see set_tenant_tuning.
    tuning jsonb not null default '{}'::jsonb,
    constraint settings_config_is_object check (jsonb_typeof(config) = 'object'),
    constraint settings_tuning_is_object check (jsonb_typeof(tuning) = 'object')
);

alter table hipocampo_private.settings enable row level security;

create unique index settings_tenant_id_key on hipocampo_private.settings (
    coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid)
);

comment on table hipocampo_private.settings is
'Config rows: global defaults (tenant_id null, seeded from config.toml) and per-tenant overrides.';

comment on column hipocampo_private.settings.tuning is
'Per embedding model: a tenant''s values of the model-dependent keys (set_tenant_tuning), in force while that model is searched.';

-- Calibration belongs to the embedding model (issue 22 §2): the thresholds and weights that
-- depend on a model's score distribution are kept per model, seeded from config.toml's
-- [calibration."<model>".<section>] tables, and merged between the global row and the tenant's
-- (global <- the model's calibration <- tenant <- knowledge base).
create table hipocampo_private.model_calibrations (
    embedding_model text primary key,
    config jsonb not null,
    source text not null,
    updated_at timestamptz not null default now(),
    constraint model_calibrations_model_format check (embedding_model ~ '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$'),
    constraint model_calibrations_config_is_object check (jsonb_typeof(config) = 'object'),
    constraint model_calibrations_source_check check (source in ('config.toml', 'set_model_calibration'))
);

alter table hipocampo_private.model_calibrations enable row level security;

create policy "authenticated users can read the model calibrations"
on hipocampo_private.model_calibrations
for select
to authenticated
using (true);

comment on table hipocampo_private.model_calibrations is
'Per embedding model: the config keys that depend on its score distribution (seeded from config.toml [calibration."<model>"]).';

/*
_forget_config_cache() -> trigger

Purpose: empties this transaction's cache of effective_config (the transaction-local setting
  hipocampo.config_cache) after any write to a table the config is merged from: settings,
  model_calibrations, knowledge_bases, embedding_models. A config read after a write in the same
  transaction merges again; other transactions never see the cache (it ends with its transaction).
Returns: null (a statement trigger).
Errors: none.
Example: create trigger settings_forget_config_cache after insert or update or delete on
  hipocampo_private.settings for each statement execute function hipocampo_private._forget_config_cache();
*/
create or replace function hipocampo_private._forget_config_cache()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    perform set_config('hipocampo.config_cache', '', true);
    return null;
end;
$$;

create trigger settings_forget_config_cache
after insert or update or delete or truncate on hipocampo_private.settings
for each statement execute function hipocampo_private._forget_config_cache();

create trigger model_calibrations_forget_config_cache
after insert or update or delete or truncate on hipocampo_private.model_calibrations
for each statement execute function hipocampo_private._forget_config_cache();

/*
_operator_limit(section text, key text) -> integer

Purpose: an integer limit of the global config row (the operator's, tenant_locked), e.g. the bounds
  of the audit rows the database writes (maintenance.read_record_max_chunk_ids). For definer
  functions, which read the global row whoever calls them.
Parameters: section, key - e.g. 'maintenance', 'memory_event_detail_max_bytes'.
Returns: the value.
Errors: 55000 "<section>.<key> is not configured (seed it from config.toml: hipocampo db migrate)".
Example: select hipocampo_private._operator_limit('maintenance', 'read_record_max_chunk_ids');  -- 1000
*/
create or replace function hipocampo_private._operator_limit(section text, key text)
returns integer
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    v integer := (
        select (g.config -> _operator_limit.section ->> _operator_limit.key)::integer
        from hipocampo_private.settings as g where g.tenant_id is null
    );
begin
    if v is null then
        raise exception '%.% is not configured (seed it from config.toml: hipocampo db migrate)', section, key
            using errcode = '55000';
    end if;
    return v;
end;
$$;

/*
_calibrated_keys() -> jsonb

Purpose: which config keys belong to an embedding model's calibration rather than to the global
  row: the cosine thresholds and the dense weights of fusion (issue 22 §2), and the answer gate's
  sentence similarity (its weight and the cosines it rises between). Every calibration holds all
  of them; the global row holds none of them.
Returns: {section: [key, …]}.
Errors: none.
Example: select hipocampo_private._calibrated_keys() -> 'memory';
*/
create or replace function hipocampo_private._calibrated_keys()
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
    select '{
        "retrieval": ["min_similarity", "dense_weight", "dedupe_threshold", "coverage_dense_boost"],
        "memory": ["context_threshold", "answer_threshold", "duplicate_cosine"],
        "conversations": ["dense_weight"],
        "rag": ["sentence_weight", "sentence_cosine_low", "sentence_cosine_high", "passages_floor"]
    }'::jsonb
$$;

/*
_calibrated_range(key text) -> jsonb

Purpose: the range of a calibrated key's values, by its kind: a weight (a key ending in _weight)
  lies in [0, 100], coverage_dense_boost (a factor on the dense weight) in [1, 100], a threshold
  (a cosine) in [-1, 1]. _check_calibration bounds a model's
  calibration with it, _check_config_patch an override or a tuning of such a key.
Parameters: key - a key of _calibrated_keys(), e.g. 'dense_weight'.
Returns: [lo, hi] as a json array.
Errors: none.
Example: select hipocampo_private._calibrated_range('answer_threshold');  -- [-1, 1]
*/
create or replace function hipocampo_private._calibrated_range(key text)
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
    select case
        when _calibrated_range.key like '%\_weight' then '[0, 100]'::jsonb
        when _calibrated_range.key = 'coverage_dense_boost' then '[1, 100]'::jsonb
        else '[-1, 1]'::jsonb
    end
$$;

/*
_calibrated_bounds(section text) -> jsonb

Purpose: what each calibrated key of a section accepts, as the bounds beside a key are written
  (<key>_range = _calibrated_range(key)); the global row declares none for them.
  _check_config_patch checks a patch with them, effective_config shows them beside the values.
Parameters: section - a section name, e.g. 'retrieval'; a section with no calibrated key gives {}.
Returns: a jsonb object {"<key>_range": [lo, hi], ...}.
Errors: none.
Example: select hipocampo_private._calibrated_bounds('memory') -> 'answer_threshold_range';
*/
create or replace function hipocampo_private._calibrated_bounds(section text)
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
    select coalesce(jsonb_object_agg(k.key || '_range', hipocampo_private._calibrated_range(k.key)), '{}'::jsonb)
    from jsonb_array_elements_text(hipocampo_private._calibrated_keys() -> _calibrated_bounds.section) as k (key)
$$;

/*
_check_calibration(model text, calibration jsonb) -> jsonb

Purpose: validate one model's calibration: an object of the sections of _calibrated_keys(), each
  holding every key listed there and no other, each a number: weights (keys ending in _weight)
  in [0, 100], thresholds (cosines) in [-1, 1].
Parameters: model - the embedding model's name (for the messages); calibration - jsonb.
Returns: the calibration unchanged.
Errors: 22023 "calibration of <model> must be a json object of sections" / "unknown calibration
  key <section>.<key> (calibrated keys: …)" / "calibration of <model> lacks <section>.<key>" /
  "<section>.<key> must be a number"; 22003 "<section>.<key> must lie in [lo, hi] (got v)".
Example: select hipocampo_private._check_calibration('m', '{"retrieval": {…}, …}');
*/
create or replace function hipocampo_private._check_calibration(model text, calibration jsonb)
returns jsonb
language plpgsql
immutable
security invoker
set search_path = ''
as $$
declare
    keys jsonb := hipocampo_private._calibrated_keys();
    item record;
    bounds jsonb;
begin
    if calibration is null or jsonb_typeof(calibration) <> 'object' or exists (
        select 1 from jsonb_each(calibration) as s where jsonb_typeof(s.value) <> 'object'
    ) then
        raise exception 'calibration of % must be a json object of sections', model using errcode = '22023';
    end if;
    for item in
        select s.key as section, k.key, k.value
        from jsonb_each(calibration) as s cross join lateral jsonb_each(s.value) as k
    loop
        if not coalesce(keys -> item.section ? item.key, false) then
            raise exception 'unknown calibration key %.% (calibrated keys: %)', item.section, item.key,
                (select string_agg(s.key || '.' || k, ', ')
                 from jsonb_each(keys) as s cross join lateral jsonb_array_elements_text(s.value) as k)
                using errcode = '22023';
        end if;
        if jsonb_typeof(item.value) <> 'number' then
            raise exception '%.% must be a number', item.section, item.key using errcode = '22023';
        end if;
        bounds := hipocampo_private._calibrated_range(item.key);
        if (item.value #>> '{}')::numeric not between (bounds ->> 0)::numeric and (bounds ->> 1)::numeric then
            raise exception '%.% must lie in [%, %] (got %)', item.section, item.key, bounds ->> 0, bounds ->> 1,
                item.value using errcode = '22003';
        end if;
    end loop;
    for item in
        select s.key as section, k as key
        from jsonb_each(keys) as s cross join lateral jsonb_array_elements_text(s.value) as k
        where calibration #> array[s.key, k] is null
    loop
        raise exception 'calibration of % lacks %.%', model, item.section, item.key using errcode = '22023';
    end loop;
    return calibration;
end;
$$;

/*
_calibration(model text default null, required boolean default false) -> jsonb

Purpose: an embedding model's calibration (model_calibrations.config): the one lookup of it, for
  effective_config, _config_section, _check_config_patch, run_memory_maintenance,
  activate_embedding_model and hybrid_search.
Parameters: model - the model's name, null = the active model; required - raise when it has none.
Returns: {section: {key: value}}, or null when the model has none (and required is false).
Errors: 55000 "embedding model <m> has no calibration: run hipocampo calibrate --model <m> --write"
  when required.
Example: select hipocampo_private._calibration() -> 'memory' ->> 'context_threshold';
*/
create or replace function hipocampo_private._calibration(model text default null, required boolean default false)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    m text := coalesce(
        _calibration.model, (select e.name from hipocampo_private.embedding_models as e where e.active)
    );
    cal jsonb;
begin
    select c.config into cal from hipocampo_private.model_calibrations as c where c.embedding_model = m;
    if cal is null and required then
        raise exception 'embedding model % has no calibration: run hipocampo calibrate --model % --write', m, m
            using errcode = '55000';
    end if;
    return cal;
end;
$$;

/*
set_model_calibration(model text, calibration jsonb) -> jsonb

Purpose: store an embedding model's calibration (what `hipocampo calibrate --model <m> --write`
  applies at once, beside writing it to config.toml, which seeds it again on every `hipocampo db
  migrate`). The model need not be registered yet: a model is calibrated before it is activated.
Parameters: model - the model's name (the registry's name format); calibration - {section: {key:
  number}} with every key of _calibrated_keys(): retrieval.min_similarity, dense_weight,
  dedupe_threshold; memory.context_threshold, answer_threshold, duplicate_cosine;
  conversations.dense_weight; rag.sentence_weight, sentence_cosine_low, sentence_cosine_high.
  Thresholds are cosines in [-1, 1], weights in [0, 100].
Returns: the stored calibration.
Errors: 42501 for any role but service_role (no EXECUTE); 22023 / 22003 as _check_calibration;
  23514 on a malformed model name.
Example: select hipocampo.set_model_calibration('multilingual-e5-small',
  '{"retrieval": {"min_similarity": 0.82, "dense_weight": 1.0, "dedupe_threshold": 0.97}, …}');
*/
create or replace function hipocampo.set_model_calibration(model text, calibration jsonb)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
begin
    perform hipocampo_private._check_calibration(set_model_calibration.model, set_model_calibration.calibration);
    insert into hipocampo_private.model_calibrations (embedding_model, config, source)
    values (set_model_calibration.model, set_model_calibration.calibration, 'set_model_calibration')
    on conflict (embedding_model) do update
    set config = excluded.config, source = excluded.source, updated_at = now();
    return set_model_calibration.calibration;
end;
$$;

comment on function hipocampo.set_model_calibration(text, jsonb) is
'Store an embedding model''s calibration (its cosine thresholds and dense weights); service_role.';

/*
seed_default_config(defaults jsonb) -> void

Purpose: replace the global config row with the versioned defaults from config.toml, and store
  the embedding models' calibrations it holds (its "calibration" object: {model: {section: {key:
  number}}}, see _check_calibration) in model_calibrations. A model config.toml does not name
  keeps the calibration it has (set_model_calibration).
Parameters: defaults - a jsonb object (sections retrieval, chunking, embedding, …, calibration).
Returns: nothing.
Errors: 22023 "defaults must be a json object" when it is not an object; 22023 "<section>.<key>
  belongs to an embedding model's calibration: set it in [calibration.\"<model>\".<section>]"
  when a section of the global row holds a calibrated key; 22023 / 22003 as _check_calibration.
Example: select hipocampo_private.seed_default_config('{"retrieval": {"match_count": 5}}');
*/
create or replace function hipocampo_private.seed_default_config(defaults jsonb)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
declare
    calibrations jsonb;
    misplaced text;
    item record;
begin
    if defaults is null or jsonb_typeof(defaults) <> 'object' then
        raise exception 'defaults must be a json object' using errcode = '22023';
    end if;
    calibrations := coalesce(defaults -> 'calibration', '{}'::jsonb);
    if jsonb_typeof(calibrations) <> 'object' then
        raise exception 'calibration must be a json object of models' using errcode = '22023';
    end if;
    select s.key || '.' || k into misplaced
    from jsonb_each(hipocampo_private._calibrated_keys()) as s
    cross join lateral jsonb_array_elements_text(s.value) as k
    where defaults #> array[s.key, k] is not null
    limit 1;
    if misplaced is not null then
        raise exception '% belongs to an embedding model''s calibration: set it in [calibration."<model>".%]',
            misplaced, split_part(misplaced, '.', 1) using errcode = '22023';
    end if;
    for item in select c.key, c.value from jsonb_each(calibrations) as c loop
        perform hipocampo_private._check_calibration(item.key, item.value);
        insert into hipocampo_private.model_calibrations (embedding_model, config, source)
        values (item.key, item.value, 'config.toml')
        on conflict (embedding_model) do update
        set config = excluded.config, source = excluded.source, updated_at = now();
    end loop;
    insert into hipocampo_private.settings (tenant_id, config)
    values (null, defaults - 'calibration')
    on conflict (coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid))
    do update set config = excluded.config, updated_at = now();
end;
$$;

create policy "members can read the global and their tenant config"
on hipocampo_private.settings
for select
to authenticated
using (
    tenant_id is null
    or tenant_id = (select hipocampo_private.current_tenant_id())
);

/*
set_tenant_config(section text, patch jsonb, tenant_id uuid default null) -> jsonb

Purpose: merge `patch` into the caller's tenant row of settings, for one section (e.g.
  'sessions', 'retrieval', 'memory', 'rag'), validated by _check_config_patch: only keys of the
  global row's section, with the same json type, within `<key>_range` (and `<key>_max_items`)
  when declared, never keys in `tenant_locked`, secrets only by name. A null value removes the
  tenant's override of that key (back to the global default).
Parameters: section; patch - a json object; tenant_id only for service_role.
Returns: the tenant's overrides of that section after the change.
Errors: 42501 as _resolve_tenant; 42501 "only tenant admins can change the tenant's
  configuration"; 22023 / 22003 / 42501 (a secret's name or an operator_only key: service_role
  only) as _check_config_patch.
Example: select hipocampo.set_tenant_config('sessions', '{"inactivity_ttl_minutes": 15}');
*/
-- definer because tenant admins change their tenant's settings row, which no client role may write directly.
create or replace function hipocampo.set_tenant_config(section text, patch jsonb, tenant_id uuid default null)
returns jsonb
language plpgsql
security definer
set search_path = ''
set jit = off
as $$
#variable_conflict use_column
declare
    t uuid := hipocampo_private._resolve_tenant(set_tenant_config.tenant_id);
    current jsonb;
begin
    perform hipocampo_private._require_admin();
    perform hipocampo_private._check_config_patch(set_tenant_config.section, patch);
    insert into hipocampo_private.settings (tenant_id, config) values (t, '{}'::jsonb)
    on conflict (coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid)) do nothing;
    select coalesce(s.config -> set_tenant_config.section, '{}'::jsonb) into current
    from hipocampo_private.settings as s where s.tenant_id = t;
    current := jsonb_strip_nulls(current || patch);
    update hipocampo_private.settings as s
    set config = jsonb_set(s.config, array[set_tenant_config.section], current), updated_at = now()
    where s.tenant_id = t;
    return current;
end;
$$;

comment on function hipocampo.set_tenant_config(text, jsonb, uuid) is
'Tenant admins override config keys of one section, within the bounds the global row declares.';

/*
_refuse_config_secret(section text, key text, value jsonb) -> void

Purpose: _check_config_patch's first check of each key: a config row never holds a secret. A key
  named like one (api_key, apikey, password, secret, token) or a string that looks like one (an
  OpenAI key sk-…, a JWT eyJ….) is refused; a *_secret key holds only the name of a secret of the
  server (letters, digits, _; at most 128).
Parameters: section, key - where the value would go; value - the json value.
Returns: nothing.
Errors: 22023 "secrets are never stored: give the name of the secret in a *_secret key (…)";
  22023 "secrets are never stored: <section>.<key> must be the name of a secret (letters, digits, _)".
Example: perform hipocampo_private._refuse_config_secret('rag', 'api_key_secret', '"OPENAI_API_KEY"');
*/
create or replace function hipocampo_private._refuse_config_secret(section text, key text, value jsonb)
returns void
language plpgsql
immutable
security invoker
set search_path = ''
as $$
begin
    if key in ('api_key', 'apikey', 'password', 'secret', 'token')
        or (jsonb_typeof(value) = 'string' and (value #>> '{}') ~ '^(sk-[A-Za-z0-9_-]{8,}|eyJ[A-Za-z0-9_-]{10,}\.)') then
        raise exception 'secrets are never stored: give the name of the secret in a *_secret key (%.%)',
            section, key using errcode = '22023';
    end if;
    if key like '%\_secret' and jsonb_typeof(value) = 'string'
        and (value #>> '{}') !~ '^[A-Za-z_][A-Za-z0-9_]{0,127}$' then
        raise exception 'secrets are never stored: %.% must be the name of a secret (letters, digits, _)',
            section, key using errcode = '22023';
    end if;
end;
$$;

/*
_check_config_patch(section text, patch jsonb) -> void

Purpose: validate a patch of one config section against the global row (with the active
  embedding model's calibrated keys, each within _calibrated_range: a weight in [0, 100], a cosine
  in [-1, 1]): known keys only, same json type, within `<key>_range` (a `<key>_range` also bounds
  each element of an array of numbers and each value of an object of numbers, and
  `<key>_max_items` caps an array's length), never
  `tenant_locked` keys; secrets
  only by name (keys ending in `_secret` hold a name such as OPENAI_API_KEY; no key may be called
  api_key/password/secret and no value may look like a key or a JWT), and such a name only by the
  operator (service_role): it chooses which of the server's secrets a request sends where, so a
  tenant admin could otherwise name another tenant's key or the service key. Keys a section lists
  in `operator_only` (e.g. rag.provider: which paid service answers on the operator's key) are
  likewise the operator's per tenant; `tenant_locked` ones nobody's. A chunking rule replaces
  the global rule of its source type, so it must give every key of it (min_tokens, max_tokens, …).
Errors: 22023 "patch must be a json object" / "unknown section …" / "unknown key …" / "… is fixed
  and cannot be changed per tenant" / "… must be a …" / "secrets are never stored: …" / "… must
  have at most N items" / "chunking.<type> must give every key of the rule: …"; 22003 "… must lie
  in [lo, hi]" (also for an array element that is not a number or lies outside the range); 42501
  "<section>.<key> names a secret of the server: only the operator (service_role) sets it" /
  "<section>.<key> is the operator's to set (service_role): it is in <section>.operator_only".
Returns: nothing; it raises on the first problem.
Example: select hipocampo_private._check_config_patch('conversations', '{"context_weights_after": [0.4]}');
*/
create or replace function hipocampo_private._check_config_patch(section text, patch jsonb)
returns void
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    global_section jsonb;
    item record;
    bounds jsonb;
begin
    if patch is null or jsonb_typeof(patch) <> 'object' then
        raise exception 'patch must be a json object' using errcode = '22023';
    end if;
    -- The keys a tenant may override: the global row's, and the active model's calibrated ones
    -- with their ranges.
    select s.config -> _check_config_patch.section
        || coalesce(hipocampo_private._calibration() -> _check_config_patch.section, '{}'::jsonb)
        || hipocampo_private._calibrated_bounds(_check_config_patch.section)
        into global_section
    from hipocampo_private.settings as s where s.tenant_id is null;
    if global_section is null or jsonb_typeof(global_section) <> 'object' then
        raise exception 'unknown section: %', section using errcode = '22023';
    end if;
    for item in select e.key, e.value from jsonb_each(patch) as e loop
        perform hipocampo_private._refuse_config_secret(section, item.key, item.value);
        if not global_section ? item.key or item.key like '%\_range' or item.key like '%\_max\_items'
            or item.key like '%\_max\_length' or item.key like '%\_regex' or item.key like '%\_values' or item.key like '%\_keys'
            or item.key in ('tenant_locked', 'operator_only') then
            raise exception 'unknown key %.%', section, item.key using errcode = '22023';
        end if;
        if coalesce(global_section -> 'tenant_locked', '[]'::jsonb) ? item.key then
            raise exception '%.% is fixed and cannot be changed per tenant', section, item.key
                using errcode = '22023';
        end if;
        if (item.key like '%\_secret' or coalesce(global_section -> 'operator_only', '[]'::jsonb) ? item.key)
            and (select c.kind from hipocampo_private._caller() as c) <> 'service' then
            if item.key like '%\_secret' then
                raise exception '%.% names a secret of the server: only the operator (service_role) sets it',
                    section, item.key using errcode = '42501';
            end if;
            raise exception '%.% is the operator''s to set (service_role): it is in %.operator_only',
                section, item.key, section using errcode = '42501';
        end if;
        continue when jsonb_typeof(item.value) = 'null';
        if jsonb_typeof(item.value) <> jsonb_typeof(global_section -> item.key) then
            raise exception '%.% must be a %', section, item.key, jsonb_typeof(global_section -> item.key)
                using errcode = '22023';
        end if;
        if section = 'chunking' and jsonb_typeof(item.value) = 'object' and exists (
            select 1 from jsonb_object_keys(global_section -> item.key) as k (name) where not item.value ? k.name
        ) then
            raise exception 'chunking.% must give every key of the rule: % (got %)', item.key,
                (
                    select string_agg(k.name, ', ' order by k.name)
                    from jsonb_object_keys(global_section -> item.key) as k (name)
                ),
                item.value using errcode = '22023';
        end if;
        if jsonb_typeof(item.value) = 'array' and (global_section ->> (item.key || '_max_items'))::integer
            < jsonb_array_length(item.value) then
            raise exception '%.% must have at most % items', section, item.key,
                global_section ->> (item.key || '_max_items') using errcode = '22023';
        end if;
        perform hipocampo_private._check_config_text(section, item.key, item.value, global_section);
        bounds := global_section -> (item.key || '_range');
        -- A range bounds a number, or each element of an array of numbers, or each value of an
        -- object of numbers (retrieval.default_trust).
        if bounds is not null and exists (
            select 1
            from jsonb_array_elements(
                case jsonb_typeof(item.value)
                    when 'array' then item.value
                    when 'object' then (select coalesce(jsonb_agg(v.value), '[]'::jsonb) from jsonb_each(item.value) as v)
                    else jsonb_build_array(item.value)
                end
            ) as e
            where jsonb_typeof(e) <> 'number'
               or (e #>> '{}')::numeric < (bounds ->> 0)::numeric
               or (e #>> '{}')::numeric > (bounds ->> 1)::numeric
        ) then
            raise exception '%.% must lie in [%, %] (got %)', section, item.key, bounds ->> 0, bounds ->> 1,
                item.value using errcode = '22003';
        end if;
    end loop;
end;
$$;

/*
_changed_keys(before jsonb, after jsonb) -> jsonb

Purpose: what a direct write changed in a config object, as the patch an RPC would have been
  given: the keys whose value differs between before and after, a removed key as null (issue 44
  §5: the write-time checks of knowledge_bases and agent_bindings validate exactly this patch, so
  a key the operator set stays valid when a tenant admin changes another).
Parameters: before, after - json objects or null (null reads as {}).
Returns: {key: new value or null}; {} when nothing changed.
Errors: 22023 "a config section must be a json object (got …)".
Example: select hipocampo_private._changed_keys('{"top_k": 4}', '{"top_k": 6, "rerank": "none"}');
  -- {"top_k": 6, "rerank": "none"}
*/
create or replace function hipocampo_private._changed_keys(before jsonb, after jsonb)
returns jsonb
language plpgsql
immutable
security invoker
set search_path = ''
as $$
begin
    if coalesce(jsonb_typeof(before), 'object') <> 'object' or coalesce(jsonb_typeof(after), 'object') <> 'object' then
        raise exception 'a config section must be a json object (got %)',
            left(coalesce(after, before)::text, 80) using errcode = '22023';
    end if;
    return (
        select coalesce(jsonb_object_agg(k.key, coalesce(after -> k.key, 'null'::jsonb)), '{}'::jsonb)
        from (
            select jsonb_object_keys(coalesce(after, '{}'::jsonb)) as key
            union
            select jsonb_object_keys(coalesce(before, '{}'::jsonb))
        ) as k
        where (after -> k.key) is distinct from (before -> k.key)
    );
end;
$$;

/*
_check_config_text(section text, key text, value jsonb, global_section jsonb) -> void

Purpose: the bounds of a config value that is text, or a list of texts, a tenant may store
  (issue 44 §4: a tenant admin stored 300 regexes of 5 KB, or one that does not compile, and every
  member's memory write then took 30 s or failed): `<key>_max_length` bounds the text, or each
  text of the list; `<key>_regex` true requires each to compile as a POSIX regular expression.
  config.toml declares both beside the key; `<key>_max_items` (in _check_config_patch) bounds
  the list. `<key>_values` lists the texts allowed: every text of the value (at any depth of a
  list or object, e.g. forbidden_sources.by_source_type's actions) must be one of them;
  `<key>_keys` the names an object may use (at any depth), which bounds its size.
Parameters: section, key - the key patched; value - its new value; global_section - the global
  row's section (where the bounds are declared).
Errors: 22023 "<section>.<key> must be one of a, b, c (got x)"; 22023 "<section>.<key> may name
  only a, b, c (got x)";
  22001 "<section>.<key> must be at most N characters (each, for a list)"; 22023
  "<section>.<key>: <pattern> is not a valid regular expression: …".
Returns: nothing.
Example: perform hipocampo_private._check_config_text('memory', 'sensitive_patterns', '["(a"]', g);
*/
create or replace function hipocampo_private._check_config_text(section text, key text, value jsonb, global_section jsonb)
returns void
language plpgsql
immutable
security invoker
set search_path = ''
as $$
declare
    texts text[] := array(
        select e #>> '{}'
        from jsonb_array_elements(case when jsonb_typeof(value) = 'array' then value else jsonb_build_array(value) end) as e
        where jsonb_typeof(e) = 'string'
    );
    max_length integer := (global_section ->> (key || '_max_length'))::integer;
    pattern text;
    allowed jsonb := global_section -> (key || '_values');
    names jsonb := global_section -> (key || '_keys');
    other text;
begin
    if names is not null then
        select x #>> '{}' into other
        from jsonb_path_query(value, 'strict $.** ? (@.type() == "object").keyvalue().key') as x
        where not names ? (x #>> '{}')
        limit 1;
        if other is not null then
            raise exception '%.% may name only % (got %)', section, key,
                (select string_agg(a, ', ') from jsonb_array_elements_text(names) as a), other
                using errcode = '22023';
        end if;
    end if;
    if allowed is not null then
        select x #>> '{}' into other
        from jsonb_path_query(value, 'strict $.** ? (@.type() == "string")') as x
        where not allowed ? (x #>> '{}')
        limit 1;
        if other is not null then
            raise exception '%.% must be one of % (got %)', section, key,
                (select string_agg(a, ', ') from jsonb_array_elements_text(allowed) as a), other
                using errcode = '22023';
        end if;
    end if;
    if max_length is not null and exists (select 1 from unnest(texts) as t where char_length(t) > max_length) then
        raise exception '%.% must be at most % characters (each, for a list)', section, key, max_length
            using errcode = '22001';
    end if;
    if coalesce((global_section ->> (key || '_regex'))::boolean, false) then
        foreach pattern in array texts loop
            begin
                perform '' ~* pattern;
            exception when invalid_regular_expression then
                raise exception '%.%: % is not a valid regular expression: %', section, key, pattern, sqlerrm
                    using errcode = '22023';
            end;
        end loop;
    end if;
end;
$$;

/*
_require_admin() -> void

Purpose: only an admin of the caller's tenant or service_role passes (fails closed: a caller
  _caller() does not resolve is refused): _require_tenant_admin for the configuration.
Errors: 42501 as _caller; 42501 "only tenant admins can change the tenant's configuration".
Returns: nothing; it raises when the caller is not an admin.
Example: perform hipocampo_private._require_admin();
*/
create or replace function hipocampo_private._require_admin()
returns void
language sql
stable
security invoker
set search_path = ''
as $$
    select hipocampo_private._require_tenant_admin('change the tenant''s configuration')
$$;

/*
_require_tenant_admin(action text) -> void

Purpose: the admin gate of the RPCs that act on a tenant's shared state: only an admin of the
  caller's tenant or service_role passes (fails closed: a caller _caller() does not resolve is
  refused). _require_admin is this gate for the configuration.
Parameters: action - what the caller tried, for the message ('read the tenant''s metrics').
Errors: 42501 as _caller; 42501 "only tenant admins can <action>".
Returns: nothing; it raises when the caller is not an admin.
Example: perform hipocampo_private._require_tenant_admin('read the tenant''s metrics');
*/
create or replace function hipocampo_private._require_tenant_admin(action text)
returns void
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
begin
    if c.kind <> 'service' and c.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can %', action using errcode = '42501';
    end if;
end;
$$;

/*
set_knowledge_base_config(kb_id uuid, section text, patch jsonb) -> jsonb

Purpose: per-knowledge-base overrides (e.g. rag.top_k, rag.min_confidence, retrieval.*), merged
  into knowledge_bases.overrides; a null value removes an override. Validated like the tenant's.
Parameters: kb_id of the caller's tenant; section e.g. 'rag'; patch a json object.
Returns: the knowledge base's overrides of that section after the change.
Errors: 42501 as _caller (before any other work); 42501 not an admin; P0002 "unknown knowledge base"; 22023 / 22003 as _check_config_patch.
Example: select hipocampo.set_knowledge_base_config(kb, 'rag', '{"min_confidence": 0.7}');
*/
create or replace function hipocampo.set_knowledge_base_config(kb_id uuid, section text, patch jsonb)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(set_knowledge_base_config.kb_id);
    current jsonb;
begin
    perform hipocampo_private._require_admin();
    perform hipocampo_private._check_config_patch(set_knowledge_base_config.section, patch);
    current := jsonb_strip_nulls(coalesce(k.overrides -> section, '{}'::jsonb) || patch);
    update hipocampo_private.knowledge_bases as b
    set overrides = jsonb_set(b.overrides, array[set_knowledge_base_config.section], current), updated_at = now()
    where b.id = k.id;
    return current;
end;
$$;

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
set jit = off
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

comment on function hipocampo.set_knowledge_base_tuning(uuid, text, text, jsonb) is
'Tenant admins store a knowledge base''s model-dependent values for one embedding model (in force while it is searched).';

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
set jit = off
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

comment on function hipocampo.set_tenant_tuning(text, text, jsonb, uuid) is
'Tenant admins store the tenant''s model-dependent values for one embedding model (in force while it is searched).';

-- Agent bindings: an assistant ("agent") of a tenant, the knowledge bases it answers from and its
-- overrides of the rag section.
create table hipocampo_private.agent_bindings (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    name text not null,
    kb_ids uuid[] not null default '{}',
    rag_overrides jsonb not null default '{}'::jsonb,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint agent_bindings_name_format check (name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    constraint agent_bindings_overrides_is_object check (jsonb_typeof(rag_overrides) = 'object'),
    constraint agent_bindings_tenant_name_key unique (tenant_id, name)
);

alter table hipocampo_private.agent_bindings enable row level security;

create policy "members can read agent bindings of their tenant"
on hipocampo_private.agent_bindings
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can create agent bindings in their tenant"
on hipocampo_private.agent_bindings
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "admins can update agent bindings of their tenant"
on hipocampo_private.agent_bindings
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
)
with check (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can delete agent bindings of their tenant"
on hipocampo_private.agent_bindings
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

/*
_check_agent_binding_write() -> trigger

Purpose: the rules of set_agent_binding wherever a row of agent_bindings is written (issue 44 §5:
  a tenant admin's direct insert bound another tenant's knowledge base and stored rag overrides
  no RPC accepts): for a caller other than the operator writing a row of their own tenant (another
  tenant's row is refused by RLS, 42501), every kb_ids entry is a knowledge base of
  the row's tenant, and the rag overrides the write changes pass _check_config_patch (operator-only
  keys, secret names, types, ranges).
Returns: the new row.
Errors: P0002 "unknown knowledge base: <id>"; 22023 / 22003 / 42501 as _check_config_patch.
*/
create or replace function hipocampo_private._check_agent_binding_write()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
    foreign_kb uuid;
begin
    -- (a row of another tenant is RLS's to refuse, 42501, which runs after this trigger)
    if c.kind = 'service' or new.tenant_id is distinct from c.tenant_id then
        return new;
    end if;
    select k into foreign_kb from unnest(new.kb_ids) as k
    where not exists (select 1 from hipocampo_private.knowledge_bases as b where b.id = k and b.tenant_id = new.tenant_id)
    limit 1;
    if foreign_kb is not null then
        raise exception 'unknown knowledge base: %', foreign_kb using errcode = 'P0002';
    end if;
    perform hipocampo_private._check_config_patch('rag', hipocampo_private._changed_keys(
        case when tg_op = 'UPDATE' then old.rag_overrides end, new.rag_overrides
    ));
    return new;
end;
$$;

create trigger agent_bindings_check_write
before insert or update of kb_ids, rag_overrides on hipocampo_private.agent_bindings
for each row execute function hipocampo_private._check_agent_binding_write();

/*
set_agent_binding(name text, kb_ids uuid[], rag_overrides jsonb default '{}', tenant_id uuid default null)
  -> uuid

Purpose: create or replace an agent binding: its knowledge bases and its overrides of the rag
  section (validated like the tenant's; replaced as a whole).
Parameters: name ^[a-z0-9][a-z0-9_.-]{0,62}$; kb_ids of the tenant (at least one);
  tenant_id only for service_role.
Returns: the binding id.
Errors: 42501 not an admin; 22023 "an agent binding's name must match
  ^[a-z0-9][a-z0-9_.-]{0,62}$ (got …)" / "an agent binding needs at least one knowledge base" /
  22023 / 22003 as _check_config_patch; P0002 "unknown knowledge base: …".
Example: select hipocampo.set_agent_binding('portaria', array[kb], '{"top_k": 3}');
*/
create or replace function hipocampo.set_agent_binding(
    name text, kb_ids uuid[], rag_overrides jsonb default '{}'::jsonb, tenant_id uuid default null
)
returns uuid
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
#variable_conflict use_column
declare
    t uuid := hipocampo_private._resolve_tenant(set_agent_binding.tenant_id);
    missing uuid;
    result uuid;
begin
    perform hipocampo_private._require_admin();
    if set_agent_binding.name is null or set_agent_binding.name !~ '^[a-z0-9][a-z0-9_.-]{0,62}$' then
        raise exception 'an agent binding''s name must match ^[a-z0-9][a-z0-9_.-]{0,62}$ (got %)',
            coalesce(left(set_agent_binding.name, 80), 'null') using errcode = '22023';
    end if;
    if coalesce(cardinality(kb_ids), 0) = 0 then
        raise exception 'an agent binding needs at least one knowledge base' using errcode = '22023';
    end if;
    perform hipocampo_private._check_config_patch('rag', coalesce(rag_overrides, '{}'::jsonb));
    select k into missing from unnest(set_agent_binding.kb_ids) as k
    where not exists (
        select 1 from hipocampo_private.knowledge_bases as b where b.id = k and b.tenant_id = t
    )
    limit 1;
    if missing is not null then
        raise exception 'unknown knowledge base: %', missing using errcode = 'P0002';
    end if;
    insert into hipocampo_private.agent_bindings as a (tenant_id, name, kb_ids, rag_overrides)
    values (t, set_agent_binding.name, set_agent_binding.kb_ids,
            jsonb_strip_nulls(coalesce(set_agent_binding.rag_overrides, '{}'::jsonb)))
    on conflict on constraint agent_bindings_tenant_name_key do update
    set kb_ids = excluded.kb_ids, rag_overrides = excluded.rag_overrides, updated_at = now()
    returning a.id into result;
    return result;
end;
$$;

/*
list_agent_bindings(tenant_id uuid default null) -> table (id uuid, name text, kb_ids uuid[],
  kb_names text[], rag_overrides jsonb, updated_at timestamptz)

Purpose: the tenant's agent bindings (which assistant answers from which knowledge bases, with
  which overrides of the rag section), with their knowledge bases' names in kb_ids' order (null
  for one deleted since). Members read them (RLS), as rag_config does.
Parameters: tenant_id - service_role only.
Returns: one row per binding, by name.
Errors: 42501 as _resolve_tenant.
Example: select name, kb_names from hipocampo.list_agent_bindings();
*/
create or replace function hipocampo.list_agent_bindings(tenant_id uuid default null)
returns table (
    id uuid, name text, kb_ids uuid[], kb_names text[], rag_overrides jsonb, updated_at timestamptz
)
language sql
stable
security invoker
set search_path = ''
set jit = off
as $$
    select a.id, a.name, a.kb_ids,
        array(
            select k.name from unnest(a.kb_ids) with ordinality as x (kb_id, ord)
            left join hipocampo_private.knowledge_bases as k on k.id = x.kb_id and k.tenant_id = a.tenant_id
            order by x.ord
        ),
        a.rag_overrides, a.updated_at
    from hipocampo_private.agent_bindings as a
    where a.tenant_id = hipocampo_private._resolve_tenant(list_agent_bindings.tenant_id)
    order by a.name
$$;

/*
delete_agent_binding(name text, tenant_id uuid default null) -> boolean

Purpose: delete an agent binding of the tenant (a tenant admin's, as set_agent_binding).
Parameters: name - the binding's; tenant_id - service_role only.
Returns: true when one was deleted, false when the tenant has none of that name.
Errors: 42501 as _resolve_tenant; 42501 not an admin (_require_admin).
Example: select hipocampo.delete_agent_binding('portaria');
*/
create or replace function hipocampo.delete_agent_binding(name text, tenant_id uuid default null)
returns boolean
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(delete_agent_binding.tenant_id);
begin
    perform hipocampo_private._require_admin();
    delete from hipocampo_private.agent_bindings as a where a.tenant_id = t and a.name = delete_agent_binding.name;
    return found;
end;
$$;

comment on function hipocampo.list_agent_bindings(uuid) is
'The tenant''s agent bindings: knowledge bases (ids and names) and rag overrides.';

comment on function hipocampo.delete_agent_binding(text, uuid) is 'Delete one of the tenant''s agent bindings (admins).';

/*
rag_config(kb_id uuid default null, agent text default null, tenant_id uuid default null) -> jsonb

Purpose: the effective rag section: global row <- the active model's calibration (the sentence
  similarity keys) <- tenant row <- knowledge base overrides <- agent binding overrides, plus
  "kb_ids" (the agent's knowledge bases, or [kb_id]), "agent" and "tenant_id" (the tenant the
  caller resolved to: what an answer path names when it writes the answer cache as service_role);
  checked to hold every key of config.toml's [rag] that a reader uses.
Parameters: kb_id - optional knowledge base; agent - optional binding name; tenant_id only for
  service_role.
Returns: jsonb object (keys of config.toml [rag]).
Errors: 42501 as _resolve_tenant; P0002 "unknown agent binding: …"; 55000 "rag config is
  incomplete: seed it from config.toml (hipocampo db migrate)".
Example: select hipocampo.rag_config(null, 'portaria') ->> 'top_k';
*/
create or replace function hipocampo.rag_config(kb_id uuid default null, agent text default null, tenant_id uuid default null)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(rag_config.tenant_id);
    b hipocampo_private.agent_bindings;
    kbs uuid[];
    cfg jsonb;
begin
    if agent is not null then
        select * into b from hipocampo_private.agent_bindings as x where x.tenant_id = t and x.name = agent;
        if b.id is null then
            raise exception 'unknown agent binding: %', agent using errcode = 'P0002';
        end if;
    end if;
    kbs := coalesce(b.kb_ids, case when kb_id is null then null else array[kb_id] end);
    -- Knowledge-base overrides apply when the call names one knowledge base.
    cfg := hipocampo_private._effective_section(t, case when cardinality(kbs) = 1 then kbs[1] end, 'rag');
    return hipocampo_private._require_config(
        cfg || coalesce(b.rag_overrides, '{}'::jsonb), 'rag', array[
            'enabled', 'provider', 'chat_model', 'azure_deployment', 'azure_api_version', 'api_key_secret',
            'endpoint_secret', 'base_url_secret', 'embedding_model', 'embedding_deployment',
            'embedding_api_version', 'embedding_dimensions', 'embedding_normalize', 'top_k', 'min_score',
            'evidence_token_budget', 'min_confidence', 'question_stopwords', 'cross_check_min_documents',
            'authoritative_trust', 'authoritative_source_types', 'conflict_trust_margin',
            'conflict_subject_overlap', 'sentence_weight', 'sentence_cosine_low', 'sentence_cosine_high',
            'cache_ttl_seconds', 'cache_max_entry_bytes', 'language_min_words', 'language_min_word_order',
            'rate_limit_per_minute', 'question_min_chars', 'question_max_chars', 'context_prompt',
            'refusal_message', 'answer_format_prompt'
        ]
    ) || jsonb_build_object('kb_ids', to_jsonb(kbs), 'agent', agent, 'tenant_id', t);
end;
$$;

comment on table hipocampo_private.agent_bindings is
'Agent bindings: an assistant of a tenant, its knowledge bases and its overrides of the rag config.';

comment on function hipocampo.set_knowledge_base_config(uuid, text, jsonb) is
'Tenant admins override config keys of one section for one knowledge base.';

comment on function hipocampo.set_agent_binding(text, uuid[], jsonb, uuid) is
'Tenant admins bind an agent to knowledge bases with its own rag overrides.';

/*
_require_config(section_config jsonb, section text, keys text[]) -> jsonb

Purpose: a config section (e.g. hipocampo.effective_config(t) -> 'memory') checked to hold every
  key named, returned unchanged: the functions that read it have no values of their own.
Errors: 55000 "<section> config is incomplete: seed it from config.toml (hipocampo db migrate)".
Returns: section_config unchanged.
Example: select hipocampo_private._require_config('{"a": 1}', 'memory', array['a']);
*/
create or replace function hipocampo_private._require_config(section_config jsonb, section text, keys text[])
returns jsonb
language plpgsql
immutable
security invoker
set search_path = ''
as $$
begin
    if section_config is null or jsonb_typeof(section_config) <> 'object' or exists (
        select 1 from unnest(keys) as k
        where section_config -> k is null or jsonb_typeof(section_config -> k) = 'null'
    ) then
        raise exception '% config is incomplete: seed it from config.toml (hipocampo db migrate)', section
            using errcode = '55000';
    end if;
    return section_config;
end;
$$;

/*
_memory_config(section_config jsonb) -> jsonb

Purpose: _require_config with the keys the memory functions read (config.toml [memory], with
  value_max_bytes and value_max_depth).
Errors: 55000 as _require_config.
Returns: the memory section unchanged.
*/
create or replace function hipocampo_private._memory_config(section_config jsonb)
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
    select hipocampo_private._require_config(section_config, 'memory', array[
        'min_chars', 'max_tokens', 'noise', 'forbidden_kinds', 'sensitive_patterns', 'min_confidence', 'min_confidence_inferred',
        'max_active_per_user', 'duplicate_cosine', 'staging_below_intensity', 'staging_ttl_days',
        'context_threshold', 'answer_threshold', 'pinned_bonus', 'mmr_lambda', 'match_count',
        'decay_days', 'decay_step', 'deactivate_below', 'value_max_bytes', 'value_max_depth'
    ])
$$;

/*
_sessions_config(section_config jsonb) -> jsonb

Purpose: _require_config with the keys the session functions read (config.toml [sessions]).
Errors: 55000 "sessions config is incomplete: …" as _require_config.
Returns: the sessions section unchanged.
*/
create or replace function hipocampo_private._sessions_config(section_config jsonb)
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
    select hipocampo_private._require_config(section_config, 'sessions', array[
        'inactivity_ttl_minutes', 'absolute_max_minutes', 'pending_confirmation_minutes', 'max_concurrent',
        'last_messages', 'summary_max_chars', 'tool_max_chars', 'action_max_chars', 'payload_max_bytes',
        'max_pending', 'follow_up_max_words', 'follow_up_pattern', 'follow_up_topic_weight', 'reuse_answers',
        'ask_turns', 'summary_every_messages'
    ])
$$;

comment on function hipocampo.rag_config(uuid, text, uuid) is
'The effective rag config: global <- tenant <- knowledge base <- agent binding; 55000 when a key is missing.';

/*
effective_config(tenant_id uuid default null, kb_id uuid default null) -> jsonb

Purpose: the configuration in force: the global row, overridden per section by the active
  embedding model's calibration (model_calibrations: its cosine thresholds and dense weights),
  then by the tenant's tuning for the active model (set_tenant_tuning), then by the tenant's
  row, then by the knowledge base's tuning for the active model (set_knowledge_base_tuning),
  then by the knowledge base's overrides.
Parameters: tenant_id - null = the caller's tenant; kb_id - optional knowledge base.
Returns: a jsonb object with sections retrieval, chunking, embedding, memory, …; each key's
  bounds beside it as the global row declares them (<key>_range, …), a calibrated key's range
  (_calibrated_range) included. The merge (_merged_config) runs once per transaction for a
  tenant, knowledge base and caller: later calls in the transaction read it from the
  transaction-local setting hipocampo.config_cache (at most four entries: a fifth starts it
  again), which any write to settings, model_calibrations or embedding_models, and to a
  knowledge base's overrides or tuning, empties (_forget_config_cache); the caller is resolved
  on every call.
Errors: 42501 as _resolve_tenant.
Example: select hipocampo.effective_config() -> 'retrieval' ->> 'min_similarity';
*/
create or replace function hipocampo.effective_config(tenant_id uuid default null, kb_id uuid default null)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
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
$$;

comment on function hipocampo.effective_config(uuid, uuid) is
'Config in force for a tenant (and KB): global row <- model calibration <- tenant tuning for the model <- tenant row <- KB tuning for the model <- KB overrides.';

/*
_merged_config(tenant_id uuid, kb_id uuid) -> jsonb

Purpose: effective_config's merge for a tenant already resolved: the global row, overridden per
  section by the active model's calibration, the tenant's tuning for that model, the tenant's
  row, the knowledge base's tuning and its overrides (effective_config's precedence), with each
  calibrated key's range (_calibrated_bounds) beside it. effective_config caches its result for
  the transaction. Granted to authenticated because effective_config runs as the caller, so it
  resolves the tenant itself (_resolve_tenant): a tenant argument is honoured for service_role
  only, called directly or not.
Parameters: tenant_id - as effective_config's (null = the caller's tenant); kb_id - a knowledge
  base of it, or null.
Returns: the config, as effective_config.
Errors: 42501 as _resolve_tenant.
Example: select hipocampo_private._merged_config(t, null) -> 'retrieval';
*/
create or replace function hipocampo_private._merged_config(tenant_id uuid, kb_id uuid)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(_merged_config.tenant_id);
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
$$;

/*
_config_section(tenant_id uuid, kb_id uuid, section text, model text) -> jsonb

Purpose: one section of effective_config for a tenant already resolved by the caller and a given
  embedding model: the global row's keys, overridden by the model's calibration, by the tenant's
  tuning for that model and then its row, by the knowledge base's tuning for that model and then
  its overrides (when kb_id is given and belongs to the tenant) - effective_config's precedence,
  without resolving the caller again nor merging the other sections, and with the calibration of the model searched rather than the active one (a
  knowledge base searched by name with another model takes that model's thresholds). Security
  invoker: RLS decides the rows it reads (another tenant's id reads the global row and the
  calibration only). For the functions that have resolved the tenant (hybrid_search,
  _effective_section).
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

/*
_effective_section(tenant_id uuid, kb_id uuid, section text) -> jsonb

Purpose: one section of effective_config(tenant_id, kb_id), merged alone: _config_section with the
  active embedding model, and the calibrated keys' bounds beside them (<key>_range, as
  effective_config shows them). For a reader of one section (rag_config, answer_evidence's
  dedupe threshold, _near_duplicates): effective_config merges every section (~1 ms a transaction,
  an ask is several), this one ~0.1 ms.
Parameters: tenant_id - the tenant the caller resolved (_resolve_tenant); kb_id - a knowledge base
  of it, or null; section - e.g. 'rag'.
Returns: the section as a jsonb object (its bounds only when no row has it).
Errors: none.
Example: select hipocampo_private._effective_section(t, kb, 'rag') ->> 'top_k';
*/
create or replace function hipocampo_private._effective_section(tenant_id uuid, kb_id uuid, section text)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    select hipocampo_private._config_section(
        _effective_section.tenant_id, _effective_section.kb_id, _effective_section.section,
        (select e.name from hipocampo_private.embedding_models as e where e.active)
    ) || hipocampo_private._calibrated_bounds(_effective_section.section)
$$;
