-- A knowledge base's or tenant's chunking rule must give every key of the rule it replaces
-- (min_tokens, max_tokens, overlap, split): {"max_tokens": 2000} alone was accepted and then
-- failed ingestion in the client (KeyError 'min_tokens'); it is now refused with 22023 naming the
-- keys. Restated from supabase/schemas/02_config.sql; re-runnable.
set local check_function_bodies = off;

/*
_check_config_patch(section text, patch jsonb) -> void

Purpose: validate a patch of one config section against the global row (with the active
  embedding model's calibrated keys): known keys only, same json type, within `<key>_range` (a `<key>_range` also bounds each element of an array of
  numbers, and `<key>_max_items` caps an array's length), never `tenant_locked` keys; secrets
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
    -- The keys a tenant may override: the global row's, and the active model's calibrated ones.
    select s.config -> _check_config_patch.section
        || coalesce(hipocampo_private._calibration() -> _check_config_patch.section, '{}'::jsonb)
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
        -- A range bounds a number, or each element of an array of numbers.
        if bounds is not null and exists (
            select 1
            from jsonb_array_elements(
                case when jsonb_typeof(item.value) = 'array' then item.value else jsonb_build_array(item.value) end
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
