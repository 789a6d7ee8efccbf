-- my tenants.
-- issue 58 §2: my_tenants lists the signed-in user's tenants, their role and the current one, for the hub's tenant switch
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

-- definer because a tenant's row is visible to its own claims only (RLS); a user may read the name of every tenant they belong to.
create or replace function hipocampo.my_tenants()
returns table (id uuid, slug text, name text, role text, current boolean)
language plpgsql
stable
security definer
set search_path to ''
set jit to 'off'
as $function$
declare
    c record := hipocampo_private._caller();  -- 42501 before any other work
begin
    if c.kind <> 'user' then
        raise exception 'my_tenants lists a signed-in user''s tenants' using errcode = '42501';
    end if;
    return query
    select t.id, t.slug, t.name, m.role, t.id = c.tenant_id
    from hipocampo_private.memberships as m
    inner join hipocampo_private.tenants as t on t.id = m.tenant_id
    where m.user_id = c.user_id
    order by t.name, t.id;
end;
$function$;

revoke execute on function hipocampo.my_tenants() from public;
grant execute on function hipocampo.my_tenants() to authenticated;
grant execute on function hipocampo.my_tenants() to service_role;
comment on function hipocampo.my_tenants() is 'The signed-in user''s tenants, their role in each, and the current one.';
