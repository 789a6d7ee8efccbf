-- current tenant role.
-- review: the hub signs a user in with one call (current_tenant returns the caller's role)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo.current_tenant(tenant_id uuid);

set check_function_bodies = off;

create or replace function hipocampo.current_tenant(tenant_id uuid default null::uuid)
returns table (id uuid, slug text, name text, role text)
language plpgsql
stable
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(current_tenant.tenant_id);  -- 42501 before any other work
    c record := hipocampo_private._caller();
begin
    return query select x.id, x.slug, x.name, c.tenant_role from hipocampo_private.tenants as x where x.id = t;
end;
$function$;

revoke execute on function hipocampo.current_tenant(tenant_id uuid) from public;
grant execute on function hipocampo.current_tenant(tenant_id uuid) to authenticated;
grant execute on function hipocampo.current_tenant(tenant_id uuid) to service_role;
comment on function hipocampo.current_tenant(pg_catalog.uuid) is 'The caller''s tenant: id, slug, name and the caller''s role in it.';
