-- Documents a page at a time, and one document by id. list_documents returned every document of
-- a knowledge base (SciFact's 5,183 in 15-34 ms; a knowledge base of 100k documents would send
-- ~0.5 s and 100k rows to the hub and to `hipocampo doc list`), and the CLI and the hub found one
-- document by listing all of them (the CLI: every knowledge base of the tenant). list_documents
-- takes a keyset page (after_source_uri, max_rows; without them it returns every document, as
-- before); get_document returns one document with its knowledge base. Restated from
-- supabase/schemas/03_knowledge_bases.sql; re-runnable.
set local check_function_bodies = off;

drop function if exists hipocampo.list_documents(uuid);

/*
list_documents(kb_id uuid, after_source_uri text default null, max_rows integer default null)
  -> table (id, title, source_uri, source_type, doc_type, status, trust_score, chunk_count,
  content_hash, published_at, expires_at, created_at, updated_at, pii_replacements)

Purpose: the documents of a knowledge base, by source_uri, a page at a time (RLS: the caller's
  tenant). Pages are keyset pages on the (kb_id, source_uri) key: each costs its own rows
  whatever the knowledge base's size.
Parameters: kb_id - the knowledge base; after_source_uri - only documents whose source_uri sorts
  after this one (the last row of the previous page; null: from the first); max_rows - at most
  this many rows, 1..10000 (null: every document after after_source_uri, as before pages).
Returns: one row per document; trust_score 0..1; chunk_count chunks of the document (all models);
  pii_replacements personal data replaced in its text at ingestion (as the client reported it).
Errors: 42501 as _caller; P0002 "unknown knowledge base: …"; 22023 "max_rows must lie in
  [1, 10000]: …".
Example: select source_uri, title from hipocampo.list_documents('…', max_rows => 100);
  select source_uri, title from hipocampo.list_documents('…', '<the last source_uri>', 100);
*/
create or replace function hipocampo.list_documents(
    kb_id uuid, after_source_uri text default null, max_rows integer default null
)
returns table (
    id uuid, title text, source_uri text, source_type text, doc_type text, status text, trust_score real,
    chunk_count integer, content_hash text, published_at timestamptz, expires_at timestamptz,
    created_at timestamptz, updated_at timestamptz, pii_replacements integer
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
    if list_documents.max_rows is not null and list_documents.max_rows not between 1 and 10000 then
        raise exception 'max_rows must lie in [1, 10000]: %', list_documents.max_rows using errcode = '22023';
    end if;
    return query
    select d.id, d.title, d.source_uri, d.source_type, d.doc_type, d.status, d.trust_score, d.chunk_count,
        d.content_hash, d.published_at, d.expires_at, d.created_at, d.updated_at, d.pii_replacements
    from hipocampo_private.documents as d
    where d.kb_id = k.id
        and (list_documents.after_source_uri is null or d.source_uri > list_documents.after_source_uri)
    order by d.source_uri
    limit list_documents.max_rows;
end;
$$;

/*
get_document(document_id uuid, tenant_id uuid default null) -> table (id, kb_id, kb_name, title,
  source_uri, source_type, doc_type, status, trust_score, chunk_count, content_hash, published_at,
  expires_at, created_at, updated_at, pii_replacements)

Purpose: one document by id, with the knowledge base that holds it, in the caller's tenant
  (_resolve_tenant), without listing a knowledge base to find it.
Parameters: document_id - the document; tenant_id - service_role names the tenant (a user's
  is their claims').
Returns: one row (the columns of list_documents, and kb_id, kb_name), or no row when the tenant
  has no document with that id (none, or another tenant's).
Errors: 42501 as _resolve_tenant (before any other work).
Example: select kb_name, title, chunk_count from hipocampo.get_document('…');
*/
create or replace function hipocampo.get_document(document_id uuid, tenant_id uuid default null)
returns table (
    id uuid, kb_id uuid, kb_name text, title text, source_uri text, source_type text, doc_type text,
    status text, trust_score real, chunk_count integer, content_hash text, published_at timestamptz,
    expires_at timestamptz, created_at timestamptz, updated_at timestamptz, pii_replacements integer
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(get_document.tenant_id);  -- 42501 before any other work
begin
    return query
    select d.id, d.kb_id, k.name, d.title, d.source_uri, d.source_type, d.doc_type, d.status, d.trust_score,
        d.chunk_count, d.content_hash, d.published_at, d.expires_at, d.created_at, d.updated_at,
        d.pii_replacements
    from hipocampo_private.documents as d
    inner join hipocampo_private.knowledge_bases as k on d.kb_id = k.id
    where d.id = get_document.document_id and d.tenant_id = t;
end;
$$;

comment on function hipocampo.list_documents(uuid, text, integer) is
'The documents of a knowledge base by source_uri, a keyset page at a time (after_source_uri, max_rows).';

comment on function hipocampo.get_document(uuid, uuid) is 'One document of the tenant by id, with its knowledge base.';

revoke execute on function hipocampo.list_documents(uuid, text, integer) from public;
revoke execute on function hipocampo.get_document(uuid, uuid) from public;
grant execute on function hipocampo.list_documents(kb_id uuid, after_source_uri text, max_rows integer)
to authenticated, service_role;
grant execute on function hipocampo.get_document(document_id uuid, tenant_id uuid) to authenticated, service_role;
