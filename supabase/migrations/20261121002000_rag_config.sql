-- Per-tenant RAG configuration: the `rag` section of the config rows (seeded from config.toml),
-- overridden per tenant (set_tenant_config), per knowledge base (set_knowledge_base_config) and
-- per agent binding (set_agent_binding). Secrets are never stored: only the name of the secret.

/*
_check_config_patch(section text, patch jsonb) -> void

Purpose: validate a patch of one config section against the global row: known keys only, same
  json type, within `<key>_range`, never `tenant_locked` keys; secrets only by name (keys ending
  in `_secret` hold a name such as OPENAI_API_KEY; no key may be called api_key/password/secret and
  no value may look like a key or a JWT).
Errors: 22023 "patch must be a json object" / "unknown section …" / "unknown key …" / "… is fixed
  and cannot be changed per tenant" / "… must be a …" / "secrets are never stored: …";
  22003 "… must lie in [lo, hi]".
Example: select hipocampo_private._check_config_patch('rag', '{"top_k": 6}');
*/
create function hipocampo_private._check_config_patch(section text, patch jsonb)
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
    select s.config -> _check_config_patch.section into global_section
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
end;
$$;

/*
_require_admin() -> void

Purpose: callers acting through JWT claims must be admins of their tenant (service_role passes).
Errors: 42501 "only tenant admins can change the tenant's configuration".
*/
create function hipocampo_private._require_admin()
returns void
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    if hipocampo_private.current_tenant_id() is not null
        and hipocampo_private.current_tenant_role() is distinct from 'admin' then
        raise exception 'only tenant admins can change the tenant''s configuration' using errcode = '42501';
    end if;
end;
$$;

/*
set_tenant_config(section text, patch jsonb, tenant_id uuid default null) -> jsonb

Purpose: as in migration 001300, now validated by _check_config_patch (which adds the secrets
  rule); merges `patch` into the tenant's row for one section; a null value removes an override.
Errors: 42501 not an admin; 22023 / 22003 as _check_config_patch.
Example: select hipocampo.set_tenant_config('rag', '{"top_k": 6}');
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

/*
set_knowledge_base_config(kb_id uuid, section text, patch jsonb) -> jsonb

Purpose: per-knowledge-base overrides (e.g. rag.top_k, rag.min_confidence, retrieval.*), merged
  into knowledge_bases.overrides; a null value removes an override. Validated like the tenant's.
Parameters: kb_id of the caller's tenant; section e.g. 'rag'; patch a json object.
Returns: the knowledge base's overrides of that section after the change.
Errors: 42501 not an admin; P0002 "unknown knowledge base"; 22023 / 22003 as _check_config_patch.
Example: select hipocampo.set_knowledge_base_config(kb, 'rag', '{"min_confidence": 0.7}');
*/
create function hipocampo.set_knowledge_base_config(kb_id uuid, section text, patch jsonb)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
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

grant select, insert, update, delete on hipocampo_private.agent_bindings to authenticated;
grant all on hipocampo_private.agent_bindings to service_role;

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
set_agent_binding(name text, kb_ids uuid[], rag_overrides jsonb default '{}', tenant_id uuid default null)
  -> uuid

Purpose: create or replace an agent binding: its knowledge bases and its overrides of the rag
  section (validated like the tenant's; replaced as a whole).
Parameters: name ^[a-z0-9][a-z0-9_.-]{0,62}$; kb_ids of the tenant (at least one);
  tenant_id only for service_role.
Returns: the binding id.
Errors: 42501 not an admin; 22023 "an agent binding needs at least one knowledge base" /
  as _check_config_patch; P0002 "unknown knowledge base: …".
Example: select hipocampo.set_agent_binding('portaria', array[kb], '{"top_k": 3}');
*/
create function hipocampo.set_agent_binding(
    name text, kb_ids uuid[], rag_overrides jsonb default '{}'::jsonb, tenant_id uuid default null
)
returns uuid
language plpgsql
security invoker
set search_path = ''
as $$
#variable_conflict use_column
declare
    t uuid := hipocampo_private._resolve_tenant(set_agent_binding.tenant_id);
    missing uuid;
    result uuid;
begin
    perform hipocampo_private._require_admin();
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
rag_config(kb_id uuid default null, agent text default null, tenant_id uuid default null) -> jsonb

Purpose: the effective rag section: global row <- tenant row <- knowledge base overrides <- agent
  binding overrides, plus "kb_ids" (the agent's knowledge bases, or [kb_id]) and "agent".
Parameters: kb_id - optional knowledge base; agent - optional binding name; tenant_id only for
  service_role.
Returns: jsonb object (keys of config.toml [rag]).
Errors: 42501 as _resolve_tenant; P0002 "unknown agent binding: …".
Example: select hipocampo.rag_config(null, 'portaria') ->> 'top_k';
*/
create function hipocampo.rag_config(kb_id uuid default null, agent text default null, tenant_id uuid default null)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
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
    cfg := coalesce(hipocampo.effective_config(
        t, case when cardinality(kbs) = 1 then kbs[1] end
    ) -> 'rag', '{}'::jsonb);
    return cfg || coalesce(b.rag_overrides, '{}'::jsonb)
        || jsonb_build_object('kb_ids', to_jsonb(kbs), 'agent', agent);
end;
$$;

grant execute on function hipocampo_private._check_config_patch(text, jsonb) to authenticated, service_role;
grant execute on function hipocampo_private._require_admin() to authenticated, service_role;
grant execute on function hipocampo.set_knowledge_base_config(uuid, text, jsonb) to authenticated, service_role;
grant execute on function hipocampo.set_agent_binding(text, uuid[], jsonb, uuid) to authenticated, service_role;
grant execute on function hipocampo.rag_config(uuid, text, uuid) to authenticated, service_role;

comment on table hipocampo_private.agent_bindings is
'Agent bindings: an assistant of a tenant, its knowledge bases and its overrides of the rag config.';
comment on function hipocampo.set_knowledge_base_config(uuid, text, jsonb) is
'Tenant admins override config keys of one section for one knowledge base.';
comment on function hipocampo.set_agent_binding(text, uuid[], jsonb, uuid) is
'Tenant admins bind an agent to knowledge bases with its own rag overrides.';
comment on function hipocampo.rag_config(uuid, text, uuid) is
'The effective rag config: global <- tenant <- knowledge base <- agent binding.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
