-- An admin (authenticated) could not set a document's expires_at through set_document_metadata:
-- the copy of expires_at to the document's chunks needs UPDATE on chunks, which authenticated
-- did not have, so the call failed with 42501 "only tenant admins can change documents" (the hub's
-- document page found it; the CLI acts as service_role). authenticated may now update that one
-- column, under an UPDATE policy of the tenant's admins. Restated from
-- supabase/schemas/03_knowledge_bases.sql and 13_grants.sql; re-runnable.
drop policy if exists "admins can update chunks of their tenant" on hipocampo_private.chunks;

create policy "admins can update chunks of their tenant"
on hipocampo_private.chunks
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
)
with check (tenant_id = (select hipocampo_private.current_tenant_id()));

grant update (expires_at) on hipocampo_private.chunks to authenticated;
