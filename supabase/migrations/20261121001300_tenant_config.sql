-- Per-tenant configuration: tenant admins override keys of the global config row (seeded from
-- config.toml) within the bounds that row declares.
--
-- Bounds live beside the defaults, in the same section of config.toml: `<key>_range = [lo, hi]`
-- bounds a numeric key; `tenant_locked = ["<key>", …]` lists keys no tenant may change.

/*
set_tenant_config(section text, patch jsonb, tenant_id uuid default null) -> jsonb

Purpose: merge `patch` into the caller's tenant row of settings, for one section (e.g.
  'sessions', 'retrieval', 'memory'). Only keys of the global row's section may be set, with the
  same json type, within `<key>_range` when declared, and never keys in `tenant_locked`.
  A null value removes the tenant's override of that key (back to the global default).
Parameters: section; patch - a json object; tenant_id only for service_role.
Returns: the tenant's overrides of that section after the change.
Errors: 42501 "only tenant admins can change the tenant's configuration"; 22023 "unknown
  section …" / "unknown key …" / "… is fixed and cannot be changed per tenant" / "… must be a
  number"; 22003 "… must lie in [lo, hi]".
Example: select hipocampo.set_tenant_config('sessions', '{"inactivity_ttl_minutes": 15}');
*/
-- definer because tenant admins change their tenant's settings row, which no client role may write directly.
create function hipocampo.set_tenant_config(section text, patch jsonb, tenant_id uuid default null)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
#variable_conflict use_column
declare
    t uuid := hipocampo_private._resolve_tenant(set_tenant_config.tenant_id);
    global_section jsonb;
    item record;
    bounds jsonb;
    current jsonb;
begin
    if hipocampo_private.current_tenant_id() is not null
        and hipocampo_private.current_tenant_role() is distinct from 'admin' then
        raise exception 'only tenant admins can change the tenant''s configuration' using errcode = '42501';
    end if;
    if patch is null or jsonb_typeof(patch) <> 'object' then
        raise exception 'patch must be a json object' using errcode = '22023';
    end if;
    select s.config -> set_tenant_config.section into global_section
    from hipocampo_private.settings as s where s.tenant_id is null;
    if global_section is null or jsonb_typeof(global_section) <> 'object' then
        raise exception 'unknown section: %', section using errcode = '22023';
    end if;
    for item in select e.key, e.value from jsonb_each(patch) as e loop
        if not global_section ? item.key or item.key like '%\_range' or item.key = 'tenant_locked' then
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
        bounds := global_section -> (item.key || '_range');
        if bounds is not null and ((item.value)::numeric < (bounds ->> 0)::numeric
                                   or (item.value)::numeric > (bounds ->> 1)::numeric) then
            raise exception '%.% must lie in [%, %] (got %)', section, item.key, bounds ->> 0, bounds ->> 1,
                item.value using errcode = '22003';
        end if;
    end loop;

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

grant execute on function hipocampo.set_tenant_config(text, jsonb, uuid) to authenticated, service_role;

comment on function hipocampo.set_tenant_config(text, jsonb, uuid) is
'Tenant admins override config keys of one section, within the bounds the global row declares.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
