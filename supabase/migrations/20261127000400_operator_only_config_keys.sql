-- A tenant admin could name any of the server's secrets in a `*_secret` key of the rag config
-- (rag.api_key_secret, endpoint_secret, base_url_secret; also through a knowledge base's
-- overrides or an agent binding): the edge functions and `hipocampo serve` read the variable of
-- that name and send it as the provider's key or use it as its URL, so one tenant could spend
-- another tenant's key (TENANT_B_OPENAI) or send the service key to the provider. Such a name is
-- now set by the operator (service_role) only: 42501 for anyone else. So are the keys a section
-- lists in `operator_only` (config.toml: rag.provider, chat_model and the embedding provider's
-- wiring): a tenant admin switched the extractive answers to the operator's paid LLM. Values
-- stored before are left as they are (docs/SECURITY.md says how to list them). Restated from
-- supabase/schemas/02_config.sql; re-runnable.

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
