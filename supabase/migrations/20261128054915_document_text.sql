-- document text.
-- hipocampo.document_text: a document's stored text chunk by chunk, for the hub's document view (issue 45 §6)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo.document_text(document_id uuid, tenant_id uuid default null::uuid)
returns table (chunk_index integer, section text, content text)
language plpgsql
stable
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(document_text.tenant_id);  -- 42501 before any other work
    d hipocampo_private.documents := (
        select x from hipocampo_private.documents as x where x.id = document_text.document_id and x.tenant_id = t
    );
begin
    if d.id is null then
        return;
    end if;
    return query
    select c.chunk_index, c.metadata ->> 'section', c.content
    from hipocampo_private.chunks as c
    where c.document_id = d.id and c.tenant_id = t
      and c.embedding_model is not distinct from (
          -- the search model's chunks when the document has them, else another model's
          select x.embedding_model from hipocampo_private.chunks as x
          where x.document_id = d.id
          order by x.embedding_model is distinct from hipocampo_private._search_model(t, array[d.kb_id]),
              x.embedding_model
          limit 1
      )
    order by c.chunk_index;
end;
$function$;

revoke execute on function hipocampo.document_text(document_id uuid, tenant_id uuid) from public;
grant execute on function hipocampo.document_text(document_id uuid, tenant_id uuid) to authenticated;
grant execute on function hipocampo.document_text(document_id uuid, tenant_id uuid) to service_role;
comment on function hipocampo.document_text(pg_catalog.uuid, pg_catalog.uuid) is 'A document''s stored (scrubbed) text, chunk by chunk in order.';
