-- The calibrated keys (cosine thresholds, dense weights) had no range when a tenant or a knowledge
-- base overrode them: _check_config_patch bounds a key by the global row's `<key>_range`, and the
-- global row holds none of these keys, so set_tenant_config('memory', '{"answer_threshold": 50}')
-- or a dense weight of -5 was stored. They now take the ranges a model's calibration has
-- (_check_calibration: a weight in [0, 100], a cosine in [-1, 1]), from one function both use,
-- _calibrated_range (22003 outside). A `<key>_range` now also bounds each value of an object of
-- numbers (config.toml's retrieval.default_trust_range: a tenant's trust table took any value,
-- "high" included, and ingestion then failed on it). Values stored before are left as they are.
-- Restated from supabase/schemas/02_config.sql; re-runnable.

/*
_calibrated_range(key text) -> jsonb

Purpose: the range of a calibrated key's values, by its kind: a weight (a key ending in _weight)
  lies in [0, 100], a threshold (a cosine) in [-1, 1]. _check_calibration bounds a model's
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
    select case when _calibrated_range.key like '%\_weight' then '[0, 100]'::jsonb else '[-1, 1]'::jsonb end
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
_check_config_patch(section text, patch jsonb) -> void

Purpose: validate a patch of one config section against the global row (with the active
  embedding model's calibrated keys, each within _calibrated_range: a weight in [0, 100], a cosine
  in [-1, 1]): known keys only, same json type, within `<key>_range` (a `<key>_range` also bounds
  each element of an array of numbers and each value of an object of numbers, and
  `<key>_max_items` caps an array's length), never
  `tenant_locked` keys; secrets
  only by name (keys ending in `_secret` hold a name such as OPENAI_API_KEY; no key may be called
  api_key/password/secret and no value may look like a key or a JWT). A chunking rule replaces
  the global rule of its source type, so it must give every key of it (min_tokens, max_tokens, …).
Errors: 22023 "patch must be a json object" / "unknown section …" / "unknown key …" / "… is fixed
  and cannot be changed per tenant" / "… must be a …" / "secrets are never stored: …" / "… must
  have at most N items" / "chunking.<type> must give every key of the rule: …"; 22003 "… must lie
  in [lo, hi]" (also for an array element that is not a number or lies outside the range).
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
        || coalesce((
            select jsonb_object_agg(k.key || '_range', hipocampo_private._calibrated_range(k.key))
            from jsonb_array_elements_text(hipocampo_private._calibrated_keys() -> _check_config_patch.section) as k (key)
        ), '{}'::jsonb)
        into global_section
    from hipocampo_private.settings as s where s.tenant_id is null;
    if global_section is null or jsonb_typeof(global_section) <> 'object' then
        raise exception 'unknown section: %', section using errcode = '22023';
    end if;
    for item in select e.key, e.value from jsonb_each(patch) as e loop
        if item.key in ('api_key', 'apikey', 'password', 'secret', 'token')
            or (jsonb_typeof(item.value) = 'string'
                and (item.value #>> '{}') ~ '^(sk-[A-Za-z0-9_-]{8,}|eyJ[A-Za-z0-9_-]{10,}\.)') then
            raise exception 'secrets are never stored: give the name of the secret in a *_secret key (%.%)',
                section, item.key using errcode = '22023';
        end if;
        if item.key like '%\_secret' and jsonb_typeof(item.value) = 'string'
            and (item.value #>> '{}') !~ '^[A-Za-z_][A-Za-z0-9_]{0,127}$' then
            raise exception 'secrets are never stored: %.% must be the name of a secret (letters, digits, _)',
                section, item.key using errcode = '22023';
        end if;
        if not global_section ? item.key or item.key like '%\_range' or item.key like '%\_max\_items'
            or item.key = 'tenant_locked' then
            raise exception 'unknown key %.%', section, item.key using errcode = '22023';
        end if;
        if coalesce(global_section -> 'tenant_locked', '[]'::jsonb) ? item.key then
            raise exception '%.% is fixed and cannot be changed per tenant', section, item.key
                using errcode = '22023';
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

revoke execute on function hipocampo_private._calibrated_range(text) from public;
grant execute on function hipocampo_private._calibrated_range(key text) to authenticated, service_role;
