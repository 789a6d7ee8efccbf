-- Baseline: the whole schema as of 2026-11-24, generated from supabase/schemas/ (issue 17).
-- It replaces the 48 migrations 20261121000100_schemas_and_extensions … 20261121004700_python_surface
-- (the product had no deployment to preserve; their history is in git). A database migrated with
-- them is recorded as having this baseline by `hipocampo db migrate` (hipocampo.db.SQUASHED_THROUGH).
-- From here on a change is an edit of supabase/schemas/ plus a new migration, and landed
-- migrations stay frozen; tests/sql/test_declarative_schema.py keeps the two equal.
-- Function bodies may name objects defined further down; they are checked when called.
set local check_function_bodies = off;

-- ==================== supabase/schemas/00_extensions_and_schemas.sql ====================

-- hipocampo: schemas, extensions and default privileges.
--
-- hipocampo          exposed schema (add it to PostgREST's api.schemas): RPCs and views only.
-- hipocampo_private  tables and internals; never exposed over HTTP.
--
-- Extensions live in the `extensions` schema, as on Supabase.
create schema if not exists extensions;

create extension if not exists vector with schema extensions;

create extension if not exists pg_trgm with schema extensions;

create extension if not exists unaccent with schema extensions;

create schema if not exists hipocampo;

create schema if not exists hipocampo_private;

comment on schema hipocampo is
'hipocampo RPC surface (exposed through PostgREST). Tables live in hipocampo_private.';

comment on schema hipocampo_private is
'hipocampo tables and internal functions. Not exposed over HTTP; protected by RLS.';

alter default privileges in schema hipocampo revoke all on tables from anon, authenticated;

alter default privileges in schema hipocampo_private revoke all on tables from anon, authenticated;

-- Full-text configurations: the language stemmer plus unaccent, so "matrícula" matches
-- "matricula". A knowledge base picks one of these (default portuguese).
create text search configuration hipocampo_private.portuguese_unaccent (
    copy = pg_catalog.portuguese
);

alter text search configuration hipocampo_private.portuguese_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.portuguese_stem;

create text search configuration hipocampo_private.english_unaccent (
    copy = pg_catalog.english
);

alter text search configuration hipocampo_private.english_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.english_stem;

create text search configuration hipocampo_private.simple_unaccent (
    copy = pg_catalog.simple
);

alter text search configuration hipocampo_private.simple_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.simple;

-- ==================== supabase/schemas/01_tenancy_and_callers.sql ====================

-- Tenants, memberships and the caller's tenant.
--
-- The caller's tenant comes from the JWT claims (app_metadata.tenant_id, or a top-level
-- tenant_id claim) and counts only when auth.uid() is a member of it. service_role bypasses
-- RLS and sees every tenant; anon is granted nothing.
create table hipocampo_private.tenants (
    id uuid primary key default gen_random_uuid(),
    name text not null,
    slug text not null unique,
    created_at timestamptz not null default now(),
    constraint tenants_name_length check (char_length(name) between 1 and 200),
    constraint tenants_slug_format check (slug ~ '^[a-z0-9][a-z0-9_-]{0,62}$')
);

alter table hipocampo_private.tenants enable row level security;

create table hipocampo_private.memberships (
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    user_id uuid not null,
    role text not null default 'member',
    created_at timestamptz not null default now(),
    primary key (tenant_id, user_id),
    constraint memberships_role_check check (role in ('admin', 'member'))
);

alter table hipocampo_private.memberships enable row level security;

create index memberships_user_id_idx on hipocampo_private.memberships (user_id);

comment on table hipocampo_private.tenants is 'Tenants (customer organisations).';

comment on table hipocampo_private.memberships is 'Which auth user belongs to which tenant, as admin or member.';

/*
current_tenant_id() -> uuid

Purpose: the tenant of the current request: the tenant named in the JWT claims
  (app_metadata.tenant_id, else tenant_id), provided auth.uid() is a member of it.
Returns: the tenant id, or null when there is no claim, it is not a uuid, or the caller is not a member.
Errors: none.
Example: select hipocampo_private.current_tenant_id();
*/
-- definer because memberships is under RLS and its own policies call this function.
create or replace function hipocampo_private.current_tenant_id()
returns uuid
language sql
stable
security definer
set search_path = ''
as $$
    with claim as (
        select coalesce(
            (select auth.jwt()) -> 'app_metadata' ->> 'tenant_id',
            (select auth.jwt()) ->> 'tenant_id'
        ) as tenant_text
    )
    select m.tenant_id
    from claim
    inner join hipocampo_private.memberships as m
        on m.tenant_id::text = lower(claim.tenant_text)
    where m.user_id = (select auth.uid())
$$;

/*
current_tenant_role() -> text

Purpose: the caller's role ('admin' | 'member') in current_tenant_id().
Returns: the role, or null when the caller has no current tenant.
Errors: none.
Example: select hipocampo_private.current_tenant_role() = 'admin';
*/
-- definer because memberships is under RLS and its own policies call this function.
create or replace function hipocampo_private.current_tenant_role()
returns text
language sql
stable
security definer
set search_path = ''
as $$
    select m.role
    from hipocampo_private.memberships as m
    where
        m.tenant_id = hipocampo_private.current_tenant_id()
        and m.user_id = (select auth.uid())
$$;

create policy "members can read their current tenant"
on hipocampo_private.tenants
for select
to authenticated
using (id = (select hipocampo_private.current_tenant_id()));

create policy "users can read their own memberships"
on hipocampo_private.memberships
for select
to authenticated
using (user_id = (select auth.uid()));

/*
create_tenant(name text, slug text, admin_user_id uuid default null) -> uuid

Purpose: create a tenant, its (empty) config row and optionally its first admin.
Parameters: name - 1..200 characters; slug - ^[a-z0-9][a-z0-9_-]{0,62}$, unique;
  admin_user_id - auth user made admin of the new tenant (optional).
Returns: the new tenant id.
Errors: 23505 "tenant slug already exists"; 23514 on a bad name or slug.
Example: select hipocampo.create_tenant('Condomínio Sol', 'sol', '…uuid…');
*/
create or replace function hipocampo.create_tenant(name text, slug text, admin_user_id uuid default null)
returns uuid
language plpgsql
security invoker
set search_path = ''
as $$
declare
    new_id uuid;
begin
    begin
        insert into hipocampo_private.tenants (name, slug)
        values (create_tenant.name, create_tenant.slug)
        returning id into new_id;
    exception when unique_violation then
        raise exception 'tenant slug already exists: %', create_tenant.slug
            using errcode = '23505';
    end;
    insert into hipocampo_private.settings (tenant_id, config) values (new_id, '{}'::jsonb);
    if admin_user_id is not null then
        insert into hipocampo_private.memberships (tenant_id, user_id, role)
        values (new_id, admin_user_id, 'admin');
    end if;
    return new_id;
end;
$$;

/*
add_member(tenant_id uuid, user_id uuid, role text default 'member') -> void

Purpose: add (or change the role of) a member of a tenant.
Parameters: tenant_id - existing tenant; user_id - auth user; role - 'admin' | 'member'.
Returns: nothing.
Errors: 23514 on an unknown role; 23503 "unknown tenant" when the tenant does not exist.
Example: select hipocampo.add_member('…tenant…', '…user…', 'member');
*/
create or replace function hipocampo.add_member(tenant_id uuid, user_id uuid, role text default 'member')
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    insert into hipocampo_private.memberships (tenant_id, user_id, role)
    values (add_member.tenant_id, add_member.user_id, add_member.role)
    on conflict on constraint memberships_pkey do update set role = excluded.role;
exception when foreign_key_violation then
    raise exception 'unknown tenant: %', add_member.tenant_id using errcode = '23503';
end;
$$;

comment on function hipocampo.create_tenant(text, text, uuid) is
'Create a tenant and optionally its first admin (service_role only).';

comment on function hipocampo.add_member(uuid, uuid, text) is
'Add a user to a tenant as admin or member (service_role only).';

-- One caller model for every RPC. Until now _resolve_tenant decided "may this caller name any
-- tenant?" from current_user, which inside a security definer function is the owner: a signed-in
-- user whose JWT named no tenant they belong to could pass tenant_id => <another tenant> to the
-- definer RPCs (set_tenant_config, cache_get, cache_put, record_answer, take_rate_limit), and
-- _require_admin did nothing when no tenant resolved. _memory_actor took the user_id argument
-- whenever auth.uid() was null, so a JWT with role authenticated and no sub could export or erase
-- any user (export_user_data, erase_user). The definer helpers that write (_touch_chunks,
-- _touch_memories, _memory_event, _log_access) wrote into whatever tenant they were given.
--
-- Now hipocampo_private._caller() resolves the caller once, from the request (the JWT claims that
-- PostgREST, the edge functions and the Python client set with `set local role`), never from
-- current_user; _resolve_tenant, _memory_actor, _data_subject and _require_admin are restated on
-- it, so every RPC that goes through them (all that take tenant_id or user_id) follows it, and
-- each definer helper checks the tenant (and user) it writes for. The UPDATE policies of memories
-- and memory_staging check the new row as their USING clause checks the old one (a member could
-- move their own memory to tenant_shared, which every member reads).
/*
_caller() -> record (kind text, tenant_id uuid, user_id uuid, tenant_role text)

Purpose: who is calling, from the request alone: the role and claims in request.jwt.claims
  (auth.role(), auth.uid(), auth.jwt()) and the role the request switched to (`set local role`,
  read as current_setting('role'), which a security definer function does not change). Never
  current_user, which inside a definer function is the owner.
  The role is the database role the request switched to, else the JWT's role claim; when both
  are there they must agree.
  - kind 'service': that role is service_role, or a direct connection that set neither a role
    nor claims (the owner: migrations, psql, pg_cron jobs; anon and authenticated cannot log in).
  - kind 'user': that role is authenticated, with a uuid `sub`, a tenant claim
    (app_metadata.tenant_id, else tenant_id) and a live membership of sub in that tenant;
    tenant_role is 'admin' or 'member'.
Returns: one record; tenant_id, user_id and tenant_role are null for 'service'.
Errors: 42501, before any other work, for every other caller:
  "not allowed: the JWT role … does not match the database role …" (claims forged on a
  connection that switched to another role); "not allowed: role … may not call this" (anon, a
  JWT without a role); "no user: the JWT has no subject (sub)" / "… sub is not a uuid";
  "no tenant: the JWT claims name no tenant" / "… is not a uuid"; "no tenant: the JWT claims
  name no tenant this user belongs to" (never a member, or the membership was removed).
Example: select kind, tenant_id from hipocampo_private._caller();
*/
-- definer because memberships is under RLS and the caller must be resolved the same way from
-- invoker and definer RPCs; it reads only the request's settings and the caller's membership.
create or replace function hipocampo_private._caller(
    out kind text, out tenant_id uuid, out user_id uuid, out tenant_role text
)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
    claims jsonb := (select auth.jwt());
    claim_role text := claims ->> 'role';
    db_role text := current_setting('role');
    sub_text text := claims ->> 'sub';
    tenant_text text := coalesce(claims -> 'app_metadata' ->> 'tenant_id', claims ->> 'tenant_id');
    uuid_format constant text := '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
begin
    if db_role <> 'none' then
        if claim_role is not null and claim_role <> db_role then
            raise exception 'not allowed: the JWT role % does not match the database role %', claim_role, db_role
                using errcode = '42501';
        end if;
        claim_role := db_role;
    end if;
    if claim_role = 'service_role' or (claim_role is null and db_role = 'none') then
        kind := 'service';
        return;
    end if;
    if claim_role is distinct from 'authenticated' then
        raise exception 'not allowed: role % may not call this', coalesce(claim_role, '(none)')
            using errcode = '42501';
    end if;
    if sub_text is null or sub_text = '' then
        raise exception 'no user: the JWT has no subject (sub)' using errcode = '42501';
    end if;
    if sub_text !~ uuid_format then
        raise exception 'no user: the JWT sub is not a uuid' using errcode = '42501';
    end if;
    if tenant_text is null or tenant_text = '' then
        raise exception 'no tenant: the JWT claims name no tenant'
            using errcode = '42501', hint = 'set app_metadata.tenant_id in the JWT';
    end if;
    if tenant_text !~ uuid_format then
        raise exception 'no tenant: the JWT tenant claim is not a uuid' using errcode = '42501';
    end if;
    select m.tenant_id, m.user_id, m.role into _caller.tenant_id, _caller.user_id, _caller.tenant_role
    from hipocampo_private.memberships as m
    where m.tenant_id = tenant_text::uuid and m.user_id = sub_text::uuid;
    if not found then
        raise exception 'no tenant: the JWT claims name no tenant this user belongs to'
            using errcode = '42501';
    end if;
    kind := 'user';
end;
$$;

comment on function hipocampo_private._caller() is
'The caller of an RPC, from the request''s role and JWT claims (never current_user): service, user, or 42501.';

-- ==================== supabase/schemas/02_config.sql ====================

create table hipocampo_private.settings (
    id bigint generated always as identity primary key,
    tenant_id uuid,
    config jsonb not null default '{}'::jsonb,
    updated_at timestamptz not null default now(),
    constraint settings_config_is_object check (jsonb_typeof(config) = 'object')
);

alter table hipocampo_private.settings enable row level security;

create unique index settings_tenant_id_key on hipocampo_private.settings (
    coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid)
);

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
create or replace function hipocampo_private.seed_default_config(defaults jsonb)
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
  configuration"; 22023 / 22003 as _check_config_patch.
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

comment on function hipocampo.set_tenant_config(text, jsonb, uuid) is
'Tenant admins override config keys of one section, within the bounds the global row declares.';

/*
_check_config_patch(section text, patch jsonb) -> void

Purpose: validate a patch of one config section against the global row: known keys only, same
  json type, within `<key>_range` (a `<key>_range` also bounds each element of an array of
  numbers, and `<key>_max_items` caps an array's length), never `tenant_locked` keys; secrets
  only by name (keys ending in `_secret` hold a name such as OPENAI_API_KEY; no key may be called
  api_key/password/secret and no value may look like a key or a JWT).
Errors: 22023 "patch must be a json object" / "unknown section …" / "unknown key …" / "… is fixed
  and cannot be changed per tenant" / "… must be a …" / "secrets are never stored: …" / "… must
  have at most N items"; 22003 "… must lie in [lo, hi]" (also for an array element that is not a
  number or lies outside the range).
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

/*
_require_admin() -> void

Purpose: only an admin of the caller's tenant or service_role passes (fails closed: a caller
  _caller() does not resolve is refused).
Errors: 42501 as _caller; 42501 "only tenant admins can change the tenant's configuration".
Example: perform hipocampo_private._require_admin();
*/
create or replace function hipocampo_private._require_admin()
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
        raise exception 'only tenant admins can change the tenant''s configuration' using errcode = '42501';
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
create or replace function hipocampo.set_agent_binding(
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
  binding overrides, plus "kb_ids" (the agent's knowledge bases, or [kb_id]) and "agent"; checked
  to hold every key of config.toml's [rag] that a reader uses.
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
    return hipocampo_private._require_config(
        cfg || coalesce(b.rag_overrides, '{}'::jsonb), 'rag', array[
            'enabled', 'provider', 'chat_model', 'azure_deployment', 'azure_api_version', 'api_key_secret',
            'endpoint_secret', 'base_url_secret', 'embedding_model', 'embedding_deployment',
            'embedding_api_version', 'embedding_dimensions', 'embedding_normalize', 'top_k', 'min_score',
            'evidence_token_budget', 'min_confidence', 'question_stopwords', 'cross_check_min_documents',
            'authoritative_trust', 'authoritative_source_types', 'conflict_trust_margin', 'cache_ttl_seconds',
            'rate_limit_per_minute', 'question_min_chars', 'question_max_chars', 'context_prompt',
            'refusal_message'
        ]
    ) || jsonb_build_object('kb_ids', to_jsonb(kbs), 'agent', agent);
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
*/
create or replace function hipocampo_private._memory_config(section_config jsonb)
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
    select hipocampo_private._require_config(section_config, 'memory', array[
        'min_chars', 'max_tokens', 'noise', 'sensitive_patterns', 'min_confidence', 'min_confidence_inferred',
        'max_active_per_user', 'duplicate_cosine', 'staging_below_intensity', 'staging_ttl_days',
        'context_threshold', 'answer_threshold', 'pinned_bonus', 'mmr_lambda', 'match_count',
        'decay_days', 'decay_step', 'deactivate_below', 'value_max_bytes', 'value_max_depth'
    ])
$$;

/*
_sessions_config(section_config jsonb) -> jsonb

Purpose: _require_config with the keys the session functions read (config.toml [sessions]).
Errors: 55000 "sessions config is incomplete: …" as _require_config.
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
        'last_messages'
    ])
$$;

comment on function hipocampo.rag_config(uuid, text, uuid) is
'The effective rag config: global <- tenant <- knowledge base <- agent binding; 55000 when a key is missing.';

-- ==================== supabase/schemas/03_knowledge_bases.sql ====================

-- Embedding-model registry.
--
-- Seed rule: embeddings are never overwritten. A new model is registered beside the old one
-- (its own partial HNSW index), documents are re-embedded into new rows, the switch is made
-- with activate_embedding_model(), and only then are the old model's rows deleted with
-- drop_embedding_model().
create table hipocampo_private.embedding_models (
    name text primary key,
    provider text not null,
    dims integer not null,
    distance text not null default 'cosine',
    active boolean not null default false,
    created_at timestamptz not null default now(),
    constraint embedding_models_name_format check (name ~ '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$'),
    constraint embedding_models_provider_check check (provider in ('local', 'openai', 'azure')),
    -- pgvector's HNSW indexes vectors of up to 2,000 dimensions.
    constraint embedding_models_dims_check check (dims between 1 and 2000),
    constraint embedding_models_distance_check check (distance = 'cosine')
);

alter table hipocampo_private.embedding_models enable row level security;

-- At most one active model: queries without an explicit model use it.
create unique index embedding_models_one_active on hipocampo_private.embedding_models (active)
where active;

create policy "authenticated users can read the embedding-model registry"
on hipocampo_private.embedding_models
for select
to authenticated
using (true);

comment on table hipocampo_private.embedding_models is
'Embedding models (name, provider, dims, distance); one active. Each has a partial HNSW index on chunks.';

-- Knowledge bases and documents.
create table hipocampo_private.knowledge_bases (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    name text not null,
    description text,
    tags text[] not null default '{}',
    status text not null default 'draft',
    -- Text-search language of the lexical leg; maps to hipocampo_private.<language>_unaccent.
    language text not null default 'portuguese',
    -- Per-KB overrides of the config rows, e.g. {"retrieval": {"match_count": 8}}.
    overrides jsonb not null default '{}'::jsonb,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint knowledge_bases_name_length check (char_length(name) between 1 and 200),
    constraint knowledge_bases_status_check check (
        status in ('draft', 'indexing', 'ready', 'error')
    ),
    constraint knowledge_bases_language_check check (
        language in ('portuguese', 'english', 'simple')
    ),
    constraint knowledge_bases_overrides_is_object check (jsonb_typeof(overrides) = 'object'),
    constraint knowledge_bases_tenant_name_key unique (tenant_id, name),
    -- Target of the (kb_id, tenant_id) foreign keys: a row never points into another tenant.
    constraint knowledge_bases_id_tenant_key unique (id, tenant_id)
);

alter table hipocampo_private.knowledge_bases enable row level security;

create table hipocampo_private.documents (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    kb_id uuid not null,
    source_type text not null default 'other',
    doc_type text,
    title text not null,
    source_uri text not null,
    author text,
    published_at timestamptz,
    version text,
    trust_score real not null default 0.5,
    data_classification text not null default 'internal',
    content_hash text not null,
    status text not null default 'active',
    chunk_count integer not null default 0,
    expires_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint documents_source_type_check check (source_type in (
        'regulation', 'policy', 'assembly_minutes', 'reservation', 'decision',
        'penalty', 'metric', 'faq', 'manual', 'other'
    )),
    constraint documents_trust_score_range check (trust_score between 0 and 1),
    constraint documents_data_classification_check check (
        data_classification in ('public', 'internal', 'confidential', 'restricted')
    ),
    constraint documents_status_check check (status in ('active', 'superseded', 'archived')),
    constraint documents_title_length check (char_length(title) between 1 and 500),
    constraint documents_kb_source_uri_key unique (kb_id, source_uri),
    constraint documents_id_tenant_key unique (id, tenant_id),
    constraint documents_kb_fkey foreign key (kb_id, tenant_id)
    references hipocampo_private.knowledge_bases (id, tenant_id) on delete cascade
);

alter table hipocampo_private.documents enable row level security;

create index knowledge_bases_tenant_id_idx on hipocampo_private.knowledge_bases (tenant_id);

create index documents_tenant_kb_idx on hipocampo_private.documents (tenant_id, kb_id);

create index documents_expires_at_idx on hipocampo_private.documents (expires_at)
where expires_at is not null;

create policy "members can read knowledge bases of their tenant"
on hipocampo_private.knowledge_bases
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can create knowledge bases in their tenant"
on hipocampo_private.knowledge_bases
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "admins can update knowledge bases of their tenant"
on hipocampo_private.knowledge_bases
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
)
with check (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can delete knowledge bases of their tenant"
on hipocampo_private.knowledge_bases
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "members can read documents of their tenant"
on hipocampo_private.documents
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can add documents to their tenant"
on hipocampo_private.documents
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "admins can update documents of their tenant"
on hipocampo_private.documents
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
)
with check (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can delete documents of their tenant"
on hipocampo_private.documents
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

comment on table hipocampo_private.knowledge_bases is
'Knowledge bases of a tenant: status draft|indexing|ready|error, language, per-KB overrides.';

comment on table hipocampo_private.documents is
'Source documents; deleting one deletes its chunks and their embeddings (on delete cascade).';

-- Chunks (content + embedding) and the per-KB statistics the BM25 lexical leg needs.
/*
tsvector_token_count(v tsvector) -> integer

Purpose: number of token occurrences in a tsvector (sum of position counts): the BM25 document length.
Parameters: v - a tsvector with positions.
Returns: 0 for an empty vector.
Errors: none.
Example: select hipocampo_private.tsvector_token_count(to_tsvector('simple', 'a a b')); -- 3
*/
create or replace function hipocampo_private.tsvector_token_count(v tsvector)
returns integer
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    select coalesce(sum(coalesce(pg_catalog.array_length(u.positions, 1), 1)), 0)::integer
    from pg_catalog.unnest(v) as u
$$;

/*
text_search_config(language text) -> regconfig

Purpose: the unaccented full-text configuration of a knowledge-base language.
Parameters: language - 'portuguese' | 'english' | 'simple'.
Returns: hipocampo_private.<language>_unaccent.
Errors: 22023 "unsupported text-search language" for any other value.
Example: select hipocampo_private.text_search_config('portuguese');
*/
create or replace function hipocampo_private.text_search_config(language text)
returns regconfig
language plpgsql
immutable
security invoker
set search_path = ''
as $$
begin
    return case language
        when 'portuguese' then 'hipocampo_private.portuguese_unaccent'::regconfig
        when 'english' then 'hipocampo_private.english_unaccent'::regconfig
        when 'simple' then 'hipocampo_private.simple_unaccent'::regconfig
        else null
    end;
end;
$$;

create table hipocampo_private.chunks (
    id bigint generated always as identity primary key,
    tenant_id uuid not null,
    kb_id uuid not null,
    document_id uuid not null,
    chunk_index integer not null,
    content text not null,
    token_count integer not null,
    metadata jsonb not null default '{}'::jsonb,
    content_hash text not null,
    ts_config regconfig not null,
    -- Lexical leg: stemmed, unaccented terms of the document title (metadata.title, a
    -- contextual header) and the content, in the KB's language (GIN index below).
    fts tsvector generated always as (
        to_tsvector(ts_config, coalesce(metadata ->> 'title', '') || E'\n' || content)
    ) stored,
    fts_length integer generated always as (
        hipocampo_private.tsvector_token_count(
            to_tsvector(ts_config, coalesce(metadata ->> 'title', '') || E'\n' || content)
        )
    ) stored,
    -- Dimensions vary by model; each model has its own partial HNSW index on a typed cast.
    embedding extensions.vector not null,
    embedding_model text not null references hipocampo_private.embedding_models (name),
    created_at timestamptz not null default now(),
    last_accessed_at timestamptz,
    expires_at timestamptz,
    constraint chunks_content_length check (char_length(content) between 1 and 100000),
    constraint chunks_chunk_index_check check (chunk_index >= 0),
    constraint chunks_metadata_is_object check (jsonb_typeof(metadata) = 'object'),
    constraint chunks_tenant_hash_model_key unique (tenant_id, content_hash, embedding_model),
    constraint chunks_document_fkey foreign key (document_id, tenant_id)
    references hipocampo_private.documents (id, tenant_id) on delete cascade
);

-- Keep embeddings inline (uncompressed floats do not compress): a row over ~2 kB would
-- otherwise have its vector moved out of line, and every exact distance would read TOAST.
-- (PostgreSQL 15 has no STORAGE clause in CREATE TABLE; 16 added it.)
alter table hipocampo_private.chunks alter column embedding set storage main;

alter table hipocampo_private.chunks enable row level security;

-- RLS filters on tenant_id; retrieval scopes on (tenant, kb, model).
create index chunks_scope_idx on hipocampo_private.chunks (tenant_id, kb_id, embedding_model);

create index chunks_document_id_idx on hipocampo_private.chunks (document_id);

-- No GIN index on fts: the lexical leg reads the inverted index kb_postings below.
create index chunks_metadata_idx on hipocampo_private.chunks using gin (metadata jsonb_path_ops);

create index chunks_expires_at_idx on hipocampo_private.chunks (expires_at)
where expires_at is not null;

-- BM25 statistics per (KB, embedding model): document frequency per lexeme, and chunk count
-- plus total length for the average document length. Maintained by statement triggers, with
-- the postings (kb_postings) below.
create table hipocampo_private.kb_term_stats (
    tenant_id uuid not null,
    kb_id uuid not null,
    embedding_model text not null,
    lexeme text not null,
    doc_freq integer not null,
    primary key (kb_id, embedding_model, lexeme)
);

alter table hipocampo_private.kb_term_stats enable row level security;

create table hipocampo_private.kb_text_stats (
    tenant_id uuid not null,
    kb_id uuid not null,
    embedding_model text not null,
    chunk_count bigint not null,
    token_total bigint not null,
    primary key (kb_id, embedding_model)
);

alter table hipocampo_private.kb_text_stats enable row level security;

-- The inverted index of the BM25 leg: one row per (chunk, lexeme) with the term frequency and
-- the chunk's length, so a query reads the postings of its few terms by primary key and scores
-- with arithmetic only (no tsvector work per candidate). tenant_id leads the key because RLS
-- filters on it.
create table hipocampo_private.kb_postings (
    tenant_id uuid not null,
    kb_id uuid not null,
    lexeme text not null,
    chunk_id bigint not null,
    tf integer not null,
    chunk_length integer not null,
    primary key (tenant_id, kb_id, lexeme, chunk_id)
);

alter table hipocampo_private.kb_postings enable row level security;

create index kb_term_stats_tenant_id_idx on hipocampo_private.kb_term_stats (tenant_id);

create index kb_text_stats_tenant_id_idx on hipocampo_private.kb_text_stats (tenant_id);

create policy "members can read chunks of their tenant"
on hipocampo_private.chunks
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can add chunks to their tenant"
on hipocampo_private.chunks
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "admins can delete chunks of their tenant"
on hipocampo_private.chunks
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "members can read term statistics of their tenant"
on hipocampo_private.kb_term_stats
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "members can read text statistics of their tenant"
on hipocampo_private.kb_text_stats
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "members can read postings of their tenant"
on hipocampo_private.kb_postings
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

/*
_chunks_stats_after_insert() -> trigger

Purpose: AFTER INSERT (statement, transition table) trigger of chunks: adds the new chunks' terms
  to the BM25 statistics of their knowledge bases (kb_term_stats document frequencies,
  kb_text_stats counts and lengths, kb_postings term frequencies).
*/
-- definer because every writer of chunks must keep the statistics right, and writers get no
-- direct write privilege on the statistics tables.
create or replace function hipocampo_private._chunks_stats_after_insert()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
    insert into hipocampo_private.kb_text_stats as s
        (tenant_id, kb_id, embedding_model, chunk_count, token_total)
    select n.tenant_id, n.kb_id, n.embedding_model, count(*), sum(n.fts_length)
    from new_rows as n
    group by n.tenant_id, n.kb_id, n.embedding_model
    on conflict (kb_id, embedding_model) do update
    set chunk_count = s.chunk_count + excluded.chunk_count,
        token_total = s.token_total + excluded.token_total;

    insert into hipocampo_private.kb_term_stats as s
        (tenant_id, kb_id, embedding_model, lexeme, doc_freq)
    select n.tenant_id, n.kb_id, n.embedding_model, u.lexeme, count(*)
    from new_rows as n
    cross join lateral pg_catalog.unnest(n.fts) as u
    group by n.tenant_id, n.kb_id, n.embedding_model, u.lexeme
    order by n.kb_id, n.embedding_model, u.lexeme
    on conflict (kb_id, embedding_model, lexeme) do update
    set doc_freq = s.doc_freq + excluded.doc_freq;

    insert into hipocampo_private.kb_postings (tenant_id, kb_id, lexeme, chunk_id, tf, chunk_length)
    select n.tenant_id, n.kb_id, u.lexeme, n.id,
        coalesce(pg_catalog.array_length(u.positions, 1), 1), n.fts_length
    from new_rows as n
    cross join lateral pg_catalog.unnest(n.fts) as u;
    return null;
end;
$$;

/*
_chunks_stats_after_delete() -> trigger

Purpose: AFTER DELETE (statement, transition table) trigger of chunks: removes the deleted
  chunks' terms from the BM25 statistics of their knowledge bases.
*/
-- definer because, as for inserts, every writer of chunks keeps the statistics right.
create or replace function hipocampo_private._chunks_stats_after_delete()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
    update hipocampo_private.kb_text_stats as s
    set chunk_count = s.chunk_count - d.n,
        token_total = s.token_total - d.len
    from (
        select o.kb_id, o.embedding_model, count(*) as n, sum(o.fts_length) as len
        from old_rows as o
        group by o.kb_id, o.embedding_model
    ) as d
    where s.kb_id = d.kb_id and s.embedding_model = d.embedding_model;

    with removed as (
        select o.kb_id, o.embedding_model, u.lexeme, count(*) as n
        from old_rows as o
        cross join lateral pg_catalog.unnest(o.fts) as u
        group by o.kb_id, o.embedding_model, u.lexeme
    )
    update hipocampo_private.kb_term_stats as s
    set doc_freq = s.doc_freq - r.n
    from removed as r
    where s.kb_id = r.kb_id and s.embedding_model = r.embedding_model and s.lexeme = r.lexeme;

    delete from hipocampo_private.kb_term_stats as s
    where s.doc_freq <= 0
      and s.kb_id in (select o.kb_id from old_rows as o);

    delete from hipocampo_private.kb_postings as p
    using old_rows as o, pg_catalog.unnest(o.fts) as u
    where p.tenant_id = o.tenant_id and p.kb_id = o.kb_id and p.lexeme = u.lexeme and p.chunk_id = o.id;
    return null;
end;
$$;

create trigger chunks_stats_after_insert
after insert on hipocampo_private.chunks
referencing new table as new_rows
for each statement execute function hipocampo_private._chunks_stats_after_insert();

create trigger chunks_stats_after_delete
after delete on hipocampo_private.chunks
referencing old table as old_rows
for each statement execute function hipocampo_private._chunks_stats_after_delete();

/*
_ensure_model_index(model_name text) -> text

Purpose: create the partial HNSW indexes of one embedding model on chunks, memories and
  memory_staging, if missing. HNSW m=16, ef_construction=64; opclass vector_cosine_ops because
  retrieval orders by the cosine-distance operator <=>.
Parameters: model_name - a registered model.
Returns: the chunks index name.
Errors: P0002 "unknown embedding model" when it is not registered.
Example: select hipocampo_private._ensure_model_index('all-MiniLM-L6-v2');
*/
-- definer because creating an index needs ownership of the tables.
create or replace function hipocampo_private._ensure_model_index(model_name text)
returns text
language plpgsql
security definer
set search_path = ''
as $$
declare
    m hipocampo_private.embedding_models;
    tbl text;
    idx text;
begin
    select * into m from hipocampo_private.embedding_models as e where e.name = model_name;
    if not found then
        raise exception 'unknown embedding model: %', model_name using errcode = 'P0002';
    end if;
    foreach tbl in array array['chunks', 'memories', 'memory_staging'] loop
        idx := tbl || '_embedding_hnsw_' || substr(md5(m.name), 1, 12);
        execute format(
            'create index if not exists %I on hipocampo_private.%I '
            'using hnsw ((embedding::extensions.vector(%s)) extensions.vector_cosine_ops) '
            'with (m = 16, ef_construction = 64) where embedding_model = %L',
            idx, tbl, m.dims, m.name
        );
    end loop;
    return 'chunks_embedding_hnsw_' || substr(md5(m.name), 1, 12);
end;
$$;

comment on table hipocampo_private.chunks is
'Chunks of documents with their embedding (one row per embedding model) and a generated tsvector.';

comment on table hipocampo_private.kb_term_stats is
'BM25 document frequency per lexeme, per knowledge base and embedding model (trigger-maintained).';

comment on table hipocampo_private.kb_postings is
'BM25 inverted index: term frequency of each lexeme in each chunk, with the chunk length (trigger-maintained).';

comment on table hipocampo_private.kb_text_stats is
'BM25 chunk count and total length per knowledge base and embedding model (trigger-maintained).';

-- Ingestion jobs and the data-access log written by every retrieval RPC.
create table hipocampo_private.ingestion_jobs (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    kb_id uuid not null,
    status text not null default 'running',
    documents_total integer not null default 0,
    documents_ingested integer not null default 0,
    documents_unchanged integer not null default 0,
    documents_failed integer not null default 0,
    chunks_written integer not null default 0,
    errors jsonb not null default '[]'::jsonb,
    created_by uuid,
    started_at timestamptz not null default now(),
    finished_at timestamptz,
    -- The run's lease: renewed by heartbeat_ingestion_job; see recover_ingestion_jobs.
    heartbeat_at timestamptz not null default now(),
    constraint ingestion_jobs_status_check check (
        status in ('running', 'succeeded', 'partial', 'failed')
    ),
    constraint ingestion_jobs_errors_is_array check (jsonb_typeof(errors) = 'array'),
    constraint ingestion_jobs_kb_fkey foreign key (kb_id, tenant_id)
    references hipocampo_private.knowledge_bases (id, tenant_id) on delete cascade
);

alter table hipocampo_private.ingestion_jobs enable row level security;

create table hipocampo_private.data_access_log (
    id bigint generated always as identity primary key,
    at timestamptz not null default now(),
    caller uuid,
    caller_role text not null,
    tenant_id uuid,
    rpc text not null,
    rows_returned integer not null,
    query_hash text,
    latency_ms double precision not null
);

alter table hipocampo_private.data_access_log enable row level security;

create index ingestion_jobs_tenant_kb_idx on hipocampo_private.ingestion_jobs (tenant_id, kb_id);

create index data_access_log_tenant_at_idx on hipocampo_private.data_access_log (tenant_id, at);

create policy "members can read ingestion jobs of their tenant"
on hipocampo_private.ingestion_jobs
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can start ingestion jobs in their tenant"
on hipocampo_private.ingestion_jobs
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "admins can update ingestion jobs of their tenant"
on hipocampo_private.ingestion_jobs
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
)
with check (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can read the access log of their tenant"
on hipocampo_private.data_access_log
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

/*
_log_access(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision) -> void

Purpose: append one row to the data-access log (caller and role taken from the request) for the
  given tenant, which must be the caller's (service_role: any).
Errors: 42501 as _resolve_tenant.
Example: perform hipocampo_private._log_access(t, 'hybrid_search', 5, 'ab12…', 3.2);
*/
-- definer because callers may append to the access log but never read or change it.
create or replace function hipocampo_private._log_access(
    tenant_id uuid,
    rpc text,
    rows_returned integer,
    query_hash text,
    latency_ms double precision
)
returns void
language plpgsql
security definer
set search_path = ''
as $$
begin
    perform hipocampo_private._resolve_tenant(_log_access.tenant_id);
    insert into hipocampo_private.data_access_log
        (caller, caller_role, tenant_id, rpc, rows_returned, query_hash, latency_ms)
    values (
        (select auth.uid()),
        coalesce((select auth.role()), nullif(current_setting('role'), 'none'), session_user::text),
        _log_access.tenant_id,
        _log_access.rpc,
        _log_access.rows_returned,
        _log_access.query_hash,
        _log_access.latency_ms
    );
end;
$$;

comment on table hipocampo_private.ingestion_jobs is 'One row per ingestion run: status, counts, errors.';

comment on table hipocampo_private.data_access_log is
'Who read what: caller, tenant, RPC, rows returned, query hash (sha256), latency in ms.';

/*
_resolve_tenant(requested uuid) -> uuid

Purpose: the tenant a call acts on, by _caller(): a user acts on the tenant of their claims
  (requested may repeat it); service_role must name one. Every RPC that takes tenant_id calls it.
Parameters: requested - the RPC's tenant_id argument (null for a user: their tenant).
Returns: the tenant id.
Errors: 42501 as _caller; 42501 "tenant mismatch: the JWT claims name another tenant" when a user
  names another tenant; 42501 "no tenant: service_role must pass tenant_id" when service_role names
  none.
Example: select hipocampo_private._resolve_tenant(null);
*/
create or replace function hipocampo_private._resolve_tenant(requested uuid)
returns uuid
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
begin
    if c.kind = 'service' then
        if requested is null then
            raise exception 'no tenant: service_role must pass tenant_id' using errcode = '42501';
        end if;
        return requested;
    end if;
    if requested is not null and requested <> c.tenant_id then
        raise exception 'tenant mismatch: the JWT claims name another tenant' using errcode = '42501';
    end if;
    return c.tenant_id;
end;
$$;

/*
effective_config(tenant_id uuid default null, kb_id uuid default null) -> jsonb

Purpose: the configuration in force: the global row, overridden per section by the tenant's
  row, overridden by the knowledge base's overrides.
Parameters: tenant_id - null = the caller's tenant; kb_id - optional knowledge base.
Returns: a jsonb object with sections retrieval, chunking, embedding.
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
        select s.config from hipocampo_private.settings as s where s.tenant_id = t
        union all
        select k.overrides from hipocampo_private.knowledge_bases as k
        where k.id = effective_config.kb_id and k.tenant_id = t
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
register_embedding_model(name text, provider text, dims integer, activate boolean default false) -> text

Purpose: add an embedding model to the registry beside the existing ones and create its
  partial HNSW index. Never changes the dims of a registered model.
Parameters: name; provider 'local' | 'openai' | 'azure'; dims 1..2000; activate - make it the default.
Returns: the HNSW index name.
Errors: 22023 "model … is registered with … dimensions" on a dims change; 23514 on bad values.
Example: select hipocampo.register_embedding_model('all-MiniLM-L6-v2', 'local', 384, true);
*/
create or replace function hipocampo.register_embedding_model(
    name text, provider text, dims integer, activate boolean default false
)
returns text
language plpgsql
security invoker
set search_path = ''
as $$
declare
    existing integer;
begin
    select e.dims into existing from hipocampo_private.embedding_models as e
    where e.name = register_embedding_model.name;
    if existing is not null and existing <> register_embedding_model.dims then
        raise exception 'model % is registered with % dimensions, not %',
            register_embedding_model.name, existing, register_embedding_model.dims
            using errcode = '22023';
    end if;
    insert into hipocampo_private.embedding_models (name, provider, dims)
    values (register_embedding_model.name, register_embedding_model.provider,
            register_embedding_model.dims)
    on conflict on constraint embedding_models_pkey do nothing;
    if activate then
        perform hipocampo.activate_embedding_model(register_embedding_model.name);
    end if;
    return hipocampo_private._ensure_model_index(register_embedding_model.name);
end;
$$;

/*
activate_embedding_model(name text) -> void

Purpose: confirm the switch to a registered model: it becomes the default of retrieval.
Errors: P0002 "unknown embedding model".
Example: select hipocampo.activate_embedding_model('text-embedding-3-small');
*/
create or replace function hipocampo.activate_embedding_model(name text)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if not exists (
        select 1 from hipocampo_private.embedding_models as e
        where e.name = activate_embedding_model.name
    ) then
        raise exception 'unknown embedding model: %', activate_embedding_model.name
            using errcode = 'P0002';
    end if;
    update hipocampo_private.embedding_models as e set active = false
    where e.active and e.name <> activate_embedding_model.name;
    update hipocampo_private.embedding_models as e set active = true
    where e.name = activate_embedding_model.name;
end;
$$;

/*
drop_embedding_model(name text) -> bigint

Purpose: after a confirmed switch, delete an inactive model's chunk rows (embeddings) and its
  registry row. Memories that are no longer active (deprecated, deleted, expired: history no
  search reads) lose their vectors of that model; active and staged memories and messages must
  have been given the active model's first (rows_to_embed / set_row_embeddings).
Returns: number of chunk rows deleted.
Errors: P0002 "unknown embedding model"; 55000 "model … is active" for the active model; 55000
  "model <name> still embeds N active memories, N staged memories and N messages: embed them with
  the active model first (hipocampo db embed-missing)".
Example: select hipocampo.drop_embedding_model('old-model');
*/
create or replace function hipocampo.drop_embedding_model(name text)
returns bigint
language plpgsql
security invoker
set search_path = ''
as $$
declare
    is_active boolean;
    n bigint;
    n_memories bigint;
    n_staged bigint;
    n_messages bigint;
begin
    select e.active into is_active from hipocampo_private.embedding_models as e
    where e.name = drop_embedding_model.name;
    if is_active is null then
        raise exception 'unknown embedding model: %', drop_embedding_model.name
            using errcode = 'P0002';
    end if;
    if is_active then
        raise exception 'model % is active; activate another model first',
            drop_embedding_model.name using errcode = '55000';
    end if;
    select count(*) into n_memories from hipocampo_private.memories as m
    where m.embedding_model = drop_embedding_model.name and m.status = 'active';
    select count(*) into n_staged from hipocampo_private.memory_staging as s
    where s.embedding_model = drop_embedding_model.name;
    select count(*) into n_messages from hipocampo_private.messages as m
    where m.embedding_model = drop_embedding_model.name;
    if n_memories + n_staged + n_messages > 0 then
        raise exception 'model % still embeds % active memories, % staged memories and % messages: embed them with the active model first (hipocampo db embed-missing)',
            drop_embedding_model.name, n_memories, n_staged, n_messages using errcode = '55000';
    end if;
    update hipocampo_private.memories as m set embedding = null, embedding_model = null
    where m.embedding_model = drop_embedding_model.name;
    delete from hipocampo_private.chunks as c where c.embedding_model = drop_embedding_model.name;
    get diagnostics n = row_count;
    delete from hipocampo_private.kb_term_stats as s
    where s.embedding_model = drop_embedding_model.name;
    delete from hipocampo_private.kb_text_stats as s
    where s.embedding_model = drop_embedding_model.name;
    delete from hipocampo_private.embedding_models as e
    where e.name = drop_embedding_model.name;
    return n;
end;
$$;

/*
create_knowledge_base(name text, description text default null, tags text[] default '{}',
  language text default 'portuguese', overrides jsonb default '{}', tenant_id uuid default null) -> uuid

Purpose: create a knowledge base (status draft) in the caller's tenant; idempotent by name.
Parameters: name 1..200 chars, unique per tenant; language 'portuguese' | 'english' | 'simple';
  overrides - per-KB config sections; tenant_id - service_role only.
Returns: the knowledge-base id (the existing one when the name exists).
Errors: 42501 no tenant / not an admin; 23514 on a bad name or language.
Example: select hipocampo.create_knowledge_base('regulamentos');
*/
create or replace function hipocampo.create_knowledge_base(
    name text,
    description text default null,
    tags text[] default '{}',
    language text default 'portuguese',
    overrides jsonb default '{}',
    tenant_id uuid default null
)
returns uuid
language plpgsql
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(create_knowledge_base.tenant_id);
    kb uuid;
begin
    insert into hipocampo_private.knowledge_bases (tenant_id, name, description, tags, language, overrides)
    values (t, create_knowledge_base.name, create_knowledge_base.description,
            coalesce(create_knowledge_base.tags, '{}'), create_knowledge_base.language,
            coalesce(create_knowledge_base.overrides, '{}'))
    on conflict on constraint knowledge_bases_tenant_name_key do nothing
    returning id into kb;
    if kb is null then
        select k.id into kb from hipocampo_private.knowledge_bases as k
        where k.tenant_id = t and k.name = create_knowledge_base.name;
    end if;
    return kb;
exception when insufficient_privilege then
    raise exception 'only tenant admins can create knowledge bases' using errcode = '42501';
end;
$$;

/*
_kb(kb_id uuid) -> hipocampo_private.knowledge_bases

Purpose: the knowledge base row, as the caller's RLS sees it.
Errors: P0002 "unknown knowledge base: …" when it does not exist or is another tenant's.
*/
create or replace function hipocampo_private._kb(kb_id uuid)
returns hipocampo_private.knowledge_bases
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    k hipocampo_private.knowledge_bases;
begin
    select * into k from hipocampo_private.knowledge_bases as b where b.id = _kb.kb_id;
    if not found then
        raise exception 'unknown knowledge base: %', kb_id using errcode = 'P0002';
    end if;
    return k;
end;
$$;

/*
knowledge_base_id(name text, tenant_id uuid default null) -> uuid

Purpose: look a knowledge base up by name in the caller's tenant.
Errors: P0002 "unknown knowledge base: …".
Example: select hipocampo.knowledge_base_id('regulamentos');
*/
create or replace function hipocampo.knowledge_base_id(name text, tenant_id uuid default null)
returns uuid
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(knowledge_base_id.tenant_id);
    kb uuid;
begin
    select k.id into kb from hipocampo_private.knowledge_bases as k
    where k.tenant_id = t and k.name = knowledge_base_id.name;
    if kb is null then
        raise exception 'unknown knowledge base: %', knowledge_base_id.name using errcode = 'P0002';
    end if;
    return kb;
end;
$$;

/*
list_knowledge_bases(tenant_id uuid default null) -> setof record

Purpose: the caller's knowledge bases with document and chunk counts.
Returns: id, name, description, tags, status, language, documents, chunks, updated_at.
Example: select * from hipocampo.list_knowledge_bases();
*/
create or replace function hipocampo.list_knowledge_bases(tenant_id uuid default null)
returns table (
    id uuid, name text, description text, tags text[], status text, language text,
    documents bigint, chunks bigint, updated_at timestamptz
)
language sql
stable
security invoker
set search_path = ''
as $$
    select
        k.id, k.name, k.description, k.tags, k.status, k.language,
        (select count(*) from hipocampo_private.documents as d where d.kb_id = k.id),
        (select count(*) from hipocampo_private.chunks as c where c.kb_id = k.id),
        k.updated_at
    from hipocampo_private.knowledge_bases as k
    where k.tenant_id = hipocampo_private._resolve_tenant(list_knowledge_bases.tenant_id)
    order by k.name
$$;

/*
set_knowledge_base_status(kb_id uuid, status text) -> void

Purpose: move a knowledge base through draft -> indexing -> ready | error.
Errors: 42501 as _caller (before any other work); P0002 unknown knowledge base; 23514 on an unknown status.
Example: select hipocampo.set_knowledge_base_status(kb, 'indexing');
*/
create or replace function hipocampo.set_knowledge_base_status(kb_id uuid, status text)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._caller();
    perform hipocampo_private._kb(set_knowledge_base_status.kb_id);
    update hipocampo_private.knowledge_bases as k
    set status = set_knowledge_base_status.status, updated_at = now()
    where k.id = set_knowledge_base_status.kb_id;
end;
$$;

/*
document_hashes(kb_id uuid) -> setof (document_id uuid, source_uri text, content_hash text)

Purpose: what a knowledge base holds, so a client can skip unchanged documents before embedding.
Errors: 42501 as _caller (before any other work); P0002 unknown knowledge base.
Example: select * from hipocampo.document_hashes(kb);
*/
create or replace function hipocampo.document_hashes(kb_id uuid)
returns table (document_id uuid, source_uri text, content_hash text)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._caller();
    perform hipocampo_private._kb(document_hashes.kb_id);
    return query
    select d.id, d.source_uri, d.content_hash from hipocampo_private.documents as d
    where d.kb_id = document_hashes.kb_id;
end;
$$;

/*
ingest_document(kb_id uuid, document jsonb, chunks jsonb, embedding_model text) -> jsonb

Purpose: write one document and all its chunks in one transaction. A document is identified by
  (kb_id, document.source_uri): unchanged content_hash -> nothing written; changed -> its chunks
  are replaced; new -> inserted. A chunk whose (tenant, content_hash, model) already exists is
  skipped. The title and source_uri are scrubbed of PII before the lookup (what the documents
  trigger stores); chunk content and metadata are scrubbed by the chunks trigger.
Parameters:
  kb_id - the knowledge base (the caller must be its tenant's admin, or service_role).
  document - {title (1..500 characters), source_uri (1..2,048 bytes), content_hash,
    source_type?, doc_type?, author?, published_at?, version?, trust_score? 0..1,
    data_classification?, expires_at?, status?}
  chunks - [{chunk_index, content, token_count, content_hash, metadata?, embedding: [float, …]}]
  embedding_model - a registered model; every embedding must have its dims.
Returns: {"document_id", "status": "inserted" | "replaced" | "unchanged", "chunks": n, "skipped": n}.
Errors: 42501 as _caller (before any other work); 42501 "only tenant admins can ingest
  documents"; P0002 unknown (or null) knowledge base / unknown embedding model; 22023
  "embedding_model must not be null"; 22023 bad document or chunks shape; 22001
  "document.title is n characters; the limit is 500", "document.source_uri is n bytes; the limit
  is 2048"; 22000 "embedding of chunk i has n dimensions; model … expects d"; 22023 "invalid
  document field: …" (unparsable date or number); 23514 "invalid document: …".
Example: select hipocampo.ingest_document(kb, '{"title":"Regimento","source_uri":"file:///r.pdf",
  "content_hash":"ab…"}', '[{"chunk_index":0,"content":"…","token_count":12,"content_hash":"cd…",
  "embedding":[0.1, …]}]', 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo.ingest_document(
    kb_id uuid, document jsonb, chunks jsonb, embedding_model text
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(ingest_document.kb_id);
    model_dims integer;
    doc_id uuid;
    old_hash text;
    result_status text;
    written integer;
    total integer;
    bad record;
begin
    if ingest_document.embedding_model is null then
        raise exception 'embedding_model must not be null' using errcode = '22023';
    end if;
    if document is null or jsonb_typeof(document) <> 'object'
        or coalesce(document ->> 'title', '') = ''
        or coalesce(document ->> 'source_uri', '') = ''
        or coalesce(document ->> 'content_hash', '') = '' then
        raise exception 'document must be an object with title, source_uri and content_hash'
            using errcode = '22023';
    end if;
    -- What is stored is scrubbed (the documents trigger); look the document up by the same.
    document := document || jsonb_build_object(
        'title', (hipocampo_private._pii_scrub(document ->> 'title')).text,
        'source_uri', (hipocampo_private._pii_scrub(document ->> 'source_uri')).text);
    if char_length(document ->> 'title') > 500 then
        raise exception 'document.title is % characters; the limit is 500', char_length(document ->> 'title')
            using errcode = '22001';
    end if;
    if octet_length(document ->> 'source_uri') > 2048 then
        raise exception 'document.source_uri is % bytes; the limit is 2048', octet_length(document ->> 'source_uri')
            using errcode = '22001';
    end if;
    if chunks is null or jsonb_typeof(chunks) <> 'array' or jsonb_array_length(chunks) = 0 then
        raise exception 'chunks must be a non-empty json array' using errcode = '22023';
    end if;
    select e.dims into model_dims from hipocampo_private.embedding_models as e
    where e.name = ingest_document.embedding_model;
    if model_dims is null then
        raise exception 'unknown embedding model: %', ingest_document.embedding_model
            using errcode = 'P0002';
    end if;
    select c.ordinality - 1 as i, jsonb_array_length(c.value -> 'embedding') as n into bad
    from jsonb_array_elements(chunks) with ordinality as c
    where jsonb_typeof(c.value -> 'embedding') is distinct from 'array'
       or jsonb_array_length(c.value -> 'embedding') <> model_dims
       or coalesce(c.value ->> 'content', '') = ''
       or coalesce(c.value ->> 'content_hash', '') = ''
    limit 1;
    if found then
        if bad.n is distinct from model_dims then
            raise exception 'embedding of chunk % has % dimensions; model % expects %',
                bad.i, coalesce(bad.n, 0), ingest_document.embedding_model, model_dims
                using errcode = '22000';
        end if;
        raise exception 'chunk % needs content and content_hash', bad.i using errcode = '22023';
    end if;

    select d.id, d.content_hash into doc_id, old_hash from hipocampo_private.documents as d
    where d.kb_id = k.id and d.source_uri = document ->> 'source_uri';

    if doc_id is not null and old_hash = document ->> 'content_hash'
        and exists (
            select 1 from hipocampo_private.chunks as c
            where c.document_id = doc_id and c.embedding_model = ingest_document.embedding_model
        ) then
        return jsonb_build_object('document_id', doc_id, 'status', 'unchanged', 'chunks', 0, 'skipped', 0);
    end if;

    if doc_id is null then
        insert into hipocampo_private.documents (
            tenant_id, kb_id, source_type, doc_type, title, source_uri, author, published_at,
            version, trust_score, data_classification, content_hash, status, expires_at
        ) values (
            k.tenant_id, k.id, coalesce(document ->> 'source_type', 'other'),
            document ->> 'doc_type', document ->> 'title', document ->> 'source_uri',
            document ->> 'author', (document ->> 'published_at')::timestamptz,
            document ->> 'version', coalesce((document ->> 'trust_score')::real, 0.5),
            coalesce(document ->> 'data_classification', 'internal'), document ->> 'content_hash',
            coalesce(document ->> 'status', 'active'), (document ->> 'expires_at')::timestamptz
        ) returning id into doc_id;
        result_status := 'inserted';
    else
        delete from hipocampo_private.chunks as c
        where c.document_id = doc_id and c.embedding_model = ingest_document.embedding_model;
        update hipocampo_private.documents as d set
            source_type = coalesce(document ->> 'source_type', d.source_type),
            doc_type = coalesce(document ->> 'doc_type', d.doc_type),
            title = document ->> 'title',
            author = coalesce(document ->> 'author', d.author),
            published_at = coalesce((document ->> 'published_at')::timestamptz, d.published_at),
            version = coalesce(document ->> 'version', d.version),
            trust_score = coalesce((document ->> 'trust_score')::real, d.trust_score),
            data_classification = coalesce(document ->> 'data_classification', d.data_classification),
            content_hash = document ->> 'content_hash',
            status = coalesce(document ->> 'status', d.status),
            expires_at = (document ->> 'expires_at')::timestamptz,
            updated_at = now()
        where d.id = doc_id;
        result_status := 'replaced';
    end if;

    insert into hipocampo_private.chunks (
        tenant_id, kb_id, document_id, chunk_index, content, token_count, metadata,
        content_hash, ts_config, embedding, embedding_model, expires_at
    )
    select
        k.tenant_id, k.id, doc_id, (c ->> 'chunk_index')::integer, c ->> 'content',
        coalesce((c ->> 'token_count')::integer, 0), coalesce(c -> 'metadata', '{}'::jsonb),
        c ->> 'content_hash', hipocampo_private.text_search_config(k.language),
        (c ->> 'embedding')::extensions.vector, ingest_document.embedding_model,
        (document ->> 'expires_at')::timestamptz
    from jsonb_array_elements(chunks) as c
    on conflict on constraint chunks_tenant_hash_model_key do nothing;
    get diagnostics written = row_count;
    total := jsonb_array_length(chunks);

    update hipocampo_private.documents as d set chunk_count = written where d.id = doc_id;
    return jsonb_build_object(
        'document_id', doc_id, 'status', result_status, 'chunks', written, 'skipped', total - written
    );
exception
    when insufficient_privilege then
        raise exception 'only tenant admins can ingest documents' using errcode = '42501';
    when check_violation then
        raise exception 'invalid document: %', sqlerrm using errcode = '23514';
    when invalid_text_representation or invalid_datetime_format or datetime_field_overflow
        or numeric_value_out_of_range then
        raise exception 'invalid document field: %', sqlerrm using errcode = '22023';
end;
$$;

/*
delete_document(document_id uuid) -> boolean

Purpose: delete a document; its chunks and their embeddings go with it (cascade).
Returns: true when a document was deleted, false when none is visible with that id.
Errors: 42501 as _caller (before any other work); 42501 not an admin.
Example: select hipocampo.delete_document('…');
*/
create or replace function hipocampo.delete_document(document_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._caller();
    delete from hipocampo_private.documents as d where d.id = delete_document.document_id;
    return found;
end;
$$;

/*
purge_expired(now timestamptz default now()) -> jsonb

Purpose: delete documents and chunks whose expires_at has passed (retention).
Parameters: now - the clock (tests pass a frozen one).
Returns: {"documents": n, "chunks": n}.
Example: select hipocampo.purge_expired();
*/
create or replace function hipocampo.purge_expired(now timestamptz default now())
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    n_docs integer;
    n_chunks integer;
begin
    delete from hipocampo_private.chunks as c where c.expires_at <= purge_expired.now;
    get diagnostics n_chunks = row_count;
    delete from hipocampo_private.documents as d where d.expires_at <= purge_expired.now;
    get diagnostics n_docs = row_count;
    return jsonb_build_object('documents', n_docs, 'chunks', n_chunks);
end;
$$;

/*
start_ingestion_job(kb_id uuid, documents_total integer) -> uuid

Purpose: open an ingestion run (status running, lease renewed by heartbeat_ingestion_job). It
  first recovers the knowledge base's interrupted jobs (recover_ingestion_jobs), so a run after a
  crash finds the earlier job failed (interrupted) instead of running forever.
Errors: 42501 as _caller (before any other work); P0002 unknown knowledge base; 22023
  "documents_total must be >= 0".
Example: select hipocampo.start_ingestion_job(kb, 12);
*/
create or replace function hipocampo.start_ingestion_job(kb_id uuid, documents_total integer)
returns uuid
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(start_ingestion_job.kb_id);
    job uuid;
begin
    if documents_total is null or documents_total < 0 then
        raise exception 'documents_total must be >= 0 (got %)', documents_total using errcode = '22023';
    end if;
    perform hipocampo.recover_ingestion_jobs(now(), k.id);
    insert into hipocampo_private.ingestion_jobs (tenant_id, kb_id, documents_total, created_by)
    values (k.tenant_id, k.id, documents_total, (select auth.uid()))
    returning id into job;
    return job;
end;
$$;

/*
finish_ingestion_job(job_id uuid, status text, counts jsonb, errors jsonb) -> void

Purpose: close an ingestion run (start_ingestion_job): its final status and counts.
Parameters: job_id - the run; status - succeeded | partial | failed; counts - {"documents_ingested",
  "documents_unchanged", "documents_failed", "chunks_written"} (a missing count is 0); errors - a
  json array of {document, error} (null = []).
Returns: nothing.
Errors: 42501 as _caller (before any other work); P0002 "unknown ingestion job: …"; 23514 on an unknown status.
Example: select hipocampo.finish_ingestion_job(j, 'succeeded', '{"documents_ingested": 3}', '[]');
*/
create or replace function hipocampo.finish_ingestion_job(
    job_id uuid, status text, counts jsonb default '{}', errors jsonb default '[]'
)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._caller();
    update hipocampo_private.ingestion_jobs as j set
        status = finish_ingestion_job.status,
        documents_ingested = coalesce((counts ->> 'documents_ingested')::integer, 0),
        documents_unchanged = coalesce((counts ->> 'documents_unchanged')::integer, 0),
        documents_failed = coalesce((counts ->> 'documents_failed')::integer, 0),
        chunks_written = coalesce((counts ->> 'chunks_written')::integer, 0),
        errors = coalesce(finish_ingestion_job.errors, '[]'::jsonb),
        finished_at = now()
    where j.id = finish_ingestion_job.job_id;
    if not found then
        raise exception 'unknown ingestion job: %', job_id using errcode = 'P0002';
    end if;
end;
$$;

comment on function hipocampo.effective_config(uuid, uuid) is
'Config in force for a tenant (and KB): global row <- tenant row <- KB overrides.';

comment on function hipocampo.register_embedding_model(text, text, integer, boolean) is
'Register an embedding model beside the others and create its partial HNSW index.';

comment on function hipocampo.activate_embedding_model(text) is
'Make a registered embedding model the default of retrieval.';

comment on function hipocampo.drop_embedding_model(text) is
'Delete an inactive model''s embeddings and registry row, after a confirmed switch.';

comment on function hipocampo.create_knowledge_base(text, text, text[], text, jsonb, uuid) is
'Create (or find by name) a knowledge base in the caller''s tenant.';

comment on function hipocampo.knowledge_base_id(text, uuid) is 'Knowledge-base id by name.';

comment on function hipocampo.list_knowledge_bases(uuid) is
'Knowledge bases of the caller''s tenant with document and chunk counts.';

comment on function hipocampo.set_knowledge_base_status(uuid, text) is
'Set a knowledge base''s status: draft, indexing, ready or error.';

comment on function hipocampo.document_hashes(uuid) is
'Content hashes of a knowledge base''s documents (for client-side dedupe).';

comment on function hipocampo.ingest_document(uuid, jsonb, jsonb, text) is
'Write one document and its chunks atomically; unchanged documents are not rewritten.';

comment on function hipocampo.delete_document(uuid) is
'Delete a document with its chunks and embeddings.';

comment on function hipocampo.purge_expired(timestamptz) is
'Delete documents and chunks past their expires_at.';

comment on function hipocampo.start_ingestion_job(uuid, integer) is 'Open an ingestion-job record.';

comment on function hipocampo.finish_ingestion_job(uuid, text, jsonb, jsonb) is
'Close an ingestion-job record with its status, counts and errors.';

/*
rows_to_embed(kind text, batch_size integer default 100, after_id text default null)
  -> table (row_id text, content text)

Purpose: rows that search cannot read with the active model - no embedding, or one of another
  model: active memories ('memories') and staged memories ('memory_staging') with their
  description, messages ('messages') with their content. The listed rows stay locked (for update
  skip locked) until the caller's transaction ends: store their vectors with set_row_embeddings
  in the same transaction; concurrent workers take other rows.
Parameters: kind memories | memory_staging | messages; batch_size 1..1000 rows; after_id - only
  rows with a greater id (a caller's cursor: a memory's uuid, a message's number, as text).
Returns: at most batch_size rows by id: row_id (the id as text) and the text to embed.
Errors: 22023 "kind must be memories, memory_staging or messages"; 22023 "batch_size must be
  1..1000"; 55000 "no embedding model is active".
Example: select row_id, content from hipocampo.rows_to_embed('messages', 100);
*/
create or replace function hipocampo.rows_to_embed(kind text, batch_size integer default 100, after_id text default null)
returns table (row_id text, content text)
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
    model text;
begin
    if kind is null or kind not in ('memories', 'memory_staging', 'messages') then
        raise exception 'kind must be memories, memory_staging or messages' using errcode = '22023';
    end if;
    if batch_size is null or batch_size not between 1 and 1000 then
        raise exception 'batch_size must be 1..1000' using errcode = '22023';
    end if;
    select e.name into model from hipocampo_private.embedding_models as e where e.active;
    if model is null then
        raise exception 'no embedding model is active' using errcode = '55000';
    end if;
    if kind = 'memories' then
        return query
        select m.id::text, m.description from hipocampo_private.memories as m
        where m.status = 'active' and m.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or m.id > rows_to_embed.after_id::uuid)
        order by m.id
        limit batch_size
        for update of m skip locked;
    elsif kind = 'memory_staging' then
        return query
        select s.id::text, s.description from hipocampo_private.memory_staging as s
        where s.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or s.id > rows_to_embed.after_id::uuid)
        order by s.id
        limit batch_size
        for update of s skip locked;
    else
        return query
        select m.id::text, m.content from hipocampo_private.messages as m
        where m.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or m.id > rows_to_embed.after_id::bigint)
        order by m.id
        limit batch_size
        for update of m skip locked;
    end if;
end;
$$;

/*
set_row_embeddings(kind text, items jsonb) -> integer

Purpose: store embeddings of the active model for rows rows_to_embed listed. A row that already
  has an embedding of the active model keeps it (a repeated call changes nothing). A message's
  tokens belong to its embedding's model, so they are cleared with it (the token backfill,
  messages_without_tokens, lists the message again).
Parameters: kind as rows_to_embed; items - [{"id": "<uuid, or a message's number>", "embedding":
  [floats]}].
Returns: the number of rows updated.
Errors: 22023 "kind must be memories, memory_staging or messages"; 22023 "items must be a json
  array"; 22000 "embedding has N dimensions; model M expects D"; 55000 "no embedding model is active".
Example: select hipocampo.set_row_embeddings('messages', '[{"id": "42", "embedding": [0.1, …]}]');
*/
create or replace function hipocampo.set_row_embeddings(kind text, items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    item jsonb;
    v extensions.vector;
    model text;
    n integer := 0;
    one integer;
begin
    if kind is null or kind not in ('memories', 'memory_staging', 'messages') then
        raise exception 'kind must be memories, memory_staging or messages' using errcode = '22023';
    end if;
    if items is null or jsonb_typeof(items) <> 'array' then
        raise exception 'items must be a json array' using errcode = '22023';
    end if;
    if not exists (select 1 from hipocampo_private.embedding_models as e where e.active) then
        raise exception 'no embedding model is active' using errcode = '55000';
    end if;
    for item in select x from jsonb_array_elements(items) as x loop
        v := (item ->> 'embedding')::extensions.vector;
        model := hipocampo_private._active_model(v, 'embedding');
        if kind = 'memories' then
            update hipocampo_private.memories as m set embedding = v, embedding_model = model
            where m.id = (item ->> 'id')::uuid and m.embedding_model is distinct from model;
        elsif kind = 'memory_staging' then
            update hipocampo_private.memory_staging as s set embedding = v, embedding_model = model
            where s.id = (item ->> 'id')::uuid and s.embedding_model is distinct from model;
        else
            update hipocampo_private.messages as m
            set embedding = v, embedding_model = model, token_ids = null, token_bits = null
            where m.id = (item ->> 'id')::bigint and m.embedding_model is distinct from model;
        end if;
        get diagnostics one = row_count;
        n := n + one;
    end loop;
    return n;
end;
$$;

comment on function hipocampo.rows_to_embed(text, integer, text) is
'Active and staged memories and messages without an embedding of the active model (locked for the caller''s transaction): the work list after a model switch.';

comment on function hipocampo.set_row_embeddings(text, jsonb) is
'Store embeddings of the active model for rows rows_to_embed listed (a message''s tokens are cleared with its old embedding).';

create index ingestion_jobs_running_idx on hipocampo_private.ingestion_jobs (heartbeat_at)
where status = 'running';

comment on column hipocampo_private.ingestion_jobs.heartbeat_at is
'Last sign of life of the running job (start, heartbeat_ingestion_job); a job silent for longer than maintenance.ingestion_lease_seconds is interrupted.';

/*
heartbeat_ingestion_job(job_id uuid) -> void

Purpose: renew a running job's lease (heartbeat_at = now()). Clients call it at least every
  maintenance.ingestion_lease_seconds (300 s) while they work.
Errors: 42501 as _caller; P0002 "ingestion job … is not running" (unknown, finished, or already
  marked interrupted: the client should stop and report it).
Example: select hipocampo.heartbeat_ingestion_job('…');
*/
create or replace function hipocampo.heartbeat_ingestion_job(job_id uuid)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._caller();
    update hipocampo_private.ingestion_jobs as j set heartbeat_at = now()
    where j.id = heartbeat_ingestion_job.job_id and j.status = 'running';
    if not found then
        raise exception 'ingestion job % is not running', job_id using errcode = 'P0002';
    end if;
end;
$$;

/*
recover_ingestion_jobs(now timestamptz default now(), kb_id uuid default null) -> jsonb

Purpose: mark running jobs whose lease expired (heartbeat_at older than
  maintenance.ingestion_lease_seconds) as failed, with the error {"error": "interrupted: no
  heartbeat since …"}, and give each of their knowledge bases left 'indexing' with no running
  job its status back: ready when it holds documents, error otherwise. Optionally only one
  knowledge base.
Parameters: now - the time to judge leases by (service_role only; users always use now());
  kb_id - only this knowledge base (null: every one the caller sees: a tenant admin their
  tenant's, service_role all).
Returns: {"interrupted": n jobs, "knowledge_bases": n statuses recomputed}.
Errors: 42501 as _caller; 55000 "maintenance config is incomplete: ingestion_lease_seconds …".
Example: select hipocampo.recover_ingestion_jobs();
*/
create or replace function hipocampo.recover_ingestion_jobs(now timestamptz default now(), kb_id uuid default null)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
    lease integer := (select (s.config -> 'maintenance' ->> 'ingestion_lease_seconds')::integer
                      from hipocampo_private.settings as s where s.tenant_id is null);
    at timestamptz := case when c.kind = 'service' then coalesce(recover_ingestion_jobs.now, now()) else now() end;
    kbs uuid [];
    n_jobs integer;
    n_kbs integer;
begin
    if lease is null then
        raise exception 'maintenance config is incomplete: ingestion_lease_seconds (seed it from config.toml: hipocampo db migrate)'
            using errcode = '55000';
    end if;
    -- RLS limits a tenant admin to their tenant's jobs and knowledge bases.
    with gone as (
        update hipocampo_private.ingestion_jobs as j set
            status = 'failed',
            finished_at = at,
            errors = j.errors || jsonb_build_array(jsonb_build_object(
                'error', format('interrupted: no heartbeat since %s (lease %s s)', j.heartbeat_at, lease)))
        where j.status = 'running' and j.heartbeat_at < at - make_interval(secs => lease)
          and (recover_ingestion_jobs.kb_id is null or j.kb_id = recover_ingestion_jobs.kb_id)
        returning j.kb_id
    )
    select count(*), array_agg(distinct g.kb_id) into n_jobs, kbs from gone as g;
    update hipocampo_private.knowledge_bases as k set
        status = case when exists (select 1 from hipocampo_private.documents as d where d.kb_id = k.id)
            then 'ready' else 'error' end
    where k.status = 'indexing' and k.id = any(kbs)
      and not exists (select 1 from hipocampo_private.ingestion_jobs as j where j.kb_id = k.id and j.status = 'running');
    get diagnostics n_kbs = row_count;
    return jsonb_build_object('interrupted', n_jobs, 'knowledge_bases', n_kbs);
end;
$$;

comment on function hipocampo.heartbeat_ingestion_job(uuid) is 'Renew a running ingestion job''s lease.';

comment on function hipocampo.recover_ingestion_jobs(timestamptz, uuid) is
'Mark running ingestion jobs whose lease expired as failed (interrupted) and recompute their knowledge bases'' status.';

-- What the Python package read from hipocampo_private directly gets an RPC (issue 17 §2: Python
-- calls the public surface only): the tenant of a slug (Hipocampo.tenant_id), the documents of a
-- knowledge base (the agents' store clear, and a document listing for clients), a user's
-- membership role (the CLI's "make the local user a member" without demoting an admin), the
-- caller's memories without a vector (Memory.embed_missing), and the active embedding model
-- (the backfills' check).
/*
tenant_by_slug(slug text) -> uuid

Purpose: the id of the tenant with this slug, as the caller may see it: any tenant for
  service_role, the caller's own tenant for a member (null for another tenant's slug).
Parameters: slug - the tenant's slug.
Returns: the tenant id, or null.
Errors: 42501 as _caller; 22023 "slug must not be null".
Example: select hipocampo.tenant_by_slug('demo');
*/
create or replace function hipocampo.tenant_by_slug(slug text)
returns uuid
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
begin
    if tenant_by_slug.slug is null then
        raise exception 'slug must not be null' using errcode = '22023';
    end if;
    return (
        select t.id from hipocampo_private.tenants as t
        where t.slug = tenant_by_slug.slug and (c.kind = 'service' or t.id = c.tenant_id)
    );
end;
$$;

/*
list_documents(kb_id uuid) -> table (id, title, source_uri, source_type, doc_type, status,
  trust_score, chunk_count, content_hash, published_at, expires_at, created_at, updated_at)

Purpose: the documents of a knowledge base, by source_uri (RLS: the caller's tenant).
Parameters: kb_id - the knowledge base.
Returns: one row per document; trust_score 0..1; chunk_count chunks of the document (all models).
Errors: 42501 as _caller; P0002 "unknown knowledge base: …".
Example: select title, chunk_count from hipocampo.list_documents('…');
*/
create or replace function hipocampo.list_documents(kb_id uuid)
returns table (
    id uuid, title text, source_uri text, source_type text, doc_type text, status text, trust_score real,
    chunk_count integer, content_hash text, published_at timestamptz, expires_at timestamptz,
    created_at timestamptz, updated_at timestamptz
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(list_documents.kb_id);
begin
    return query
    select d.id, d.title, d.source_uri, d.source_type, d.doc_type, d.status, d.trust_score, d.chunk_count,
        d.content_hash, d.published_at, d.expires_at, d.created_at, d.updated_at
    from hipocampo_private.documents as d
    where d.kb_id = k.id
    order by d.source_uri;
end;
$$;

/*
membership_role(user_id uuid default null, tenant_id uuid default null) -> text

Purpose: a user's role in a tenant: admin | member, or null when not a member. A signed-in user
  asks about themselves; service_role names the user and the tenant.
Errors: 42501 as _memory_actor (no tenant / no user / user mismatch).
Example: select hipocampo.membership_role('…'::uuid, '…'::uuid);  -- as service_role
*/
create or replace function hipocampo.membership_role(user_id uuid default null, tenant_id uuid default null)
returns text
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(membership_role.user_id, membership_role.tenant_id);
begin
    return (
        select m.role from hipocampo_private.memberships as m
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
    );
end;
$$;

/*
memories_without_embedding(keys text[] default null, user_id uuid default null,
  tenant_id uuid default null) -> table (id uuid, key text, description text)

Purpose: the user's active personal memories stored without a vector (written in SQL, e.g. by
  seed_profile), optionally only these keys, for the client to embed (set_memory_embeddings).
Errors: 42501 as _memory_actor.
Example: select * from hipocampo.memories_without_embedding();
*/
create or replace function hipocampo.memories_without_embedding(
    keys text[] default null, user_id uuid default null, tenant_id uuid default null
)
returns table (id uuid, key text, description text)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(memories_without_embedding.user_id,
        memories_without_embedding.tenant_id);
begin
    return query
    select m.id, m.key, m.description
    from hipocampo_private.memories as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.scope = 'personal'
      and m.status = 'active' and m.embedding is null
      and (memories_without_embedding.keys is null or m.key = any(memories_without_embedding.keys))
    order by m.key;
end;
$$;

/*
active_embedding_model() -> table (name text, provider text, dims integer, distance text)

Purpose: the embedding model search reads (the registry's active row); no row when none is
  active.
Errors: 42501 as _caller.
Example: select name, dims from hipocampo.active_embedding_model();
*/
create or replace function hipocampo.active_embedding_model()
returns table (name text, provider text, dims integer, distance text)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._caller();
    return query
    select e.name, e.provider, e.dims, e.distance from hipocampo_private.embedding_models as e where e.active;
end;
$$;

comment on function hipocampo.tenant_by_slug(text) is 'The id of the tenant with this slug, as the caller may see it.';

comment on function hipocampo.list_documents(uuid) is 'The documents of a knowledge base.';

comment on function hipocampo.membership_role(uuid, uuid) is 'A user''s role in a tenant (admin | member | null).';

comment on function hipocampo.memories_without_embedding(text[], uuid, uuid) is
'The user''s active personal memories stored without a vector.';

comment on function hipocampo.active_embedding_model() is 'The active embedding model of the registry.';

-- ==================== supabase/schemas/04_pii.sql ====================

/*
cpf_is_valid(digits text) -> boolean / cnpj_is_valid(digits text) -> boolean

Purpose: the check digits of a CPF (11 digits) / CNPJ (14 digits); all-equal digits are invalid.
Example: select hipocampo_private.cpf_is_valid('52998224725'); -- true
*/
create or replace function hipocampo_private.cpf_is_valid(digits text)
returns boolean
language sql
immutable
security invoker
set search_path = ''
as $$
    select coalesce(digits ~ '^[0-9]{11}$' and digits !~ '^(.)\1*$'
        and (select (sum(substr(digits, i, 1)::integer * (11 - i)) * 10 % 11) % 10
             from generate_series(1, 9) as i) = substr(digits, 10, 1)::integer
        and (select (sum(substr(digits, i, 1)::integer * (12 - i)) * 10 % 11) % 10
             from generate_series(1, 10) as i) = substr(digits, 11, 1)::integer, false)
$$;

/*
cnpj_is_valid(digits text) -> boolean

Purpose: the check digits of a CNPJ (14 digits); all-equal digits are invalid.
Example: select hipocampo_private.cnpj_is_valid('11222333000181'); -- true
*/
create or replace function hipocampo_private.cnpj_is_valid(digits text)
returns boolean
language sql
immutable
security invoker
set search_path = ''
as $$
    select coalesce(digits ~ '^[0-9]{14}$' and digits !~ '^(.)\1*$'
        and (select case when r < 2 then 0 else 11 - r end
             from (select sum(substr(digits, i, 1)::integer
                 * ('{5,4,3,2,9,8,7,6,5,4,3,2}'::integer [])[i]) % 11 as r
                 from generate_series(1, 12) as i) as x) = substr(digits, 13, 1)::integer
        and (select case when r < 2 then 0 else 11 - r end
             from (select sum(substr(digits, i, 1)::integer
                 * ('{6,5,4,3,2,9,8,7,6,5,4,3,2}'::integer [])[i]) % 11 as r
                 from generate_series(1, 13) as i) as x) = substr(digits, 14, 1)::integer, false)
$$;

/*
_pii_kind(digits text, groups integer[], span text) -> text

Purpose: the kind of PII a stretch of digits is, or null.
Parameters: digits - the stretch's digits only; groups - the lengths of its digit groups as
  written; span - the stretch as written (separators included).
Returns: 'CPF' | 'CNPJ' | 'TELEFONE' | 'CARTAO' | null.
Example: select hipocampo_private._pii_kind('52998224725', '{3,3,3,2}', '529 982 247 25'); -- CPF
*/
create or replace function hipocampo_private._pii_kind(digits text, groups integer[], span text)
returns text
language sql
immutable
security invoker
set search_path = ''
as $$
    select case
        when char_length(digits) = 11 and hipocampo_private.cpf_is_valid(digits) then 'CPF'
        when char_length(digits) = 14 and hipocampo_private.cnpj_is_valid(digits) then 'CNPJ'
        -- Mobile: DDD (two digits 1-9) + 9 + 8 digits, bare or with 55 / a 0 trunk prefix.
        when digits ~ '^(55|0)?[1-9][1-9]9[0-9]{8}$' then 'TELEFONE'
        -- Landline: DDD + [2-5] + 7 digits, only as written with "(", a "+" or "-" (bare ten
        -- digits are too often other numbers).
        when digits ~ '^(55|0)?[1-9][1-9][2-5][0-9]{7}$' and span ~ '[(+]|[0-9]{4}-[0-9]{4}$' then 'TELEFONE'
        -- Mobile without DDD, only as written 9xxxx-xxxx.
        when digits ~ '^9[0-9]{8}$' and span ~ '^9[0-9]{4}[- ][0-9]{4}$' then 'TELEFONE'
        when char_length(digits) between 13 and 19 and hipocampo_private.luhn_is_valid(digits)
            and (cardinality(groups) = 1
                or array_to_string(groups, ',') ~ '^(4,)+[1-4]$'
                or array_to_string(groups, ',') = '4,6,5'
                or array_to_string(groups, ',') = '4,6,4') then 'CARTAO'
    end
$$;

/*
_pii_scrub(input text) -> (text text, counts jsonb)

Purpose: the one PII scrubber. Replaces e-mails (also "[at]" / "(arroba)" / "[dot]" spelled
  out, "user@[ip]", broken across a line), CPF, CNPJ, phone and card numbers (any separators,
  see the header), and RG (formatted, after "RG", or with a state prefix such as "MG-12.345.678")
  by typed placeholders [EMAIL] [CPF] [CNPJ] [TELEFONE] [CARTAO] [RG]. NBSP and other unicode
  spaces become plain spaces; soft hyphens and zero-width characters are removed. Idempotent.
Parameters: input - any text (null gives null and {}).
Returns: text - the scrubbed text; counts - {"CPF": n, …} of the kinds replaced.
Example: select * from hipocampo_private._pii_scrub('CPF 529 982 247 25, joao[at]x[dot]com');
  -- ('CPF [CPF], [EMAIL]', {"CPF": 1, "EMAIL": 1})
*/
create or replace function hipocampo_private._pii_scrub(input text, out text text, out counts jsonb)
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    -- An @ (a line break may sit beside it), or one spelled out: [at] (arroba) " arroba ".
    at_sign constant text := '(?:@|[ \t]*\r?\n[ \t]*@[ \t]*|@[ \t]*\r?\n[ \t]*'
        || '|[ \t]*[[({<][ \t]*(?:at|arroba)[ \t]*[])}>][ \t]*|[ \t]+arroba[ \t]+)';
    -- A dot (a line break may follow it), or one spelled out: [dot] (ponto) " ponto ".
    dot constant text := '(?:\.(?:[ \t]*\r?\n[ \t]*)?'
        || '|[ \t]*[[({<][ \t]*(?:dot|ponto)[ \t]*[])}>][ \t]*|[ \t]+ponto[ \t]+)';
    loc constant text := '[[:alnum:]_%+-]+';
    -- A domain label; a word hyphenated across a line ("exem-\nplo") is one label.
    dom constant text := '[[:alnum:]_-]+(?:-[ \t]*\r?\n[ \t]*[[:alnum:]_-]+)*';
    number_run constant text
        := '\+?\(?[0-9](?:(?:[ .()/-]{1,3}|[ .()/-]{0,2}[ \t]*\r?\n[ \t]*)[0-9]|[0-9])*';
    email text;
    rg text;
    runs text [];
    gaps text [];
    run text;
    groups text [];
    seps text [];
    g integer;
    i integer;
    j integer;
    best integer;
    kind text;
    piece text;
    digits text;
    out_text text;
    n integer;
    c jsonb := '{}'::jsonb;
begin
    if input is null then
        counts := '{}'::jsonb;
        return;
    end if;
    text := regexp_replace(input, '[\u00a0\u2007\u2009\u202f\u3000]', ' ', 'g');
    text := regexp_replace(text, '[\u00ad\u200b\u200c\u200d\u2060\ufeff]', '', 'g');

    -- E-mails: local part, an @ (or spelled out), a domain of two or more labels (or [ip]).
    email := loc || '(?:\.(?:[ \t]*\r?\n[ \t]*)?' || loc || ')*' || at_sign
        || '(?:\[[0-9a-f.:]+\]|' || dom || '(?:' || dot || dom || ')+)';
    n := coalesce(regexp_count(text, email, 1, 'i'), 0);
    if n > 0 then
        text := regexp_replace(text, email, '[EMAIL]', 'gi');
        c := c || jsonb_build_object('EMAIL', n);
    end if;

    -- Numbers: runs of digits joined by short separators, read group by group.
    runs := array(select m[1] from regexp_matches(text, '(' || number_run || ')', 'g') as m);
    if cardinality(runs) > 0 then
        gaps := regexp_split_to_array(text, number_run);
        out_text := gaps[1];
        for r in 1 .. cardinality(runs) loop
            run := runs[r];
            if char_length(regexp_replace(run, '[^0-9]', '', 'g')) < 9 then
                out_text := out_text || run || gaps[r + 1];
                continue;
            end if;
            groups := array(select m[1] from regexp_matches(run, '([0-9]+)', 'g') as m);
            seps := regexp_split_to_array(run, '[0-9]+');  -- seps[1] prefix, seps[i + 1] after group i
            g := cardinality(groups);
            piece := seps[1];
            i := 1;
            while i <= g loop
                best := null;
                kind := null;
                j := least(g, i + 6);
                while j >= i and best is null loop
                    digits := array_to_string(groups[i:j], '');
                    -- A stretch of several groups neither starts with nor holds two one-digit
                    -- groups (a list of small numbers is not a phone number).
                    if char_length(digits) between 9 and 19 and (i = j or (char_length(groups[i]) > 1
                        and (select count(*) from unnest(groups[i:j]) as x where char_length(x) = 1) < 2))
                    then
                        kind := hipocampo_private._pii_kind(digits,
                            array(select char_length(x) from unnest(groups[i:j]) as x),
                            (case when i = 1 then seps[1] else '' end)
                            || (select string_agg(groups[x] || case when x < j then seps[x + 1] else '' end, ''
                                order by x) from generate_series(i, j) as x));
                        if kind is not null then
                            best := j;
                        end if;
                    end if;
                    j := j - 1;
                end loop;
                if best is null then
                    piece := piece || groups[i] || seps[i + 1];
                    i := i + 1;
                else
                    if i = 1 then
                        piece := '';  -- the "+" / "(" written before the number goes with it
                    end if;
                    piece := piece || '[' || kind || ']' || seps[best + 1];
                    c := c || jsonb_build_object(kind, coalesce((c ->> kind)::integer, 0) + 1);
                    i := best + 1;
                end if;
            end loop;
            out_text := out_text || piece || gaps[r + 1];
        end loop;
        text := out_text;
    end if;

    -- RG: formatted (12.345.678-9), after "RG" (RG nº 1234567), or with a state prefix.
    rg := '(?<![0-9.])[0-9]{1,2}\.[0-9]{3}\.[0-9]{3}-[0-9Xx](?![0-9])'
        || '|\m[Rr][Gg]\M[ \t]*(?:n[º°o.]*[ \t]*)?[:-]?[ \t]*[0-9Xx][0-9.Xx-]{4,13}[0-9Xx]'
        || '|\m(?:AC|AL|AP|AM|BA|CE|DF|ES|GO|MA|MT|MS|MG|PA|PB|PR|PE|PI|RJ|RN|RS|RO|RR|SC|SP|SE|TO)'
        || '[ -]?[0-9]{1,2}\.?[0-9]{3}\.?[0-9]{3}(?:-?[0-9Xx])?(?![0-9])';
    n := coalesce(regexp_count(text, rg), 0);
    if n > 0 then
        text := regexp_replace(text, rg, '[RG]', 'g');
        c := c || jsonb_build_object('RG', n);
    end if;
    counts := c;
end;
$$;

/*
_pii_scrub_jsonb(value jsonb) -> jsonb

Purpose: value with every string leaf scrubbed by _pii_scrub (keys kept; numbers, booleans and
  nulls unchanged). Used on chunk metadata.
Example: select hipocampo_private._pii_scrub_jsonb('{"title": "contrato 529.982.247-25"}');
  -- {"title": "contrato [CPF]"}
*/
create or replace function hipocampo_private._pii_scrub_jsonb(value jsonb)
returns jsonb
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
begin
    return case jsonb_typeof(value)
        when 'string' then to_jsonb((hipocampo_private._pii_scrub(value #>> '{}')).text)
        when 'object' then coalesce((select jsonb_object_agg(e.key, hipocampo_private._pii_scrub_jsonb(e.value))
            from jsonb_each(value) as e), '{}'::jsonb)
        when 'array' then coalesce((select jsonb_agg(hipocampo_private._pii_scrub_jsonb(e.value) order by e.n)
            from jsonb_array_elements(value) with ordinality as e (value, n)), '[]'::jsonb)
        else value
    end;
end;
$$;

/*
scrub_pii(texts text[]) -> table (text text, counts jsonb)

Purpose: the database's PII scrubber (_pii_scrub) for clients that must scrub before they hash,
  chunk or embed (the Python ingestion scrubs each document's text, title and source_uri through
  it; the guardrails refuse a question whose counts name a CPF or a card). Pure: reads and
  writes nothing.
Parameters: texts - the texts, in order (nulls give null and {}).
Returns: one row per text, in the order given: the scrubbed text and the counts per kind
  ({"CPF": 1, "EMAIL": 2}; kinds CPF, CNPJ, RG, EMAIL, TELEFONE, CARTAO).
Errors: none of its own.
Example: select * from hipocampo.scrub_pii(array['CPF 529 982 247 25', 'ok']);
*/
create or replace function hipocampo.scrub_pii(texts text[])
returns table (text text, counts jsonb)
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    select s.text, s.counts
    from unnest(texts) with ordinality as t (value, n)
    cross join lateral hipocampo_private._pii_scrub(t.value) as s
    order by t.n
$$;

/*
_scrub_document() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of documents: title, source_uri and author scrubbed of
  PII (_pii_scrub), whoever writes the row.
*/
create or replace function hipocampo_private._scrub_document()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    new.title := (hipocampo_private._pii_scrub(new.title)).text;
    new.source_uri := (hipocampo_private._pii_scrub(new.source_uri)).text;
    new.author := (hipocampo_private._pii_scrub(new.author)).text;
    return new;
end;
$$;

/*
_scrub_chunk() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of chunks: content and every string of metadata scrubbed
  of PII, before the tsvector is computed and the BM25 statistics triggers read it.
*/
create or replace function hipocampo_private._scrub_chunk()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    new.content := (hipocampo_private._pii_scrub(new.content)).text;
    new.metadata := hipocampo_private._pii_scrub_jsonb(new.metadata);
    return new;
end;
$$;

/*
_scrub_job_errors() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of ingestion_jobs: every string of errors scrubbed of PII
  (error lines name files).
*/
create or replace function hipocampo_private._scrub_job_errors()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    new.errors := hipocampo_private._pii_scrub_jsonb(new.errors);  -- error lines name files
    return new;
end;
$$;

create trigger documents_scrub_pii
before insert or update of title, source_uri, author on hipocampo_private.documents
for each row execute function hipocampo_private._scrub_document();

create trigger chunks_scrub_pii
before insert or update of content, metadata on hipocampo_private.chunks
for each row execute function hipocampo_private._scrub_chunk();

create trigger ingestion_jobs_scrub_pii
before insert or update of errors on hipocampo_private.ingestion_jobs
for each row execute function hipocampo_private._scrub_job_errors();

comment on function hipocampo.scrub_pii(text[]) is
'The PII scrubber: each text with CPF, CNPJ, RG, e-mail, phone and card numbers replaced by typed placeholders, and the counts per kind.';

-- ==================== supabase/schemas/05_hybrid_search.sql ====================

/*
_touch_chunks(ids bigint[], tenant_id uuid) -> void

Purpose: set last_accessed_at of the chunks just read (at most once every 5 minutes per chunk),
  only the given tenant's, which must be the caller's (service_role: any).
Errors: 42501 as _resolve_tenant.
Example: perform hipocampo_private._touch_chunks(array[1, 2], t);
*/
-- definer because members may read chunks but are granted no update on them.
create or replace function hipocampo_private._touch_chunks(ids bigint[], tenant_id uuid)
returns void
language plpgsql
security definer
set search_path = ''
as $$
begin
    perform hipocampo_private._resolve_tenant(_touch_chunks.tenant_id);
    update hipocampo_private.chunks as c
    set last_accessed_at = now()
    where c.id = any(_touch_chunks.ids)
      -- "is not distinct from" (tenant_id is never null) is no index condition: the tenant is
      -- checked on the rows found by primary key.
      and c.tenant_id is not distinct from _touch_chunks.tenant_id
      and (c.last_accessed_at is null or c.last_accessed_at < now() - interval '5 minutes');
end;
$$;

/*
_mmr(embeddings vector[], relevance double precision[], k integer, lambda double precision,
  dup double precision) -> integer[]

Purpose: maximal marginal relevance over candidates already ranked best first: repeatedly pick
  argmax(lambda * relevance - (1 - lambda) * max cosine to the picked ones), skipping any
  candidate whose cosine to a picked one exceeds dup (near-duplicate). lambda = 1 keeps the
  ranking and only drops near-duplicates.
Returns: the positions (1-based) of at most k picked candidates, in pick order.
Example: select hipocampo_private._mmr(array[…]::extensions.vector[], array[1, 0.5], 5, 0.5, 0.97);
*/
create or replace function hipocampo_private._mmr(
    embeddings extensions.vector[], relevance double precision[], k integer,
    lambda double precision, dup double precision
)
returns integer[]
language plpgsql
immutable
security invoker
set search_path = ''
as $$
declare
    n integer := coalesce(cardinality(embeddings), 0);
    taken boolean[] := array_fill(false, array[greatest(n, 1)]);
    picked integer[] := '{}';
    best integer;
    best_score double precision;
    s double precision;
    max_sim double precision;
    i integer;
    j integer;
begin
    while cardinality(picked) < k loop
        best := null;
        for i in 1..n loop
            continue when taken[i];
            max_sim := 0;
            foreach j in array picked loop
                max_sim := greatest(max_sim, 1 - (embeddings[i] operator(extensions.<=>) embeddings[j]));
            end loop;
            if max_sim > dup then
                taken[i] := true;
                continue;
            end if;
            s := lambda * relevance[i] - (1 - lambda) * max_sim;
            if best is null or s > best_score then
                best := i;
                best_score := s;
            end if;
            -- With lambda = 1 the first remaining candidate is the best.
            exit when lambda = 1;
        end loop;
        exit when best is null;
        taken[best] := true;
        picked := picked || best;
    end loop;
    return picked;
end;
$$;

/*
hybrid_search(query_text text, query_embedding vector, kb_ids uuid[] default null,
  source_types text[] default null, metadata_filter jsonb default null,
  match_count integer default null, min_similarity double precision default null,
  fusion text default null, dense_weight double precision default null,
  lexical_weight double precision default null, rerank text default null,
  mmr_lambda double precision default null, embedding_model text default null,
  tenant_id uuid default null) -> setof record

Purpose: the hybrid retrieval RPC (PostgREST: POST /rpc/hybrid_search with named arguments).
  Every null argument takes its value from the config rows (hipocampo.effective_config,
  section retrieval).
Parameters:
  query_text       1..retrieval.max_query_chars (2,000) characters.
  query_embedding  the query vector, dims of the model (L2-normalised).
  kb_ids           knowledge bases to search (null = all of the tenant's).
  source_types     filter on documents.source_type (null = any).
  metadata_filter  jsonb containment filter on chunks.metadata, e.g. {"article": "Art. 5"}.
  match_count      rows returned, 1..100 (retrieval.match_count, 5).
  min_similarity   cosine similarity floor of the dense leg, -1..1 (retrieval.min_similarity,
                   0.25, calibrated per model).
  fusion           'score' (z-score weighted sum) | 'rrf' (reciprocal rank, k = rrf_k).
  dense_weight, lexical_weight  weights of the two legs, 0..100, not both 0.
  rerank           'none' | 'trust_recency' (similarity*0.6 + trust*0.4 + freshness*0.2, seed 004).
  mmr_lambda       0..1; 1 = relevance only, 0.5 = seed MMR.
  embedding_model  null = the active model.
  tenant_id        only for service_role; others use their JWT tenant.
Returns: chunk_id, document_id, kb_id, chunk_index, content, metadata, title, source_uri,
  source_type, author, published_at, trust_score, dense_score (cosine similarity or null),
  lexical_score (BM25 or null), fused_score, final_score, rank (1-based).
Errors:
  42501 as _resolve_tenant;
  22023 "query_text must be 1..2000 characters" (empty, blank or too long);
  22023 "query_embedding is required"; 22000 "query_embedding has n dimensions; model m expects d";
  22023 "match_count must be 1..100 (got n)", and on an out-of-range min_similarity, mmr_lambda,
  weight, fusion or rerank; P0002 "unknown knowledge base: …"; P0002 "unknown embedding model: …";
  55000 "retrieval config is incomplete: …" (a config row without a key config.toml seeds).
Example:
  select rank, title, final_score from hipocampo.hybrid_search(
    query_text => 'prazo para trancamento de matrícula',
    query_embedding => '[0.01, …]'::extensions.vector,
    kb_ids => array['…']::uuid[], match_count => 5);
*/
create or replace function hipocampo.hybrid_search(
    query_text text,
    query_embedding extensions.vector,
    kb_ids uuid[] default null,
    source_types text[] default null,
    metadata_filter jsonb default null,
    match_count integer default null,
    min_similarity double precision default null,
    fusion text default null,
    dense_weight double precision default null,
    lexical_weight double precision default null,
    rerank text default null,
    mmr_lambda double precision default null,
    embedding_model text default null,
    tenant_id uuid default null
)
returns table (
    chunk_id bigint,
    document_id uuid,
    kb_id uuid,
    chunk_index integer,
    content text,
    metadata jsonb,
    title text,
    source_uri text,
    source_type text,
    author text,
    published_at timestamptz,
    trust_score real,
    dense_score double precision,
    lexical_score double precision,
    fused_score double precision,
    final_score double precision,
    rank integer
)
language plpgsql
security invoker
set search_path = ''
as $$
declare
    started timestamptz := clock_timestamp();
    t uuid := hipocampo_private._resolve_tenant(hybrid_search.tenant_id);
    cfg jsonb;
    r jsonb;
    model text;
    dims integer;
    scope uuid [];
    scope_rows bigint;
    k integer;
    n_cand integer;
    min_sim double precision;
    fuse text;
    w_dense double precision;
    w_lex double precision;
    rrf_k double precision;
    rr text;
    lambda double precision;
    dup double precision;
    k1 double precision;
    b double precision;
    half_life double precision;
    exact_max bigint;
    dense_sql text;
    d_ids bigint [];
    d_sims double precision [];
    t_kb uuid [];
    t_lex text [];
    t_idf double precision [];
    t_avg double precision [];
    s_ids bigint [];
    s_scores double precision [];
    l_ids bigint [];
    l_scores double precision [];
    lim integer;
    f_ids bigint [];
    f_sim double precision [];
    f_score double precision [];
    f_fused double precision [];
    f_final double precision [];
    f_emb extensions.vector [];
    c_rel double precision [];
    sel_pos integer [] := '{}';
    n integer;
    s double precision;
    i integer;
    pass integer;
    above bigint;
begin
    if query_text is null or btrim(query_text) = '' then
        raise exception 'query_text must be 1..2000 characters (got an empty query)'
            using errcode = '22023';
    end if;
    if query_embedding is null then
        raise exception 'query_embedding is required' using errcode = '22023';
    end if;

    -- The model and the scope.
    if hybrid_search.embedding_model is null then
        select e.name, e.dims into model, dims from hipocampo_private.embedding_models as e
        where e.active;
    else
        select e.name, e.dims into model, dims from hipocampo_private.embedding_models as e
        where e.name = hybrid_search.embedding_model;
    end if;
    if model is null then
        raise exception 'unknown embedding model: %',
            coalesce(hybrid_search.embedding_model, '(no active model)') using errcode = 'P0002';
    end if;
    if extensions.vector_dims(query_embedding) <> dims then
        raise exception 'query_embedding has % dimensions; model % expects %',
            extensions.vector_dims(query_embedding), model, dims using errcode = '22000';
    end if;

    select array_agg(kb.id) into scope from hipocampo_private.knowledge_bases as kb
    where kb.tenant_id = t and (hybrid_search.kb_ids is null or kb.id = any(hybrid_search.kb_ids));
    if hybrid_search.kb_ids is not null
        and coalesce(cardinality(scope), 0) < cardinality(array(select distinct unnest(hybrid_search.kb_ids))) then
        raise exception 'unknown knowledge base: %',
            (select string_agg(x::text, ', ') from unnest(hybrid_search.kb_ids) as x
             where x <> all(coalesce(scope, '{}'))) using errcode = 'P0002';
    end if;
    scope := coalesce(scope, '{}');

    -- Parameters: argument, else KB override (single KB), else tenant row, else global row
    -- (seeded from config.toml: no values of its own here).
    cfg := hipocampo.effective_config(
        t, case when cardinality(scope) = 1 then scope[1] end
    );
    r := coalesce(cfg -> 'retrieval', '{}'::jsonb);
    if exists (
        select 1 from unnest(array[
            'max_query_chars', 'match_count', 'min_similarity', 'fusion', 'dense_weight',
            'lexical_weight', 'rrf_k', 'rerank', 'mmr_lambda', 'dedupe_threshold', 'bm25_k1', 'bm25_b',
            'freshness_half_life_days', 'exact_scan_max_rows', 'candidate_multiplier', 'min_candidates',
            'hnsw_ef_search'
        ]) as key
        where r -> key is null or r -> key = 'null'::jsonb
    ) then
        raise exception 'retrieval config is incomplete: seed it from config.toml (hipocampo db migrate)'
            using errcode = '55000';
    end if;
    if char_length(query_text) > (r ->> 'max_query_chars')::integer then
        raise exception 'query_text must be 1..% characters (got %)',
            (r ->> 'max_query_chars')::integer, char_length(query_text)
            using errcode = '22023';
    end if;
    k := coalesce(hybrid_search.match_count, (r ->> 'match_count')::integer);
    min_sim := coalesce(hybrid_search.min_similarity, (r ->> 'min_similarity')::double precision);
    fuse := coalesce(hybrid_search.fusion, r ->> 'fusion');
    w_dense := coalesce(hybrid_search.dense_weight, (r ->> 'dense_weight')::double precision);
    w_lex := coalesce(hybrid_search.lexical_weight, (r ->> 'lexical_weight')::double precision);
    rrf_k := (r ->> 'rrf_k')::double precision;
    rr := coalesce(hybrid_search.rerank, r ->> 'rerank');
    lambda := coalesce(hybrid_search.mmr_lambda, (r ->> 'mmr_lambda')::double precision);
    dup := (r ->> 'dedupe_threshold')::double precision;
    k1 := (r ->> 'bm25_k1')::double precision;
    b := (r ->> 'bm25_b')::double precision;
    half_life := (r ->> 'freshness_half_life_days')::double precision;
    exact_max := (r ->> 'exact_scan_max_rows')::bigint;

    if k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    -- After the range check: k * candidate_multiplier overflowed integer for k = -2^31 (22003).
    n_cand := greatest(k * (r ->> 'candidate_multiplier')::integer, (r ->> 'min_candidates')::integer);
    if min_sim < -1 or min_sim > 1 then
        raise exception 'min_similarity must be -1..1 (got %)', min_sim using errcode = '22023';
    end if;
    if lambda < 0 or lambda > 1 then
        raise exception 'mmr_lambda must be 0..1 (got %)', lambda using errcode = '22023';
    end if;
    if w_dense < 0 or w_lex < 0 or w_dense + w_lex = 0 or w_dense > 100 or w_lex > 100 then
        raise exception 'dense_weight and lexical_weight must be 0..100, not both 0'
            using errcode = '22023';
    end if;
    if fuse not in ('score', 'rrf') then
        raise exception 'fusion must be score or rrf (got %)', fuse using errcode = '22023';
    end if;
    if rr not in ('none', 'trust_recency') then
        raise exception 'rerank must be none or trust_recency (got %)', rr using errcode = '22023';
    end if;

    -- Dense leg. Large scopes: the typed cast matches the model's partial HNSW index
    -- (vector_cosine_ops <-> <=>), with pgvector's iterative scan so filters still leave n_cand
    -- rows. Small scopes are scanned exactly, uncast ("+ 0" keeps the planner off the index).
    select coalesce(sum(st.chunk_count), 0) into scope_rows from hipocampo_private.kb_text_stats as st
    where st.kb_id = any(scope) and st.embedding_model = model;
    if scope_rows > exact_max then
        perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
        perform set_config('hnsw.ef_search',
            greatest((r ->> 'hnsw_ef_search')::integer, n_cand)::text, true);
    end if;
    -- Nearest chunks first (chunk-level filters only), then document filters on those: the
    -- best 4 * n_cand first, every chunk of the scope only when that leaves fewer than n_cand.
    dense_sql := format(
        'with nn as ('
        'select c.id, c.document_id, 1 - (c.embedding%1$s operator(extensions.<=>) $1) as sim '
        'from hipocampo_private.chunks as c '
        'where c.tenant_id = $2 and c.kb_id = any($3) and c.embedding_model = $4 '
        'and ($6::jsonb is null or c.metadata @> $6) '
        'and (c.expires_at is null or c.expires_at > now()) '
        'order by (c.embedding%1$s operator(extensions.<=>) $1)%2$s '
        'limit $9), '
        'ok as (select nn.id, nn.sim from nn '
        'join hipocampo_private.documents as d on d.id = nn.document_id '
        'where d.status = ''active'' and ($5::text[] is null or d.source_type = any($5)) '
        'and nn.sim >= $8 order by nn.sim desc, nn.id limit $7) '
        'select coalesce(array_agg(ok.id order by ok.sim desc, ok.id), ''{}''), '
        'coalesce(array_agg(ok.sim order by ok.sim desc, ok.id), ''{}''), '
        '(select count(*) from nn where nn.sim >= $8) from ok',
        case when scope_rows > exact_max then format('::extensions.vector(%s)', dims) else '' end,
        case when scope_rows > exact_max then '' else ' + 0' end
    );
    for pass in 1..2 loop
        lim := case when pass = 1 then n_cand * 4 else scope_rows + 1 end;
        execute dense_sql
        into d_ids, d_sims, above
        using query_embedding, t, scope, model, hybrid_search.source_types,
              hybrid_search.metadata_filter, n_cand, min_sim, lim;
        -- Again without the limit only when document filters dropped candidates we need.
        exit when cardinality(d_ids) >= n_cand or lim > scope_rows or above <= cardinality(d_ids);
    end loop;

    -- Lexical leg: Okapi BM25 with OR semantics over the query's stemmed, unaccented lexemes
    -- (the KB's language), read from the inverted index kb_postings: one primary-key range per
    -- term, then arithmetic. idf and the average length come from the per-KB statistics.
    select
        coalesce(array_agg(q.kb_id), '{}'),
        coalesce(array_agg(q.lexeme), '{}'),
        coalesce(array_agg(ln(1 + (st.chunk_count - ts.doc_freq + 0.5) / (ts.doc_freq + 0.5))), '{}'),
        coalesce(array_agg(st.token_total::double precision / greatest(st.chunk_count, 1)), '{}')
    into t_kb, t_lex, t_idf, t_avg
    from (
        select distinct kb.id as kb_id, u.lexeme
        from hipocampo_private.knowledge_bases as kb
        cross join lateral pg_catalog.unnest(
            pg_catalog.to_tsvector(hipocampo_private.text_search_config(kb.language), query_text)
        ) as u
        where kb.id = any(scope)
    ) as q
    inner join hipocampo_private.kb_term_stats as ts
        on ts.kb_id = q.kb_id and ts.embedding_model = model and ts.lexeme = q.lexeme
    inner join hipocampo_private.kb_text_stats as st
        on st.kb_id = q.kb_id and st.embedding_model = model
    where ts.doc_freq > 0;

    select
        coalesce(array_agg(x.chunk_id order by x.score desc, x.chunk_id), '{}'),
        coalesce(array_agg(x.score order by x.score desc, x.chunk_id), '{}')
    into s_ids, s_scores
    from (
        select p.chunk_id,
            sum(tm.idf * p.tf * (k1 + 1) / (p.tf + k1 * (1 - b + b * p.chunk_length / tm.avg_len))) as score
        from unnest(t_kb, t_lex, t_idf, t_avg) as tm (kb_id, lexeme, idf, avg_len)
        -- One primary-key range per term: "offset 0" keeps the planner from flattening the
        -- lateral subquery into a join it may run as a scan of all the tenant's postings.
        cross join lateral (
            select ps.chunk_id, ps.tf, ps.chunk_length
            from hipocampo_private.kb_postings as ps
            where ps.tenant_id = t and ps.kb_id = tm.kb_id and ps.lexeme = tm.lexeme
            offset 0
        ) as p
        group by p.chunk_id
    ) as x;

    -- Filters (model, status, expiry, source type, metadata) are checked on the best 4 * n_cand
    -- first; only when they leave fewer than n_cand is every scored chunk checked.
    for pass in 1..2 loop
        lim := case when pass = 1 then n_cand * 4 else cardinality(s_ids) end;
        select coalesce(array_agg(f.id order by f.ord), '{}'), coalesce(array_agg(f.score order by f.ord), '{}')
        into l_ids, l_scores
        from (
            select u.id, u.score, u.ord
            from unnest(s_ids[1:lim], s_scores[1:lim]) with ordinality as u (id, score, ord)
            inner join hipocampo_private.chunks as c on c.id = u.id
            inner join hipocampo_private.documents as d on d.id = c.document_id
            where c.embedding_model = model
              and (hybrid_search.source_types is null or d.source_type = any(hybrid_search.source_types))
              and (hybrid_search.metadata_filter is null or c.metadata @> hybrid_search.metadata_filter)
              and d.status = 'active'
              and (c.expires_at is null or c.expires_at > now())
            order by u.ord
            limit n_cand
        ) as f;
        exit when cardinality(l_ids) >= n_cand or cardinality(s_ids) <= n_cand * 4;
    end loop;

    -- Complete the scores: every candidate gets both signals (cosine for lexical-only hits,
    -- BM25 for dense-only hits), so the fusion compares like with like.
    select
        d_ids || coalesce(array_agg(c.id), '{}'),
        d_sims || coalesce(array_agg(1 - (c.embedding operator(extensions.<=>) query_embedding)), '{}')
    into d_ids, d_sims
    from hipocampo_private.chunks as c
    where c.id = any(l_ids) and not c.id = any(d_ids)
      and 1 - (c.embedding operator(extensions.<=>) query_embedding) >= min_sim;
    select l_ids || coalesce(array_agg(x.id), '{}'), l_scores || coalesce(array_agg(x.score), '{}')
    into l_ids, l_scores
    from (
        select c.id, coalesce(sum(
            tm.idf * p.tf * (k1 + 1) / (p.tf + k1 * (1 - b + b * p.chunk_length / tm.avg_len))
        ), 0) as score
        from hipocampo_private.chunks as c
        left join unnest(t_kb, t_lex, t_idf, t_avg) as tm (kb_id, lexeme, idf, avg_len)
            on tm.kb_id = c.kb_id
        -- One primary-key lookup per (chunk, term), as in the lexical leg.
        left join lateral (
            select ps.tf, ps.chunk_length
            from hipocampo_private.kb_postings as ps
            where ps.tenant_id = t and ps.kb_id = c.kb_id and ps.lexeme = tm.lexeme and ps.chunk_id = c.id
            offset 0
        ) as p on true
        where c.id = any(d_ids) and not c.id = any(l_ids)
        group by c.id
    ) as x;

    -- Fusion over the union of both legs, then rerank; ranked candidates into arrays.
    with dense as (
        select u.id, u.sim,
            row_number() over (order by u.sim desc, u.id) as rk,
            (u.sim - avg(u.sim) over ()) / nullif(stddev_pop(u.sim) over (), 0) as z
        from unnest(d_ids, d_sims) as u (id, sim)
    ),
    lex as (
        select u.id, u.score,
            row_number() over (order by u.score desc, u.id) as rk,
            (u.score - avg(u.score) over ()) / nullif(stddev_pop(u.score) over (), 0) as z
        from unnest(l_ids, l_scores) as u (id, score)
    ),
    joined as (
        select coalesce(dense.id, lex.id) as id, dense.sim, lex.score,
            case fuse
                when 'rrf' then
                    w_dense * coalesce(1.0 / (rrf_k + dense.rk), 0)
                    + w_lex * coalesce(1.0 / (rrf_k + lex.rk), 0)
                else
                    w_dense * coalesce(dense.z, (select min(dz.z) from dense as dz), 0)
                    + w_lex * coalesce(lex.z, (select min(lz.z) from lex as lz), 0)
            end as fused
        from dense full outer join lex on lex.id = dense.id
    ),
    scored as (
        select j.*, c.embedding, d.trust_score, d.published_at, c.created_at,
            (j.fused - min(j.fused) over ()) / nullif(max(j.fused) over () - min(j.fused) over (), 0)
                as fused_unit
        from joined as j
        inner join hipocampo_private.chunks as c on c.id = j.id
        inner join hipocampo_private.documents as d on d.id = c.document_id
    ),
    ranked as (
        select s2.*,
            case rr
                when 'trust_recency' then
                    coalesce(s2.fused_unit, 1) * 0.6 + s2.trust_score * 0.4
                    + 0.2 * exp(
                        -greatest(extract(epoch from now() - coalesce(s2.published_at, s2.created_at)), 0)
                        / 86400.0 / half_life
                    )
                else s2.fused
            end as final
        from scored as s2
    )
    select
        array_agg(x.id order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.sim order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.score order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.fused order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.final order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.embedding order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id)
    into f_ids, f_sim, f_score, f_fused, f_final, f_emb
    from ranked as x;

    -- MMR (lambda) with near-duplicate removal (cosine > dedupe_threshold), over positions;
    -- relevance on a 0..1 scale for the trade-off.
    if f_ids is not null then
        n := cardinality(f_ids);
        c_rel := f_final;
        s := f_final[1] - f_final[n];
        for i in 1..n loop
            c_rel[i] := case when s > 0 then (f_final[i] - f_final[n]) / s else 1 end;
        end loop;
        sel_pos := hipocampo_private._mmr(f_emb, c_rel, k, lambda, dup);
    end if;

    return query
    select c.id, c.document_id, c.kb_id, c.chunk_index, c.content, c.metadata,
        d.title, d.source_uri, d.source_type, d.author, d.published_at, d.trust_score,
        f_sim[o.pos], f_score[o.pos], f_fused[o.pos], f_final[o.pos], o.ord::integer
    from unnest(sel_pos) with ordinality as o (pos, ord)
    inner join hipocampo_private.chunks as c on c.id = f_ids[o.pos]
    inner join hipocampo_private.documents as d on d.id = c.document_id
    order by o.ord;

    perform hipocampo_private._touch_chunks(
        array(select f_ids[x] from unnest(sel_pos) as x), t
    );
    perform hipocampo_private._log_access(
        t, 'hybrid_search', cardinality(sel_pos),
        encode(sha256(convert_to(query_text, 'UTF8')), 'hex'),
        extract(epoch from clock_timestamp() - started) * 1000
    );
end;
$$;

-- answer_evidence's near-duplicate lookup scanned every chunk of the knowledge bases for each
-- hit (exact cosine): ~4 ms per hit at 5k chunks, linear in the scope. It now goes through
-- _near_duplicates, which uses the model's partial HNSW index (typed cast, iterative scan) when
-- the scope is larger than retrieval.exact_scan_max_rows, as hybrid_search does.
/*
_near_duplicates(chunk_ids bigint[], kb_ids uuid[], tenant uuid, min_cosine double precision,
  per_chunk integer default 3) -> table (of_chunk_id bigint, chunk_id bigint, distance double precision)

Purpose: for each given chunk, its per_chunk nearest chunks of other documents in these knowledge
  bases of the tenant (same embedding model, not among chunk_ids) whose cosine similarity exceeds
  min_cosine. Nearest first, then the threshold (the same rows as filtering first: the order is by
  distance). Scopes above retrieval.exact_scan_max_rows use the model's partial HNSW index
  (vector_cosine_ops <-> <=>, typed cast, hnsw.iterative_scan relaxed_order); smaller ones are
  scanned exactly.
Parameters: min_cosine in [-1, 1] (answer_evidence passes retrieval.dedupe_threshold); per_chunk >= 1.
Returns: of_chunk_id (the given chunk), chunk_id, distance (cosine distance, 1 - similarity).
Errors: none (chunks the caller cannot see are left out, RLS).
Example: select * from hipocampo_private._near_duplicates(array[12], array[kb], tenant, 0.97);
*/
create or replace function hipocampo_private._near_duplicates(
    chunk_ids bigint[], kb_ids uuid[], tenant uuid, min_cosine double precision, per_chunk integer default 3
)
returns table (of_chunk_id bigint, chunk_id bigint, distance double precision)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record;
    dims integer;
    scope_rows bigint;
    exact_max bigint := (hipocampo.effective_config(_near_duplicates.tenant) -> 'retrieval'
                         ->> 'exact_scan_max_rows')::bigint;
    cast_to text;
begin
    for c in
        select ch.id, ch.document_id, ch.embedding, ch.embedding_model
        from hipocampo_private.chunks as ch
        where ch.id = any(_near_duplicates.chunk_ids)
    loop
        select e.dims into dims from hipocampo_private.embedding_models as e where e.name = c.embedding_model;
        select coalesce(sum(st.chunk_count), 0) into scope_rows from hipocampo_private.kb_text_stats as st
        where st.kb_id = any(_near_duplicates.kb_ids) and st.embedding_model = c.embedding_model;
        cast_to := '';
        if scope_rows > exact_max then
            cast_to := format('::extensions.vector(%s)', dims);
            perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
        end if;
        return query execute format(
            'select $1, y.id, y.distance from ('
            'select c2.id, c2.embedding%1$s operator(extensions.<=>) $2 as distance '
            'from hipocampo_private.chunks as c2 '
            'where c2.tenant_id = $3 and c2.kb_id = any($4) and c2.embedding_model = $5 '
            'and c2.document_id <> $6 and c2.id <> all($7) '
            'order by c2.embedding%1$s operator(extensions.<=>) $2 limit $8'
            ') as y where y.distance < 1 - $9 order by y.distance',
            cast_to
        )
        using c.id, c.embedding, _near_duplicates.tenant, _near_duplicates.kb_ids, c.embedding_model,
              c.document_id, _near_duplicates.chunk_ids, _near_duplicates.per_chunk, _near_duplicates.min_cosine;
    end loop;
end;
$$;

comment on function hipocampo.hybrid_search(
    text, extensions.vector, uuid[], text[], jsonb, integer, double precision, text,
    double precision, double precision, text, double precision, text, uuid
) is
'Hybrid retrieval (dense + BM25, z-score or RRF fusion, rerank, MMR) over the caller''s tenant; logs the access.';

-- ==================== supabase/schemas/06_memory.sql ====================

create table hipocampo_private.memory_consents (
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    user_id uuid not null,
    granted boolean not null,
    -- LGPD art. 7 I: processing with the data subject's consent.
    legal_basis text not null default 'lgpd_art_7_i',
    updated_at timestamptz not null default now(),
    primary key (tenant_id, user_id)
);

alter table hipocampo_private.memory_consents enable row level security;

/*
tags_are_unique(tags text[]) -> boolean

Purpose: whether the array holds no tag twice (a CHECK cannot hold a subquery).
*/
create or replace function hipocampo_private.tags_are_unique(tags text[])
returns boolean
language sql
immutable
security invoker
set search_path = ''
as $$
    select cardinality(tags) = (select count(distinct t) from unnest(tags) as t)
$$;

create table hipocampo_private.memories (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    -- Owner (personal) or author (tenant_shared).
    user_id uuid not null,
    scope text not null default 'personal',
    category text not null,
    key text not null,
    value jsonb not null,
    description text not null,
    confidence real not null,
    status text not null default 'active',
    source text not null,
    source_ref text,
    conversation_id uuid,
    pinned boolean not null default false,
    tags text[] not null,
    emotion text,
    intensity numeric(3, 1),
    life_domain text,
    embedding extensions.vector,
    embedding_model text references hipocampo_private.embedding_models (name),
    emotional_embedding extensions.vector,
    token_count integer not null default 0,
    valid_from timestamptz not null default now(),
    valid_to timestamptz,
    supersedes uuid references hipocampo_private.memories (id) on delete set null,
    access_count integer not null default 0,
    last_accessed_at timestamptz,
    last_decayed_at timestamptz,
    expires_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint memories_scope_check check (scope in ('personal', 'tenant_shared')),
    constraint memories_category_check check (category in (
        'identity_profile', 'tenant_business', 'operating_model', 'goals_kpis',
        'tools_integrations', 'people_contacts', 'projects', 'preference', 'pattern', 'style'
    )),
    constraint memories_key_format check (key ~ '^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$'),
    constraint memories_confidence_range check (confidence between 0 and 1),
    constraint memories_status_check check (status in ('active', 'deprecated', 'deleted', 'expired')),
    constraint memories_source_check check (source in (
        'profile_seed', 'explicit_user', 'inferred', 'admin_system', 'conversation', 'behavior_analysis'
    )),
    -- Tags: at least one, snake_case, no repeats.
    constraint memories_tags_check check (
        cardinality(tags) >= 1
        and array_to_string(tags, ',') ~ '^[a-z][a-z0-9_]*(,[a-z][a-z0-9_]*)*$'
    ),
    constraint memories_emotion_check check (emotion is null or emotion in (
        'alegria', 'tristeza', 'ansiedade', 'raiva', 'medo', 'surpresa', 'calma', 'nojo',
        'frustracao', 'gratidao', 'esperanca', 'orgulho', 'vergonha', 'culpa', 'neutro'
    )),
    constraint memories_intensity_range check (intensity is null or intensity between 0 and 10),
    constraint memories_life_domain_check check (life_domain is null or life_domain in (
        'trabalho', 'relacionamentos', 'saude', 'financas', 'outros'
    )),
    constraint memories_embedding_model check ((embedding is null) = (embedding_model is null)),
    constraint memories_tags_unique check (hipocampo_private.tags_are_unique(tags))
)
-- Room on each page so that the access-count update of every search
-- (hipocampo_private._touch_memories: access_count, last_accessed_at, no indexed column) can be a
-- HOT update: with full pages it writes a new tuple into every index, the HNSW one included.
with (fillfactor = 80);

alter table hipocampo_private.memories enable row level security;

-- Exactly one active memory per (tenant, owner, scope, key); tenant_shared keys are per tenant.
create unique index memories_one_active_per_key on hipocampo_private.memories (
    tenant_id, scope, key,
    (case when scope = 'personal' then user_id else '00000000-0000-0000-0000-000000000000'::uuid end)
)
where status = 'active';

-- RLS filters on tenant_id and user_id; searches scope on (tenant, status).
create index memories_tenant_user_idx on hipocampo_private.memories (tenant_id, user_id, status);

create index memories_tenant_scope_idx on hipocampo_private.memories (tenant_id, scope, status);

create index memories_tags_idx on hipocampo_private.memories using gin (tags);

create index memories_expires_at_idx on hipocampo_private.memories (expires_at)
where expires_at is not null;


create table hipocampo_private.memory_events (
    id bigint generated always as identity primary key,
    at timestamptz not null default now(),
    tenant_id uuid not null,
    -- Pseudonymous after erasure: user_id is replaced by a hash.
    user_id uuid,
    user_ref text,
    memory_id uuid,
    event text not null,
    reason text,
    detail jsonb not null default '{}'::jsonb,
    constraint memory_events_event_check check (event in (
        'memory.write_rejected', 'memory.created', 'memory.updated', 'memory.duplicate',
        'memory.unchanged', 'memory.corrected', 'memory.forgotten', 'memory.hard_deleted',
        'memory.decayed', 'memory.expired', 'memory.consent', 'memory.staged', 'memory.promoted',
        'memory.purged', 'user.exported', 'user.erased'
    ))
);

alter table hipocampo_private.memory_events enable row level security;

create index memory_events_tenant_at_idx on hipocampo_private.memory_events (tenant_id, at);

create index memory_events_tenant_user_idx on hipocampo_private.memory_events (tenant_id, user_id);

create policy "users can read their own consent"
on hipocampo_private.memory_consents
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
);

create policy "users can record their own consent"
on hipocampo_private.memory_consents
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
);

create policy "users can change their own consent"
on hipocampo_private.memory_consents
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
)
with check (user_id = (select auth.uid()));

create policy "users read their personal memories and their tenant's shared ones"
on hipocampo_private.memories
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (user_id = (select auth.uid()) or scope = 'tenant_shared')
);

create policy "users delete their personal memories, admins shared ones"
on hipocampo_private.memories
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
);

create policy "users read their own memory events, admins their tenant's"
on hipocampo_private.memory_events
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (user_id = (select auth.uid()) or (select hipocampo_private.current_tenant_role()) = 'admin')
);

/*
_memory_event(tenant_id uuid, user_id uuid, memory_id uuid, event text, reason text, detail jsonb) -> void

Purpose: append one row to the memory event log. A user appends events of their own tenant about
  themselves only; service_role any.
Errors: 42501 as _memory_actor.
Example: perform hipocampo_private._memory_event(t, u, null, 'memory.consent', null, '{}');
*/
-- definer because callers append events but may never change or delete them.
create or replace function hipocampo_private._memory_event(
    tenant_id uuid, user_id uuid, memory_id uuid, event text, reason text, detail jsonb
)
returns void
language plpgsql
security definer
set search_path = ''
as $$
begin
    if (hipocampo_private._caller()).kind <> 'service' then
        perform hipocampo_private._memory_actor(_memory_event.user_id, _memory_event.tenant_id);
    end if;
    insert into hipocampo_private.memory_events (tenant_id, user_id, memory_id, event, reason, detail)
    values (
        _memory_event.tenant_id, _memory_event.user_id, _memory_event.memory_id,
        _memory_event.event, _memory_event.reason, coalesce(_memory_event.detail, '{}'::jsonb)
    );
end;
$$;

comment on table hipocampo_private.memories is
'Long-term memory: one active row per (tenant, owner, scope, key); history kept as deprecated rows.';

comment on table hipocampo_private.memory_consents is 'Memory consent per user (LGPD art. 7 I).';

comment on table hipocampo_private.memory_events is
'Audit of memory write attempts (with the gate''s reason) and of every change.';

/*
_memory_actor(user_id uuid, tenant_id uuid) -> record (actor_tenant uuid, actor_user uuid)

Purpose: who a memory, conversation or session call acts for, by _caller(): a user acts for
  themselves in their tenant (user_id / tenant_id may repeat them); service_role names both.
Errors: 42501 as _resolve_tenant; 42501 "user mismatch: the JWT names another user" when a user
  names another user; 42501 "no user: service_role must pass user_id".
Example: select actor_tenant, actor_user from hipocampo_private._memory_actor(null, null);
*/
create or replace function hipocampo_private._memory_actor(
    user_id uuid, tenant_id uuid, out actor_tenant uuid, out actor_user uuid
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
begin
    actor_tenant := hipocampo_private._resolve_tenant(_memory_actor.tenant_id);
    if c.kind = 'service' then
        if _memory_actor.user_id is null then
            raise exception 'no user: service_role must pass user_id' using errcode = '42501';
        end if;
        actor_user := _memory_actor.user_id;
        return;
    end if;
    if _memory_actor.user_id is not null and _memory_actor.user_id <> c.user_id then
        raise exception 'user mismatch: the JWT names another user' using errcode = '42501';
    end if;
    actor_user := c.user_id;
end;
$$;

/*
_memory_text_problem(description text, token_count integer, cfg jsonb) -> text[]

Purpose: the gate's checks of a memory's description: length (memory.min_chars characters,
  memory.max_tokens tokens estimated as ceil(characters / 4) unless the client reports more),
  noise (memory.noise), then personal and sensitive data (_pii_problem).
Returns: null, or [reason, message] with reason too_short | too_long | noise | personal_data |
  sensitive_data.
*/
create or replace function hipocampo_private._memory_text_problem(description text, token_count integer, cfg jsonb)
returns text[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    plain text := lower(extensions.unaccent(coalesce(description, '')));
    normalized text := btrim(regexp_replace(plain, '[^a-z0-9 ]+', ' ', 'g'));
begin
    normalized := regexp_replace(normalized, '\s+', ' ', 'g');
    if char_length(btrim(coalesce(description, ''))) < (cfg ->> 'min_chars')::integer then
        return array['too_short', format('memory text must have at least %s characters',
            (cfg ->> 'min_chars')::integer)];
    end if;
    if greatest(coalesce(token_count, 0), ceil(char_length(description) / 4.0)::integer)
        > (cfg ->> 'max_tokens')::integer then
        return array['too_long', format('memory text exceeds %s tokens',
            (cfg ->> 'max_tokens')::integer)];
    end if;
    if normalized = '' or normalized in (
        select jsonb_array_elements_text(cfg -> 'noise')
    ) then
        return array['noise', format('"%s" is conversational noise, not a memory', btrim(description))];
    end if;
    return hipocampo_private._pii_problem(description, cfg, 'memory text');
end;
$$;

/*
luhn_is_valid(digits text) -> boolean

Purpose: Luhn checksum of a string of digits (card numbers).
Example: select hipocampo_private.luhn_is_valid('4111111111111111'); -- true
*/
create or replace function hipocampo_private.luhn_is_valid(digits text)
returns boolean
language sql
immutable
security invoker
set search_path = ''
as $$
    select coalesce(sum(
        case when i % 2 = 1 then (d * 2) / 10 + (d * 2) % 10 else d end
    ) % 10 = 0, false)
    from (
        select (ordinality - 1)::integer as i, ch::integer as d
        from unnest(regexp_split_to_array(reverse(digits), '')) with ordinality as u (ch, ordinality)
        where ch ~ '^\d$'
    ) as x
$$;

/*
set_memory_consent(granted boolean, user_id uuid default null, tenant_id uuid default null) -> void

Purpose: record (or revoke) the user's consent to long-term memory (LGPD art. 7 I).
Parameters: granted; user_id / tenant_id only for service_role (users act for themselves).
Errors: 42501 no tenant / no user.
Example: select hipocampo.set_memory_consent(true);
*/
create or replace function hipocampo.set_memory_consent(
    granted boolean, user_id uuid default null, tenant_id uuid default null
)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(set_memory_consent.user_id, set_memory_consent.tenant_id);
begin
    insert into hipocampo_private.memory_consents as mc (tenant_id, user_id, granted)
    values (a.actor_tenant, a.actor_user, set_memory_consent.granted)
    on conflict on constraint memory_consents_pkey do update set granted = excluded.granted, updated_at = now();
    perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, null, 'memory.consent',
        case when granted then 'granted' else 'revoked' end, '{}'::jsonb);
end;
$$;


/*
remember(key text, value jsonb, description text, category text, embedding vector default null,
  scope text default 'personal', confidence double precision default 0.9, source text default 'explicit_user',
  source_ref text default null, conversation_id uuid default null, tags text[] default null,
  emotion text default null, intensity numeric default null, life_domain text default null,
  pinned boolean default false, token_count integer default null, expires_at timestamptz default null,
  user_id uuid default null, tenant_id uuid default null) -> jsonb

Purpose: the memory gate plus upsert (_remember). Every attempt is recorded in memory_events with
  its reason. Refusals (in order): no consent (42501), missing category (23502), confidence <
  memory.min_confidence or < min_confidence_inferred for inferred (22003), description too short
  (22023) or too long (22001), noise (22023), personal or sensitive data in the description
  (22023), a value over memory.value_max_bytes (too_long, 22001) or nested deeper than
  memory.value_max_depth (invalid_value, 22023) or holding personal or sensitive data in any
  string or key (22023), quota of active memories reached (53400), an inferred write over an
  explicit_user memory (55000).
  Intensity < memory.staging_below_intensity (7) goes to short-term staging (status 'staged',
  expires_at defaulting to memory.staging_ttl_days, at most 30 days); otherwise long-term.
  A semantic duplicate (cosine > duplicate_cosine) of an active memory returns that memory.
  Otherwise the one active row of (tenant, owner, scope, key) is replaced: the old one is
  deprecated (valid_to set) and the new one points to it (supersedes). Concurrent calls for one
  key are serialised by an advisory lock, so exactly one active row remains and no caller sees a
  unique violation.
Parameters: key 'a.b' snake_case, at most 200 characters; value any json (8,192 bytes, 8 levels);
  description the text (3 chars .. 3,000 tokens); category one of ten; embedding of the active
  model; confidence 0..1; tags snake_case, unique, default {category}; intensity 0..10 (rounded
  to 0.1); token_count >= 0; user_id/tenant_id only for service_role.
Returns: {"status": "created" | "updated" | "unchanged" | "duplicate" | "staged" | "rejected",
  "memory_id", "superseded", "expires_at", "reason", "sqlstate", "message"}.
Errors (raised, nothing recorded): 42501 as _memory_actor; 22023 "key / scope / source must not
  be null", "confidence must be 0..1 (got x)", "intensity must be 0..10 (got x)", "token_count
  must be >= 0 (got n)"; 22001 "key is n characters; the limit is 200"; 23514 on values outside
  the vocabularies; 22000 wrong dims; 22023 a staging expires_at beyond 30 days.
Example: select hipocampo.remember('prefs.short_answers', 'true', 'Prefere respostas curtas',
  'preference', '[…]'::extensions.vector, tags => array['respostas']);
*/
create or replace function hipocampo.remember(
    key text,
    value jsonb,
    description text,
    category text,
    embedding extensions.vector default null,
    scope text default 'personal',
    confidence double precision default 0.9,
    source text default 'explicit_user',
    source_ref text default null,
    conversation_id uuid default null,
    tags text[] default null,
    emotion text default null,
    intensity numeric default null,
    life_domain text default null,
    pinned boolean default false,
    token_count integer default null,
    expires_at timestamptz default null,
    user_id uuid default null,
    tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if remember.confidence is null or not (remember.confidence between 0 and 1) then
        raise exception 'confidence must be 0..1 (got %)', remember.confidence using errcode = '22023';
    end if;
    if remember.intensity is not null and not (remember.intensity between 0 and 10) then
        raise exception 'intensity must be 0..10 (got %)', remember.intensity using errcode = '22023';
    end if;
    if remember.token_count < 0 then
        raise exception 'token_count must be >= 0 (got %)', remember.token_count using errcode = '22023';
    end if;
    return hipocampo_private._remember(
        remember.key, remember.value, remember.description, remember.category, remember.embedding,
        remember.scope, remember.confidence, remember.source, remember.source_ref, remember.conversation_id,
        remember.tags, remember.emotion, remember.intensity, remember.life_domain, remember.pinned,
        remember.token_count, remember.expires_at, remember.user_id, remember.tenant_id, 'auto'
    );
end;
$$;

/*
correct_memory(memory_id uuid, value jsonb, description text, embedding vector default null) -> jsonb

Purpose: "isso está errado": replace a memory's value. The old row is deprecated (history kept,
  valid_to set), the new one supersedes it with source explicit_user and confidence 1; audited
  as memory.corrected.
Returns: {"status": "corrected", "memory_id": new id, "superseded": old id}.
Errors: 42501 as _caller (before any other work); P0002 "unknown memory" (not visible to the caller, or not active).
Example: select hipocampo.correct_memory('…', '"Ana"', 'O nome do usuário é Ana');
*/
create or replace function hipocampo.correct_memory(
    memory_id uuid, value jsonb, description text, embedding extensions.vector default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    old hipocampo_private.memories;
    new_id uuid;
begin
    select * into old from hipocampo_private.memories as m
    where m.id = correct_memory.memory_id and m.status = 'active'
    for update;
    if old.id is null then
        raise exception 'unknown memory: %', memory_id using errcode = 'P0002';
    end if;
    update hipocampo_private.memories as m
    set status = 'deprecated', valid_to = now(), updated_at = now()
    where m.id = old.id;
    insert into hipocampo_private.memories (
        tenant_id, user_id, scope, category, key, value, description, confidence, source, source_ref,
        conversation_id, pinned, tags, emotion, intensity, life_domain, embedding, embedding_model,
        token_count, supersedes, expires_at
    ) values (
        old.tenant_id, old.user_id, old.scope, old.category, old.key, correct_memory.value,
        btrim(correct_memory.description), 1, 'explicit_user', 'correction', old.conversation_id,
        old.pinned, old.tags, old.emotion, old.intensity, old.life_domain,
        coalesce(correct_memory.embedding, old.embedding),
        case when correct_memory.embedding is null then old.embedding_model
             else (select e.name from hipocampo_private.embedding_models as e where e.active) end,
        ceil(char_length(correct_memory.description) / 4.0)::integer, old.id, old.expires_at
    ) returning id into new_id;
    perform hipocampo_private._memory_event(old.tenant_id, coalesce((select auth.uid()), old.user_id),
        new_id, 'memory.corrected', null,
        jsonb_build_object('key', old.key, 'old_value', old.value, 'supersedes', old.id));
    return jsonb_build_object('status', 'corrected', 'memory_id', new_id, 'superseded', old.id);
end;
$$;

/*
forget_memory(memory_id uuid) -> boolean

Purpose: "esquece isso": soft delete (status deleted); the row stays for audit until erased.
Returns: true when an active memory was forgotten, false when none is visible with that id.
Example: select hipocampo.forget_memory('…');
Errors: 42501 as _caller (before any other work).
*/
create or replace function hipocampo.forget_memory(memory_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    m hipocampo_private.memories;
begin
    update hipocampo_private.memories as x
    set status = 'deleted', valid_to = now(), updated_at = now()
    where x.id = forget_memory.memory_id and x.status = 'active'
    returning * into m;
    if m.id is null then
        return false;
    end if;
    perform hipocampo_private._memory_event(m.tenant_id, coalesce((select auth.uid()), m.user_id), m.id,
        'memory.forgotten', null, jsonb_build_object('key', m.key));
    return true;
end;
$$;

/*
hard_delete_memory(memory_id uuid) -> boolean

Purpose: compliance deletion of a memory row and its history chain links (service_role only).
Returns: true when a row was deleted.
Example: select hipocampo.hard_delete_memory('…');
*/
create or replace function hipocampo.hard_delete_memory(memory_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
as $$
declare
    m hipocampo_private.memories;
begin
    delete from hipocampo_private.memories as x where x.id = hard_delete_memory.memory_id returning * into m;
    if m.id is null then
        return false;
    end if;
    perform hipocampo_private._memory_event(m.tenant_id, m.user_id, null, 'memory.hard_deleted', null,
        jsonb_build_object('key', m.key));
    return true;
end;
$$;

/*
lookup_memories(key text default null, category text default null, include_history boolean default false)
  -> setof hipocampo_private.memories

Purpose: exact lookup by key and/or category of the caller's visible memories (active ones,
  or the whole history with include_history). Counts as an access.
Example: select value from hipocampo.lookup_memories(key => 'user.name');
*/
create or replace function hipocampo.lookup_memories(
    key text default null, category text default null, include_history boolean default false
)
returns setof hipocampo_private.memories
language plpgsql
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(null);
begin
    return query
    with found as (
        select m.* from hipocampo_private.memories as m
        where m.tenant_id = t
          and (lookup_memories.key is null or m.key = lookup_memories.key)
          and (lookup_memories.category is null or m.category = lookup_memories.category)
          and (include_history or m.status = 'active')
          and ((select auth.uid()) is null or m.user_id = (select auth.uid()) or m.scope = 'tenant_shared')
    )
    select * from found order by found.key, found.valid_from desc;
    perform hipocampo_private._touch_memories(
        array(select m.id from hipocampo_private.memories as m
              where m.tenant_id = t and m.status = 'active'
                and (lookup_memories.key is null or m.key = lookup_memories.key)
                and (lookup_memories.category is null or m.category = lookup_memories.category)
                and ((select auth.uid()) is null or m.user_id = (select auth.uid()) or m.scope = 'tenant_shared')),
        t
    );
end;
$$;

/*
_touch_memories(ids uuid[], tenant_id uuid) -> void

Purpose: access_count + 1 and last_accessed_at = now() for memories (either tier) just read, only
  the given tenant's, which must be the caller's (service_role: any).
Errors: 42501 as _resolve_tenant.
Example: perform hipocampo_private._touch_memories(array[m], t);
*/
-- definer because reading a shared memory must count as an access although only admins may update it.
create or replace function hipocampo_private._touch_memories(ids uuid[], tenant_id uuid)
returns void
language plpgsql
security definer
set search_path = ''
as $$
begin
    perform hipocampo_private._resolve_tenant(_touch_memories.tenant_id);
    update hipocampo_private.memories as m
    set access_count = m.access_count + 1, last_accessed_at = now()
    where m.id = any(_touch_memories.ids) and m.tenant_id = _touch_memories.tenant_id;
    update hipocampo_private.memory_staging as s
    set access_count = s.access_count + 1, last_accessed_at = now()
    where s.id = any(_touch_memories.ids) and s.tenant_id = _touch_memories.tenant_id;
end;
$$;

/*
run_memory_maintenance(now timestamptz default now()) -> jsonb

Purpose: decay, expiry and the staging purge, with an explicit clock (tests freeze it).
  Memories not accessed for memory.decay_days lose memory.decay_step confidence, once per
  period; below memory.deactivate_below they expire; explicit_user and pinned memories never
  decay; active memories past expires_at expire; staged memories past expires_at are deleted
  unless pinned. Events memory.decayed / memory.expired / memory.purged are recorded.
  Scheduled with pg_cron (schedule_maintenance) where the extension exists; locally
  `hipocampo worker`.
Returns: {"decayed": n, "deactivated": n, "expired": n, "staging_purged": n}.
Errors: 55000 "memory config is incomplete: …" (not seeded from config.toml).
Example: select hipocampo.run_memory_maintenance('2027-01-01'::timestamptz);
*/
create or replace function hipocampo.run_memory_maintenance(now timestamptz default now())
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    cfg jsonb := hipocampo_private._memory_config(
        (select s.config -> 'memory' from hipocampo_private.settings as s where s.tenant_id is null)
    );
    period interval := make_interval(days => (cfg ->> 'decay_days')::integer);
    step real := (cfg ->> 'decay_step')::real;
    low real := (cfg ->> 'deactivate_below')::real;
    n_decayed integer;
    n_low integer;
    n_expired integer;
    n_purged integer;
begin
    with decayed as (
        update hipocampo_private.memories as m
        set confidence = greatest(m.confidence - step, 0), last_decayed_at = run_memory_maintenance.now,
            updated_at = run_memory_maintenance.now
        where m.status = 'active' and not m.pinned and m.source <> 'explicit_user'
          and run_memory_maintenance.now - greatest(
              coalesce(m.last_accessed_at, m.created_at), coalesce(m.last_decayed_at, '-infinity')
          ) >= period
        returning m.id, m.tenant_id, m.user_id, m.confidence
    ), logged as (
        insert into hipocampo_private.memory_events (at, tenant_id, user_id, memory_id, event, detail)
        select run_memory_maintenance.now, d.tenant_id, d.user_id, d.id, 'memory.decayed',
            jsonb_build_object('confidence', d.confidence)
        from decayed as d
    )
    select count(*) into n_decayed from decayed;

    with low_rows as (
        update hipocampo_private.memories as m
        set status = 'expired', valid_to = run_memory_maintenance.now, updated_at = run_memory_maintenance.now
        where m.status = 'active' and m.confidence < low and not m.pinned and m.source <> 'explicit_user'
        returning m.id, m.tenant_id, m.user_id
    ), logged as (
        insert into hipocampo_private.memory_events (at, tenant_id, user_id, memory_id, event, reason)
        select run_memory_maintenance.now, l.tenant_id, l.user_id, l.id, 'memory.expired', 'low_confidence'
        from low_rows as l
    )
    select count(*) into n_low from low_rows;

    with gone as (
        update hipocampo_private.memories as m
        set status = 'expired', valid_to = run_memory_maintenance.now, updated_at = run_memory_maintenance.now
        where m.status = 'active' and m.expires_at <= run_memory_maintenance.now
        returning m.id, m.tenant_id, m.user_id
    ), logged as (
        insert into hipocampo_private.memory_events (at, tenant_id, user_id, memory_id, event, reason)
        select run_memory_maintenance.now, g.tenant_id, g.user_id, g.id, 'memory.expired', 'expires_at'
        from gone as g
    )
    select count(*) into n_expired from gone;

    with purged as (
        delete from hipocampo_private.memory_staging as s
        where s.expires_at <= run_memory_maintenance.now and not s.pinned
        returning s.id, s.tenant_id, s.user_id, s.key
    ), logged as (
        insert into hipocampo_private.memory_events (at, tenant_id, user_id, memory_id, event, reason, detail)
        select run_memory_maintenance.now, p.tenant_id, p.user_id, p.id, 'memory.purged', 'staging_expired',
            jsonb_build_object('key', p.key)
        from purged as p
    )
    select count(*) into n_purged from purged;

    return jsonb_build_object('decayed', n_decayed, 'deactivated', n_low, 'expired', n_expired,
        'staging_purged', n_purged);
end;
$$;

/*
seed_profile(profile jsonb, source_ref text default 'onboarding', user_id uuid default null,
  tenant_id uuid default null) -> jsonb

Purpose: write the onboarding profile as memories (source profile_seed, confidence 1) through
  the gate: user.name, user.preferred_language, user.timezone, user.locale, user.role_title,
  user.communication_style (identity_profile); tenant.name, tenant.segment,
  tenant.business_model (tenant_business); tenant.primary_goals (goals_kpis); prefs.no_emojis,
  prefs.no_tech_terms, prefs.short_answers, prefs.channels_enabled (preference).
  Idempotent (unchanged values write nothing); any other key is refused, so free conversation is
  never stored. Each memory's description is a Portuguese sentence ("Cargo do usuário: síndica";
  yes/no for booleans), so that semantic recall finds profile facts by meaning.
Returns: {"<key>": "<status of remember>", …}.
Errors: 42501 as _caller (before any other work); 22023 "unknown profile keys: …"; 22023 on a source_ref other than onboarding | profile.
Example: select hipocampo.seed_profile('{"user.name": "Ana", "prefs.short_answers": true}');
*/
create or replace function hipocampo.seed_profile(
    profile jsonb, source_ref text default 'onboarding', user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    allowed constant jsonb := '{
        "user.name": "identity_profile", "user.preferred_language": "identity_profile",
        "user.timezone": "identity_profile", "user.locale": "identity_profile",
        "user.role_title": "identity_profile", "user.communication_style": "identity_profile",
        "tenant.name": "tenant_business", "tenant.segment": "tenant_business",
        "tenant.business_model": "tenant_business", "tenant.primary_goals": "goals_kpis",
        "prefs.no_emojis": "preference", "prefs.no_tech_terms": "preference",
        "prefs.short_answers": "preference", "prefs.channels_enabled": "preference"
    }';
    -- What each key means, in the users' language: the description that gets embedded.
    labels constant jsonb := '{
        "user.name": "Nome do usuário", "user.preferred_language": "Idioma preferido do usuário",
        "user.timezone": "Fuso horário do usuário", "user.locale": "Localidade (formato de datas e números) do usuário",
        "user.role_title": "Cargo do usuário", "user.communication_style": "Estilo de comunicação preferido",
        "tenant.name": "Nome da empresa ou organização", "tenant.segment": "Segmento de atuação da empresa",
        "tenant.business_model": "Modelo de negócio da empresa", "tenant.primary_goals": "Objetivos principais da empresa",
        "prefs.no_emojis": "Prefere respostas sem emojis", "prefs.no_tech_terms": "Prefere evitar termos técnicos",
        "prefs.short_answers": "Prefere respostas curtas", "prefs.channels_enabled": "Canais de atendimento habilitados"
    }';
    unknown text;
    item record;
    result jsonb := '{}'::jsonb;
    r jsonb;
begin
    if profile is null or jsonb_typeof(profile) <> 'object' then
        raise exception 'profile must be a json object' using errcode = '22023';
    end if;
    if source_ref not in ('onboarding', 'profile') then
        raise exception 'source_ref must be onboarding or profile (got %)', source_ref using errcode = '22023';
    end if;
    select string_agg(k, ', ' order by k) into unknown from jsonb_object_keys(profile) as k
    where not allowed ? k;
    if unknown is not null then
        raise exception 'unknown profile keys: %', unknown using errcode = '22023',
            hint = 'seed_profile stores only the onboarding keys; use remember for anything else';
    end if;
    for item in select e.key, e.value from jsonb_each(profile) as e order by e.key loop
        r := hipocampo.remember(
            key => item.key, value => item.value,
            description => (labels ->> item.key) || ': ' || case jsonb_typeof(item.value)
                when 'boolean' then case when item.value = 'true'::jsonb then 'sim' else 'não' end
                when 'array' then (select string_agg(x, ', ') from jsonb_array_elements_text(item.value) as x)
                else coalesce(item.value #>> '{}', item.value::text) end,
            category => allowed ->> item.key, confidence => 1.0, source => 'profile_seed',
            source_ref => seed_profile.source_ref,
            tags => array[split_part(item.key, '.', 1), replace(split_part(item.key, '.', 2), '.', '_')],
            user_id => seed_profile.user_id, tenant_id => seed_profile.tenant_id
        );
        result := result || jsonb_build_object(item.key, r ->> 'status');
    end loop;
    return result;
end;
$$;

comment on function hipocampo.set_memory_consent(boolean, uuid, uuid) is
'Record or revoke the user''s consent to long-term memory (LGPD art. 7 I).';

comment on function hipocampo.remember(
    text, jsonb, text, text, extensions.vector, text, double precision, text, text, uuid, text[], text, numeric,
    text, boolean, integer, timestamptz, uuid, uuid
) is 'Memory gate + upsert: refuses (recorded, with SQLSTATE) or stores one active value per key.';

comment on function hipocampo.correct_memory(uuid, jsonb, text, extensions.vector) is
'Correct a memory: new value, old one deprecated, audited.';

comment on function hipocampo.forget_memory(uuid) is 'Forget a memory (soft delete).';

comment on function hipocampo.hard_delete_memory(uuid) is 'Delete a memory row for compliance (service_role).';

comment on function hipocampo.lookup_memories(text, text, boolean) is 'Exact lookup by key and/or category.';

comment on function hipocampo.run_memory_maintenance(timestamptz) is
'Decay, deactivation and expiry of memories at a given clock.';

comment on function hipocampo.seed_profile(jsonb, text, uuid, uuid) is
'Write the onboarding profile keys as memories (idempotent).';

-- Short-term staging: memories of intensity < 7 wait here (expires_at required, at most 30 days
-- ahead) until promoted to long-term memory or purged. The memory HNSW indexes.
-- Same shape as memories (columns, defaults, checks, indexes), plus the tenant FK, the expiry
-- rule (at most 30 days ahead of the write; issue: memory engine §2) and fillfactor 80 (the
-- access-count updates stay HOT, as on memories).
create table hipocampo_private.memory_staging (
    like hipocampo_private.memories including defaults including constraints including indexes,
    constraint memory_staging_tenant_id_fkey foreign key (tenant_id)
    references hipocampo_private.tenants (id) on delete cascade,
    constraint memory_staging_expiry_window check (
        expires_at > created_at and expires_at <= created_at + interval '30 days'
    ),
    constraint memory_staging_status_check_active check (status = 'active')
)
with (fillfactor = 80);

-- A staged memory always expires (LIKE cannot change a copied column's nullability).
alter table hipocampo_private.memory_staging alter column expires_at set not null;

alter table hipocampo_private.memory_staging enable row level security;

create policy "users read their staged memories and their tenant's shared ones"
on hipocampo_private.memory_staging
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (user_id = (select auth.uid()) or scope = 'tenant_shared')
);

create policy "users delete their staged memories, admins shared ones"
on hipocampo_private.memory_staging
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
);

comment on table hipocampo_private.memory_staging is
'Short-term memory: intensity < 7, expires within 30 days unless promoted (or pinned).';

/*
_active_model(v vector, label text) -> text

Purpose: the active embedding model's name, after checking that `v` has its dimensions.
Parameters: v - a vector; label - its name in the error message (e.g. 'query_embedding').
Errors: 22000 "<label> has N dimensions; model M expects D".
Example: model := hipocampo_private._active_model(embedding, 'embedding');
*/
create or replace function hipocampo_private._active_model(v extensions.vector, label text)
returns text
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    m hipocampo_private.embedding_models;
begin
    select * into m from hipocampo_private.embedding_models as e where e.active;
    if extensions.vector_dims(v) <> m.dims then
        raise exception '% has % dimensions; model % expects %', label, extensions.vector_dims(v), m.name, m.dims
            using errcode = '22000';
    end if;
    return m.name;
end;
$$;

/*
_remember(…the parameters of hipocampo.remember…, tier text) -> jsonb

Purpose: the gate and the write behind remember (tier 'auto') and promote_memory (tier
  'long_term'). 'auto' routes a write with intensity < memory.staging_below_intensity (7) to
  staging; anything else (no intensity, or intensity >= 7) goes to long-term memory. The gate
  (see hipocampo.remember) reads the memory config from the config rows only
  (_memory_config) and checks the description (_memory_text_problem) and the value
  (_memory_value_problem).
Staging writes: the same gate except the quota and the explicit-user rule (both apply on
  promotion); expires_at defaults to now() + memory.staging_ttl_days and must lie within 30 days
  (22023 otherwise); one staged row per key (a new write replaces it). A long-term write of a key
  removes that key's staged row.
Returns / errors: as hipocampo.remember; staging writes return status 'staged'; 22023 "key /
  scope / source must not be null", 22001 "key is n characters; the limit is 200" (raised);
  55000 "memory config is incomplete: …".
*/
create or replace function hipocampo_private._remember(
    key text, value jsonb, description text, category text, embedding extensions.vector, scope text,
    confidence double precision, source text, source_ref text, conversation_id uuid, tags text[],
    emotion text, intensity numeric, life_domain text, pinned boolean, token_count integer,
    expires_at timestamptz, user_id uuid, tenant_id uuid, tier text
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(_remember.user_id, _remember.tenant_id);
    cfg jsonb;
    problem text [];
    owner_key uuid;
    current_row hipocampo_private.memories;
    staged_id uuid;
    dup_id uuid;
    new_id uuid;
    model text;
    active_count integer;
    floor double precision;
    to_staging boolean;
    expiry timestamptz;
    tokens integer;
    attempt jsonb := jsonb_build_object('key', _remember.key, 'category', _remember.category,
        'source', _remember.source, 'scope', _remember.scope);
begin
    -- Arguments the table would refuse with a raw engine error are named here first.
    if _remember.key is null or _remember.scope is null or _remember.source is null then
        raise exception '% must not be null',
            case when _remember.key is null then 'key' when _remember.scope is null then 'scope' else 'source' end
            using errcode = '22023';
    end if;
    if char_length(_remember.key) > 200 then
        raise exception 'key is % characters; the limit is 200', char_length(_remember.key) using errcode = '22001';
    end if;
    cfg := hipocampo_private._memory_config(hipocampo.effective_config(a.actor_tenant) -> 'memory');
    to_staging := tier = 'auto' and intensity is not null
        and round(intensity, 1) < (cfg ->> 'staging_below_intensity')::numeric;
    attempt := attempt || jsonb_build_object('tier', case when to_staging then 'staging' else 'long_term' end);

    -- The gate. A refusal is recorded and returned (a raised error would roll the record back).
    if not coalesce((select mc.granted from hipocampo_private.memory_consents as mc
                     where mc.tenant_id = a.actor_tenant and mc.user_id = a.actor_user), false) then
        problem := array['no_consent', '42501',
            'the user has not consented to long-term memory (LGPD art. 7 I)'];
    elsif category is null or btrim(category) = '' then
        problem := array['missing_category', '23502', 'a memory needs a category'];
    else
        floor := case when source = 'inferred'
            then (cfg ->> 'min_confidence_inferred')::double precision
            else (cfg ->> 'min_confidence')::double precision end;
        if confidence is null or confidence < floor then
            problem := array['low_confidence', '22003',
                format('confidence %s is below %s for %s memories', confidence, floor, source)];
        else
            problem := coalesce(hipocampo_private._memory_text_problem(description, token_count, cfg),
                hipocampo_private._memory_value_problem(_remember.value, cfg));
            if problem is not null then
                problem := array[problem[1],
                    case problem[1] when 'too_long' then '22001' else '22023' end, problem[2]];
            end if;
        end if;
    end if;

    -- Serialise writers of this key (both tiers); then read the active row.
    owner_key := case when scope = 'personal' then a.actor_user
        else '00000000-0000-0000-0000-000000000000'::uuid end;
    if problem is null then
        perform pg_advisory_xact_lock(hashtextextended(
            a.actor_tenant::text || '/' || owner_key::text || '/' || scope || '/' || key, 0));
        select * into current_row from hipocampo_private.memories as m
        where m.tenant_id = a.actor_tenant and m.scope = _remember.scope and m.key = _remember.key
          and m.status = 'active'
          and (_remember.scope = 'tenant_shared' or m.user_id = a.actor_user);
        if to_staging then
            null;
        elsif current_row.id is not null and current_row.source = 'explicit_user'
            and _remember.source = 'inferred' then
            problem := array['explicit_user_wins', '55000',
                'an inferred memory never overrides one the user stated explicitly'];
        elsif current_row.id is null then
            select count(*) into active_count from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.status = 'active'
              and m.scope = 'personal';
            if _remember.scope = 'personal'
                and active_count >= (cfg ->> 'max_active_per_user')::integer then
                problem := array['quota', '53400', format('the user already has %s active memories',
                    active_count)];
            end if;
        end if;
    end if;

    if problem is not null then
        perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, null,
            'memory.write_rejected', problem[1], attempt || jsonb_build_object('sqlstate', problem[2]));
        return jsonb_build_object('status', 'rejected', 'reason', problem[1], 'sqlstate', problem[2],
            'message', problem[3]);
    end if;

    -- Same value in long-term memory: nothing to write.
    if not to_staging and current_row.id is not null and current_row.value = _remember.value then
        perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, current_row.id,
            'memory.unchanged', null, attempt);
        return jsonb_build_object('status', 'unchanged', 'memory_id', current_row.id);
    end if;

    select s.id into staged_id from hipocampo_private.memory_staging as s
    where s.tenant_id = a.actor_tenant and s.scope = _remember.scope and s.key = _remember.key
      and (_remember.scope = 'tenant_shared' or s.user_id = a.actor_user);

    if embedding is not null then
        model := hipocampo_private._active_model(embedding, 'embedding');
        -- A semantic duplicate of another active memory (not the one being replaced), in either tier.
        select d.id into dup_id from (
            select m.id, m.embedding from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.status = 'active' and m.embedding_model = model
              and (m.user_id = a.actor_user or m.scope = 'tenant_shared')
              and m.id is distinct from current_row.id
            union all
            select s.id, s.embedding from hipocampo_private.memory_staging as s
            where s.tenant_id = a.actor_tenant and s.embedding_model = model
              and (s.user_id = a.actor_user or s.scope = 'tenant_shared')
              and s.id is distinct from staged_id
        ) as d
        where 1 - (d.embedding operator(extensions.<=>) _remember.embedding)
            > (cfg ->> 'duplicate_cosine')::double precision
        order by d.embedding operator(extensions.<=>) _remember.embedding
        limit 1;
        if dup_id is not null then
            perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, dup_id,
                'memory.duplicate', 'semantic_duplicate', attempt);
            return jsonb_build_object('status', 'duplicate', 'memory_id', dup_id);
        end if;
    end if;

    tokens := greatest(coalesce(_remember.token_count, 0), ceil(char_length(_remember.description) / 4.0)::integer);

    if to_staging then
        expiry := coalesce(_remember.expires_at,
            now() + make_interval(days => (cfg ->> 'staging_ttl_days')::integer));
        if expiry <= now() or expiry > now() + interval '30 days' then
            raise exception 'a staged memory must expire within 30 days (expires_at %)', expiry
                using errcode = '22023';
        end if;
        if staged_id is not null then
            delete from hipocampo_private.memory_staging as s where s.id = staged_id;
        end if;
        insert into hipocampo_private.memory_staging (
            tenant_id, user_id, scope, category, key, value, description, confidence, source, source_ref,
            conversation_id, pinned, tags, emotion, intensity, life_domain, embedding, embedding_model,
            token_count, expires_at
        ) values (
            a.actor_tenant, a.actor_user, _remember.scope, _remember.category, _remember.key, _remember.value,
            btrim(_remember.description), _remember.confidence, _remember.source, _remember.source_ref,
            _remember.conversation_id, coalesce(_remember.pinned, false),
            coalesce(_remember.tags, array[_remember.category]), _remember.emotion,
            round(_remember.intensity, 1), _remember.life_domain, _remember.embedding, model, tokens, expiry
        ) returning id into new_id;
        perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, new_id, 'memory.staged', null,
            attempt || jsonb_build_object('replaces', staged_id, 'expires_at', expiry));
        return jsonb_build_object('status', 'staged', 'memory_id', new_id, 'expires_at', expiry,
            'replaced', staged_id);
    end if;

    if staged_id is not null then
        delete from hipocampo_private.memory_staging as s where s.id = staged_id;
    end if;
    if current_row.id is not null then
        update hipocampo_private.memories as m
        set status = 'deprecated', valid_to = now(), updated_at = now()
        where m.id = current_row.id;
    end if;
    insert into hipocampo_private.memories (
        tenant_id, user_id, scope, category, key, value, description, confidence, source, source_ref,
        conversation_id, pinned, tags, emotion, intensity, life_domain, embedding, embedding_model,
        token_count, supersedes, expires_at
    ) values (
        a.actor_tenant, a.actor_user, _remember.scope, _remember.category, _remember.key, _remember.value,
        btrim(_remember.description), _remember.confidence, _remember.source, _remember.source_ref,
        _remember.conversation_id, coalesce(_remember.pinned, false),
        coalesce(_remember.tags, array[_remember.category]), _remember.emotion,
        round(_remember.intensity, 1), _remember.life_domain, _remember.embedding, model, tokens,
        current_row.id, _remember.expires_at
    ) returning id into new_id;
    perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, new_id,
        case when current_row.id is null then 'memory.created' else 'memory.updated' end, null,
        attempt || jsonb_build_object('supersedes', current_row.id));
    return jsonb_build_object('status', case when current_row.id is null then 'created' else 'updated' end,
        'memory_id', new_id, 'superseded', current_row.id);
exception when check_violation then
    raise exception 'invalid memory: %', sqlerrm using errcode = '23514';
end;
$$;


/*
promote_memory(staging_id uuid, intensity numeric, override boolean default false) -> jsonb

Purpose: move a staged memory to long-term memory. Without override, `intensity` is the
  recomputed intensity: >= memory.staging_below_intensity (7) promotes, below it the staged row
  keeps the new intensity (status 'kept'). With override (a human decision) the memory is
  promoted whatever the intensity, pinned, with the new intensity. Promotion goes through the
  gate (consent, quota, explicit-user rule); a refusal leaves the staged row in place.
Parameters: staging_id; intensity 0..10 (rounded to 0.1); override.
Returns: remember's result plus {"promoted_from": staging_id}, or {"status": "kept", ...}.
Errors: 42501 as _caller (before any other work); P0002 "unknown staged memory"; 22004
  intensity is null; 23514 intensity outside 0..10; 55000 "memory config is incomplete: …".
Example: select hipocampo.promote_memory('…', 8.5);
*/
create or replace function hipocampo.promote_memory(staging_id uuid, intensity numeric, override boolean default false)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    s hipocampo_private.memory_staging;
    cfg jsonb;
    r jsonb;
    level numeric := round(promote_memory.intensity, 1);
begin
    if level is null then
        raise exception 'intensity is required (0..10)' using errcode = '22004';
    end if;
    if level < 0 or level > 10 then
        raise exception 'intensity must lie in 0..10 (got %)', level using errcode = '23514';
    end if;
    select * into s from hipocampo_private.memory_staging as x where x.id = promote_memory.staging_id for update;
    if s.id is null then
        raise exception 'unknown staged memory: %', staging_id using errcode = 'P0002';
    end if;
    cfg := hipocampo_private._memory_config(hipocampo.effective_config(s.tenant_id) -> 'memory');
    if not coalesce(override, false)
        and level < (cfg ->> 'staging_below_intensity')::numeric then
        update hipocampo_private.memory_staging as x set intensity = level, updated_at = now()
        where x.id = s.id;
        return jsonb_build_object('status', 'kept', 'memory_id', s.id, 'intensity', level);
    end if;
    r := hipocampo_private._remember(
        s.key, s.value, s.description, s.category, s.embedding, s.scope, s.confidence, s.source, s.source_ref,
        s.conversation_id, s.tags, s.emotion, level, s.life_domain, s.pinned or coalesce(override, false),
        s.token_count, null, case when (select auth.uid()) is null then s.user_id end, s.tenant_id, 'long_term'
    );
    if r ->> 'status' = 'rejected' then
        return r;
    end if;
    delete from hipocampo_private.memory_staging as x where x.id = s.id;
    perform hipocampo_private._memory_event(s.tenant_id, coalesce((select auth.uid()), s.user_id),
        (r ->> 'memory_id')::uuid, 'memory.promoted', case when override then 'override' else 'intensity' end,
        jsonb_build_object('staging_id', s.id, 'key', s.key, 'intensity', level, 'result', r ->> 'status'));
    return r || jsonb_build_object('promoted_from', s.id);
end;
$$;

/*
staged_memories() -> setof hipocampo_private.memory_staging

Purpose: the caller's staged memories (own personal ones + the tenant's shared ones), soonest
  expiry first.
Example: select key, intensity, expires_at from hipocampo.staged_memories();
*/
create or replace function hipocampo.staged_memories()
returns setof hipocampo_private.memory_staging
language sql
stable
security invoker
set search_path = ''
as $$
    select s.* from hipocampo_private.memory_staging as s
    where s.tenant_id = hipocampo_private._resolve_tenant(null)
      and ((select auth.uid()) is null or s.user_id = (select auth.uid()) or s.scope = 'tenant_shared')
    order by s.expires_at, s.id
$$;

/*
search_memories(query_embedding vector, mode text default 'context', match_count integer default null,
  filter_tags text[] default null, filter_emotion text default null, filter_life_domain text default null,
  filter_category text default null, filter_scope text default null, min_score double precision default null,
  include_staging boolean default true) -> setof record

Purpose: semantic memory search for the caller (own personal memories + the tenant's shared
  ones), over long-term memory and, unless include_staging is false, short-term staging.
  score = cosine similarity + memory.pinned_bonus for pinned memories; kept when score >=
  memory.context_threshold (mode 'context') or memory.answer_threshold (mode 'answer'), or
  min_score; MMR (memory.mmr_lambda) with near-duplicates (cosine > duplicate_cosine) dropped.
  Tag filtering with an empty tag list, or with tags no memory carries, falls back to searching
  without the tag filter and says so in `fallback` ('empty_tags' | 'no_memory_with_tags').
  Returned memories count as accessed (access_count, last_accessed_at).
Parameters: query_embedding of the active model; mode 'context' | 'answer'; match_count k,
  1..100 (default memory.match_count); filters; min_score overrides the mode's threshold
  (cosine, -1..1.05).
Returns: memory_id, key, value, description, category, scope, tags, pinned, confidence,
  similarity, score, rank (1-based), fallback, tier ('long_term' | 'staging').
Errors: 42501 as _resolve_tenant; 22023 on an unknown mode; 22023 "match_count must be 1..100
  (got n)"; 22000 on wrong dimensions; 55000 "memory config is incomplete: …".
Example: select key, score from hipocampo.search_memories('[…]'::extensions.vector, 'context');
*/
create or replace function hipocampo.search_memories(
    query_embedding extensions.vector,
    mode text default 'context',
    match_count integer default null,
    filter_tags text[] default null,
    filter_emotion text default null,
    filter_life_domain text default null,
    filter_category text default null,
    filter_scope text default null,
    min_score double precision default null,
    include_staging boolean default true
)
returns table (
    memory_id uuid, key text, value jsonb, description text, category text, scope text,
    tags text[], pinned boolean, confidence real, similarity double precision,
    score double precision, rank integer, fallback text, tier text
)
language plpgsql
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(null);
    me uuid := (select auth.uid());
    cfg jsonb := hipocampo_private._memory_config(hipocampo.effective_config(t) -> 'memory');
    threshold double precision;
    bonus double precision := (cfg ->> 'pinned_bonus')::double precision;
    lambda double precision := (cfg ->> 'mmr_lambda')::double precision;
    dup double precision := (cfg ->> 'duplicate_cosine')::double precision;
    k integer := coalesce(search_memories.match_count, (cfg ->> 'match_count')::integer);
    model text;
    use_tags text [] := search_memories.filter_tags;
    why text;
    ids uuid [];
    tiers text [];
    sims double precision [];
    scores double precision [];
    embs extensions.vector [];
    sel integer [] := '{}';
begin
    if k is null or k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    if mode is null or mode not in ('context', 'answer') then
        raise exception 'mode must be context or answer (got %)', mode using errcode = '22023';
    end if;
    threshold := coalesce(min_score, case mode
        when 'answer' then (cfg ->> 'answer_threshold')::double precision
        else (cfg ->> 'context_threshold')::double precision end);
    model := hipocampo_private._active_model(query_embedding, 'query_embedding');
    if use_tags is not null and cardinality(use_tags) = 0 then
        why := 'empty_tags';
        use_tags := null;
    elsif use_tags is not null and not exists (
        select 1 from hipocampo_private.memories as m
        where m.tenant_id = t and m.status = 'active' and m.tags && use_tags
          and (me is null or m.user_id = me or m.scope = 'tenant_shared')
        union all
        select 1 from hipocampo_private.memory_staging as s
        where include_staging and s.tenant_id = t and s.tags && use_tags
          and (me is null or s.user_id = me or s.scope = 'tenant_shared')
    ) then
        why := 'no_memory_with_tags';
        use_tags := null;
    end if;

    select array_agg(x.id order by x.score desc, x.id), array_agg(x.tier order by x.score desc, x.id),
        array_agg(x.sim order by x.score desc, x.id), array_agg(x.score order by x.score desc, x.id),
        array_agg(x.embedding order by x.score desc, x.id)
    into ids, tiers, sims, scores, embs
    from (
        select u.id, u.tier, u.embedding, 1 - (u.embedding operator(extensions.<=>) query_embedding) as sim,
            1 - (u.embedding operator(extensions.<=>) query_embedding)
            + case when u.pinned then bonus else 0 end as score
        from (
            select m.id, 'long_term' as tier, m.embedding, m.pinned, m.user_id, m.scope, m.tags, m.emotion,
                m.life_domain, m.category, m.embedding_model
            from hipocampo_private.memories as m
            where m.tenant_id = t and m.status = 'active'
            union all
            select s.id, 'staging', s.embedding, s.pinned, s.user_id, s.scope, s.tags, s.emotion,
                s.life_domain, s.category, s.embedding_model
            from hipocampo_private.memory_staging as s
            where include_staging and s.tenant_id = t
        ) as u
        where u.embedding_model = model
          and (me is null or u.user_id = me or u.scope = 'tenant_shared')
          and (use_tags is null or u.tags && use_tags)
          and (search_memories.filter_emotion is null or u.emotion = search_memories.filter_emotion)
          and (search_memories.filter_life_domain is null or u.life_domain = search_memories.filter_life_domain)
          and (search_memories.filter_category is null or u.category = search_memories.filter_category)
          and (search_memories.filter_scope is null or u.scope = search_memories.filter_scope)
        order by score desc, u.id
        limit k * 8
    ) as x
    where x.score >= threshold;

    if ids is not null then
        -- MMR on the scores, near-duplicates dropped (shared with hybrid_search).
        sel := hipocampo_private._mmr(embs, scores, k, lambda, dup);
    end if;

    return query
    select u.id, u.key, u.value, u.description, u.category, u.scope, u.tags, u.pinned, u.confidence,
        sims[o.pos], scores[o.pos], o.ord::integer, why, tiers[o.pos]
    from unnest(sel) with ordinality as o (pos, ord)
    inner join (
        select m.id, m.key, m.value, m.description, m.category, m.scope, m.tags, m.pinned, m.confidence
        from hipocampo_private.memories as m where m.tenant_id = t
        union all
        select s.id, s.key, s.value, s.description, s.category, s.scope, s.tags, s.pinned, s.confidence
        from hipocampo_private.memory_staging as s where s.tenant_id = t
    ) as u on u.id = ids[o.pos]
    order by o.ord;
    if cardinality(sel) = 0 and why is not null then
        -- Still say that the tag filter was dropped, with no rows to carry it.
        return query select null::uuid, null::text, null::jsonb, null::text, null::text, null::text,
            null::text [], null::boolean, null::real, null::double precision, null::double precision,
            0, why, null::text;
    end if;
    perform hipocampo_private._touch_memories(array(select ids[x] from unnest(sel) as x), t);
end;
$$;

comment on function hipocampo.promote_memory(uuid, numeric, boolean) is
'Move a staged memory to long-term memory (recomputed intensity >= 7, or a human override that pins it).';

comment on function hipocampo.staged_memories() is 'The caller''s short-term (staged) memories.';

comment on function hipocampo.search_memories(
    extensions.vector, text, integer, text[], text, text, text, text, double precision, boolean
) is 'Semantic memory search (long-term + staging) with thresholds, pinned bonus, MMR and tag fallback.';

/*
set_memory_embeddings(items jsonb) -> integer

Purpose: give memories that have no embedding one (of the active model): the profile seed and
  any write made without a vector. Memories that already have an embedding are left alone.
Parameters: items - [{"memory_id": uuid, "embedding": [floats]}]; RLS decides which rows the
  caller may update (own personal memories; admins the tenant's shared ones).
Returns: the number of memories updated.
Errors: 42501 as _caller (before any other work); 22000 wrong dimensions; 22023 items is not a json array.
Example: select hipocampo.set_memory_embeddings('[{"memory_id": "…", "embedding": [0.1, …]}]');
*/
create or replace function hipocampo.set_memory_embeddings(items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    item jsonb;
    v extensions.vector;
    model text;
    n integer := 0;
    one integer;
begin
    if items is null or jsonb_typeof(items) <> 'array' then
        raise exception 'items must be a json array' using errcode = '22023';
    end if;
    for item in select x from jsonb_array_elements(items) as x loop
        v := (item ->> 'embedding')::extensions.vector;
        model := hipocampo_private._active_model(v, 'embedding');
        update hipocampo_private.memories as m
        set embedding = v, embedding_model = model, updated_at = now()
        where m.id = (item ->> 'memory_id')::uuid and m.embedding is null;
        get diagnostics one = row_count;
        n := n + one;
    end loop;
    return n;
end;
$$;

comment on function hipocampo.set_memory_embeddings(jsonb) is
'Embed memories written without a vector (e.g. the profile seed).';

create policy "users update their personal memories, admins shared ones"
on hipocampo_private.memories
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
)
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
);

create policy "users update their staged memories, admins shared ones"
on hipocampo_private.memory_staging
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
)
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
);

/*
_pii_problem(content text, cfg jsonb, what text) -> text[]

Purpose: the gate's data check of one text: personal data (any kind the scrubber replaces) or
  sensitive data (memory.sensitive_patterns over the lower-case, unaccented text).
Parameters: content - the text; cfg - the memory config; what - how the message names it
  ('memory text', 'memory value').
Returns: null, or [reason, message] with reason personal_data | sensitive_data.
Example: select hipocampo_private._pii_problem('CPF 529 982 247 25', cfg, 'memory value');
  -- {personal_data,"memory value carries personal data (CPF)"}
*/
create or replace function hipocampo_private._pii_problem(content text, cfg jsonb, what text)
returns text[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    found jsonb := (hipocampo_private._pii_scrub(content)).counts;
    pattern text;
begin
    if found <> '{}'::jsonb then
        return array['personal_data', format('%s carries personal data (%s)', what, (
            select string_agg(case k when 'EMAIL' then 'e-mail' when 'TELEFONE' then 'phone number'
                when 'CARTAO' then 'card number' else k end, ', ' order by k)
            from jsonb_object_keys(found) as k))];
    end if;
    for pattern in select jsonb_array_elements_text(cfg -> 'sensitive_patterns') loop
        if lower(extensions.unaccent(content)) ~* pattern then
            return array['sensitive_data', format('%s carries sensitive data (health or financial details)', what)];
        end if;
    end loop;
    return null;
end;
$$;

/*
_memory_value_problem(value jsonb, cfg jsonb) -> text[]

Purpose: the gate's checks of a memory's value: present, at most memory.value_max_bytes bytes as
  JSON text, nesting at most memory.value_max_depth levels (a scalar is level 0, the members of
  an object or array level 1), and no personal or sensitive data in any string leaf or object key.
Returns: null, or [reason, message] with reason invalid_value | too_long | personal_data |
  sensitive_data.
Example: select hipocampo_private._memory_value_problem('{"cpf": "529.982.247-25"}', cfg);
  -- {personal_data,"memory value carries personal data (CPF)"}
*/
create or replace function hipocampo_private._memory_value_problem(value jsonb, cfg jsonb)
returns text[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    max_bytes integer := (cfg ->> 'value_max_bytes')::integer;
    max_depth integer := (cfg ->> 'value_max_depth')::integer;
    size integer;
    strings text;
begin
    if value is null then
        return array['invalid_value', 'a memory needs a value'];
    end if;
    size := octet_length(value::text);
    if size > max_bytes then
        return array['too_long', format('memory value is %s bytes; the limit is %s (memory.value_max_bytes)',
            size, max_bytes)];
    end if;
    if jsonb_path_exists(value, format('strict $.**{%s}', max_depth + 1)::jsonpath) then
        return array['invalid_value', format('memory value nests deeper than %s levels (memory.value_max_depth)',
            max_depth)];
    end if;
    -- Leaves and keys joined by a separator no number or e-mail runs across.
    select string_agg(s, ' ; ') into strings from (
        select x #>> '{}' as s from jsonb_path_query(value, 'strict $.** ? (@.type() == "string")') as x
        union all
        select x #>> '{}' from jsonb_path_query(value, 'strict $.** ? (@.type() == "object").keyvalue().key') as x
    ) as leaves;
    if strings is null then
        return null;
    end if;
    return hipocampo_private._pii_problem(strings, cfg, 'memory value');
end;
$$;

/*
_memory_write_allowed(tenant_id uuid, user_id uuid, description text, value jsonb,
  token_count integer) -> boolean

Purpose: the gate as a row check, for the INSERT policies of memories and memory_staging: the
  user has consented (memory_consents), and the description and value pass
  _memory_text_problem and _memory_value_problem under the tenant's memory config. A direct
  INSERT as authenticated passes only what remember would store.
*/
create or replace function hipocampo_private._memory_write_allowed(
    tenant_id uuid, user_id uuid, description text, value jsonb, token_count integer
)
returns boolean
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    cfg jsonb;
begin
    if not coalesce((select mc.granted from hipocampo_private.memory_consents as mc
                     where mc.tenant_id = _memory_write_allowed.tenant_id
                       and mc.user_id = _memory_write_allowed.user_id), false) then
        return false;
    end if;
    cfg := hipocampo_private._memory_config(
        hipocampo.effective_config(_memory_write_allowed.tenant_id) -> 'memory');
    return hipocampo_private._memory_text_problem(description, token_count, cfg) is null
        and hipocampo_private._memory_value_problem(value, cfg) is null;
end;
$$;

create policy "users write personal memories the gate passes, admins shared ones"
on hipocampo_private.memories
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
    and (scope = 'personal' or (select hipocampo_private.current_tenant_role()) = 'admin')
    and hipocampo_private._memory_write_allowed(tenant_id, user_id, description, value, token_count)
);

create policy "users stage personal memories the gate passes, admins shared ones"
on hipocampo_private.memory_staging
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
    and (scope = 'personal' or (select hipocampo_private.current_tenant_role()) = 'admin')
    and hipocampo_private._memory_write_allowed(tenant_id, user_id, description, value, token_count)
);

-- ==================== supabase/schemas/07_conversations.sql ====================

-- Conversation history: messages (chat and voice share a conversation_id) and a rolling summary
-- per conversation. History is never promoted to memory by itself: nothing here writes memories.
create table hipocampo_private.messages (
    id bigint generated always as identity primary key,
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    user_id uuid not null,
    conversation_id uuid not null,
    role text not null,
    content text not null,
    modality text not null default 'chat',
    attachments jsonb not null default '[]'::jsonb,
    metadata jsonb not null default '{}'::jsonb,
    ts_config regconfig not null,
    -- Lexical leg of the history search (Okapi BM25 over the tsvector's term frequencies).
    fts tsvector generated always as (to_tsvector(ts_config, content)) stored,
    fts_length integer generated always as (
        hipocampo_private.tsvector_token_count(to_tsvector(ts_config, content))
    ) stored,
    -- Optional; a user's history is searched exactly (scoped by the index below), no HNSW.
    embedding extensions.vector,
    embedding_model text references hipocampo_private.embedding_models (name),
    created_at timestamptz not null default now(),
    -- Contextual token vectors for history search's late-interaction re-rank: WordPiece ids and
    -- the sign bits of their embeddings, written by set_message_tokens (the client that holds the
    -- local model computes them; a message without them is ranked at the tokens' minimum).
    token_ids integer[],
    token_bits varbit[],
    constraint messages_role_check check (role in ('user', 'assistant', 'system', 'tool')),
    constraint messages_modality_check check (modality in ('chat', 'voice')),
    constraint messages_content_length check (char_length(content) between 1 and 100000),
    constraint messages_attachments_is_array check (jsonb_typeof(attachments) = 'array'),
    constraint messages_metadata_is_object check (jsonb_typeof(metadata) = 'object'),
    constraint messages_embedding_model check ((embedding is null) = (embedding_model is null)),
    constraint messages_tokens_paired check (
        (token_ids is null) = (token_bits is null)
        and (token_ids is null or cardinality(token_ids) = cardinality(token_bits))
    ),
    constraint messages_tokens_need_embedding check (token_bits is null or embedding is not null)
);

-- (PostgreSQL 15 has no STORAGE clause in CREATE TABLE; 16 added it.)
alter table hipocampo_private.messages alter column embedding set storage main;

alter table hipocampo_private.messages enable row level security;

-- History search re-ranks its best candidates by late interaction over the messages' tokens.
-- LoCoMo's recall@10 stood at 0.805 with one MiniLM vector per message (plus its neighbours'),
-- BM25 and date words; what was left are evidence turns ranked 11-50 (recall@20 0.864,
-- @50 0.919). Re-ranking them by MaxSim (ColBERT's late interaction: each query token's most
-- similar token of the message, idf-weighted) over MiniLM's contextual token embeddings, each
-- message read after its two previous messages, measured 0.832 with the best 50 re-ranked
-- (0.835 with 100; benchmarks/locomo.py, docs/BENCHMARKS.md). The token vectors are kept as
-- sign bits (bit(384) a token, ~35 tokens a message, ~2 KB): with bits the measure moved by less
-- than 0.003 against float vectors (~50 KB a message). Hamming distance is native (bit_count of
-- xor, PostgreSQL 14+).
--

-- RLS filters on (tenant_id, user_id); the history reads one conversation in order.
create index messages_tenant_user_conversation_idx on hipocampo_private.messages (
    tenant_id, user_id, conversation_id, id
);

create index messages_fts_idx on hipocampo_private.messages using gin (fts);

create table hipocampo_private.conversation_summaries (
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    user_id uuid not null,
    conversation_id uuid not null,
    summary text not null,
    -- The summary covers the conversation's messages up to this id.
    through_message_id bigint not null,
    updated_at timestamptz not null default now(),
    primary key (tenant_id, user_id, conversation_id)
);

alter table hipocampo_private.conversation_summaries enable row level security;

create policy "users read their own messages"
on hipocampo_private.messages
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

create policy "users write their own messages"
on hipocampo_private.messages
for insert
to authenticated
with check (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

create policy "users delete their own messages"
on hipocampo_private.messages
for delete
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

create policy "users read their own conversation summaries"
on hipocampo_private.conversation_summaries
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

create policy "users write their own conversation summaries"
on hipocampo_private.conversation_summaries
for insert
to authenticated
with check (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

create policy "users update their own conversation summaries"
on hipocampo_private.conversation_summaries
for update
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()))
with check (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

create policy "users delete their own conversation summaries"
on hipocampo_private.conversation_summaries
for delete
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

comment on table hipocampo_private.messages is
'Conversation history (chat and voice share conversation_id); never promoted to memory by itself.';

comment on table hipocampo_private.conversation_summaries is
'Rolling summary per conversation, covering its messages up to through_message_id.';

/*
add_message(conversation_id uuid, role text, content text, modality text default 'chat',
  attachments jsonb default '[]', embedding vector default null, metadata jsonb default '{}',
  language text default null, created_at timestamptz default null, user_id uuid default null,
  tenant_id uuid default null) -> bigint

Purpose: append a message to a conversation's history (chat or voice). Writes no memory. Stored
  scrubbed of PII (content, attachments and metadata strings) unless the tenant turned
  conversations.scrub_pii off (the messages trigger).
Parameters: role user | assistant | system | tool; content 1..100,000 characters; modality chat |
  voice; attachments a json array; embedding of the active model (optional; needed by the dense
  leg of search_history); language portuguese | english | simple (default
  conversations.language); created_at (imports; default now()); user_id / tenant_id only for
  service_role.
Returns: the message id.
Errors: 42501 as _memory_actor; 22023 "conversation_id / role / content must not be null";
  22001 "content is n characters; the limit is 100,000"; 23514 invalid role / modality /
  attachments; 22023 unsupported language; 22000 wrong dimensions.
Example: select hipocampo.add_message('…'::uuid, 'user', 'Qual o prazo da matrícula?');
*/
create or replace function hipocampo.add_message(
    conversation_id uuid,
    role text,
    content text,
    modality text default 'chat',
    attachments jsonb default '[]'::jsonb,
    embedding extensions.vector default null,
    metadata jsonb default '{}'::jsonb,
    language text default null,
    created_at timestamptz default null,
    user_id uuid default null,
    tenant_id uuid default null
)
returns bigint
language plpgsql
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(add_message.user_id, add_message.tenant_id);
    cfg jsonb := coalesce(hipocampo.effective_config(a.actor_tenant) -> 'conversations', '{}'::jsonb);
    lang text := coalesce(add_message.language, cfg ->> 'language', 'portuguese');
    ts regconfig := hipocampo_private.text_search_config(lang);
    model text;
    new_id bigint;
begin
    if ts is null then
        raise exception 'unsupported text-search language: %', lang using errcode = '22023';
    end if;
    if conversation_id is null or add_message.role is null or add_message.content is null then
        raise exception '% must not be null', case when conversation_id is null then 'conversation_id'
            when add_message.role is null then 'role' else 'content' end using errcode = '22023';
    end if;
    if char_length(add_message.content) > 100000 then
        raise exception 'content is % characters; the limit is 100,000', char_length(add_message.content)
            using errcode = '22001';
    end if;
    if embedding is not null then
        model := hipocampo_private._active_model(embedding, 'embedding');
    end if;
    insert into hipocampo_private.messages (
        tenant_id, user_id, conversation_id, role, content, modality, attachments, metadata, ts_config,
        embedding, embedding_model, created_at
    ) values (
        a.actor_tenant, a.actor_user, add_message.conversation_id, add_message.role, add_message.content,
        coalesce(add_message.modality, 'chat'), coalesce(add_message.attachments, '[]'::jsonb),
        coalesce(add_message.metadata, '{}'::jsonb), ts, add_message.embedding, model,
        coalesce(add_message.created_at, now())
    ) returning id into new_id;
    return new_id;
exception when check_violation then
    raise exception 'invalid message: %', sqlerrm using errcode = '23514';
end;
$$;

/*
update_conversation_summary(conversation_id uuid, summary text, through_message_id bigint,
  user_id uuid default null, tenant_id uuid default null) -> void

Purpose: store the rolling summary of a conversation, covering its messages up to
  through_message_id (the summariser, e.g. the orchestrator's LLM, runs outside the database).
Errors: 22023 "through_message_id is not a message of this conversation"; 22023 empty summary.
Example: select hipocampo.update_conversation_summary('…', 'Usuário pediu o prazo…', 42);
*/
create or replace function hipocampo.update_conversation_summary(
    conversation_id uuid, summary text, through_message_id bigint, user_id uuid default null,
    tenant_id uuid default null
)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(update_conversation_summary.user_id,
        update_conversation_summary.tenant_id);
begin
    if summary is null or btrim(summary) = '' then
        raise exception 'summary must not be empty' using errcode = '22023';
    end if;
    if not exists (
        select 1 from hipocampo_private.messages as m
        where m.id = through_message_id and m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and m.conversation_id = update_conversation_summary.conversation_id
    ) then
        raise exception 'through_message_id % is not a message of this conversation', through_message_id
            using errcode = '22023';
    end if;
    insert into hipocampo_private.conversation_summaries as s (
        tenant_id, user_id, conversation_id, summary, through_message_id
    ) values (
        a.actor_tenant, a.actor_user, update_conversation_summary.conversation_id,
        btrim(update_conversation_summary.summary), update_conversation_summary.through_message_id
    )
    on conflict on constraint conversation_summaries_pkey do update
    set summary = excluded.summary, through_message_id = excluded.through_message_id, updated_at = now();
end;
$$;

/*
conversation_context(conversation_id uuid, last_n integer default null, user_id uuid default null,
  tenant_id uuid default null) -> jsonb

Purpose: what an assistant needs of a conversation: its rolling summary and the last N messages
  (default sessions.last_messages), oldest first.
Returns: {"conversation_id", "summary", "summary_through", "unsummarized": n messages after the
  summary, "messages": [{"id", "role", "content", "modality", "attachments", "created_at"}]}.
Example: select hipocampo.conversation_context('…'::uuid, 10);
*/
create or replace function hipocampo.conversation_context(
    conversation_id uuid, last_n integer default null, user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(conversation_context.user_id, conversation_context.tenant_id);
    n integer := coalesce(last_n,
        (hipocampo.effective_config(a.actor_tenant) -> 'sessions' ->> 'last_messages')::integer, 20);
    s hipocampo_private.conversation_summaries;
begin
    select * into s from hipocampo_private.conversation_summaries as x
    where x.tenant_id = a.actor_tenant and x.user_id = a.actor_user
      and x.conversation_id = conversation_context.conversation_id;
    return jsonb_build_object(
        'conversation_id', conversation_id,
        'summary', s.summary,
        'summary_through', s.through_message_id,
        'unsummarized', (
            select count(*) from hipocampo_private.messages as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
              and m.conversation_id = conversation_context.conversation_id
              and m.id > coalesce(s.through_message_id, 0)
        ),
        'messages', coalesce((
            select jsonb_agg(jsonb_build_object(
                'id', x.id, 'role', x.role, 'content', x.content, 'modality', x.modality,
                'attachments', x.attachments, 'created_at', x.created_at
            ) order by x.id)
            from (
                select m.* from hipocampo_private.messages as m
                where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
                  and m.conversation_id = conversation_context.conversation_id
                order by m.id desc
                limit greatest(n, 0)
            ) as x
        ), '[]'::jsonb)
    );
end;
$$;

comment on function hipocampo.add_message(
    uuid, text, text, text, jsonb, extensions.vector, jsonb, text, timestamptz, uuid, uuid
) is 'Append a message (chat or voice) to a conversation''s history; writes no memory.';

comment on function hipocampo.update_conversation_summary(uuid, text, bigint, uuid, uuid) is
'Store the rolling summary of a conversation up to a message.';

comment on function hipocampo.conversation_context(uuid, integer, uuid, uuid) is
'A conversation''s rolling summary and last N messages.';

-- History search reads each message with its neighbours (document expansion). A message of a
-- dialogue is often only understandable next to the turn it answers ("Melanie: a sunset" after
-- "Caroline: what did you paint?"), so both legs of search_history now score a message's context:
-- the message plus the weighted previous / next messages of its conversation
-- (conversations.context_weights_before / context_weights_after). The lexical leg also sees the
-- message's date words (day, month name, year of created_at in conversations.time_zone, weight
-- conversations.date_weight), so "what did I say in January 2024" reaches January's messages.
-- Measured on LoCoMo (benchmarks/locomo.py, docs/BENCHMARKS.md): recall@10 0.666 -> see there.
/*
_date_words(day date, config regconfig) -> text

Purpose: the words a message's date is matched by: day of month, month name in the message's
  text-search language (portuguese / portuguese_unaccent -> "janeiro" …, anything else ->
  "january" …) and year.
Parameters: day (a local date); config the message's text-search configuration.
Returns: e.g. '8 may 2023' or '8 maio 2023'.
Errors: none.
Example: select hipocampo_private._date_words('2023-05-08', 'pg_catalog.english');
*/
create or replace function hipocampo_private._date_words(day date, config regconfig)
returns text
language sql
immutable
set search_path = ''
as $$
    select extract(day from _date_words.day)::integer::text || ' '
        || (case when _date_words.config in (
                'hipocampo_private.portuguese_unaccent'::regconfig, 'pg_catalog.portuguese'::regconfig
            )
            then array['janeiro', 'fevereiro', 'março', 'abril', 'maio', 'junho', 'julho', 'agosto',
                       'setembro', 'outubro', 'novembro', 'dezembro']
            else array['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august',
                       'september', 'october', 'november', 'december']
            end)[extract(month from _date_words.day)::integer]
        || ' ' || extract(year from _date_words.day)::integer::text
$$;

comment on column hipocampo_private.messages.token_ids is
'WordPiece ids of the message''s tokens (embedding model''s tokenizer), for the token idf of search_history''s re-rank.';

comment on column hipocampo_private.messages.token_bits is
'Sign bits of each token''s contextual embedding (the embedding''s model, read after the two previous messages).';

create policy "users update the tokens of their own messages"
on hipocampo_private.messages
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
)
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
);

/*
_check_message_tokens(token_ids integer[], token_bits varbit[], dims integer, name text) -> void

Purpose: token ids and bits that belong together: both given, as many of each (1..512), no null,
  every bit string `dims` long (the embedding model's dimensions).
Errors: 22023 "<name>_ids and <name>_bits must have the same 1..512 items, none null";
  22023 "<name>_bits must be bit strings of <dims> bits (the embedding model's dimensions)".
Example: select hipocampo_private._check_message_tokens(array[1], array[b'01'], 2, 'token');
*/
create or replace function hipocampo_private._check_message_tokens(
    token_ids integer[], token_bits varbit[], dims integer, name text
)
returns void
language plpgsql
immutable
security invoker
set search_path = ''
as $$
begin
    if token_ids is null or token_bits is null or cardinality(token_ids) <> cardinality(token_bits)
        or cardinality(token_ids) not between 1 and 512
        or array_position(token_ids, null) is not null or array_position(token_bits, null) is not null then
        raise exception '%_ids and %_bits must have the same 1..512 items, none null', name, name
            using errcode = '22023';
    end if;
    if exists (select 1 from unnest(token_bits) as b where bit_length(b) is distinct from dims) then
        raise exception '%_bits must be bit strings of % bits (the embedding model''s dimensions)',
            name, dims using errcode = '22023';
    end if;
end;
$$;

/*
set_message_tokens(message_id bigint, token_ids integer[], token_bits varbit[]) -> void

Purpose: store a message's tokens for search_history's late-interaction re-rank: the WordPiece
  ids and, for each, the sign bits of its contextual embedding by the message's embedding model
  (hipocampo.LocalMiniLM.embed_tokens reads the message after its two previous ones).
Parameters: message_id - one of the caller's messages (RLS), with an embedding; token_ids /
  token_bits - 1..512 items each, bits as long as the model's dimensions (384).
Returns: nothing.
Errors: 42501 as _caller (before any other work); P0002 "unknown message: <id>" (absent or another user's); 22023 "the message has no
  embedding: its tokens belong to the embedding's model"; 22023 as _check_message_tokens.
Example: select hipocampo.set_message_tokens(42, array[2054, 2003], array[b'0110…', b'1001…']);
*/
create or replace function hipocampo.set_message_tokens(message_id bigint, token_ids integer[], token_bits varbit[])
returns void
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    dims integer;
    found_it boolean;
begin
    select true, extensions.vector_dims(m.embedding) into found_it, dims
    from hipocampo_private.messages as m where m.id = set_message_tokens.message_id;
    if found_it is null then
        raise exception 'unknown message: %', message_id using errcode = 'P0002';
    end if;
    if dims is null then
        raise exception 'the message has no embedding: its tokens belong to the embedding''s model'
            using errcode = '22023';
    end if;
    perform hipocampo_private._check_message_tokens(token_ids, token_bits, dims, 'token');
    update hipocampo_private.messages as m
    set token_ids = set_message_tokens.token_ids, token_bits = set_message_tokens.token_bits
    where m.id = set_message_tokens.message_id;
end;
$$;

comment on function hipocampo.set_message_tokens(bigint, integer[], varbit[]) is
'Store a message''s token ids and contextual token sign bits (search_history''s late-interaction re-rank).';

/*
search_history(query_text text, query_embedding vector default null,
  filter_conversation_id uuid default null, match_count integer default null,
  filter_modality text default null, user_id uuid default null,
  tenant_id uuid default null, query_token_ids integer[] default null,
  query_token_bits varbit[] default null) -> setof record

Purpose: search the caller's own conversation history (one conversation, or all). Each message is
  scored with its context: itself (weight 1) plus the messages before it in its conversation
  weighted by conversations.context_weights_before (nearest first) and those after it by
  conversations.context_weights_after (order: created_at, id), read with window functions in one
  pass per leg. Lexical leg: Okapi BM25 (conversations.bm25_k1 / bm25_b) over the context's
  weighted term frequencies, which include each message's date words (_date_words of created_at
  in conversations.time_zone, weight conversations.date_weight; 0 = off); document frequencies
  and lengths over the searched messages' contexts. Dense leg (when query_embedding is given):
  cosine to the weighted sum of the context's embeddings of the active model, exact. Both legs
  are z-scored over every searched message (BM25 0 without a query term; a missing cosine counts
  as the leg's minimum) and summed with conversations.dense_weight / lexical_weight; messages
  matched by neither leg are left out. Then, given the query's tokens, the top
  conversations.token_rerank_candidates are re-ranked: fused score and MaxSim token score, each
  z-scored over the candidates, weighted 1 and conversations.token_rerank_weight (0 = off); the
  query tokens' idf is counted over the newest conversations.token_idf_sample searched messages.
  With filter_modality, neighbours of any modality give context; only messages of that modality
  are returned.
Parameters: query_text 1..2,000 characters; query_embedding of the active model (optional);
  filter_conversation_id (null = every conversation of the user); match_count k, 1..100 (default
  conversations.match_count); filter_modality chat | voice; user_id / tenant_id only for
  service_role; query_token_ids / query_token_bits - the question's WordPiece ids and the sign
  bits of its token embeddings (same model as query_embedding, which they need; 1..512 items).
Returns: message_id, conversation_id, role, content, modality, metadata, created_at,
  dense_score (cosine of the context), lexical_score (BM25 of the context), score (the ranking
  score), rank (1-based), token_score (MaxSim in [-1, 1]; null without the re-rank or without
  the message's tokens).
Errors: 42501 as _memory_actor; 22023 empty or too long query; 22023 "match_count must be 1..100
  (got n)"; 22023 "conversations.context_weights_before must be an array of at most 5 numbers in
  [0, 1]" (and _after); 22023 unknown conversations.time_zone; 22023 "query tokens need
  query_embedding (their model's)"; 22023 as _check_message_tokens for the query tokens (bits as
  long as query_embedding's dimensions); 22000 wrong dimensions; 55000 "conversations config is
  incomplete: …".
Example: select content, score from hipocampo.search_history('what did Mel paint?', '[…]', '…'::uuid,
  query_token_ids => array[2054, …], query_token_bits => array[b'0110…', …]);
*/
create or replace function hipocampo.search_history(
    query_text text,
    query_embedding extensions.vector default null,
    filter_conversation_id uuid default null,
    match_count integer default null,
    filter_modality text default null,
    user_id uuid default null,
    tenant_id uuid default null,
    query_token_ids integer[] default null,
    query_token_bits varbit[] default null
)
returns table (
    message_id bigint, conversation_id uuid, role text, content text, modality text, metadata jsonb,
    created_at timestamptz, dense_score double precision, lexical_score double precision,
    score double precision, rank integer, token_score double precision
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(search_history.user_id, search_history.tenant_id);
    cfg jsonb := hipocampo.effective_config(a.actor_tenant) -> 'conversations';
    k integer := coalesce(search_history.match_count, (cfg ->> 'match_count')::integer);
    k1 double precision := (cfg ->> 'bm25_k1')::double precision;
    b double precision := (cfg ->> 'bm25_b')::double precision;
    wd double precision := (cfg ->> 'dense_weight')::double precision;
    wl double precision := (cfg ->> 'lexical_weight')::double precision;
    w_date double precision := (cfg ->> 'date_weight')::double precision;
    tz text := cfg ->> 'time_zone';
    w_before jsonb := cfg -> 'context_weights_before';
    w_after jsonb := cfg -> 'context_weights_after';
    w_token double precision := (cfg ->> 'token_rerank_weight')::double precision;
    n_candidates integer := (cfg ->> 'token_rerank_candidates')::integer;
    n_idf integer := (cfg ->> 'token_idf_sample')::integer;
    rerank boolean;
    ts regconfig;
    model text;
    lexemes text [];
    q tsquery;
    side record;
    -- Context weights by distance (1..5), 0 beyond the configured ones, and as vectors for the
    -- dense leg (pgvector multiplies element-wise).
    wb double precision [];
    wa double precision [];
    vb extensions.vector [];
    va extensions.vector [];
begin
    if k is null or k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    if query_text is null or btrim(query_text) = '' or char_length(query_text) > 2000 then
        raise exception 'query_text must have 1..2000 characters' using errcode = '22023';
    end if;
    if k is null or k1 is null or b is null or wd is null or wl is null or w_date is null
        or tz is null or w_before is null or w_after is null or w_token is null or n_candidates is null
        or n_idf is null then
        raise exception 'conversations config is incomplete: seed it from config.toml (hipocampo db migrate)'
            using errcode = '55000';
    end if;
    for side in select * from (values ('before', w_before), ('after', w_after)) as x (name, weights) loop
        if jsonb_typeof(side.weights) <> 'array' or jsonb_array_length(side.weights) > 5
            or exists (
                select 1 from jsonb_array_elements(side.weights) as e
                where jsonb_typeof(e) <> 'number' or (e #>> '{}')::double precision not between 0 and 1
            ) then
            raise exception 'conversations.context_weights_% must be an array of at most 5 numbers in [0, 1]',
                side.name using errcode = '22023';
        end if;
    end loop;
    begin
        perform pg_catalog.now() at time zone tz;
    exception when invalid_parameter_value then
        raise exception 'unknown conversations.time_zone: %', tz using errcode = '22023';
    end;
    ts := hipocampo_private.text_search_config(cfg ->> 'language');
    if query_embedding is not null then
        model := hipocampo_private._active_model(query_embedding, 'query_embedding');
    end if;
    if query_token_bits is not null or query_token_ids is not null then
        if query_embedding is null then
            raise exception 'query tokens need query_embedding (their model''s)' using errcode = '22023';
        end if;
        perform hipocampo_private._check_message_tokens(
            query_token_ids, query_token_bits, extensions.vector_dims(query_embedding), 'query_token'
        );
    end if;
    -- The late-interaction re-rank applies with query tokens, an embedding and a weight > 0.
    rerank := w_token > 0 and query_embedding is not null and cardinality(query_token_bits) > 0;
    wb := array(select coalesce((w_before ->> d)::double precision, 0) from generate_series(0, 4) as d);
    wa := array(select coalesce((w_after ->> d)::double precision, 0) from generate_series(0, 4) as d);
    if query_embedding is not null then
        vb := array(
            select array_fill(w::real, array[extensions.vector_dims(query_embedding)])::extensions.vector
            from unnest(wb) as w
        );
        va := array(
            select array_fill(w::real, array[extensions.vector_dims(query_embedding)])::extensions.vector
            from unnest(wa) as w
        );
    end if;

    -- Query lexemes in each text-search configuration the searched messages use.
    select array_agg(distinct u.lexeme) into lexemes
    from (
        select distinct m.ts_config from hipocampo_private.messages as m
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and (search_history.filter_conversation_id is null or m.conversation_id = search_history.filter_conversation_id)
    ) as c
    cross join lateral unnest(to_tsvector(c.ts_config, query_text)) as u;
    if lexemes is null then
        lexemes := array(select u.lexeme from unnest(to_tsvector(ts, query_text)) as u);
    end if;
    if cardinality(lexemes) > 0 then
        q := array_to_string(array(select quote_literal(l) from unnest(lexemes) as l), ' | ')::tsquery;
    end if;

    return query
    with offsets as (
        -- A message's context: itself (offset 0, weight 1) and its neighbours by position.
        select 0 as o, 1.0::double precision as w
        union all
        select -e.i::integer, (e.w #>> '{}')::double precision
        from jsonb_array_elements(w_before) with ordinality as e (w, i)
        union all
        select e.i::integer, (e.w #>> '{}')::double precision
        from jsonb_array_elements(w_after) with ordinality as e (w, i)
    ),
    day_terms as materialized (
        -- Date words, once per local day and language.
        select d.day, d.ts_config, u.lexeme
        from (
            select distinct (m.created_at at time zone tz)::date as day, m.ts_config
            from hipocampo_private.messages as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
              and (search_history.filter_conversation_id is null
                  or m.conversation_id = search_history.filter_conversation_id)
        ) as d
        cross join lateral unnest(to_tsvector(d.ts_config, hipocampo_private._date_words(d.day, d.ts_config))) as u
    ),
    day_len as materialized (
        -- Weighted date-word count per local day and language, as one object read by key (a
        -- lookup per message, whatever the row estimates).
        select coalesce(jsonb_object_agg(x.day::text || ' ' || x.ts_config::text, x.n), '{}'::jsonb) as by_day
        from (
            select dt.day, dt.ts_config, count(*) * w_date as n from day_terms as dt group by dt.day, dt.ts_config
        ) as x
    ),
    own as materialized (
        -- Each searched message without its embedding: text, length with date words.
        select m.id, m.conversation_id, m.created_at, m.modality, m.fts, m.ts_config, m.token_ids,
            (m.created_at at time zone tz)::date as day,
            m.fts_length + coalesce(
                (dl.by_day ->> (((m.created_at at time zone tz)::date)::text || ' ' || m.ts_config::text))::double precision, 0
            ) as len
        from hipocampo_private.messages as m
        cross join day_len as dl
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and (search_history.filter_conversation_id is null or m.conversation_id = search_history.filter_conversation_id)
    ),
    scoped as materialized (
        -- Position in the conversation and length of the context (weighted tokens, date words
        -- included), read with lag / lead in one ordered pass.
        select s.id, s.conversation_id, s.modality, s.fts, s.ts_config, s.day,
            row_number() over w as pos,
            s.len
            + wb[1] * coalesce(lag(s.len, 1) over w, 0) + wb[2] * coalesce(lag(s.len, 2) over w, 0)
            + wb[3] * coalesce(lag(s.len, 3) over w, 0) + wb[4] * coalesce(lag(s.len, 4) over w, 0)
            + wb[5] * coalesce(lag(s.len, 5) over w, 0)
            + wa[1] * coalesce(lead(s.len, 1) over w, 0) + wa[2] * coalesce(lead(s.len, 2) over w, 0)
            + wa[3] * coalesce(lead(s.len, 3) over w, 0) + wa[4] * coalesce(lead(s.len, 4) over w, 0)
            + wa[5] * coalesce(lead(s.len, 5) over w, 0) as len
        from own as s
        window w as (partition by s.conversation_id order by s.created_at, s.id)
    ),
    own_terms as (
        -- The query's lexemes in each message (term frequency) and in its date words (date_weight).
        select s.conversation_id, s.pos, u.lexeme, coalesce(array_length(u.positions, 1), 1)::double precision as tf
        from scoped as s
        cross join lateral unnest(s.fts) as u
        where q is not null and s.fts @@ q and u.lexeme = any(lexemes)
        union all
        select s.conversation_id, s.pos, dt.lexeme, w_date
        from scoped as s
        inner join day_terms as dt on dt.day = s.day and dt.ts_config = s.ts_config
        where w_date > 0 and dt.lexeme = any(lexemes)
    ),
    spread_terms as materialized (
        -- A term of the message at position p counts for the message at p - o with weight w(o).
        -- (materialized: the join below must be on both keys, whatever the row estimates)
        select ot.conversation_id, ot.pos - o.o as pos, ot.lexeme, o.w * ot.tf as tf
        from own_terms as ot cross join offsets as o
    ),
    ctx_terms as (
        select n.id, n.len, t.lexeme, sum(t.tf) as tf
        from spread_terms as t
        inner join scoped as n on n.conversation_id = t.conversation_id and n.pos = t.pos
        group by n.id, n.len, t.lexeme
    ),
    corpus as materialized (
        select count(*) as n_docs, coalesce(nullif(avg(s.len), 0), 1) as avg_len from scoped as s
    ),
    df as materialized (
        select t.lexeme, count(*) as n from ctx_terms as t group by t.lexeme
    ),
    lexical as materialized (
        select t.id, sum(
            ln(1 + (cp.n_docs - d.n + 0.5) / (d.n + 0.5))
            * t.tf * (k1 + 1) / (t.tf + k1 * (1 - b + b * t.len / cp.avg_len))
        ) as s
        from ctx_terms as t
        inner join df as d on d.lexeme = t.lexeme
        cross join corpus as cp
        group by t.id
    ),
    neighbour_embeddings as (
        -- The embeddings of each message's neighbours (0-weight ones left out), by lag / lead.
        select m.id, m.modality, x.e,
            case when wb[1] > 0 then lag(x.e, 1) over w end as b1,
            case when wb[2] > 0 then lag(x.e, 2) over w end as b2,
            case when wb[3] > 0 then lag(x.e, 3) over w end as b3,
            case when wb[4] > 0 then lag(x.e, 4) over w end as b4,
            case when wb[5] > 0 then lag(x.e, 5) over w end as b5,
            case when wa[1] > 0 then lead(x.e, 1) over w end as a1,
            case when wa[2] > 0 then lead(x.e, 2) over w end as a2,
            case when wa[3] > 0 then lead(x.e, 3) over w end as a3,
            case when wa[4] > 0 then lead(x.e, 4) over w end as a4,
            case when wa[5] > 0 then lead(x.e, 5) over w end as a5
        from hipocampo_private.messages as m
        cross join lateral (select case when m.embedding_model = model then m.embedding end as e) as x
        where query_embedding is not null
          and m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and (search_history.filter_conversation_id is null or m.conversation_id = search_history.filter_conversation_id)
        window w as (partition by m.conversation_id order by m.created_at, m.id)
    ),
    dense as materialized (
        -- Cosine to the weighted sum of the context's embeddings (<=> normalises the sum; sum()
        -- skips the missing neighbours).
        select x.id, 1 - ((
            select extensions.sum(v.v) from (values
                (x.e),
                (x.b1 operator(extensions.*) vb[1]), (x.b2 operator(extensions.*) vb[2]),
                (x.b3 operator(extensions.*) vb[3]), (x.b4 operator(extensions.*) vb[4]),
                (x.b5 operator(extensions.*) vb[5]),
                (x.a1 operator(extensions.*) va[1]), (x.a2 operator(extensions.*) va[2]),
                (x.a3 operator(extensions.*) va[3]), (x.a4 operator(extensions.*) va[4]),
                (x.a5 operator(extensions.*) va[5])
            ) as v (v)
        ) operator(extensions.<=>) query_embedding) as s
        from neighbour_embeddings as x
        where x.e is not null
          and (search_history.filter_modality is null or x.modality = search_history.filter_modality)
    ),
    scores as materialized (
        -- One row per searched message with both legs' scores: a union grouped by message, not
        -- outer joins, so the plan stays linear whatever the row estimates (a conversation outside
        -- the statistics is estimated at a row or two, and outer joins then ran once per message).
        select u.id, max(u.ds) as ds, max(u.ls) as ls
        from (
            select s.id, null::double precision as ds, null::double precision as ls, true as searched
            from scoped as s
            where search_history.filter_modality is null or s.modality = search_history.filter_modality
            union all
            select l.id, null, l.s, false from lexical as l
            union all
            select d.id, d.s, null, false from dense as d
        ) as u
        group by u.id
        having bool_or(u.searched)
    ),
    stats as materialized (
        -- z-scores over every searched message: BM25 0 without a query term, cosine at the leg's
        -- minimum without an embedding.
        select
            avg(coalesce(x.ls, 0)) as l_mean,
            coalesce(nullif(stddev_pop(coalesce(x.ls, 0)), 0), 1) as l_sd,
            avg(x.ds) as d_mean,
            coalesce(nullif(stddev_pop(x.ds), 0), 1) as d_sd,
            min(x.ds) as d_min
        from scores as x
    ),
    fused as materialized (
        -- The top k, or with the re-rank its top token_rerank_candidates (at least k).
        select x.id, x.ds, x.ls,
            wd * coalesce((coalesce(x.ds, st.d_min) - st.d_mean) / st.d_sd, 0)
            + wl * (coalesce(x.ls, 0) - st.l_mean) / st.l_sd as f
        from scores as x
        cross join stats as st
        where x.ds is not null or x.ls is not null
        order by f desc, x.id
        limit case when rerank then greatest(k, n_candidates) else k end
    ),
    query_ids as materialized (
        select qt.i, qt.id, qt.bits
        from unnest(query_token_ids, query_token_bits) with ordinality as qt (id, bits, i)
        where rerank
    ),
    idf_sample as materialized (
        -- The messages the query tokens' idf is counted over: the searched ones, at most the
        -- newest token_idf_sample of them (a whole history stays cheap; a conversation is exact).
        select o.id, o.token_ids from own as o where rerank order by o.id desc limit n_idf
    ),
    query_tokens as materialized (
        -- Each query token with its BM25-style idf among the sampled messages (token ids).
        select q.i, q.bits, ln(1 + (n.n - coalesce(d.n, 0) + 0.5) / (coalesce(d.n, 0) + 0.5)) as w
        from query_ids as q
        cross join (select count(*) as n from idf_sample) as n
        left join (
            -- Only the messages sharing a token with the query are unnested.
            select u.id, count(distinct o.id) as n
            from idf_sample as o
            cross join lateral unnest(o.token_ids) as u (id)
            where o.token_ids operator(pg_catalog.&&) query_token_ids and u.id = any(query_token_ids)
            group by u.id
        ) as d on d.id = q.id
    ),
    token_scores as materialized (
        -- Late interaction (MaxSim): for each query token the most similar token of the message
        -- (1 - 2 hamming / bits: the cosine of the sign vectors), idf-weighted mean. The message's
        -- bits are read once and paired with every query token.
        select f.id, sum(x.w * x.sim) / nullif(sum(x.w), 0) as ts
        from fused as f
        inner join hipocampo_private.messages as m on m.id = f.id
        cross join lateral (
            select max(t.w) as w, 1 - 2 * min(bit_count(d.b operator(pg_catalog.#) t.bits))::double precision
                / max(bit_length(t.bits)) as sim
            from unnest(m.token_bits) as d (b)
            cross join query_tokens as t
            group by t.i
        ) as x
        where rerank and m.token_bits is not null and m.embedding_model = model
        group by f.id
    ),
    candidate_stats as materialized (
        select avg(f.f) as f_mean, coalesce(nullif(stddev_pop(f.f), 0), 1) as f_sd,
            avg(t.ts) as t_mean, coalesce(nullif(stddev_pop(t.ts), 0), 1) as t_sd, min(t.ts) as t_min
        from fused as f
        left join token_scores as t on t.id = f.id
    ),
    ranked as (
        -- Without the re-rank the fused score stands; with it, both z-scored over the candidates
        -- (a candidate without tokens at the tokens' minimum).
        select f.id, f.ds, f.ls, t.ts,
            case when rerank then (f.f - cs.f_mean) / cs.f_sd
                + w_token * coalesce((coalesce(t.ts, cs.t_min) - cs.t_mean) / cs.t_sd, 0)
            else f.f end as s
        from fused as f
        cross join candidate_stats as cs
        left join token_scores as t on t.id = f.id
    )
    select m.id, m.conversation_id, m.role, m.content, m.modality, m.metadata, m.created_at,
        r.ds, r.ls, r.s, (row_number() over (order by r.s desc, m.id))::integer, r.ts
    from ranked as r
    inner join hipocampo_private.messages as m on m.id = r.id
    order by r.s desc, m.id
    limit k;
end;
$$;

comment on function hipocampo.search_history(
    text, extensions.vector, uuid, integer, text, uuid, uuid, integer[], varbit[]
) is
'Hybrid (BM25 + cosine) search of the caller''s conversation history, each message with its neighbours and date; re-ranked by late interaction over tokens when the query''s are given.';

create index messages_without_tokens_idx on hipocampo_private.messages (id)
where token_bits is null and embedding is not null;

/*
messages_without_tokens(batch_size integer default 100, filter_tenant_id uuid default null,
  after_message_id bigint default 0) -> table (message_id bigint, tenant_id uuid, content text, context text[])

Purpose: the oldest messages that have an embedding of the active model and no tokens, each with
  the context its tokens are read after (as Memory.add_messages reads them): the previous
  conversations.token_context_messages messages of its conversation (its tenant's config), oldest
  first. The listed messages stay locked (for update skip locked) until the caller's transaction
  ends: store their tokens in the same transaction; concurrent workers take other messages.
Parameters: batch_size 1..1000 messages; filter_tenant_id - only that tenant's messages (null: every
  tenant's); after_message_id - only messages with a greater id (a caller's cursor: a message whose
  tokens it could not compute is not listed to it again).
Returns: at most batch_size rows, by message id; none when every message of the active model has
  its tokens (or no model is active).
Errors: 22023 "batch_size must be 1..1000"; 55000 "conversations config is incomplete: seed it from
  config.toml (hipocampo db migrate)" (token_context_messages missing for a listed message's tenant).
Example: select message_id, content, context from hipocampo.messages_without_tokens(100, null, 0);
*/
create or replace function hipocampo.messages_without_tokens(
    batch_size integer default 100, filter_tenant_id uuid default null, after_message_id bigint default 0
)
returns table (message_id bigint, tenant_id uuid, content text, context text[])
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
    model text;
begin
    if batch_size is null or batch_size not between 1 and 1000 then
        raise exception 'batch_size must be 1..1000' using errcode = '22023';
    end if;
    select e.name into model from hipocampo_private.embedding_models as e where e.active;
    return query
    with batch as materialized (
        select m.id, m.tenant_id, m.user_id, m.conversation_id, m.content
        from hipocampo_private.messages as m
        where m.token_bits is null and m.embedding is not null and m.embedding_model = model
          and m.id > coalesce(messages_without_tokens.after_message_id, 0)
          and (messages_without_tokens.filter_tenant_id is null or m.tenant_id = messages_without_tokens.filter_tenant_id)
        order by m.id
        limit batch_size
        for update of m skip locked
    ),
    context_size as materialized (
        select t.tenant_id, (hipocampo_private._require_config(
            hipocampo.effective_config(t.tenant_id) -> 'conversations', 'conversations',
            array['token_context_messages']
        ) ->> 'token_context_messages')::integer as n
        from (select distinct b.tenant_id from batch as b) as t
    )
    select b.id, b.tenant_id, b.content, array(
        select p.content from (
            select x.id, x.content from hipocampo_private.messages as x
            where x.tenant_id = b.tenant_id and x.user_id = b.user_id
              and x.conversation_id = b.conversation_id and x.id < b.id
            order by x.id desc
            limit greatest(cs.n, 0)
        ) as p
        order by p.id
    )
    from batch as b
    inner join context_size as cs on cs.tenant_id = b.tenant_id
    order by b.id;
end;
$$;

comment on function hipocampo.messages_without_tokens(integer, uuid, bigint) is
'Messages with an embedding of the active model and no tokens, each with its previous messages (locked for the caller''s transaction): the token backfill''s work list.';

/*
_scrub_message() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of messages: content, attachments and metadata scrubbed
  when the row's tenant has conversations.scrub_pii (default true).
*/
create or replace function hipocampo_private._scrub_message()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if coalesce((hipocampo.effective_config(new.tenant_id) -> 'conversations' ->> 'scrub_pii')::boolean, true) then
        new.content := (hipocampo_private._pii_scrub(new.content)).text;
        new.attachments := hipocampo_private._pii_scrub_jsonb(new.attachments);
        new.metadata := hipocampo_private._pii_scrub_jsonb(new.metadata);
    end if;
    return new;
end;
$$;

/*
_scrub_summary() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of conversation_summaries: the summary scrubbed like the
  messages it summarises (conversations.scrub_pii, default true).
*/
create or replace function hipocampo_private._scrub_summary()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if coalesce((hipocampo.effective_config(new.tenant_id) -> 'conversations' ->> 'scrub_pii')::boolean, true) then
        new.summary := (hipocampo_private._pii_scrub(new.summary)).text;
    end if;
    return new;
end;
$$;

create trigger messages_scrub_pii
before insert or update of content, attachments, metadata on hipocampo_private.messages
for each row execute function hipocampo_private._scrub_message();

create trigger conversation_summaries_scrub_pii
before insert or update of summary on hipocampo_private.conversation_summaries
for each row execute function hipocampo_private._scrub_summary();

-- ==================== supabase/schemas/08_sessions.sql ====================

-- Session context in Postgres (Supabase has no Redis): last N messages, summary, tools used and
-- pending confirmations, with an inactivity TTL renewed by activity, an absolute maximum, and a
-- cap on concurrent sessions per user. Expired sessions are unreadable (RLS) and purged.
-- Durations come from the config section `sessions` (tenant-configurable within bounds).
create table hipocampo_private.sessions (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    user_id uuid not null,
    conversation_id uuid not null,
    -- {"messages": [last N], "summary": text | null, "tools_used": [text]}
    data jsonb not null default '{"messages": [], "summary": null, "tools_used": []}'::jsonb,
    -- [{"id", "action", "payload", "expires_at"}]
    pending_confirmations jsonb not null default '[]'::jsonb,
    created_at timestamptz not null default now(),
    last_activity_at timestamptz not null default now(),
    -- Effective expiry: least(last activity + inactivity TTL, absolute_expires_at).
    expires_at timestamptz not null,
    absolute_expires_at timestamptz not null,
    constraint sessions_data_is_object check (jsonb_typeof(data) = 'object'),
    constraint sessions_pending_is_array check (jsonb_typeof(pending_confirmations) = 'array'),
    constraint sessions_expiry_order check (expires_at <= absolute_expires_at)
);

alter table hipocampo_private.sessions enable row level security;

-- RLS filters on (tenant_id, user_id) and expiry; the purge scans expires_at.
create index sessions_tenant_user_idx on hipocampo_private.sessions (tenant_id, user_id, expires_at);

create index sessions_expires_at_idx on hipocampo_private.sessions (expires_at);

create policy "users read their own live sessions"
on hipocampo_private.sessions
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
    and expires_at > now()
);

create policy "users open their own sessions"
on hipocampo_private.sessions
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
);

create policy "users update their own live sessions"
on hipocampo_private.sessions
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
    and expires_at > now()
)
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
);

create policy "users close their own sessions"
on hipocampo_private.sessions
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
);

comment on table hipocampo_private.sessions is
'Session context (last messages, summary, tools, pending confirmations) with TTLs; expired rows are unreadable.';

/*
_session(session_id uuid, renew boolean) -> hipocampo_private.sessions

Purpose: the caller's live session, locked; renewed (last_activity_at = now(), expires_at =
  least(now() + sessions.inactivity_ttl_minutes, absolute_expires_at)) when renew. The sessions
  config is read from the config rows only.
Errors: 42501 as _caller (before any other work); P0002 "unknown or expired session"; 55000 "sessions config is incomplete: …".
Example: select (hipocampo_private._session(s, false)).id;
*/
create or replace function hipocampo_private._session(session_id uuid, renew boolean)
returns hipocampo_private.sessions
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    s hipocampo_private.sessions;
    cfg jsonb;
begin
    select * into s from hipocampo_private.sessions as x
    where x.id = _session.session_id and x.expires_at > now()
      and ((select auth.uid()) is null or x.user_id = (select auth.uid()))
    for update;
    if s.id is null then
        raise exception 'unknown or expired session: %', session_id using errcode = 'P0002';
    end if;
    if renew then
        cfg := hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions');
        update hipocampo_private.sessions as x
        set last_activity_at = now(),
            expires_at = least(
                now() + make_interval(mins => (cfg ->> 'inactivity_ttl_minutes')::integer),
                x.absolute_expires_at
            )
        where x.id = s.id
        returning * into s;
    end if;
    return s;
end;
$$;

/*
_session_view(s hipocampo_private.sessions) -> jsonb

Purpose: a session as the API returns it; expired pending confirmations left out.
*/
create or replace function hipocampo_private._session_view(s hipocampo_private.sessions)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    select jsonb_build_object(
        'session_id', s.id, 'conversation_id', s.conversation_id,
        'messages', coalesce(s.data -> 'messages', '[]'::jsonb),
        'summary', s.data -> 'summary',
        'tools_used', coalesce(s.data -> 'tools_used', '[]'::jsonb),
        'pending_confirmations', coalesce((
            select jsonb_agg(p order by p ->> 'expires_at')
            from jsonb_array_elements(s.pending_confirmations) as p
            where (p ->> 'expires_at')::timestamptz > now()
        ), '[]'::jsonb),
        'created_at', s.created_at, 'last_activity_at', s.last_activity_at,
        'expires_at', s.expires_at, 'absolute_expires_at', s.absolute_expires_at
    )
$$;

/*
open_session(conversation_id uuid default null, user_id uuid default null, tenant_id uuid default null)
  -> jsonb

Purpose: open a session for the caller. Expires after sessions.inactivity_ttl_minutes without
  activity (renewed by activity) and at the latest sessions.absolute_max_minutes after opening.
  A user has at most sessions.max_concurrent live sessions: opening one more closes the least
  recently active ones (listed in "evicted").
Parameters: conversation_id (default: a new one); user_id / tenant_id only for service_role.
Returns: the session (see get_session) plus {"evicted": [session ids]}.
Errors: 42501 as _memory_actor; 55000 "sessions config is incomplete: …" (not seeded from
  config.toml).
Example: select hipocampo.open_session();
*/
create or replace function hipocampo.open_session(
    conversation_id uuid default null, user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(open_session.user_id, open_session.tenant_id);
    cfg jsonb := hipocampo_private._sessions_config(hipocampo.effective_config(a.actor_tenant) -> 'sessions');
    max_live integer := (cfg ->> 'max_concurrent')::integer;
    absolute timestamptz := now() + make_interval(mins => (cfg ->> 'absolute_max_minutes')::integer);
    s hipocampo_private.sessions;
    evicted uuid [];
begin
    -- One opener per user at a time, so the cap holds under concurrency.
    perform pg_advisory_xact_lock(hashtextextended('session/' || a.actor_tenant::text || '/' || a.actor_user::text, 0));
    with doomed as (
        select x.id from hipocampo_private.sessions as x
        where x.tenant_id = a.actor_tenant and x.user_id = a.actor_user and x.expires_at > now()
        order by x.last_activity_at desc, x.created_at desc
        offset greatest(max_live - 1, 0)
    ), gone as (
        delete from hipocampo_private.sessions as x using doomed as d where x.id = d.id returning x.id
    )
    select coalesce(array_agg(g.id), '{}') into evicted from gone as g;
    insert into hipocampo_private.sessions (
        tenant_id, user_id, conversation_id, expires_at, absolute_expires_at
    ) values (
        a.actor_tenant, a.actor_user, coalesce(open_session.conversation_id, gen_random_uuid()),
        least(now() + make_interval(mins => (cfg ->> 'inactivity_ttl_minutes')::integer), absolute),
        absolute
    ) returning * into s;
    return hipocampo_private._session_view(s) || jsonb_build_object('evicted', to_jsonb(evicted));
end;
$$;

/*
get_session(session_id uuid, renew boolean default true) -> jsonb

Purpose: read a live session (reading is activity: renews the TTL unless renew is false).
Returns: {"session_id", "conversation_id", "messages": [last N], "summary", "tools_used",
  "pending_confirmations": [live ones], "created_at", "last_activity_at", "expires_at",
  "absolute_expires_at"}.
Errors: P0002 "unknown or expired session".
Example: select hipocampo.get_session('…');
*/
create or replace function hipocampo.get_session(session_id uuid, renew boolean default true)
returns jsonb
language sql
security invoker
set search_path = ''
as $$
    select hipocampo_private._session_view(hipocampo_private._session(session_id, renew))
$$;

/*
session_add_message(session_id uuid, role text, content text, modality text default 'chat',
  attachments jsonb default '[]', embedding vector default null, metadata jsonb default '{}') -> bigint

Purpose: add a message to the session's conversation history (hipocampo.add_message) and to the
  session's last sessions.last_messages messages (kept in sessions.data, scrubbed like the
  message); renews the session.
Returns: the message id.
Errors: 42501 as _caller; P0002 "unknown or expired session"; as add_message; 55000 "sessions
  config is incomplete: …".
Example: select hipocampo.session_add_message('…', 'user', 'Oi, preciso da segunda via');
*/
create or replace function hipocampo.session_add_message(
    session_id uuid,
    role text,
    content text,
    modality text default 'chat',
    attachments jsonb default '[]'::jsonb,
    embedding extensions.vector default null,
    metadata jsonb default '{}'::jsonb
)
returns bigint
language plpgsql
security invoker
set search_path = ''
as $$
declare
    s hipocampo_private.sessions := hipocampo_private._session(session_add_message.session_id, true);
    keep integer := (
        hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions') ->> 'last_messages'
    )::integer;
    message_id bigint;
begin
    message_id := hipocampo.add_message(
        s.conversation_id, role, content, modality, attachments, embedding, metadata,
        user_id => s.user_id, tenant_id => s.tenant_id
    );
    update hipocampo_private.sessions as x
    set data = jsonb_set(x.data, '{messages}', coalesce((
        select jsonb_agg(m.value order by m.ord)
        from (
            select e.value, e.ord from jsonb_array_elements(
                coalesce(x.data -> 'messages', '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
                    'id', message_id, 'role', session_add_message.role, 'content', session_add_message.content,
                    'modality', coalesce(session_add_message.modality, 'chat'), 'created_at', now()
                ))
            ) with ordinality as e (value, ord)
            order by e.ord desc
            limit keep
        ) as m
    ), '[]'::jsonb))
    where x.id = s.id;
    return message_id;
end;
$$;

/*
update_session(session_id uuid, summary text default null, tool text default null) -> jsonb

Purpose: set the session's summary and/or record a tool used (each tool listed once); renews.
Returns: the session (see get_session).
Errors: P0002 "unknown or expired session".
Example: select hipocampo.update_session('…', tool => 'hybrid_search');
*/
create or replace function hipocampo.update_session(session_id uuid, summary text default null, tool text default null)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    s hipocampo_private.sessions := hipocampo_private._session(update_session.session_id, true);
begin
    update hipocampo_private.sessions as x
    set data = x.data
        || case when update_session.summary is null then '{}'::jsonb
                else jsonb_build_object('summary', update_session.summary) end
        || case when update_session.tool is null
                  or coalesce(x.data -> 'tools_used', '[]'::jsonb) ? update_session.tool then '{}'::jsonb
                else jsonb_build_object('tools_used',
                    coalesce(x.data -> 'tools_used', '[]'::jsonb) || to_jsonb(update_session.tool)) end
    where x.id = s.id
    returning * into s;
    return hipocampo_private._session_view(s);
end;
$$;

/*
add_pending_confirmation(session_id uuid, action text, payload jsonb default '{}') -> jsonb

Purpose: park an action awaiting the user's confirmation ("confirma o envio?"). It expires after
  sessions.pending_confirmation_minutes (5, fixed: tenants cannot change it); renews the session.
Returns: {"id", "action", "payload", "expires_at"}.
Errors: 42501 as _caller; P0002 "unknown or expired session"; 22023 empty action; 55000
  "sessions config is incomplete: …".
Example: select hipocampo.add_pending_confirmation('…', 'send_invoice', '{"invoice": 12}');
*/
create or replace function hipocampo.add_pending_confirmation(session_id uuid, action text, payload jsonb default '{}'::jsonb)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    s hipocampo_private.sessions := hipocampo_private._session(add_pending_confirmation.session_id, true);
    item jsonb;
begin
    if action is null or btrim(action) = '' then
        raise exception 'a pending confirmation needs an action' using errcode = '22023';
    end if;
    item := jsonb_build_object(
        'id', gen_random_uuid(), 'action', action, 'payload', coalesce(payload, '{}'::jsonb),
        'expires_at', now() + make_interval(mins => (
            hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions')
            ->> 'pending_confirmation_minutes'
        )::integer)
    );
    update hipocampo_private.sessions as x
    set pending_confirmations = coalesce((
        select jsonb_agg(p) from jsonb_array_elements(x.pending_confirmations) as p
        where (p ->> 'expires_at')::timestamptz > now()
    ), '[]'::jsonb) || jsonb_build_array(item)
    where x.id = s.id;
    return item;
end;
$$;

/*
resolve_pending_confirmation(session_id uuid, confirmation_id uuid) -> jsonb

Purpose: take a pending confirmation out of the session (the user answered); renews the session.
Returns: the confirmation {"id", "action", "payload", "expires_at"}.
Errors: P0002 "unknown or expired session"; P0002 "unknown or expired confirmation" (past its
  5 minutes: the action must be asked again).
Example: select hipocampo.resolve_pending_confirmation('…', '…');
*/
create or replace function hipocampo.resolve_pending_confirmation(session_id uuid, confirmation_id uuid)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    s hipocampo_private.sessions := hipocampo_private._session(resolve_pending_confirmation.session_id, true);
    item jsonb;
begin
    select p into item from jsonb_array_elements(s.pending_confirmations) as p
    where p ->> 'id' = confirmation_id::text and (p ->> 'expires_at')::timestamptz > now();
    update hipocampo_private.sessions as x
    set pending_confirmations = coalesce((
        select jsonb_agg(p) from jsonb_array_elements(x.pending_confirmations) as p
        where (p ->> 'expires_at')::timestamptz > now() and p ->> 'id' <> confirmation_id::text
    ), '[]'::jsonb)
    where x.id = s.id;
    if item is null then
        raise exception 'unknown or expired confirmation: %', confirmation_id using errcode = 'P0002',
            hint = 'pending confirmations expire after sessions.pending_confirmation_minutes; ask again';
    end if;
    return item;
end;
$$;

/*
close_session(session_id uuid) -> boolean

Purpose: end a session now (its conversation history stays).
Returns: true when a session was closed.
Example: select hipocampo.close_session('…');
Errors: 42501 as _caller (before any other work).
*/
create or replace function hipocampo.close_session(session_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    n integer;
begin
    delete from hipocampo_private.sessions as x
    where x.id = close_session.session_id
      and ((select auth.uid()) is null or x.user_id = (select auth.uid()));
    get diagnostics n = row_count;
    return n > 0;
end;
$$;

/*
purge_sessions(now timestamptz default now()) -> integer

Purpose: delete expired sessions (inactivity TTL or absolute maximum passed). Scheduled every
  5 minutes with pg_cron where it exists; locally `hipocampo worker`.
Returns: the number of sessions deleted.
Example: select hipocampo.purge_sessions();
*/
create or replace function hipocampo.purge_sessions(now timestamptz default now())
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    n integer;
begin
    delete from hipocampo_private.sessions as x where x.expires_at <= purge_sessions.now;
    get diagnostics n = row_count;
    return n;
end;
$$;

comment on function hipocampo.open_session(uuid, uuid, uuid) is
'Open a session (inactivity TTL, absolute maximum, at most N live per user).';

comment on function hipocampo.get_session(uuid, boolean) is 'Read (and renew) a live session.';

comment on function hipocampo.session_add_message(uuid, text, text, text, jsonb, extensions.vector, jsonb) is
'Add a message to the session and its conversation history; renews the session.';

comment on function hipocampo.update_session(uuid, text, text) is 'Set a session''s summary or record a tool used.';

comment on function hipocampo.add_pending_confirmation(uuid, text, jsonb) is
'Park an action awaiting confirmation (expires after 5 minutes).';

comment on function hipocampo.resolve_pending_confirmation(uuid, uuid) is
'Take an answered pending confirmation out of the session.';

comment on function hipocampo.close_session(uuid) is 'End a session now.';

comment on function hipocampo.purge_sessions(timestamptz) is 'Delete expired sessions.';

/*
_scrub_session() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of sessions: every string of data scrubbed when the
  row's tenant has conversations.scrub_pii (default true).
*/
create or replace function hipocampo_private._scrub_session()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if coalesce((hipocampo.effective_config(new.tenant_id) -> 'conversations' ->> 'scrub_pii')::boolean, true) then
        new.data := hipocampo_private._pii_scrub_jsonb(new.data);
    end if;
    return new;
end;
$$;

create trigger sessions_scrub_pii
before insert or update of data on hipocampo_private.sessions
for each row execute function hipocampo_private._scrub_session();

-- ==================== supabase/schemas/09_user_data_rights.sql ====================

/*
_user_ref(tenant_id uuid, user_id uuid) -> text

Purpose: the pseudonym of a user in audit records and rate-limit buckets: _pseudonym(tenant:user),
  a keyed HMAC that whoever holds the user id but not the key cannot recompute. Called by the definer RPCs
  (record_answer, erase_user, take_rate_limit) and service_role; not by clients.
*/
create or replace function hipocampo_private._user_ref(tenant_id uuid, user_id uuid)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
    select hipocampo_private._pseudonym(tenant_id::text || ':' || user_id::text)
$$;

/*
_data_subject(user_id uuid, tenant_id uuid) -> record (actor_tenant uuid, actor_user uuid)

Purpose: whose data an export or erasure is about: exactly _memory_actor's answer (a user is
  their own data subject; service_role names the user and tenant).
Errors: as _memory_actor.
Example: select actor_user from hipocampo_private._data_subject(null, null);
*/
create or replace function hipocampo_private._data_subject(
    user_id uuid, tenant_id uuid, out actor_tenant uuid, out actor_user uuid
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(_data_subject.user_id, _data_subject.tenant_id);
begin
    actor_tenant := a.actor_tenant;
    actor_user := a.actor_user;
end;
$$;

/*
export_user_data(user_id uuid default null, tenant_id uuid default null) -> jsonb

Purpose: everything hipocampo holds about one user in one tenant, as JSON (LGPD art. 18 II/V):
  consent, memories (with history), staged memories, messages, conversation summaries, live
  sessions and memory events. Embeddings and the messages' token_ids / token_bits (derived from
  their content) are left out. Audited (user.exported).
Parameters: user_id / tenant_id only for service_role (users export themselves).
Returns: {"format": "hipocampo.user_export.v1", "exported_at", "tenant_id", "user_id", "consent",
  "memories": [...], "staged_memories": [...], "messages": [...], "conversation_summaries": [...],
  "sessions": [...], "events": [...]}.
Errors: 42501 as _data_subject (no tenant / no user / user mismatch).
Example: select hipocampo.export_user_data();
*/
-- definer because a user's export includes their own audit events and sessions in every state, beyond what RLS shows.
create or replace function hipocampo.export_user_data(user_id uuid default null, tenant_id uuid default null)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
    a record := hipocampo_private._data_subject(export_user_data.user_id, export_user_data.tenant_id);
    result jsonb;
begin
    result := jsonb_build_object(
        'format', 'hipocampo.user_export.v1',
        'exported_at', now(),
        'tenant_id', a.actor_tenant,
        'user_id', a.actor_user,
        'consent', (
            select to_jsonb(c) from hipocampo_private.memory_consents as c
            where c.tenant_id = a.actor_tenant and c.user_id = a.actor_user
        ),
        'memories', coalesce((
            select jsonb_agg(to_jsonb(m) - 'embedding' - 'emotional_embedding' order by m.key, m.valid_from, m.valid_to nulls last)
            from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
        ), '[]'::jsonb),
        'staged_memories', coalesce((
            select jsonb_agg(to_jsonb(s) - 'embedding' - 'emotional_embedding' order by s.key)
            from hipocampo_private.memory_staging as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'messages', coalesce((
            select jsonb_agg(
                to_jsonb(m) - 'embedding' - 'fts' - 'fts_length' - 'ts_config' - 'token_ids' - 'token_bits'
                order by m.id
            )
            from hipocampo_private.messages as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
        ), '[]'::jsonb),
        'conversation_summaries', coalesce((
            select jsonb_agg(to_jsonb(s) order by s.conversation_id)
            from hipocampo_private.conversation_summaries as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'sessions', coalesce((
            select jsonb_agg(to_jsonb(s) order by s.created_at)
            from hipocampo_private.sessions as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'events', coalesce((
            select jsonb_agg(to_jsonb(e) order by e.id)
            from hipocampo_private.memory_events as e
            where e.tenant_id = a.actor_tenant and e.user_id = a.actor_user
        ), '[]'::jsonb)
    );
    perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, null, 'user.exported', null,
        jsonb_build_object('memories', jsonb_array_length(result -> 'memories'),
            'messages', jsonb_array_length(result -> 'messages')));
    return result;
end;
$$;

/*
erase_user(user_id uuid default null, tenant_id uuid default null) -> jsonb

Purpose: erase a user from a tenant (LGPD art. 18 VI): personal memories (with history), staged
  memories, messages, conversation summaries, sessions, consent, memory events, the user's
  rate-limit bucket and their membership are deleted; tenant_shared memories the user wrote stay
  (tenant knowledge) with the author replaced by a pseudonym; the access log and ingestion jobs
  keep their rows without the user. No raw user id remains in any table
  (tests/sql/test_erasure_scan.py). One audit record remains: event user.erased with user_id
  null and user_ref = the keyed HMAC of tenant:user (_user_ref), with the counts. All or nothing.
Parameters: user_id / tenant_id only for service_role (users erase themselves).
Returns: {"user_ref", "memories", "shared_memories_pseudonymised", "staged_memories", "messages",
  "conversation_summaries", "sessions", "events", "memberships"} (rows affected).
Errors: 42501 as _data_subject (no tenant / no user / user mismatch).
Example: select hipocampo.erase_user('…'::uuid, '…'::uuid);  -- as service_role
*/
-- definer because erasure deletes the user's audit events, which no client role may delete.
create or replace function hipocampo.erase_user(user_id uuid default null, tenant_id uuid default null)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
    a record := hipocampo_private._data_subject(erase_user.user_id, erase_user.tenant_id);
    ref text := hipocampo_private._user_ref(a.actor_tenant, a.actor_user);
    pseudonym uuid := md5(hipocampo_private._user_ref(a.actor_tenant, a.actor_user))::uuid;
    counts jsonb := '{}'::jsonb;
    n integer;
begin
    delete from hipocampo_private.memories as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.scope = 'personal';
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('memories', n);
    update hipocampo_private.memories as m set user_id = pseudonym
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('shared_memories_pseudonymised', n);
    delete from hipocampo_private.memory_staging as s
    where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('staged_memories', n);
    delete from hipocampo_private.messages as m where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('messages', n);
    delete from hipocampo_private.conversation_summaries as s
    where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('conversation_summaries', n);
    delete from hipocampo_private.sessions as s where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('sessions', n);
    delete from hipocampo_private.memory_consents as c
    where c.tenant_id = a.actor_tenant and c.user_id = a.actor_user;
    delete from hipocampo_private.memory_events as e
    where e.tenant_id = a.actor_tenant and e.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('events', n);
    update hipocampo_private.data_access_log as l set caller = null
    where l.tenant_id = a.actor_tenant and l.caller = a.actor_user;
    update hipocampo_private.ingestion_jobs as j set created_by = null
    where j.tenant_id = a.actor_tenant and j.created_by = a.actor_user;
    -- The user's rate-limit bucket (keyed by the pseudonym; by the raw id in older databases).
    delete from hipocampo_private.rate_limit_buckets as r
    where r.bucket in ('user:' || a.actor_tenant || ':' || ref, 'user:' || a.actor_tenant || ':' || a.actor_user);
    delete from hipocampo_private.memberships as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('memberships', n);
    insert into hipocampo_private.memory_events (tenant_id, user_id, user_ref, event, reason, detail)
    values (a.actor_tenant, null, ref, 'user.erased',
        case when (select auth.uid()) is null then 'service_role' else 'data_subject' end, counts);
    return counts || jsonb_build_object('user_ref', ref);
end;
$$;

comment on function hipocampo.export_user_data(uuid, uuid) is
'Everything hipocampo holds about a user, as JSON (LGPD art. 18).';

comment on function hipocampo.erase_user(uuid, uuid) is
'Erase a user''s memories, staging, messages, sessions and events; one pseudonymous audit record remains.';

create table hipocampo_private.project_secrets (
    name text primary key,
    value bytea not null,
    created_at timestamptz not null default now(),
    constraint project_secrets_value_length check (octet_length(value) >= 32)
);

alter table hipocampo_private.project_secrets enable row level security;

comment on table hipocampo_private.project_secrets is
'Per-project keys (user_ref_key: the HMAC key of audit pseudonyms). Readable by service_role only.';

/*
_hmac_sha256(key bytea, message bytea) -> bytea

Purpose: HMAC-SHA256 (RFC 2104): sha256((K xor opad) || sha256((K xor ipad) || message)), the
  key zero-padded to the 64-byte block (hashed first when longer).
Example: select encode(hipocampo_private._hmac_sha256('key', 'The quick brown fox jumps over the lazy dog'), 'hex');
  -- f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8
*/
create or replace function hipocampo_private._hmac_sha256(key bytea, message bytea)
returns bytea
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    k bytea := case when octet_length(key) > 64 then sha256(key) else key end;
    inner_key bytea;
    outer_key bytea;
begin
    k := k || decode(repeat('00', 64 - octet_length(k)), 'hex');
    inner_key := k;
    outer_key := k;
    for i in 0 .. 63 loop
        inner_key := set_byte(inner_key, i, get_byte(k, i) # 54);  -- 0x36
        outer_key := set_byte(outer_key, i, get_byte(k, i) # 92);  -- 0x5c
    end loop;
    return sha256(outer_key || sha256(inner_key || message));
end;
$$;

/*
_pseudonym(value text) -> text

Purpose: the keyed pseudonym of an identifier: hex HMAC-SHA256 of value under the project's
  user_ref_key. Without the key (service_role alone reads it) the identifier cannot be
  recovered or re-derived from the pseudonym.
Errors: 55000 "the project has no user_ref_key" (the row was deleted).
*/
-- definer because it reads project_secrets, which only service_role may read; not executable by
-- clients (a client could otherwise compute anyone's pseudonym).
create or replace function hipocampo_private._pseudonym(value text)
returns text
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
    key bytea := (select s.value from hipocampo_private.project_secrets as s where s.name = 'user_ref_key');
begin
    if key is null then
        raise exception 'the project has no user_ref_key' using errcode = '55000';
    end if;
    return encode(hipocampo_private._hmac_sha256(key, convert_to(value, 'UTF8')), 'hex');
end;
$$;

-- ==================== supabase/schemas/10_answers.sql ====================

-- Evidence for answers that cite or refuse: how much of a question a chunk covers (support), the
-- conflicts between documents (deadlines, dates, money per scope), and one RPC that retrieves,
-- scores, resolves conflicts, selects the evidence under a token budget and decides answer or
-- refuse. Generation (extractive or an LLM) and the post-validation of numbers happen in the client.
/*
_question_lexemes(query_text text, ts_config regconfig, stopwords jsonb) -> text[]

Purpose: the distinct stemmed, unaccented terms of a question, minus the question stopwords
  (rag.question_stopwords: interrogatives and auxiliaries).
Example: select hipocampo_private._question_lexemes('Qual o prazo?', 'hipocampo_private.portuguese_unaccent', '[]');
*/
create or replace function hipocampo_private._question_lexemes(query_text text, ts_config regconfig, stopwords jsonb)
returns text[]
language sql
stable
security invoker
set search_path = ''
as $$
    select coalesce(array_agg(distinct l.lexeme), '{}')
    from pg_catalog.unnest(pg_catalog.tsvector_to_array(pg_catalog.to_tsvector(ts_config, coalesce(query_text, ''))))
        as l (lexeme)
    where not coalesce(stopwords, '[]'::jsonb) ? l.lexeme
$$;

/*
_sentences(content text) -> table (ord integer, sentence text)

Purpose: a text split into sentences (after . ! ? ; : before a capital letter, or at line breaks),
  empty ones left out.
*/
create or replace function hipocampo_private._sentences(content text)
returns table (ord integer, sentence text)
language sql
immutable
security invoker
set search_path = ''
as $$
    select row_number() over (order by s.n)::integer, btrim(s.part)
    from pg_catalog.regexp_split_to_table(content, '(?<=[.!?;:])\s+(?=[A-ZÀ-Ý"«(])|\n+') with ordinality as s (part, n)
    where btrim(s.part) <> ''
$$;

/*
evidence_support(query_text text, chunk_ids bigint[], stopwords jsonb default null) -> setof record

Purpose: how well each chunk covers a question. coverage = idf-weighted share of the question's
  terms (BM25 idf of the chunk's knowledge base) present in the chunk (title included);
  window_coverage = the same over the chunk's best window of two consecutive sentences;
  support = (coverage + window_coverage) / 2, in [0, 1] (docs/design.md §answers).
Parameters: query_text 1..2,000 characters; chunk_ids visible to the caller (RLS);
  stopwords - json array of stems (default rag.question_stopwords).
Returns: chunk_id, coverage, window_coverage, support, best_window (text of the best window).
Errors: 42501 as _caller (before any other work); otherwise none (chunks the caller cannot see are left out).
Example: select * from hipocampo.evidence_support('Qual o prazo de trancamento?', array[12, 15]);
*/
create or replace function hipocampo.evidence_support(query_text text, chunk_ids bigint[], stopwords jsonb default null)
returns table (
    chunk_id bigint, coverage double precision, window_coverage double precision,
    support double precision, best_window text
)
language sql
stable
security invoker
set search_path = ''
as $$
    select hipocampo_private._caller();
    with c as (
        select ch.id, ch.kb_id, ch.embedding_model, ch.ts_config, ch.fts, ch.content
        from hipocampo_private.chunks as ch
        where ch.id = any(evidence_support.chunk_ids)
    ),

    q as (
        select
            c.id,
            l.lexeme,
            pg_catalog.ln(
                1 + (coalesce(st.chunk_count, 0) - coalesce(ts.doc_freq, 0) + 0.5)
                / (coalesce(ts.doc_freq, 0) + 0.5)
            ) as idf
        from c
        cross join lateral pg_catalog.unnest(hipocampo_private._question_lexemes(
            evidence_support.query_text, c.ts_config,
            coalesce(evidence_support.stopwords,
                     (select s.config -> 'rag' -> 'question_stopwords'
                      from hipocampo_private.settings as s where s.tenant_id is null))
        )) as l (lexeme)
        left join hipocampo_private.kb_text_stats as st
            on st.kb_id = c.kb_id and st.embedding_model = c.embedding_model
        left join hipocampo_private.kb_term_stats as ts
            on ts.kb_id = c.kb_id and ts.embedding_model = c.embedding_model and ts.lexeme = l.lexeme
    ),

    totals as (
        select q.id, sum(q.idf) as total, sum(q.idf) filter (
            where q.lexeme = any(pg_catalog.tsvector_to_array((select c.fts from c where c.id = q.id)))
        ) as found
        from q group by q.id
    ),

    sentences as (
        select c.id, s.ord, s.sentence,
               pg_catalog.tsvector_to_array(pg_catalog.to_tsvector(c.ts_config, s.sentence)) as lexemes
        from c cross join lateral hipocampo_private._sentences(c.content) as s
    ),

    windows as (
        select a.id, a.ord,
               a.sentence || coalesce(' ' || b.sentence, '') as text,
               a.lexemes || coalesce(b.lexemes, '{}') as lexemes
        from sentences as a
        left join sentences as b on b.id = a.id and b.ord = a.ord + 1
    ),

    scored as (
        select distinct on (w.id) w.id, w.text,
               coalesce((select sum(q.idf) from q where q.id = w.id and q.lexeme = any(w.lexemes)), 0) as found
        from windows as w
        order by w.id, 3 desc, w.ord
    )

    select
        c.id,
        coalesce(t.found / nullif(t.total, 0), 0),
        coalesce(s.found / nullif(t.total, 0), 0),
        (coalesce(t.found / nullif(t.total, 0), 0) + coalesce(s.found / nullif(t.total, 0), 0)) / 2,
        s.text
    from c
    left join totals as t on t.id = c.id
    left join scored as s on s.id = c.id
$$;

/*
_scope_of(text text) -> text

Purpose: the scope a sentence or question speaks of: 'internacional', 'nacional' or 'geral'.
*/
create or replace function hipocampo_private._scope_of(sentence text)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
    select case
        when lower(extensions.unaccent(sentence)) ~ '\minternaciona' then 'internacional'
        when lower(extensions.unaccent(sentence)) ~ '\mnaciona' then 'nacional'
        else 'geral'
    end
$$;

/*
_sentence_values(sentence text) -> table (kind text, value text)

Purpose: the comparable values a sentence states: deadlines in days ("30 dias", "2 meses" = 60),
  dd/mm/yyyy dates (as yyyy-mm-dd) and monetary values in R$ (as a plain decimal).
Example: select * from hipocampo_private._sentence_values('Prazo de 30 dias, multa de R$ 1.200,50.');
*/
create or replace function hipocampo_private._sentence_values(sentence text)
returns table (kind text, value text)
language sql
stable
security invoker
set search_path = ''
as $$
    with plain as (select lower(extensions.unaccent(sentence)) as t)

    select 'deadline_days', ((m[1])::integer * case when m[2] like 'mes%' then 30 else 1 end)::text
    from plain cross join lateral pg_catalog.regexp_matches(
        plain.t, '\m(\d{1,4})\s*(?:\([^)]{1,40}\)\s*)?(dias?|meses|mes)\M', 'g'
    ) as m
    union all
    select 'date', m[3] || '-' || lpad(m[2], 2, '0') || '-' || lpad(m[1], 2, '0')
    from plain cross join lateral pg_catalog.regexp_matches(plain.t, '\m(\d{1,2})/(\d{1,2})/(\d{4})\M', 'g') as m
    union all
    select 'money', (replace(m[1], '.', '') || '.' || rpad(coalesce(m[2], '00'), 2, '0'))::numeric::text
    from plain cross join lateral pg_catalog.regexp_matches(
        plain.t, 'r\$\s*(\d{1,3}(?:\.\d{3})+|\d+)(?:,(\d{1,2}))?', 'g'
    ) as m
$$;

/*
detect_conflicts(query_text text, chunk_ids bigint[], trust_margin double precision default null,
  stopwords jsonb default null) -> jsonb

Purpose: conflicts between the documents of the given chunks: two active documents that state
  different deadlines (days), dd/mm/yyyy dates or R$ values, in sentences on the question's topic
  (sharing at least min(2, n) of its n terms), within one scope (nacional, internacional,
  geral). When the question names a scope, only that scope counts. Values that differ inside one
  document are not a conflict. A conflict is resolved when one document's trust exceeds every
  other's by trust_margin (default rag.conflict_trust_margin): its values win.
Parameters: query_text; chunk_ids visible to the caller; trust_margin 0..1; stopwords as
  evidence_support.
Returns: a json array of {"kind", "scope", "resolved", "winner_document_id", "document_ids",
  "values": [{"value", "document_id", "chunk_id", "title", "trust_score", "sentence"}]}; [] when none.
Errors: 42501 as _caller (before any other work).
Example: select hipocampo.detect_conflicts('Qual o prazo de reembolso internacional?', array[1, 2]);
*/
create or replace function hipocampo.detect_conflicts(
    query_text text, chunk_ids bigint[], trust_margin double precision default null, stopwords jsonb default null
)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    select hipocampo_private._caller();
    with cfg as (
        select s.config -> 'rag' as rag from hipocampo_private.settings as s where s.tenant_id is null
    ),

    c as (
        select ch.id, ch.document_id, ch.ts_config, ch.content, d.title, d.trust_score
        from hipocampo_private.chunks as ch
        inner join hipocampo_private.documents as d on d.id = ch.document_id and d.tenant_id = ch.tenant_id
        where ch.id = any(detect_conflicts.chunk_ids) and d.status = 'active'
    ),

    question_scope as (
        select case
            when hipocampo_private._scope_of(detect_conflicts.query_text) = 'geral' then null
            else hipocampo_private._scope_of(detect_conflicts.query_text)
        end as scope
    ),

    facts as (
        select c.id as chunk_id, c.document_id, c.title, c.trust_score, s.sentence,
               hipocampo_private._scope_of(s.sentence) as scope, v.kind, v.value
        from c
        cross join lateral hipocampo_private._sentences(c.content) as s
        cross join lateral hipocampo_private._sentence_values(s.sentence) as v
        cross join lateral (
            select hipocampo_private._question_lexemes(
                detect_conflicts.query_text, c.ts_config,
                coalesce(detect_conflicts.stopwords, (select cfg.rag -> 'question_stopwords' from cfg))
            ) as terms
        ) as q
        where cardinality(q.terms) > 0
          and (
              select count(*) from pg_catalog.unnest(q.terms) as t (lexeme)
              where t.lexeme = any(pg_catalog.tsvector_to_array(pg_catalog.to_tsvector(c.ts_config, s.sentence)))
          ) >= least(2, cardinality(q.terms))
    ),

    scoped as (
        select f.* from facts as f, question_scope as qs
        where qs.scope is null or f.scope = qs.scope
    ),

    groups as (
        select g.kind, g.scope
        from scoped as g
        where exists (
            select 1 from scoped as o
            where o.kind = g.kind and o.scope = g.scope
              and o.document_id <> g.document_id and o.value <> g.value
        )
        group by g.kind, g.scope
    ),

    ranked as (
        select gr.kind, gr.scope, d.document_id, d.trust_score,
               row_number() over (partition by gr.kind, gr.scope order by d.trust_score desc, d.document_id) as rn
        from groups as gr
        cross join lateral (
            select distinct s.document_id, s.trust_score from scoped as s
            where s.kind = gr.kind and s.scope = gr.scope
        ) as d
    ),

    verdicts as (
        select r1.kind, r1.scope,
               r1.trust_score - coalesce(r2.trust_score, 0)
               >= coalesce(detect_conflicts.trust_margin, ((select cfg.rag ->> 'conflict_trust_margin' from cfg))::double precision)
               as resolved,
               r1.document_id as top_document
        from ranked as r1
        left join ranked as r2 on r2.kind = r1.kind and r2.scope = r1.scope and r2.rn = 2
        where r1.rn = 1
    )

    select coalesce(jsonb_agg(jsonb_build_object(
        'kind', v.kind,
        'scope', v.scope,
        'resolved', v.resolved,
        'winner_document_id', case when v.resolved then v.top_document end,
        'document_ids', (
            select jsonb_agg(distinct s.document_id) from scoped as s where s.kind = v.kind and s.scope = v.scope
        ),
        'values', (
            select jsonb_agg(jsonb_build_object(
                'value', s.value, 'document_id', s.document_id, 'chunk_id', s.chunk_id, 'title', s.title,
                'trust_score', s.trust_score, 'sentence', s.sentence
            ) order by s.trust_score desc, s.chunk_id)
            from scoped as s where s.kind = v.kind and s.scope = v.scope
        )
    ) order by v.kind, v.scope), '[]'::jsonb)
    from verdicts as v
$$;

/*
answer_evidence(query_text text, query_embedding vector, kb_ids uuid[] default null,
  agent text default null, tenant_id uuid default null) -> jsonb

Purpose: everything an answer needs from the database in one call, with the rules of the rag
  config (rag_config): hybrid retrieval of rag.top_k chunks, plus up to 3 near-duplicates of each
  from other documents (retrieval drops those; two versions of a policy are such twins);
  support per chunk (evidence_support);
  evidence = chunks with support >= rag.min_score, in the order of the combined score, under
  rag.evidence_token_budget tokens (near-duplicates: _near_duplicates, HNSW on large scopes); conflicts (detect_conflicts): a resolved one drops the losing
  documents' chunks, an unresolved one refuses; confidence = the best support, refused below
  rag.min_confidence; cross-check: >= rag.cross_check_min_documents distinct documents with
  support >= rag.min_confidence, or one of rag.authoritative_source_types with trust >=
  rag.authoritative_trust.
Parameters: query_text 1..2,000 characters; query_embedding of the active model; kb_ids (default:
  the agent binding's); agent - binding name; tenant_id only for service_role.
Returns: {"decision": "answer" | "refuse", "reason": null | "rag_disabled" | "no_evidence" |
  "low_confidence" | "conflicting_sources" | "cross_check_failed", "confidence", "candidates",
  "filtered" (below min_score), "conflicts" (detect_conflicts), "evidence": [{"n", "chunk_id",
  "document_id", "kb_id", "title", "source_uri", "source_type", "trust_score", "published_at",
  "content", "best_window", "score", "dense_score", "lexical_score", "support", "token_count"}],
  "config": the rag config used}.
Errors: 22023 "no knowledge base: …" when neither kb_ids nor an agent names one; as hybrid_search
  (22023 query length, 22000 dimensions); 42501 no tenant; P0002 unknown agent binding.
Example: select hipocampo.answer_evidence('Qual o prazo?', '[…]'::extensions.vector, array[kb]);
*/
create or replace function hipocampo.answer_evidence(
    query_text text,
    query_embedding extensions.vector,
    kb_ids uuid[] default null,
    agent text default null,
    tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(answer_evidence.tenant_id);
    cfg jsonb := hipocampo.rag_config(
        case when cardinality(answer_evidence.kb_ids) = 1 then answer_evidence.kb_ids[1] end,
        answer_evidence.agent, t
    );
    kbs uuid[] := coalesce(answer_evidence.kb_ids,
        (select array_agg(x::uuid) from jsonb_array_elements_text(
            case when jsonb_typeof(cfg -> 'kb_ids') = 'array' then cfg -> 'kb_ids' else '[]'::jsonb end
        ) as x));
    top_k integer := (cfg ->> 'top_k')::integer;
    min_score double precision := (cfg ->> 'min_score')::double precision;
    min_confidence double precision := (cfg ->> 'min_confidence')::double precision;
    budget integer := (cfg ->> 'evidence_token_budget')::integer;
    dedupe double precision := (hipocampo.effective_config(t) -> 'retrieval' ->> 'dedupe_threshold')::double precision;
    candidates jsonb;
    evidence jsonb := '[]'::jsonb;
    conflicts jsonb := '[]'::jsonb;
    losers jsonb := '[]'::jsonb;
    item jsonb;
    used integer := 0;
    n_candidates integer;
    n_filtered integer;
    confidence double precision;
    agreeing integer;
    authoritative boolean;
    reason text;
begin
    if coalesce(cardinality(kbs), 0) = 0 then
        raise exception 'no knowledge base: pass kb_ids or an agent bound to knowledge bases'
            using errcode = '22023';
    end if;
    if not coalesce((cfg ->> 'enabled')::boolean, true) then
        return jsonb_build_object('decision', 'refuse', 'reason', 'rag_disabled', 'confidence', 0,
            'candidates', 0, 'filtered', 0, 'conflicts', '[]'::jsonb, 'evidence', '[]'::jsonb, 'config', cfg);
    end if;

    select coalesce(jsonb_agg(to_jsonb(h) order by h.rank), '[]'::jsonb) into candidates
    from hipocampo.hybrid_search(
        query_text => answer_evidence.query_text,
        query_embedding => answer_evidence.query_embedding,
        kb_ids => kbs,
        match_count => top_k,
        tenant_id => t
    ) as h;
    -- Near-duplicates of the hits (cosine above retrieval.dedupe_threshold, other active
    -- documents) re-enter as candidates with their twin's scores: retrieval drops them as
    -- duplicates, but two versions of a policy that differ in one number are exactly the
    -- conflicts to see (and the newer version may be the twin that was dropped).
    select candidates || coalesce(jsonb_agg(h.e || jsonb_build_object(
               'chunk_id', x.id, 'document_id', x.document_id, 'kb_id', x.kb_id, 'content', x.content,
               'metadata', x.metadata, 'title', d.title, 'source_uri', d.source_uri,
               'source_type', d.source_type, 'trust_score', d.trust_score, 'published_at', d.published_at,
               'near_duplicate_of', h.id
           ) order by h.rank, nd.distance), '[]'::jsonb)
    into candidates
    from (
        select (e ->> 'chunk_id')::bigint as id, (e ->> 'rank')::integer as rank, e
        from jsonb_array_elements(candidates) as e
    ) as h
    inner join hipocampo_private._near_duplicates(
        array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as e), kbs, t, dedupe, 3
    ) as nd on nd.of_chunk_id = h.id
    inner join hipocampo_private.chunks as x on x.id = nd.chunk_id
    inner join hipocampo_private.documents as d on d.id = x.document_id and d.status = 'active';
    select coalesce(jsonb_agg(e || jsonb_build_object(
               'support', coalesce(s.support, 0), 'best_window', s.best_window, 'token_count', ch.token_count
           ) order by (e ->> 'rank')::integer, e ->> 'near_duplicate_of' nulls first), '[]'::jsonb)
    into candidates
    from jsonb_array_elements(candidates) as e
    left join hipocampo.evidence_support(
        answer_evidence.query_text,
        array(select (x ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as x),
        cfg -> 'question_stopwords'
    ) as s on s.chunk_id = (e ->> 'chunk_id')::bigint
    left join hipocampo_private.chunks as ch on ch.id = (e ->> 'chunk_id')::bigint;

    n_candidates := jsonb_array_length(candidates);
    select count(*) into n_filtered from jsonb_array_elements(candidates) as e
    where coalesce((e ->> 'support')::double precision, 0) < min_score;

    conflicts := hipocampo.detect_conflicts(
        answer_evidence.query_text,
        array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as e
              where coalesce((e ->> 'support')::double precision, 0) >= min_score),
        (cfg ->> 'conflict_trust_margin')::double precision,
        cfg -> 'question_stopwords'
    );
    -- Resolved conflicts: the losing documents' chunks leave the evidence.
    select coalesce(jsonb_agg(distinct d), '[]'::jsonb) into losers
    from jsonb_array_elements(conflicts) as k, jsonb_array_elements(k -> 'document_ids') as d
    where (k ->> 'resolved')::boolean and d <> k -> 'winner_document_id';

    for item in
        select e from jsonb_array_elements(candidates) as e
        where coalesce((e ->> 'support')::double precision, 0) >= min_score
          and not losers @> jsonb_build_array(e -> 'document_id')
        order by (e ->> 'final_score')::double precision desc, (e ->> 'rank')::integer
    loop
        exit when used > 0 and used + (item ->> 'token_count')::integer > budget;
        used := used + (item ->> 'token_count')::integer;
        evidence := evidence || jsonb_build_array(jsonb_build_object(
            'n', jsonb_array_length(evidence) + 1,
            'chunk_id', item -> 'chunk_id', 'document_id', item -> 'document_id', 'kb_id', item -> 'kb_id',
            'title', item -> 'title', 'source_uri', item -> 'source_uri', 'source_type', item -> 'source_type',
            'trust_score', item -> 'trust_score', 'published_at', item -> 'published_at',
            'metadata', item -> 'metadata',
            -- A single chunk over the budget is cut to it (4 characters per token).
            'content', case when used > budget then left(item ->> 'content', budget * 4) else item ->> 'content' end,
            'best_window', item -> 'best_window', 'score', item -> 'final_score',
            'dense_score', item -> 'dense_score', 'lexical_score', item -> 'lexical_score',
            'support', item -> 'support', 'token_count', least((item ->> 'token_count')::integer, budget)
        ));
    end loop;

    select max((e ->> 'support')::double precision) into confidence from jsonb_array_elements(evidence) as e;
    select count(distinct e ->> 'document_id') filter (
               where (e ->> 'support')::double precision >= min_confidence
           ),
           coalesce(bool_or(
               (e ->> 'support')::double precision >= min_confidence
               and (cfg -> 'authoritative_source_types') ? (e ->> 'source_type')
               and (e ->> 'trust_score')::double precision >= (cfg ->> 'authoritative_trust')::double precision
           ), false)
    into agreeing, authoritative
    from jsonb_array_elements(evidence) as e;

    reason := case
        when jsonb_array_length(evidence) = 0 then 'no_evidence'
        when exists (select 1 from jsonb_array_elements(conflicts) as k where not (k ->> 'resolved')::boolean)
            then 'conflicting_sources'
        when coalesce(confidence, 0) < min_confidence then 'low_confidence'
        when agreeing < (cfg ->> 'cross_check_min_documents')::integer and not authoritative
            then 'cross_check_failed'
    end;
    return jsonb_build_object(
        'decision', case when reason is null then 'answer' else 'refuse' end,
        'reason', reason,
        'confidence', coalesce(confidence, 0),
        'candidates', n_candidates,
        'filtered', n_filtered,
        'conflicts', conflicts,
        'evidence', evidence,
        'config', cfg
    );
end;
$$;

comment on function hipocampo.evidence_support(text, bigint[], jsonb) is
'How much of a question each chunk covers: idf-weighted term coverage of the chunk and its best two-sentence window.';

comment on function hipocampo.detect_conflicts(text, bigint[], double precision, jsonb) is
'Deadlines, dates and R$ values that disagree between documents on the question''s topic, per scope.';

comment on function hipocampo.answer_evidence(text, extensions.vector, uuid[], text, uuid) is
'Retrieval, support, conflicts, evidence under a token budget and the answer-or-refuse decision.';

-- The answer cache (per tenant + knowledge bases + normalised question, TTL rag.cache_ttl_seconds,
-- invalidated by any change to those knowledge bases), the token-bucket rate limit (per tenant
-- and user, and per client IP for the HTTP API), and the audit row of every answer call.
create table hipocampo_private.answer_cache (
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    -- Sorted, distinct knowledge base ids, joined by ',' (part of the key), and as an array.
    kb_key text not null,
    kb_ids uuid[] not null,
    agent text not null default '',
    question_key text not null,
    answer jsonb not null,
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    primary key (tenant_id, kb_key, agent, question_key),
    constraint answer_cache_answer_is_object check (jsonb_typeof(answer) = 'object')
);

alter table hipocampo_private.answer_cache enable row level security;

-- Invalidation finds the entries of one knowledge base.
create index answer_cache_kb_ids_idx on hipocampo_private.answer_cache using gin (kb_ids);

create index answer_cache_expires_at_idx on hipocampo_private.answer_cache (expires_at);

create table hipocampo_private.rate_limit_buckets (
    bucket text primary key,
    tokens double precision not null,
    capacity double precision not null,
    updated_at timestamptz not null default now()
);

alter table hipocampo_private.rate_limit_buckets enable row level security;

create table hipocampo_private.answer_audit (
    trace_id uuid primary key,
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    -- Pseudonymous: sha256(tenant:user) (see _user_ref), so erasing a user leaves no identity here.
    user_ref text,
    agent text,
    kb_ids uuid[] not null default '{}',
    question_sha256 text not null,
    answer_source text not null,
    reason text,
    confidence real,
    candidates integer not null default 0,
    filtered integer not null default 0,
    evidence_chunk_ids bigint[] not null default '{}',
    timings_ms jsonb not null default '{}'::jsonb,
    latency_ms real not null,
    created_at timestamptz not null default now(),
    constraint answer_audit_source_check check (answer_source in ('CACHE', 'LLM', 'EXTRACTIVE', 'REFUSAL')),
    constraint answer_audit_timings_is_object check (jsonb_typeof(timings_ms) = 'object')
);

alter table hipocampo_private.answer_audit enable row level security;

-- RLS filters on tenant_id; the views group by tenant and period.
create index answer_audit_tenant_created_idx on hipocampo_private.answer_audit (tenant_id, created_at);

create policy "admins can read the answer audit of their tenant"
on hipocampo_private.answer_audit
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

/*
normalize_question(question text) -> text

Purpose: the cache key of a question: lower case, unaccented, punctuation removed, whitespace
  collapsed ("Qual é o prazo?" and "qual e o  prazo" share one key).
Example: select hipocampo.normalize_question('  Qual é o PRAZO? '); -- 'qual e o prazo'
*/
create or replace function hipocampo.normalize_question(question text)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
    select btrim(regexp_replace(lower(extensions.unaccent(coalesce(question, ''))), '[^[:alnum:]]+', ' ', 'g'))
$$;

/*
_cache_scope(kb_ids uuid[]) -> text

Purpose: the knowledge-base part of a cache key: distinct ids, sorted, joined by ','.
*/
create or replace function hipocampo_private._cache_scope(kb_ids uuid[])
returns text
language sql
immutable
security invoker
set search_path = ''
as $$
    select string_agg(distinct k::text, ',' order by k::text) from pg_catalog.unnest(kb_ids) as k
$$;

/*
cache_get(question text, kb_ids uuid[], agent text default null, tenant_id uuid default null) -> jsonb

Purpose: the cached answer to a question over these knowledge bases, when one is live. The caller
  is resolved first (before, as a sql function with the check in its WHERE clause, an empty
  cache answered null to any caller).
Parameters: question as asked (normalised here); kb_ids - the knowledge bases searched (null:
  all); agent - agent binding name or null; tenant_id - service_role only.
Returns: the answer json, or null.
Errors: 42501 as _resolve_tenant.
Example: select hipocampo.cache_get('Qual o prazo?', array[kb]);
*/
-- definer because clients may not read the cache table directly (it is shared by the tenant's users).
create or replace function hipocampo.cache_get(
    question text, kb_ids uuid[], agent text default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(cache_get.tenant_id);
begin
    return (
        select c.answer from hipocampo_private.answer_cache as c
        where c.tenant_id = t
          and c.kb_key = hipocampo_private._cache_scope(cache_get.kb_ids)
          and c.agent = coalesce(cache_get.agent, '')
          and c.question_key = hipocampo.normalize_question(cache_get.question)
          and c.expires_at > now()
    );
end;
$$;

/*
cache_put(question text, kb_ids uuid[], answer jsonb, agent text default null, tenant_id uuid default null)
  -> boolean

Purpose: cache an answer for rag.cache_ttl_seconds of the effective rag config of the call
  (rag_config(kb, agent): the knowledge base's override when kb_ids names exactly one, the agent
  binding's when agent is given, else the tenant's; 0 = never cache). Only answers whose cited
  chunks all belong to these knowledge bases of the tenant are accepted (a client cannot plant
  answers citing anything else).
Parameters: answer - {"answer", "confidence", "sources": [{"chunk_id", …}], …}.
Returns: true when cached.
Errors: 22023 "answer must be a json object with sources"; 22023 "cited chunk … is not in these
  knowledge bases"; 42501 as _resolve_tenant; P0002 unknown agent binding.
Example: select hipocampo.cache_put('Qual o prazo?', array[kb], '{"answer": "…", "sources": []}');
*/
-- definer because the cache is written for the whole tenant and no client role may write it directly.
create or replace function hipocampo.cache_put(
    question text, kb_ids uuid[], answer jsonb, agent text default null, tenant_id uuid default null
)
returns boolean
language plpgsql
security definer
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(cache_put.tenant_id);
    ttl integer := (hipocampo.rag_config(
        case when cardinality(cache_put.kb_ids) = 1 then cache_put.kb_ids[1] end, cache_put.agent, t
    ) ->> 'cache_ttl_seconds')::integer;
    bad bigint;
begin
    if answer is null or jsonb_typeof(answer) <> 'object' or jsonb_typeof(answer -> 'sources') <> 'array' then
        raise exception 'answer must be a json object with sources' using errcode = '22023';
    end if;
    select (s ->> 'chunk_id')::bigint into bad
    from jsonb_array_elements(answer -> 'sources') as s
    where not exists (
        select 1 from hipocampo_private.chunks as c
        where c.id = (s ->> 'chunk_id')::bigint and c.tenant_id = t and c.kb_id = any(cache_put.kb_ids)
    )
    limit 1;
    if found then
        raise exception 'cited chunk % is not in these knowledge bases', bad using errcode = '22023';
    end if;
    if coalesce(ttl, 0) <= 0 then
        return false;
    end if;
    insert into hipocampo_private.answer_cache as c (
        tenant_id, kb_key, kb_ids, agent, question_key, answer, expires_at
    ) values (
        t, hipocampo_private._cache_scope(cache_put.kb_ids), cache_put.kb_ids, coalesce(cache_put.agent, ''),
        hipocampo.normalize_question(cache_put.question), answer, now() + make_interval(secs => ttl)
    )
    on conflict on constraint answer_cache_pkey do update
    set answer = excluded.answer, created_at = now(), expires_at = excluded.expires_at;
    return true;
end;
$$;

/*
_invalidate_answer_cache() -> trigger

Purpose: any change to a knowledge base (its documents: ingest, delete, status or trust change;
  its overrides) drops the cached answers over it; expired entries go at the same time.
  Statement-level, over the transition tables.
*/
-- definer because the writer of a document (an admin, the ingestion) may not write the cache table.
create or replace function hipocampo_private._invalidate_answer_cache()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
    changed uuid[];
begin
    if tg_table_name = 'knowledge_bases' then
        select array_agg(n.id) into changed from new_rows as n;
    elsif tg_op = 'INSERT' then
        select array_agg(distinct n.kb_id) into changed from new_rows as n;
    elsif tg_op = 'DELETE' then
        select array_agg(distinct o.kb_id) into changed from old_rows as o;
    else
        select array_agg(distinct x.kb_id) into changed from (
            select n.kb_id from new_rows as n union all select o.kb_id from old_rows as o
        ) as x;
    end if;
    delete from hipocampo_private.answer_cache as c where c.kb_ids && changed or c.expires_at <= now();
    return null;
end;
$$;

/*
set_document_status(document_id uuid, status text default null, trust_score real default null) -> jsonb

Purpose: mark a document superseded / archived / active again, or change its trust (0..1): how an
  admin resolves conflicting sources. Retrieval reads active documents only; the change drops the
  cached answers of its knowledge base (trigger below).
Parameters: status 'active' | 'superseded' | 'archived' (null = unchanged); trust_score 0..1
  (null = unchanged).
Returns: {"document_id", "status", "trust_score"}.
Errors: P0002 "unknown document: …" (also another tenant's, RLS); 23514 bad status or trust;
  42501 not an admin (RLS: the row is not updatable).
Example: select hipocampo.set_document_status(doc, 'superseded');
*/
create or replace function hipocampo.set_document_status(
    document_id uuid, status text default null, trust_score real default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    d hipocampo_private.documents;
begin
    perform hipocampo_private._require_admin();
    update hipocampo_private.documents as x
    set status = coalesce(set_document_status.status, x.status),
        trust_score = coalesce(set_document_status.trust_score, x.trust_score),
        updated_at = now()
    where x.id = set_document_status.document_id
    returning * into d;
    if d.id is null then
        raise exception 'unknown document: %', document_id using errcode = 'P0002';
    end if;
    return jsonb_build_object('document_id', d.id, 'status', d.status, 'trust_score', d.trust_score);
end;
$$;

create trigger documents_invalidate_answer_cache_on_insert
after insert on hipocampo_private.documents
referencing new table as new_rows
for each statement execute function hipocampo_private._invalidate_answer_cache();

create trigger documents_invalidate_answer_cache_on_update
after update on hipocampo_private.documents
referencing new table as new_rows old table as old_rows
for each statement execute function hipocampo_private._invalidate_answer_cache();

create trigger documents_invalidate_answer_cache_on_delete
after delete on hipocampo_private.documents
referencing old table as old_rows
for each statement execute function hipocampo_private._invalidate_answer_cache();

create trigger knowledge_bases_invalidate_answer_cache
after update on hipocampo_private.knowledge_bases
referencing new table as new_rows old table as old_rows
for each statement execute function hipocampo_private._invalidate_answer_cache();

/*
_take_token(bucket text, per_minute double precision, cost double precision) -> jsonb

Purpose: one token-bucket step: capacity per_minute, refilled continuously at per_minute / 60
  tokens per second; takes `cost` tokens when available.
Returns: {"allowed", "remaining", "limit", "retry_after_ms"}.
*/
create or replace function hipocampo_private._take_token(bucket text, per_minute double precision, cost double precision)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    b hipocampo_private.rate_limit_buckets;
    level double precision;
begin
    insert into hipocampo_private.rate_limit_buckets as r (bucket, tokens, capacity)
    values (_take_token.bucket, per_minute, per_minute)
    on conflict on constraint rate_limit_buckets_pkey do nothing;
    select * into b from hipocampo_private.rate_limit_buckets as r where r.bucket = _take_token.bucket for update;
    level := least(per_minute, b.tokens + extract(epoch from (clock_timestamp() - b.updated_at)) * per_minute / 60);
    if level >= cost then
        update hipocampo_private.rate_limit_buckets as r
        set tokens = level - cost, capacity = per_minute, updated_at = clock_timestamp()
        where r.bucket = b.bucket;
        return jsonb_build_object('allowed', true, 'remaining', floor(level - cost), 'limit', per_minute,
            'retry_after_ms', 0);
    end if;
    update hipocampo_private.rate_limit_buckets as r
    set tokens = level, capacity = per_minute, updated_at = clock_timestamp()
    where r.bucket = b.bucket;
    return jsonb_build_object('allowed', false, 'remaining', 0, 'limit', per_minute,
        'retry_after_ms', ceil((cost - level) * 60000 / per_minute));
end;
$$;

/*
take_rate_limit(cost double precision default 1, user_id uuid default null, tenant_id uuid default null)
  -> jsonb

Purpose: the answer API's token buckets: one per tenant and user (rag.rate_limit_per_minute of
  the tenant), keyed by the user's pseudonym (_user_ref), and one per tenant
  (rag.tenant_rate_limit_per_minute, locked for tenants) that all its users and its service
  calls share. Both must allow; a call the tenant bucket refuses gives the user's tokens back.
  The user bucket's key comes from the JWT (a user cannot spend another's); service_role names
  the user, or without one spends the tenant's service bucket.
Parameters: cost - tokens this call spends (> 0); user_id / tenant_id only for service_role.
Returns: {"allowed", "remaining", "limit", "retry_after_ms", "scope": "user" | "tenant"} (the
  scope of the refusal, or of the smaller remainder when allowed).
Errors: 22023 "cost must be positive"; 42501 as _resolve_tenant; 55000 "rag config is
  incomplete: tenant_rate_limit_per_minute …".
Example: select hipocampo.take_rate_limit();
*/
-- definer because the buckets table is not writable by client roles.
create or replace function hipocampo.take_rate_limit(
    cost double precision default 1, user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(take_rate_limit.tenant_id);
    u uuid := coalesce((select auth.uid()), take_rate_limit.user_id);
    cfg jsonb;
    user_bucket text;
    per_user jsonb;
    per_tenant jsonb;
begin
    if cost is null or cost <= 0 or cost = 'infinity'::double precision or cost = 'nan'::double precision then
        raise exception 'cost must be positive and finite' using errcode = '22023';
    end if;
    cfg := hipocampo.rag_config(null, null, t);
    if cfg ->> 'tenant_rate_limit_per_minute' is null then
        raise exception 'rag config is incomplete: tenant_rate_limit_per_minute (seed it from config.toml: hipocampo db migrate)'
            using errcode = '55000';
    end if;
    user_bucket := 'user:' || t || ':' || coalesce(hipocampo_private._user_ref(t, u), 'service');
    per_user := hipocampo_private._take_token(user_bucket, (cfg ->> 'rate_limit_per_minute')::double precision, cost)
        || '{"scope": "user"}'::jsonb;
    if not (per_user ->> 'allowed')::boolean then
        return per_user;
    end if;
    per_tenant := hipocampo_private._take_token('tenant:' || t,
        (cfg ->> 'tenant_rate_limit_per_minute')::double precision, cost) || '{"scope": "tenant"}'::jsonb;
    if not (per_tenant ->> 'allowed')::boolean then
        update hipocampo_private.rate_limit_buckets as r set tokens = least(r.capacity, r.tokens + cost)
        where r.bucket = user_bucket;
        return per_tenant;
    end if;
    return case when (per_tenant ->> 'remaining')::double precision < (per_user ->> 'remaining')::double precision
        then per_tenant else per_user end;
end;
$$;

/*
take_ip_rate_limit(ip inet) -> jsonb

Purpose: the per client address token bucket of the HTTP API (rag.ip_rate_limit_per_minute of
  the global config), taken before authentication, keyed by the address's pseudonym
  (_pseudonym: no raw address is stored). service_role only.
Returns: as take_rate_limit (without scope).
Errors: 22023 "ip is required".
Example: select hipocampo.take_ip_rate_limit('203.0.113.7');
*/
create or replace function hipocampo.take_ip_rate_limit(ip inet)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if ip is null then
        raise exception 'ip is required' using errcode = '22023';
    end if;
    return hipocampo_private._take_token(
        'ip:' || hipocampo_private._pseudonym(host(ip)),
        (select (s.config -> 'rag' ->> 'ip_rate_limit_per_minute')::double precision
         from hipocampo_private.settings as s where s.tenant_id is null),
        1
    );
end;
$$;

/*
record_answer(trace_id uuid, question text, answer_source text, reason text, confidence real,
  candidates integer, filtered integer, evidence_chunk_ids bigint[], timings_ms jsonb,
  latency_ms real, kb_ids uuid[], agent text default null, user_id uuid default null,
  tenant_id uuid default null) -> uuid

Purpose: the audit row of one answer call (also refusals and cache hits). The question is kept
  only as its sha256 and the user as the pseudonymous user_ref.
Returns: the trace id.
Errors: 23514 unknown answer_source; 23505 duplicate trace id; 42501 as _resolve_tenant.
Example: select hipocampo.record_answer(gen_random_uuid(), 'q', 'REFUSAL', 'low_confidence', 0.2,
  4, 3, '{}', '{}', 12.5, array[kb]);
*/
-- definer because audit rows are append-only for clients: no client role may write the table.
create or replace function hipocampo.record_answer(
    trace_id uuid, question text, answer_source text, reason text, confidence real,
    candidates integer, filtered integer, evidence_chunk_ids bigint[], timings_ms jsonb,
    latency_ms real, kb_ids uuid[], agent text default null, user_id uuid default null,
    tenant_id uuid default null
)
returns uuid
language plpgsql
security definer
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(record_answer.tenant_id);
    u uuid := coalesce((select auth.uid()), record_answer.user_id);
begin
    insert into hipocampo_private.answer_audit (
        trace_id, tenant_id, user_ref, agent, kb_ids, question_sha256, answer_source, reason, confidence,
        candidates, filtered, evidence_chunk_ids, timings_ms, latency_ms
    ) values (
        record_answer.trace_id, t,
        case when u is not null then hipocampo_private._user_ref(t, u) end,
        record_answer.agent, coalesce(record_answer.kb_ids, '{}'),
        encode(sha256(convert_to(coalesce(question, ''), 'UTF8')), 'hex'),
        record_answer.answer_source, record_answer.reason, record_answer.confidence,
        coalesce(record_answer.candidates, 0), coalesce(record_answer.filtered, 0),
        coalesce(record_answer.evidence_chunk_ids, '{}'), coalesce(record_answer.timings_ms, '{}'::jsonb),
        record_answer.latency_ms
    );
    return record_answer.trace_id;
end;
$$;

comment on function hipocampo.normalize_question(text) is 'The cache key of a question.';

comment on function hipocampo.set_document_status(uuid, text, real) is
'Mark a document superseded / archived / active, or change its trust.';

comment on function hipocampo.cache_get(text, uuid[], text, uuid) is 'A live cached answer, or null.';

comment on function hipocampo.take_rate_limit(double precision, uuid, uuid) is
'Token bucket per tenant and user (rag.rate_limit_per_minute).';

comment on function hipocampo.take_ip_rate_limit(inet) is 'Token bucket per client IP for the HTTP API.';

comment on function hipocampo.record_answer(
    uuid, text, text, text, real, integer, integer, bigint[], jsonb, real, uuid[], text, uuid, uuid
) is 'The audit row of one answer call (question as sha256, user pseudonymous).';

-- The ContextPack: what an assistant needs on every turn, in one round trip and within a token
-- budget. Retrieval order: memory -> session -> RAG -> tools -> model knowledge (wording only).
/*
_pack_tokens(t text) -> integer

Purpose: the token estimate of a text in a pack: ceil(characters / 4) + 4 per item (role,
  separators), the estimate the memory gate uses too.
*/
create or replace function hipocampo_private._pack_tokens(t text)
returns integer
language sql
immutable
security invoker
set search_path = ''
as $$
    select ceil(char_length(coalesce(t, '')) / 4.0)::integer + 4
$$;

/*
context_pack(conversation_id uuid, query text, query_embedding vector default null,
  modality text default 'chat', token_budget integer default null, kb_ids uuid[] default null,
  agent text default null, session_id uuid default null, user_id uuid default null,
  tenant_id uuid default null) -> jsonb

Purpose: the ContextPack of one turn. Window policy (config context_pack): fewer than all_below
  (10) messages -> all of them; up to summary_above (30) -> the last recent_with_summary (10) +
  the rolling summary; more -> the last recent_long (5) + summary. Relevant memories: the user's
  preferences first (category preference/style, keys prefs.*), then memories with cosine >=
  memory.context_threshold (up to memory.match_count). Session: the live session of the
  conversation (or session_id): tools used, pending confirmations, summary (task/artifact state).
  RAG: rag.top_k chunks of hybrid_search with citations, skipped when every one of them is
  already cited in the window's messages (metadata.citations = [chunk ids or {"chunk_id"}]).
  Chat and voice share the conversation: the pack is the same for both apart from "modality".
  Budget: items are added in retrieval order (memories, summary, session state, messages newest
  first, chunks) while they fit; tokens_used <= token_budget always (estimate: _pack_tokens).
Parameters: conversation_id; query 1..2,000 characters; query_embedding of the active model (null:
  no memories, no dense leg: chunks by BM25 are still needed, so RAG is skipped); modality chat |
  voice; token_budget >= context_pack.min_token_budget (default context_pack.default_token_budget);
  kb_ids / agent for RAG (none: RAG skipped); session_id optional; user_id / tenant_id only for
  service_role.
Returns: {"conversation_id", "modality", "token_budget", "tokens_used", "retrieval_order",
  "window": {"policy": "all" | "recent_with_summary" | "recent_long", "total_messages", "included"},
  "summary", "messages": [...], "memories": [{"key", "value", "description", "category",
  "similarity", "preference"}], "session": {...} | null, "chunks": [{"n", "chunk_id", "document_id",
  "title", "source_uri", "content", "score", "citation"}], "rag": {"skipped", "reason"},
  "dropped": {"memories", "messages", "chunks"}}.
Errors: 22023 "query must have 1 to 2000 characters" / "modality must be chat or voice" /
  "token_budget must be at least …"; 22000 wrong dimensions; 42501 no tenant / user; P0002
  unknown session.
Example: select hipocampo.context_pack(conv, 'Qual o prazo?', emb, 'voice', 800, array[kb]);
*/
create or replace function hipocampo.context_pack(
    conversation_id uuid,
    query text,
    query_embedding extensions.vector default null,
    modality text default 'chat',
    token_budget integer default null,
    kb_ids uuid[] default null,
    agent text default null,
    session_id uuid default null,
    user_id uuid default null,
    tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(context_pack.user_id, context_pack.tenant_id);
    cfg jsonb := hipocampo.effective_config(a.actor_tenant);
    cp jsonb := coalesce(cfg -> 'context_pack', '{}'::jsonb);
    mem jsonb := coalesce(cfg -> 'memory', '{}'::jsonb);
    rag jsonb;
    budget integer := coalesce(context_pack.token_budget, (cp ->> 'default_token_budget')::integer);
    used integer := 0;
    total integer;
    policy text;
    window_n integer;
    conv jsonb;
    model text;
    sess hipocampo_private.sessions;
    kbs uuid[];
    cited jsonb;
    item jsonb;
    cost integer;
    summary text;
    memories jsonb := '[]'::jsonb;
    messages jsonb := '[]'::jsonb;
    chunks jsonb := '[]'::jsonb;
    session_view jsonb;
    rag_state jsonb := jsonb_build_object('skipped', true, 'reason', 'no_knowledge_base');
    dropped_memories integer := 0;
    dropped_messages integer := 0;
    dropped_chunks integer := 0;
    touched uuid[] := '{}';
begin
    if query is null or char_length(btrim(query)) not between 1 and 2000 then
        raise exception 'query must have 1 to 2000 characters' using errcode = '22023';
    end if;
    if modality is null or modality not in ('chat', 'voice') then
        raise exception 'modality must be chat or voice' using errcode = '22023';
    end if;
    if budget is null or budget < (cp ->> 'min_token_budget')::integer then
        raise exception 'token_budget must be at least % tokens', cp ->> 'min_token_budget' using errcode = '22023';
    end if;

    -- 1. Memory: preferences first, then the memories closest to the query.
    if query_embedding is not null then
        model := hipocampo_private._active_model(query_embedding, 'query_embedding');
        for item in
            select jsonb_build_object(
                'memory_id', m.id, 'key', m.key, 'value', m.value, 'description', m.description,
                'category', m.category, 'scope', m.scope, 'similarity', 1 - x.distance, 'preference', x.preference
            ) as j
            from hipocampo_private.memories as m
            cross join lateral (
                select
                    m.category in ('preference', 'style') or m.key like 'prefs.%' as preference,
                    m.embedding operator(extensions.<=>) query_embedding as distance
            ) as x
            where m.tenant_id = a.actor_tenant and m.status = 'active'
              and (m.user_id = a.actor_user and m.scope = 'personal' or m.scope = 'tenant_shared')
              and m.embedding_model = model
              and (x.preference or 1 - x.distance >= (mem ->> 'context_threshold')::double precision)
            order by x.preference desc, x.distance
            limit (mem ->> 'match_count')::integer
        loop
            cost := hipocampo_private._pack_tokens(item ->> 'description');
            if used + cost <= budget then
                used := used + cost;
                memories := memories || jsonb_build_array(item);
                touched := touched || (item ->> 'memory_id')::uuid;
            else
                dropped_memories := dropped_memories + 1;
            end if;
        end loop;
        perform hipocampo_private._touch_memories(touched, a.actor_tenant);
    end if;

    -- 2. Session: the rolling summary and the window of recent messages, the task state.
    select count(*) into total from hipocampo_private.messages as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
      and m.conversation_id = context_pack.conversation_id;
    if total < (cp ->> 'all_below')::integer then
        policy := 'all';
        window_n := total;
    elsif total <= (cp ->> 'summary_above')::integer then
        policy := 'recent_with_summary';
        window_n := (cp ->> 'recent_with_summary')::integer;
    else
        policy := 'recent_long';
        window_n := (cp ->> 'recent_long')::integer;
    end if;
    conv := hipocampo.conversation_context(context_pack.conversation_id, window_n, a.actor_user, a.actor_tenant);
    if policy <> 'all' and conv ->> 'summary' is not null then
        summary := conv ->> 'summary';
        cost := hipocampo_private._pack_tokens(summary);
        if used + cost > budget then
            -- The summary is cut to what is left (4 characters per token).
            summary := left(summary, greatest((budget - used - 4) * 4, 0));
            cost := hipocampo_private._pack_tokens(summary);
        end if;
        if summary = '' or used + cost > budget then
            summary := null;
        else
            used := used + cost;
        end if;
    end if;

    if context_pack.session_id is not null then
        sess := hipocampo_private._session(context_pack.session_id, true);
    else
        select * into sess from hipocampo_private.sessions as s
        where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
          and s.conversation_id = context_pack.conversation_id and s.expires_at > now()
        order by s.last_activity_at desc
        limit 1;
    end if;
    if sess.id is not null then
        session_view := hipocampo_private._session_view(sess) - 'messages';
        cost := hipocampo_private._pack_tokens((session_view - 'summary')::text);
        if used + cost <= budget then
            used := used + cost;
        else
            session_view := jsonb_build_object('session_id', sess.id, 'truncated', true);
            used := used + hipocampo_private._pack_tokens(session_view::text);
        end if;
    end if;

    for item in
        select e from jsonb_array_elements(conv -> 'messages') as e order by (e ->> 'id')::bigint desc
    loop
        cost := hipocampo_private._pack_tokens(item ->> 'content');
        if used + cost <= budget then
            used := used + cost;
            messages := jsonb_build_array(item) || messages;
        else
            dropped_messages := dropped_messages + 1;
        end if;
    end loop;

    -- 3. RAG: chunks with citations, unless the conversation already cited all of them.
    if kb_ids is not null or agent is not null then
        rag := hipocampo.rag_config(
            case when cardinality(context_pack.kb_ids) = 1 then context_pack.kb_ids[1] end,
            context_pack.agent, a.actor_tenant
        );
        kbs := coalesce(context_pack.kb_ids,
            (select array_agg(x::uuid) from jsonb_array_elements_text(
            case when jsonb_typeof(rag -> 'kb_ids') = 'array' then rag -> 'kb_ids' else '[]'::jsonb end
        ) as x));
        if query_embedding is null then
            rag_state := jsonb_build_object('skipped', true, 'reason', 'no_query_embedding');
        elsif not coalesce((rag ->> 'enabled')::boolean, true) then
            rag_state := jsonb_build_object('skipped', true, 'reason', 'rag_disabled');
        else
            select coalesce(jsonb_agg(case jsonb_typeof(x) when 'object' then x -> 'chunk_id' else x end), '[]'::jsonb)
            into cited
            from (
                select m.metadata from hipocampo_private.messages as m
                where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
                  and m.conversation_id = context_pack.conversation_id
                order by m.id desc
                limit greatest(window_n, 1)
            ) as w,
                jsonb_array_elements(coalesce(w.metadata -> 'citations', '[]'::jsonb)) as x;
            select coalesce(jsonb_agg(jsonb_build_object(
                'chunk_id', h.chunk_id, 'document_id', h.document_id, 'title', h.title,
                'source_uri', h.source_uri, 'content', h.content, 'score', h.final_score
            ) order by h.rank), '[]'::jsonb)
            into item
            from hipocampo.hybrid_search(
                query_text => context_pack.query, query_embedding => context_pack.query_embedding,
                kb_ids => kbs, match_count => (rag ->> 'top_k')::integer, tenant_id => a.actor_tenant
            ) as h;
            if jsonb_array_length(item) > 0 and not exists (
                select 1 from jsonb_array_elements(item) as h where not cited @> jsonb_build_array(h -> 'chunk_id')
            ) then
                rag_state := jsonb_build_object('skipped', true, 'reason', 'covered_by_session');
            else
                rag_state := jsonb_build_object('skipped', false, 'reason', null);
                for item in select e from jsonb_array_elements(item) as e loop
                    cost := hipocampo_private._pack_tokens(item ->> 'content');
                    if used + cost <= budget then
                        used := used + cost;
                        chunks := chunks || jsonb_build_array(item || jsonb_build_object(
                            'n', jsonb_array_length(chunks) + 1,
                            'citation', '[' || (jsonb_array_length(chunks) + 1) || '] ' || (item ->> 'title')
                        ));
                    else
                        dropped_chunks := dropped_chunks + 1;
                    end if;
                end loop;
            end if;
        end if;
    end if;

    return jsonb_build_object(
        'conversation_id', context_pack.conversation_id,
        'modality', context_pack.modality,
        'query', context_pack.query,
        'token_budget', budget,
        'tokens_used', used,
        'retrieval_order', jsonb_build_array('memory', 'session', 'rag', 'tools', 'model'),
        'window', jsonb_build_object(
            'policy', policy, 'total_messages', total, 'included', jsonb_array_length(messages)
        ),
        'summary', summary,
        'messages', messages,
        'memories', memories,
        'session', session_view,
        'chunks', chunks,
        'rag', rag_state,
        'dropped', jsonb_build_object(
            'memories', dropped_memories, 'messages', dropped_messages, 'chunks', dropped_chunks
        )
    );
end;
$$;

comment on function hipocampo.context_pack(
    uuid, text, extensions.vector, text, integer, uuid[], text, uuid, uuid, uuid
) is 'The ContextPack of one turn (memories, session, chunks with citations) within a token budget.';

comment on function hipocampo.cache_put(text, uuid[], jsonb, text, uuid) is
'Caches an answer for the effective rag.cache_ttl_seconds (KB / agent overrides apply); refuses answers citing other chunks.';

-- ==================== supabase/schemas/11_observability.sql ====================

-- Observability of the memory engine: views in the exposed schema over the memory tables and the
-- event log. security_invoker, so RLS applies: service_role sees every tenant; a tenant admin
-- sees their tenant's events and the memories RLS shows them (shared + their own).
create view hipocampo.memory_metrics
with (security_invoker = true)
as
select
    t.id as tenant_id,
    coalesce(m.active, 0) as memories_total,
    coalesce(s.staged, 0) as staged_total,
    coalesce(e.writes, 0) as writes,
    coalesce(e.decayed, 0) as decayed,
    coalesce(e.expired, 0) as expired,
    coalesce(e.user_deleted, 0) as user_deleted,
    coalesce(e.corrected, 0) as corrected,
    coalesce(e.rejected, 0) as rejected,
    -- Share of save attempts the gate refused.
    round(coalesce(e.rejected, 0)::numeric / nullif(coalesce(e.writes, 0) + coalesce(e.rejected, 0), 0), 4)
        as rejected_rate,
    -- Corrections per stored write.
    round(coalesce(e.corrected, 0)::numeric / nullif(coalesce(e.writes, 0), 0), 4) as correction_rate
from hipocampo_private.tenants as t
left join (
    select x.tenant_id, count(*) as active from hipocampo_private.memories as x
    where x.status = 'active'
    group by x.tenant_id
) as m on t.id = m.tenant_id
left join (
    select x.tenant_id, count(*) as staged from hipocampo_private.memory_staging as x
    group by x.tenant_id
) as s on t.id = s.tenant_id
left join (
    select
        x.tenant_id,
        count(*) filter (where x.event in ('memory.created', 'memory.updated', 'memory.staged')) as writes,
        count(*) filter (where x.event = 'memory.decayed') as decayed,
        count(*) filter (where x.event in ('memory.expired', 'memory.purged')) as expired,
        count(*) filter (where x.event = 'memory.forgotten') as user_deleted,
        count(*) filter (where x.event = 'memory.corrected') as corrected,
        count(*) filter (where x.event = 'memory.write_rejected') as rejected
    from hipocampo_private.memory_events as x
    group by x.tenant_id
) as e on t.id = e.tenant_id;

create view hipocampo.memory_rejections
with (security_invoker = true)
as
select
    e.tenant_id,
    e.reason,
    count(*) as rejected,
    round(count(*)::numeric / sum(count(*)) over (partition by e.tenant_id), 4) as share
from hipocampo_private.memory_events as e
where e.event = 'memory.write_rejected'
group by e.tenant_id, e.reason;

create view hipocampo.memory_top_categories
with (security_invoker = true)
as
select
    m.tenant_id,
    m.category,
    count(*) as memories,
    (rank() over (partition by m.tenant_id order by count(*) desc))::integer as rank
from hipocampo_private.memories as m
where m.status = 'active'
group by m.tenant_id, m.category;

create view hipocampo.memory_events_daily
with (security_invoker = true)
as
select
    e.tenant_id,
    (date_trunc('day', e.at))::date as day,
    e.event,
    count(*) as events
from hipocampo_private.memory_events as e
group by e.tenant_id, (date_trunc('day', e.at))::date, e.event;

comment on view hipocampo.memory_metrics is
'Per tenant: memories, staged, writes, decayed, expired, user_deleted, corrected, rejected, rejected_rate (refused / attempts), correction_rate (corrections / writes).';

comment on view hipocampo.memory_rejections is 'Per tenant: refused memory writes by reason, with their share.';

comment on view hipocampo.memory_top_categories is 'Per tenant: active memories per category, ranked.';

comment on view hipocampo.memory_events_daily is 'Per tenant and day: memory events by kind.';

-- Observability of retrieval and answers: views in the exposed schema, security_invoker so RLS
-- applies (service_role sees every tenant; a tenant admin sees their tenant's audit rows).
-- rag.query.count, latency p50/p95/p99, results per query, % filtered by the threshold, refusals
-- and cache hit rate, per tenant and day, over the audit rows of answer calls (ask).
create view hipocampo.rag_answer_stats
with (security_invoker = true)
as
select
    a.tenant_id,
    date_trunc('day', a.created_at) as day,
    count(*) as query_count,
    percentile_cont(0.5) within group (order by a.latency_ms) as latency_p50_ms,
    percentile_cont(0.95) within group (order by a.latency_ms) as latency_p95_ms,
    percentile_cont(0.99) within group (order by a.latency_ms) as latency_p99_ms,
    round(avg(cardinality(a.evidence_chunk_ids)), 2) as results_per_query,
    round(sum(a.filtered)::numeric / nullif(sum(a.candidates), 0), 4) as filtered_rate,
    count(*) filter (where a.answer_source = 'REFUSAL') as refusals,
    round((count(*) filter (where a.answer_source = 'REFUSAL'))::numeric / count(*), 4) as refusal_rate,
    round((count(*) filter (where a.answer_source = 'CACHE'))::numeric / count(*), 4) as cache_hit_rate
from hipocampo_private.answer_audit as a
group by a.tenant_id, date_trunc('day', a.created_at);

-- Refusals by reason code, per tenant and day.
create view hipocampo.rag_refusals
with (security_invoker = true)
as
select
    a.tenant_id,
    date_trunc('day', a.created_at) as day,
    a.reason,
    count(*) as refusals
from hipocampo_private.answer_audit as a
where a.answer_source = 'REFUSAL'
group by a.tenant_id, date_trunc('day', a.created_at), a.reason;

-- Every hybrid_search call (ask, context_pack, search, agents), per tenant and day.
create view hipocampo.rag_search_stats
with (security_invoker = true)
as
select
    l.tenant_id,
    date_trunc('day', l.at) as day,
    count(*) as query_count,
    percentile_cont(0.5) within group (order by l.latency_ms) as latency_p50_ms,
    percentile_cont(0.95) within group (order by l.latency_ms) as latency_p95_ms,
    percentile_cont(0.99) within group (order by l.latency_ms) as latency_p99_ms,
    round(avg(l.rows_returned), 2) as results_per_query
from hipocampo_private.data_access_log as l
where l.rpc = 'hybrid_search'
group by l.tenant_id, date_trunc('day', l.at);

-- Embeddings per tenant, knowledge base and model; stale = not retrieved for 90 days (never
-- retrieved counts from the chunk's creation).
create view hipocampo.embedding_stats
with (security_invoker = true)
as
select
    c.tenant_id,
    c.kb_id,
    c.embedding_model,
    count(*) as embeddings_total,
    count(*) filter (
        where coalesce(c.last_accessed_at, c.created_at) < now() - interval '90 days'
    ) as embeddings_stale
from hipocampo_private.chunks as c
group by c.tenant_id, c.kb_id, c.embedding_model;

comment on view hipocampo.rag_answer_stats is
'Answer calls per tenant and day: count, latency p50/p95/p99 (ms), results per query, filtered, refusal and cache hit rates.';

comment on view hipocampo.rag_refusals is 'Refusals per tenant, day and reason code.';

comment on view hipocampo.rag_search_stats is 'hybrid_search calls per tenant and day: count, latency, results.';

comment on view hipocampo.embedding_stats is 'Embeddings per tenant, knowledge base and model; stale = not retrieved in 90 days.';

-- ==================== supabase/schemas/12_maintenance.sql ====================

/*
schedule_maintenance() -> jsonb

Purpose: (re)schedule hipocampo's periodic jobs with pg_cron, from the global [maintenance]
  config: hipocampo-memory-maintenance (run_memory_maintenance, maintenance.memory_cron),
  hipocampo-session-purge (purge_sessions, maintenance.session_purge_cron),
  hipocampo-retention-purge (purge_expired, maintenance.retention_cron),
  hipocampo-transient-purge (purge_transient_state, maintenance.transient_purge_cron) and
  hipocampo-interrupted-ingestion (recover_ingestion_jobs, maintenance.ingestion_recovery_cron).
  Idempotent: pg_cron replaces a job of the same name.
Run as: the database owner (postgres, e.g. in the SQL editor once pg_cron is enabled); no API
  role is granted it, since scheduling needs pg_cron's privileges.
Returns: {"<job name>": "<cron expression>", …} for the five jobs.
Errors: 55000 "pg_cron is not installed: …" (enable it, then call this again);
  55000 "maintenance config is incomplete: …" (seed it: hipocampo db migrate);
  pg_cron's own error on an invalid cron expression.
Example: select hipocampo.schedule_maintenance();
*/
create or replace function hipocampo.schedule_maintenance()
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    cfg jsonb := (select s.config -> 'maintenance' from hipocampo_private.settings as s where s.tenant_id is null);
    jobs jsonb;
    job record;
begin
    if not exists (select 1 from pg_catalog.pg_extension where extname = 'pg_cron') then
        raise exception 'pg_cron is not installed: enable it (on Supabase: Integrations → Cron), then call '
            'hipocampo.schedule_maintenance() again' using errcode = '55000';
    end if;
    jobs := jsonb_build_object(
        'hipocampo-memory-maintenance',
        jsonb_build_array(cfg ->> 'memory_cron', 'select hipocampo.run_memory_maintenance()'),
        'hipocampo-session-purge',
        jsonb_build_array(cfg ->> 'session_purge_cron', 'select hipocampo.purge_sessions()'),
        'hipocampo-retention-purge',
        jsonb_build_array(cfg ->> 'retention_cron', 'select hipocampo.purge_expired()'),
        'hipocampo-transient-purge',
        jsonb_build_array(cfg ->> 'transient_purge_cron', 'select hipocampo.purge_transient_state()'),
        'hipocampo-interrupted-ingestion',
        jsonb_build_array(cfg ->> 'ingestion_recovery_cron', 'select hipocampo.recover_ingestion_jobs()')
    );
    if exists (select 1 from jsonb_each(jobs) as j where j.value ->> 0 is null) then
        raise exception 'maintenance config is incomplete: seed it from config.toml (hipocampo db migrate)'
            using errcode = '55000';
    end if;
    for job in select j.key, j.value from jsonb_each(jobs) as j loop
        perform cron.schedule(job.key, job.value ->> 0, job.value ->> 1);
    end loop;
    return (select jsonb_object_agg(j.key, j.value -> 0) from jsonb_each(jobs) as j);
end;
$$;

comment on function hipocampo.schedule_maintenance() is
'(Re)schedule memory maintenance, the session purge and retention with pg_cron, from the [maintenance] config.';

/*
purge_transient_state(now timestamptz default now()) -> jsonb

Purpose: delete answer-cache entries past expires_at, and rate-limit buckets idle for at least a
  minute. Deleting such a bucket loses nothing: a bucket refills its whole capacity in 60 s
  (per_minute / 60 tokens per second, _take_token), and a missing bucket is created full.
Parameters: now - the clock (tests pass a frozen one).
Returns: {"answer_cache": n, "rate_limit_buckets": n} (rows deleted).
Errors: none.
Example: select hipocampo.purge_transient_state();
*/
create or replace function hipocampo.purge_transient_state(now timestamptz default now())
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    n_cache integer;
    n_buckets integer;
begin
    delete from hipocampo_private.answer_cache as c where c.expires_at <= purge_transient_state.now;
    get diagnostics n_cache = row_count;
    delete from hipocampo_private.rate_limit_buckets as r
    where r.updated_at <= purge_transient_state.now - interval '1 minute';
    get diagnostics n_buckets = row_count;
    return jsonb_build_object('answer_cache', n_cache, 'rate_limit_buckets', n_buckets);
end;
$$;

comment on function hipocampo.purge_transient_state(timestamptz) is
'Delete expired answer-cache entries and idle (full) rate-limit buckets.';

-- ==================== supabase/schemas/13_grants.sql ====================

revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;

grant usage on schema hipocampo to anon;
grant usage on schema hipocampo to authenticated;
grant usage on schema hipocampo to service_role;
grant usage on schema hipocampo_private to authenticated;
grant usage on schema hipocampo_private to service_role;

grant select on hipocampo.embedding_stats to authenticated;
grant select on hipocampo.embedding_stats to service_role;
grant select on hipocampo.memory_events_daily to authenticated;
grant select on hipocampo.memory_events_daily to service_role;
grant select on hipocampo.memory_metrics to authenticated;
grant select on hipocampo.memory_metrics to service_role;
grant select on hipocampo.memory_rejections to authenticated;
grant select on hipocampo.memory_rejections to service_role;
grant select on hipocampo.memory_top_categories to authenticated;
grant select on hipocampo.memory_top_categories to service_role;
grant select on hipocampo.rag_answer_stats to authenticated;
grant select on hipocampo.rag_answer_stats to service_role;
grant select on hipocampo.rag_refusals to authenticated;
grant select on hipocampo.rag_refusals to service_role;
grant select on hipocampo.rag_search_stats to authenticated;
grant select on hipocampo.rag_search_stats to service_role;
grant select, insert, update, delete on hipocampo_private.agent_bindings to authenticated;
grant all on hipocampo_private.agent_bindings to service_role;
grant select on hipocampo_private.answer_audit to authenticated;
grant all on hipocampo_private.answer_audit to service_role;
grant all on hipocampo_private.answer_cache to service_role;
grant select, insert, delete on hipocampo_private.chunks to authenticated;
grant all on hipocampo_private.chunks to service_role;
grant select, insert, update, delete on hipocampo_private.conversation_summaries to authenticated;
grant all on hipocampo_private.conversation_summaries to service_role;
grant select on hipocampo_private.data_access_log to authenticated;
grant all on hipocampo_private.data_access_log to service_role;
grant select, insert, update, delete on hipocampo_private.documents to authenticated;
grant all on hipocampo_private.documents to service_role;
grant select on hipocampo_private.embedding_models to authenticated;
grant all on hipocampo_private.embedding_models to service_role;
grant select, insert, update on hipocampo_private.ingestion_jobs to authenticated;
grant all on hipocampo_private.ingestion_jobs to service_role;
grant select on hipocampo_private.kb_postings to authenticated;
grant all on hipocampo_private.kb_postings to service_role;
grant select on hipocampo_private.kb_term_stats to authenticated;
grant all on hipocampo_private.kb_term_stats to service_role;
grant select on hipocampo_private.kb_text_stats to authenticated;
grant all on hipocampo_private.kb_text_stats to service_role;
grant select, insert, update, delete on hipocampo_private.knowledge_bases to authenticated;
grant all on hipocampo_private.knowledge_bases to service_role;
grant select on hipocampo_private.memberships to authenticated;
grant all on hipocampo_private.memberships to service_role;
grant select, insert, delete on hipocampo_private.memories to authenticated;
grant all on hipocampo_private.memories to service_role;
grant select, insert, update on hipocampo_private.memory_consents to authenticated;
grant all on hipocampo_private.memory_consents to service_role;
grant select on hipocampo_private.memory_events to authenticated;
grant all on hipocampo_private.memory_events to service_role;
grant select, insert, delete on hipocampo_private.memory_staging to authenticated;
grant all on hipocampo_private.memory_staging to service_role;
grant select, insert, delete on hipocampo_private.messages to authenticated;
grant all on hipocampo_private.messages to service_role;
grant select on hipocampo_private.project_secrets to service_role;
grant all on hipocampo_private.rate_limit_buckets to service_role;
grant select, insert, update, delete on hipocampo_private.sessions to authenticated;
grant all on hipocampo_private.sessions to service_role;
grant select on hipocampo_private.settings to authenticated;
grant all on hipocampo_private.settings to service_role;
grant select on hipocampo_private.tenants to authenticated;
grant all on hipocampo_private.tenants to service_role;

grant update (confidence, status, embedding, embedding_model, valid_to, access_count, last_accessed_at, last_decayed_at, updated_at) on hipocampo_private.memories to authenticated;
grant update (intensity, embedding, embedding_model, access_count, last_accessed_at, updated_at) on hipocampo_private.memory_staging to authenticated;
grant update (token_ids, token_bits) on hipocampo_private.messages to authenticated;

grant execute on function hipocampo.activate_embedding_model(name text) to service_role;
grant execute on function hipocampo.active_embedding_model() to authenticated, service_role;
grant execute on function hipocampo.add_member(tenant_id uuid, user_id uuid, role text) to service_role;
grant execute on function hipocampo.add_message(conversation_id uuid, role text, content text, modality text, attachments jsonb, embedding extensions.vector, metadata jsonb, language text, created_at timestamp with time zone, user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.add_pending_confirmation(session_id uuid, action text, payload jsonb) to authenticated, service_role;
grant execute on function hipocampo.answer_evidence(query_text text, query_embedding extensions.vector, kb_ids uuid[], agent text, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.cache_get(question text, kb_ids uuid[], agent text, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.cache_put(question text, kb_ids uuid[], answer jsonb, agent text, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.close_session(session_id uuid) to authenticated, service_role;
grant execute on function hipocampo.context_pack(conversation_id uuid, query text, query_embedding extensions.vector, modality text, token_budget integer, kb_ids uuid[], agent text, session_id uuid, user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.conversation_context(conversation_id uuid, last_n integer, user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.correct_memory(memory_id uuid, value jsonb, description text, embedding extensions.vector) to authenticated, service_role;
grant execute on function hipocampo.create_knowledge_base(name text, description text, tags text[], language text, overrides jsonb, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.create_tenant(name text, slug text, admin_user_id uuid) to service_role;
grant execute on function hipocampo.delete_document(document_id uuid) to authenticated, service_role;
grant execute on function hipocampo.detect_conflicts(query_text text, chunk_ids bigint[], trust_margin double precision, stopwords jsonb) to authenticated, service_role;
grant execute on function hipocampo.document_hashes(kb_id uuid) to authenticated, service_role;
grant execute on function hipocampo.drop_embedding_model(name text) to service_role;
grant execute on function hipocampo.effective_config(tenant_id uuid, kb_id uuid) to authenticated, service_role;
grant execute on function hipocampo.erase_user(user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.evidence_support(query_text text, chunk_ids bigint[], stopwords jsonb) to authenticated, service_role;
grant execute on function hipocampo.export_user_data(user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.finish_ingestion_job(job_id uuid, status text, counts jsonb, errors jsonb) to authenticated, service_role;
grant execute on function hipocampo.forget_memory(memory_id uuid) to authenticated, service_role;
grant execute on function hipocampo.get_session(session_id uuid, renew boolean) to authenticated, service_role;
grant execute on function hipocampo.hard_delete_memory(memory_id uuid) to service_role;
grant execute on function hipocampo.heartbeat_ingestion_job(job_id uuid) to authenticated, service_role;
grant execute on function hipocampo.hybrid_search(query_text text, query_embedding extensions.vector, kb_ids uuid[], source_types text[], metadata_filter jsonb, match_count integer, min_similarity double precision, fusion text, dense_weight double precision, lexical_weight double precision, rerank text, mmr_lambda double precision, embedding_model text, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.ingest_document(kb_id uuid, document jsonb, chunks jsonb, embedding_model text) to authenticated, service_role;
grant execute on function hipocampo.knowledge_base_id(name text, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.list_documents(kb_id uuid) to authenticated, service_role;
grant execute on function hipocampo.list_knowledge_bases(tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.lookup_memories(key text, category text, include_history boolean) to authenticated, service_role;
grant execute on function hipocampo.membership_role(user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.memories_without_embedding(keys text[], user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.messages_without_tokens(batch_size integer, filter_tenant_id uuid, after_message_id bigint) to service_role;
grant execute on function hipocampo.normalize_question(question text) to authenticated, service_role;
grant execute on function hipocampo.open_session(conversation_id uuid, user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.promote_memory(staging_id uuid, intensity numeric, override boolean) to authenticated, service_role;
grant execute on function hipocampo.purge_expired(now timestamp with time zone) to service_role;
grant execute on function hipocampo.purge_sessions(now timestamp with time zone) to service_role;
grant execute on function hipocampo.purge_transient_state(now timestamp with time zone) to service_role;
grant execute on function hipocampo.rag_config(kb_id uuid, agent text, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.record_answer(trace_id uuid, question text, answer_source text, reason text, confidence real, candidates integer, filtered integer, evidence_chunk_ids bigint[], timings_ms jsonb, latency_ms real, kb_ids uuid[], agent text, user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.recover_ingestion_jobs(now timestamp with time zone, kb_id uuid) to authenticated, service_role;
grant execute on function hipocampo.register_embedding_model(name text, provider text, dims integer, activate boolean) to service_role;
grant execute on function hipocampo.remember(key text, value jsonb, description text, category text, embedding extensions.vector, scope text, confidence double precision, source text, source_ref text, conversation_id uuid, tags text[], emotion text, intensity numeric, life_domain text, pinned boolean, token_count integer, expires_at timestamp with time zone, user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.resolve_pending_confirmation(session_id uuid, confirmation_id uuid) to authenticated, service_role;
grant execute on function hipocampo.rows_to_embed(kind text, batch_size integer, after_id text) to service_role;
grant execute on function hipocampo.run_memory_maintenance(now timestamp with time zone) to service_role;
grant execute on function hipocampo.scrub_pii(texts text[]) to authenticated, service_role;
grant execute on function hipocampo.search_history(query_text text, query_embedding extensions.vector, filter_conversation_id uuid, match_count integer, filter_modality text, user_id uuid, tenant_id uuid, query_token_ids integer[], query_token_bits bit varying[]) to authenticated, service_role;
grant execute on function hipocampo.search_memories(query_embedding extensions.vector, mode text, match_count integer, filter_tags text[], filter_emotion text, filter_life_domain text, filter_category text, filter_scope text, min_score double precision, include_staging boolean) to authenticated, service_role;
grant execute on function hipocampo.seed_profile(profile jsonb, source_ref text, user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.session_add_message(session_id uuid, role text, content text, modality text, attachments jsonb, embedding extensions.vector, metadata jsonb) to authenticated, service_role;
grant execute on function hipocampo.set_agent_binding(name text, kb_ids uuid[], rag_overrides jsonb, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.set_document_status(document_id uuid, status text, trust_score real) to authenticated, service_role;
grant execute on function hipocampo.set_knowledge_base_config(kb_id uuid, section text, patch jsonb) to authenticated, service_role;
grant execute on function hipocampo.set_knowledge_base_status(kb_id uuid, status text) to authenticated, service_role;
grant execute on function hipocampo.set_memory_consent(granted boolean, user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.set_memory_embeddings(items jsonb) to authenticated, service_role;
grant execute on function hipocampo.set_message_tokens(message_id bigint, token_ids integer[], token_bits bit varying[]) to authenticated, service_role;
grant execute on function hipocampo.set_row_embeddings(kind text, items jsonb) to service_role;
grant execute on function hipocampo.set_tenant_config(section text, patch jsonb, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.staged_memories() to authenticated, service_role;
grant execute on function hipocampo.start_ingestion_job(kb_id uuid, documents_total integer) to authenticated, service_role;
grant execute on function hipocampo.take_ip_rate_limit(ip inet) to service_role;
grant execute on function hipocampo.take_rate_limit(cost double precision, user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.tenant_by_slug(slug text) to authenticated, service_role;
grant execute on function hipocampo.update_conversation_summary(conversation_id uuid, summary text, through_message_id bigint, user_id uuid, tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo.update_session(session_id uuid, summary text, tool text) to authenticated, service_role;
grant execute on function hipocampo_private._active_model(v extensions.vector, label text) to authenticated, service_role;
grant execute on function hipocampo_private._cache_scope(kb_ids uuid[]) to authenticated, service_role;
grant execute on function hipocampo_private._caller(out kind text, out tenant_id uuid, out user_id uuid, out tenant_role text) to authenticated, service_role;
grant execute on function hipocampo_private._check_config_patch(section text, patch jsonb) to authenticated, service_role;
grant execute on function hipocampo_private._check_message_tokens(token_ids integer[], token_bits bit varying[], dims integer, name text) to authenticated, service_role;
grant execute on function hipocampo_private._data_subject(user_id uuid, tenant_id uuid, out actor_tenant uuid, out actor_user uuid) to authenticated, service_role;
grant execute on function hipocampo_private._date_words(day date, config regconfig) to authenticated, service_role;
grant execute on function hipocampo_private._ensure_model_index(model_name text) to service_role;
grant execute on function hipocampo_private._hmac_sha256(key bytea, message bytea) to service_role;
grant execute on function hipocampo_private._kb(kb_id uuid) to authenticated, service_role;
grant execute on function hipocampo_private._log_access(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision) to authenticated, service_role;
grant execute on function hipocampo_private._memory_actor(user_id uuid, tenant_id uuid, out actor_tenant uuid, out actor_user uuid) to authenticated, service_role;
grant execute on function hipocampo_private._memory_config(section_config jsonb) to authenticated, service_role;
grant execute on function hipocampo_private._memory_event(tenant_id uuid, user_id uuid, memory_id uuid, event text, reason text, detail jsonb) to authenticated, service_role;
grant execute on function hipocampo_private._memory_text_problem(description text, token_count integer, cfg jsonb) to authenticated, service_role;
grant execute on function hipocampo_private._memory_value_problem(value jsonb, cfg jsonb) to authenticated, service_role;
grant execute on function hipocampo_private._memory_write_allowed(tenant_id uuid, user_id uuid, description text, value jsonb, token_count integer) to authenticated, service_role;
grant execute on function hipocampo_private._mmr(embeddings extensions.vector[], relevance double precision[], k integer, lambda double precision, dup double precision) to authenticated, service_role;
grant execute on function hipocampo_private._near_duplicates(chunk_ids bigint[], kb_ids uuid[], tenant uuid, min_cosine double precision, per_chunk integer) to authenticated, service_role;
grant execute on function hipocampo_private._pack_tokens(t text) to authenticated, service_role;
grant execute on function hipocampo_private._pii_kind(digits text, groups integer[], span text) to authenticated, service_role;
grant execute on function hipocampo_private._pii_problem(content text, cfg jsonb, what text) to authenticated, service_role;
grant execute on function hipocampo_private._pii_scrub(input text, out text text, out counts jsonb) to authenticated, service_role;
grant execute on function hipocampo_private._pii_scrub_jsonb(value jsonb) to authenticated, service_role;
grant execute on function hipocampo_private._pseudonym(value text) to service_role;
grant execute on function hipocampo_private._question_lexemes(query_text text, ts_config regconfig, stopwords jsonb) to authenticated, service_role;
grant execute on function hipocampo_private._remember(key text, value jsonb, description text, category text, embedding extensions.vector, scope text, confidence double precision, source text, source_ref text, conversation_id uuid, tags text[], emotion text, intensity numeric, life_domain text, pinned boolean, token_count integer, expires_at timestamp with time zone, user_id uuid, tenant_id uuid, tier text) to authenticated, service_role;
grant execute on function hipocampo_private._require_admin() to authenticated, service_role;
grant execute on function hipocampo_private._require_config(section_config jsonb, section text, keys text[]) to authenticated, service_role;
grant execute on function hipocampo_private._resolve_tenant(requested uuid) to authenticated, service_role;
grant execute on function hipocampo_private._scope_of(sentence text) to authenticated, service_role;
grant execute on function hipocampo_private._scrub_chunk() to authenticated, service_role;
grant execute on function hipocampo_private._scrub_document() to authenticated, service_role;
grant execute on function hipocampo_private._scrub_job_errors() to authenticated, service_role;
grant execute on function hipocampo_private._scrub_message() to authenticated, service_role;
grant execute on function hipocampo_private._scrub_session() to authenticated, service_role;
grant execute on function hipocampo_private._scrub_summary() to authenticated, service_role;
grant execute on function hipocampo_private._sentence_values(sentence text) to authenticated, service_role;
grant execute on function hipocampo_private._sentences(content text) to authenticated, service_role;
grant execute on function hipocampo_private._session(session_id uuid, renew boolean) to authenticated, service_role;
grant execute on function hipocampo_private._session_view(s hipocampo_private.sessions) to authenticated, service_role;
grant execute on function hipocampo_private._sessions_config(section_config jsonb) to authenticated, service_role;
grant execute on function hipocampo_private._take_token(bucket text, per_minute double precision, cost double precision) to service_role;
grant execute on function hipocampo_private._touch_chunks(ids bigint[], tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo_private._touch_memories(ids uuid[], tenant_id uuid) to authenticated, service_role;
grant execute on function hipocampo_private._user_ref(tenant_id uuid, user_id uuid) to service_role;
grant execute on function hipocampo_private.cnpj_is_valid(digits text) to authenticated, service_role;
grant execute on function hipocampo_private.cpf_is_valid(digits text) to authenticated, service_role;
grant execute on function hipocampo_private.current_tenant_id() to authenticated, service_role;
grant execute on function hipocampo_private.current_tenant_role() to authenticated, service_role;
grant execute on function hipocampo_private.luhn_is_valid(digits text) to authenticated, service_role;
grant execute on function hipocampo_private.seed_default_config(defaults jsonb) to service_role;
grant execute on function hipocampo_private.tags_are_unique(tags text[]) to authenticated, service_role;
grant execute on function hipocampo_private.text_search_config(language text) to authenticated, service_role;
grant execute on function hipocampo_private.tsvector_token_count(v tsvector) to authenticated, service_role;
