-- Config rows: the one place thresholds live.
--
-- The global row (tenant_id is null) is seeded from the root config.toml by
-- hipocampo_private.seed_default_config() each time migrations are applied; a tenant row
-- overrides keys of it; a knowledge base's `overrides` override both.

create table hipocampo_private.settings (
    id bigint generated always as identity primary key,
    tenant_id uuid,
    config jsonb not null default '{}'::jsonb,
    updated_at timestamptz not null default now(),
    constraint settings_config_is_object check (jsonb_typeof(config) = 'object')
);

create unique index settings_tenant_id_key on hipocampo_private.settings (
    coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid)
);

alter table hipocampo_private.settings enable row level security;

comment on table hipocampo_private.settings is
'Config rows: global defaults (tenant_id null, seeded from config.toml) and per-tenant overrides.';

/*
seed_default_config(defaults jsonb) -> void

Purpose: replace the global config row with the versioned defaults from config.toml.
Parameters: defaults - a jsonb object (sections retrieval, chunking, embedding).
Returns: nothing.
Errors: 22023 "defaults must be a json object" when it is not an object.
Example: select hipocampo_private.seed_default_config('{"retrieval": {"match_count": 5}}');
*/
create function hipocampo_private.seed_default_config(defaults jsonb)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if defaults is null or jsonb_typeof(defaults) <> 'object' then
        raise exception 'defaults must be a json object' using errcode = '22023';
    end if;
    insert into hipocampo_private.settings (tenant_id, config)
    values (null, defaults)
    on conflict (coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid))
    do update set config = excluded.config, updated_at = now();
end;
$$;

grant execute on function hipocampo_private.seed_default_config(jsonb) to service_role;

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
