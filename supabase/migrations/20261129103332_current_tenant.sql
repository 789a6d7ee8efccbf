-- current tenant.
-- Issue 58 §2: current_tenant() names the tenant a call acts on (id, slug, name), for the hub's header.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo.current_tenant(tenant_id uuid default null::uuid)
returns table (id uuid, slug text, name text)
language plpgsql
stable
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(current_tenant.tenant_id);  -- 42501 before any other work
begin
    return query select x.id, x.slug, x.name from hipocampo_private.tenants as x where x.id = t;
end;
$function$;

revoke execute on function hipocampo.current_tenant(tenant_id uuid) from public;
grant execute on function hipocampo.current_tenant(tenant_id uuid) to authenticated;
grant execute on function hipocampo.current_tenant(tenant_id uuid) to service_role;
comment on function hipocampo.current_tenant(pg_catalog.uuid) is 'The caller''s tenant: id, slug and name.';
