-- agent bindings listed and deleted.
-- hipocampo.list_agent_bindings and delete_agent_binding: agent bindings read and removed through the RPC surface, for the CLI (hipocampo agent) and the hub (issue 45 §5)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo.delete_agent_binding(name text, tenant_id uuid default null::uuid)
returns boolean
language plpgsql
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(delete_agent_binding.tenant_id);
begin
    perform hipocampo_private._require_admin();
    delete from hipocampo_private.agent_bindings as a where a.tenant_id = t and a.name = delete_agent_binding.name;
    return found;
end;
$function$;

create or replace function hipocampo.list_agent_bindings(tenant_id uuid default null::uuid)
returns table (id uuid, name text, kb_ids uuid[], kb_names text[], rag_overrides jsonb, updated_at timestamp with time zone)
language sql
stable
set search_path to ''
as $function$
    select a.id, a.name, a.kb_ids,
        array(
            select k.name from unnest(a.kb_ids) with ordinality as x (kb_id, ord)
            left join hipocampo_private.knowledge_bases as k on k.id = x.kb_id and k.tenant_id = a.tenant_id
            order by x.ord
        ),
        a.rag_overrides, a.updated_at
    from hipocampo_private.agent_bindings as a
    where a.tenant_id = hipocampo_private._resolve_tenant(list_agent_bindings.tenant_id)
    order by a.name
$function$;

revoke execute on function hipocampo.delete_agent_binding(name text, tenant_id uuid) from public;
revoke execute on function hipocampo.list_agent_bindings(tenant_id uuid) from public;
grant execute on function hipocampo.delete_agent_binding(name text, tenant_id uuid) to authenticated;
grant execute on function hipocampo.delete_agent_binding(name text, tenant_id uuid) to service_role;
grant execute on function hipocampo.list_agent_bindings(tenant_id uuid) to authenticated;
grant execute on function hipocampo.list_agent_bindings(tenant_id uuid) to service_role;
comment on function hipocampo.delete_agent_binding(pg_catalog.text, pg_catalog.uuid) is 'Delete one of the tenant''s agent bindings (admins).';
comment on function hipocampo.list_agent_bindings(pg_catalog.uuid) is 'The tenant''s agent bindings: knowledge bases (ids and names) and rag overrides.';
