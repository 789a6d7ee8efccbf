-- Texts a tenant may configure are bounded (issue 44 §4): a tenant admin stored 300 regexes of
-- 5 KB as memory.sensitive_patterns (each member's memory write then took 28-42 s of the shared
-- database's CPU), one that does not compile (every memory write of the tenant then failed with
-- 2201B) and a 10 MB rag.context_prompt. config.toml now declares `<key>_max_length` beside every
-- text or list of texts a tenant may change (and `<key>_max_items` beside every list), and
-- `<key>_regex` where each must compile; _check_config_patch enforces them through
-- _check_config_text (22001 / 22023). Values stored before stay. Functions restated from
-- supabase/schemas/02_config.sql (their docblocks live there); re-runnable.

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
begin
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
            or item.key like '%\_max\_length' or item.key like '%\_regex'
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

revoke execute on function hipocampo_private._check_config_text(text, text, jsonb, jsonb) from public;
grant execute on function hipocampo_private._check_config_text(section text, key text, value jsonb, global_section jsonb)
to authenticated, service_role;
