-- The lifecycle the CLI lacked (issue 19 §1.6): list_tenants, list_members and remove_member
-- (service_role: operators), delete_knowledge_base (tenant admins, service_role).
-- Restated from supabase/schemas/01_tenancy_and_callers.sql and 03_knowledge_bases.sql.

/*
list_tenants() -> table (id uuid, name text, slug text, members integer, knowledge_bases integer,
  created_at timestamptz)

Purpose: every tenant of the project with its member and knowledge-base counts (operators; the
  CLI's `tenant list`).
Returns: one row per tenant, by slug.
Errors: 42501 for any role but service_role (no EXECUTE).
Example: select slug, members from hipocampo.list_tenants();
*/
create or replace function hipocampo.list_tenants()
returns table (
    id uuid, name text, slug text, members integer, knowledge_bases integer, created_at timestamptz
)
language sql
stable
security invoker
set search_path = ''
as $$
    select
        t.id, t.name, t.slug,
        (select count(*)::integer from hipocampo_private.memberships as m where m.tenant_id = t.id),
        (select count(*)::integer from hipocampo_private.knowledge_bases as k where k.tenant_id = t.id),
        t.created_at
    from hipocampo_private.tenants as t
    order by t.slug;
$$;

/*
list_members(tenant_id uuid) -> table (user_id uuid, role text, created_at timestamptz)

Purpose: the members of a tenant and their roles (operators; the CLI's `member list`).
Parameters: tenant_id - an existing tenant.
Returns: one row per member, admins first, then by when they joined.
Errors: 42501 for any role but service_role (no EXECUTE); P0002 "unknown tenant: …".
Example: select * from hipocampo.list_members('…');
*/
create or replace function hipocampo.list_members(tenant_id uuid)
returns table (user_id uuid, role text, created_at timestamptz)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    if not exists (select 1 from hipocampo_private.tenants as t where t.id = list_members.tenant_id) then
        raise exception 'unknown tenant: %', list_members.tenant_id using errcode = 'P0002';
    end if;
    return query
    select m.user_id, m.role, m.created_at from hipocampo_private.memberships as m
    where m.tenant_id = list_members.tenant_id
    order by m.role, m.created_at, m.user_id;
end;
$$;

/*
remove_member(tenant_id uuid, user_id uuid) -> boolean

Purpose: end a user's membership of a tenant: from the next request on, their JWT no longer
  resolves to the tenant (_caller refuses it). Their data stays (memories, messages, audit);
  erase it with erase_user (LGPD art. 18) before removing them if that is what is asked.
Parameters: tenant_id, user_id.
Returns: true when a membership was removed, false when there was none.
Errors: 42501 for any role but service_role (no EXECUTE).
Example: select hipocampo.remove_member('…tenant…', '…user…');
*/
create or replace function hipocampo.remove_member(tenant_id uuid, user_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
as $$
begin
    delete from hipocampo_private.memberships as m
    where m.tenant_id = remove_member.tenant_id and m.user_id = remove_member.user_id;
    return found;
end;
$$;

/*
delete_knowledge_base(kb_id uuid) -> jsonb

Purpose: delete a knowledge base with its documents, chunks, embeddings, statistics and
  ingestion jobs (cascade), and take it out of the agent bindings that name it. Cached answers
  of it are dropped (the documents trigger).
Parameters: kb_id - a knowledge base of the caller's tenant.
Returns: {"kb_id", "name", "documents": n, "chunks": n} (what was deleted).
Errors: 42501 as _caller (before any other work); 42501 "only tenant admins can delete knowledge
  bases"; P0002 "unknown knowledge base: …" (also another tenant's).
Example: select hipocampo.delete_knowledge_base('…');
*/
create or replace function hipocampo.delete_knowledge_base(kb_id uuid)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases;
    n_docs integer;
    n_chunks integer;
begin
    if gate.kind <> 'service' and gate.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can delete knowledge bases' using errcode = '42501';
    end if;
    k := hipocampo_private._kb(delete_knowledge_base.kb_id);
    select count(*) into n_docs from hipocampo_private.documents as d where d.kb_id = k.id;
    select count(*) into n_chunks from hipocampo_private.chunks as c where c.kb_id = k.id;
    delete from hipocampo_private.documents as d where d.kb_id = k.id;
    delete from hipocampo_private.knowledge_bases as x where x.id = k.id;
    update hipocampo_private.agent_bindings as b
    set kb_ids = array_remove(b.kb_ids, k.id), updated_at = now()
    where b.tenant_id = k.tenant_id and k.id = any(b.kb_ids);
    return jsonb_build_object('kb_id', k.id, 'name', k.name, 'documents', n_docs, 'chunks', n_chunks);
end;
$$;

comment on function hipocampo.list_tenants() is
'Every tenant with its member and knowledge-base counts (service_role only).';

comment on function hipocampo.list_members(uuid) is
'The members of a tenant and their roles (service_role only).';

comment on function hipocampo.remove_member(uuid, uuid) is
'End a user''s membership of a tenant; their data stays (service_role only).';

comment on function hipocampo.delete_knowledge_base(uuid) is
'Delete a knowledge base with its documents, chunks and jobs, and drop it from agent bindings (tenant admins).';

grant execute on function hipocampo.list_tenants() to service_role;
grant execute on function hipocampo.list_members(tenant_id uuid) to service_role;
grant execute on function hipocampo.remove_member(tenant_id uuid, user_id uuid) to service_role;
grant execute on function hipocampo.delete_knowledge_base(kb_id uuid) to authenticated, service_role;

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
