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

create table hipocampo_private.memberships (
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    user_id uuid not null,
    role text not null default 'member',
    created_at timestamptz not null default now(),
    primary key (tenant_id, user_id),
    constraint memberships_role_check check (role in ('admin', 'member'))
);

create index memberships_user_id_idx on hipocampo_private.memberships (user_id);

alter table hipocampo_private.tenants enable row level security;
alter table hipocampo_private.memberships enable row level security;

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
create function hipocampo_private.current_tenant_id()
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
create function hipocampo_private.current_tenant_role()
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

grant execute on function hipocampo_private.current_tenant_id() to authenticated, service_role;
grant execute on function hipocampo_private.current_tenant_role() to authenticated, service_role;

grant select on hipocampo_private.tenants to authenticated;
grant select on hipocampo_private.memberships to authenticated;
grant all on hipocampo_private.tenants to service_role;
grant all on hipocampo_private.memberships to service_role;
grant select on hipocampo_private.settings to authenticated;
grant all on hipocampo_private.settings to service_role;

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

create policy "members can read the global and their tenant config"
on hipocampo_private.settings
for select
to authenticated
using (
    tenant_id is null
    or tenant_id = (select hipocampo_private.current_tenant_id())
);

/*
create_tenant(name text, slug text, admin_user_id uuid default null) -> uuid

Purpose: create a tenant, its (empty) config row and optionally its first admin.
Parameters: name - 1..200 characters; slug - ^[a-z0-9][a-z0-9_-]{0,62}$, unique;
  admin_user_id - auth user made admin of the new tenant (optional).
Returns: the new tenant id.
Errors: 23505 "tenant slug already exists"; 23514 on a bad name or slug.
Example: select hipocampo.create_tenant('Condomínio Sol', 'sol', '…uuid…');
*/
create function hipocampo.create_tenant(name text, slug text, admin_user_id uuid default null)
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
create function hipocampo.add_member(tenant_id uuid, user_id uuid, role text default 'member')
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

grant execute on function hipocampo.create_tenant(text, text, uuid) to service_role;
grant execute on function hipocampo.add_member(uuid, uuid, text) to service_role;

comment on function hipocampo.create_tenant(text, text, uuid) is
'Create a tenant and optionally its first admin (service_role only).';
comment on function hipocampo.add_member(uuid, uuid, text) is
'Add a user to a tenant as admin or member (service_role only).';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
