-- hipocampo.delete_tenant(tenant_id): offboarding a customer in one call (service_role): the
-- tenant and everything it holds, including the rows with no foreign key to it that a plain
-- `delete from tenants` left behind (its config row, memory_events, data_access_log).
-- Restated from supabase/schemas/01_tenancy_and_callers.sql and 13_grants.sql; re-runnable.
set local check_function_bodies = off;

/*
delete_tenant(tenant_id uuid) -> jsonb

Purpose: delete a tenant and everything it holds, in one transaction: its knowledge bases with
  their documents, chunks, BM25 postings and statistics, its members' memories, messages,
  sessions, cached answers (the foreign keys' cascades), and the rows that outlive what they
  describe and so have no foreign key to the tenant: its config row and its audit
  (memory_events, data_access_log), which a plain `delete from tenants` left behind with its
  users' ids. Nothing of the tenant remains; keep the returned counts as the record of the
  deletion. For offboarding a customer (LGPD art. 16: data kept no longer than the service).
  A tenant of 20,000 chunks takes ~1.4 s (docs/BENCHMARKS.md §deleting a tenant).
Parameters: tenant_id - an existing tenant.
Returns: {"tenant_id", "slug", "knowledge_bases": n, "documents": n, "chunks": n,
  "memories": n, "messages": n, "members": n, "audit_rows": n} (what was deleted).
Errors: 42501 for any role but service_role (no EXECUTE; _caller refuses the rest before any
  work); P0002 "unknown tenant: …".
Example: select hipocampo.delete_tenant('…');
*/
create or replace function hipocampo.delete_tenant(tenant_id uuid)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    tn hipocampo_private.tenants;
    out jsonb;
begin
    if gate.kind <> 'service' then
        raise exception 'only service_role can delete tenants' using errcode = '42501';
    end if;
    select * into tn from hipocampo_private.tenants as x where x.id = delete_tenant.tenant_id for update;
    if tn.id is null then
        raise exception 'unknown tenant: %', delete_tenant.tenant_id using errcode = 'P0002';
    end if;
    out := jsonb_build_object(
        'tenant_id', tn.id, 'slug', tn.slug,
        'knowledge_bases', (select count(*) from hipocampo_private.knowledge_bases as k where k.tenant_id = tn.id),
        'documents', (select count(*) from hipocampo_private.documents as d where d.tenant_id = tn.id),
        'chunks', (select count(*) from hipocampo_private.chunks as c where c.tenant_id = tn.id),
        'memories', (select count(*) from hipocampo_private.memories as m where m.tenant_id = tn.id),
        'messages', (select count(*) from hipocampo_private.messages as g where g.tenant_id = tn.id),
        'members', (select count(*) from hipocampo_private.memberships as b where b.tenant_id = tn.id)
    );
    -- The knowledge bases' cascade deletes each one's chunks in one statement, so the chunks'
    -- delete trigger drops its postings and statistics by key range.
    delete from hipocampo_private.tenants as x where x.id = tn.id;
    delete from hipocampo_private.settings as s where s.tenant_id = tn.id;
    with e as (delete from hipocampo_private.memory_events as e where e.tenant_id = tn.id returning 1),
        l as (delete from hipocampo_private.data_access_log as l where l.tenant_id = tn.id returning 1)
    select out || jsonb_build_object('audit_rows', (select count(*) from e) + (select count(*) from l))
    into out;
    return out;
end;
$$;

comment on function hipocampo.delete_tenant(uuid) is
'Delete a tenant and everything it holds, in one transaction (service_role only).';

revoke execute on function hipocampo.delete_tenant(uuid) from public;
grant execute on function hipocampo.delete_tenant(tenant_id uuid) to service_role;
