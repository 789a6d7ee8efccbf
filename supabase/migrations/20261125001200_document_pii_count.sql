-- Personal data replaced per document (issue 21, the hub's document list): documents.pii_replacements,
-- the count the client's scrub reported (scrub_pii), written by ingest_document from
-- document.pii_replacements and returned by list_documents. Restated from
-- supabase/schemas/03_knowledge_bases.sql and 13_grants.sql; re-runnable (list_documents changes its
-- result columns, so it is dropped and created again).
set local check_function_bodies = off;

alter table hipocampo_private.documents add column if not exists pii_replacements integer not null default 0;
alter table hipocampo_private.documents drop constraint if exists documents_pii_replacements_nonnegative;
alter table hipocampo_private.documents add constraint documents_pii_replacements_nonnegative
check (pii_replacements >= 0);

/*
ingest_document(kb_id uuid, document jsonb, chunks jsonb, embedding_model text) -> jsonb

Purpose: write one document and all its chunks in one transaction. A document is identified by
  (kb_id, document.source_uri): unchanged content_hash with chunks of this model -> nothing
  written; unchanged content_hash without them (a model switch) -> this model's chunks are added
  beside the other models'; changed content_hash -> the chunks of every model are replaced (no
  model keeps serving the old text); new -> inserted. A chunk whose (tenant, content_hash,
  model) already exists is skipped. A document without trust_score gets the default of its
  source type, retrieval.default_trust in the config rows (config.toml; 0.5 when the type has
  none). The title and source_uri are scrubbed of PII before the lookup (what the documents
  trigger stores); chunk content and metadata are scrubbed by the chunks trigger.
Parameters:
  kb_id - the knowledge base (the caller must be its tenant's admin, or service_role).
  document - {title (1..500 characters), source_uri (1..2,048 bytes), content_hash,
    source_type?, doc_type?, author?, published_at?, version?, trust_score? 0..1 (default
    retrieval.default_trust[source_type]),
    data_classification?, expires_at?, status?, pii_replacements? (personal data the client
    replaced while scrubbing the text, >= 0; default 0)}
  chunks - [{chunk_index, content, token_count, content_hash, metadata?, embedding: [float, …]}]
  embedding_model - a registered model; every embedding must have its dims.
Returns: {"document_id", "status": "inserted" | "replaced" | "embedded" (same text, this
  model's chunks added) | "unchanged", "chunks": n, "skipped": n}.
Errors: 42501 as _caller (before any other work); 42501 "only tenant admins can ingest
  documents"; P0002 unknown (or null) knowledge base / unknown embedding model; 22023
  "embedding_model must not be null"; 22023 bad document or chunks shape; 22001
  "document.title is n characters; the limit is 500", "document.source_uri is n bytes; the limit
  is 2048"; 22000 "embedding of chunk i has n dimensions; model … expects d"; 22023 "invalid
  document field: …" (unparsable date or number); 23514 "invalid document: …".
Example: select hipocampo.ingest_document(kb, '{"title":"Regimento","source_uri":"file:///r.pdf",
  "content_hash":"ab…"}', '[{"chunk_index":0,"content":"…","token_count":12,"content_hash":"cd…",
  "embedding":[0.1, …]}]', 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo.ingest_document(
    kb_id uuid, document jsonb, chunks jsonb, embedding_model text
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(ingest_document.kb_id);
    model_dims integer;
    doc_id uuid;
    old_hash text;
    result_status text;
    written integer;
    total integer;
    bad record;
    default_trust real;
begin
    if ingest_document.embedding_model is null then
        raise exception 'embedding_model must not be null' using errcode = '22023';
    end if;
    if document is null or jsonb_typeof(document) <> 'object'
        or coalesce(document ->> 'title', '') = ''
        or coalesce(document ->> 'source_uri', '') = ''
        or coalesce(document ->> 'content_hash', '') = '' then
        raise exception 'document must be an object with title, source_uri and content_hash'
            using errcode = '22023';
    end if;
    -- What is stored is scrubbed (the documents trigger); look the document up by the same.
    document := document || jsonb_build_object(
        'title', (hipocampo_private._pii_scrub(document ->> 'title')).text,
        'source_uri', (hipocampo_private._pii_scrub(document ->> 'source_uri')).text);
    if char_length(document ->> 'title') > 500 then
        raise exception 'document.title is % characters; the limit is 500', char_length(document ->> 'title')
            using errcode = '22001';
    end if;
    if octet_length(document ->> 'source_uri') > 2048 then
        raise exception 'document.source_uri is % bytes; the limit is 2048', octet_length(document ->> 'source_uri')
            using errcode = '22001';
    end if;
    if chunks is null or jsonb_typeof(chunks) <> 'array' or jsonb_array_length(chunks) = 0 then
        raise exception 'chunks must be a non-empty json array' using errcode = '22023';
    end if;
    select e.dims into model_dims from hipocampo_private.embedding_models as e
    where e.name = ingest_document.embedding_model;
    if model_dims is null then
        raise exception 'unknown embedding model: %', ingest_document.embedding_model
            using errcode = 'P0002';
    end if;
    select c.ordinality - 1 as i, jsonb_array_length(c.value -> 'embedding') as n into bad
    from jsonb_array_elements(chunks) with ordinality as c
    where jsonb_typeof(c.value -> 'embedding') is distinct from 'array'
       or jsonb_array_length(c.value -> 'embedding') <> model_dims
       or coalesce(c.value ->> 'content', '') = ''
       or coalesce(c.value ->> 'content_hash', '') = ''
    limit 1;
    if found then
        if bad.n is distinct from model_dims then
            raise exception 'embedding of chunk % has % dimensions; model % expects %',
                bad.i, coalesce(bad.n, 0), ingest_document.embedding_model, model_dims
                using errcode = '22000';
        end if;
        raise exception 'chunk % needs content and content_hash', bad.i using errcode = '22023';
    end if;

    select d.id, d.content_hash into doc_id, old_hash from hipocampo_private.documents as d
    where d.kb_id = k.id and d.source_uri = document ->> 'source_uri';
    default_trust := coalesce(
        (hipocampo.effective_config(k.tenant_id, k.id) -> 'retrieval' -> 'default_trust'
            ->> coalesce(document ->> 'source_type', 'other'))::real,
        0.5
    );

    if doc_id is not null and old_hash = document ->> 'content_hash'
        and exists (
            select 1 from hipocampo_private.chunks as c
            where c.document_id = doc_id and c.embedding_model = ingest_document.embedding_model
        ) then
        return jsonb_build_object('document_id', doc_id, 'status', 'unchanged', 'chunks', 0, 'skipped', 0);
    end if;

    if doc_id is null then
        insert into hipocampo_private.documents (
            tenant_id, kb_id, source_type, doc_type, title, source_uri, author, published_at,
            version, trust_score, data_classification, content_hash, status, expires_at, pii_replacements
        ) values (
            k.tenant_id, k.id, coalesce(document ->> 'source_type', 'other'),
            document ->> 'doc_type', document ->> 'title', document ->> 'source_uri',
            document ->> 'author', (document ->> 'published_at')::timestamptz,
            document ->> 'version', coalesce((document ->> 'trust_score')::real, default_trust),
            coalesce(document ->> 'data_classification', 'internal'), document ->> 'content_hash',
            coalesce(document ->> 'status', 'active'), (document ->> 'expires_at')::timestamptz,
            coalesce((document ->> 'pii_replacements')::integer, 0)
        ) returning id into doc_id;
        result_status := 'inserted';
    else
        delete from hipocampo_private.chunks as c
        where c.document_id = doc_id
            and (c.embedding_model = ingest_document.embedding_model or old_hash <> document ->> 'content_hash');
        update hipocampo_private.documents as d set
            source_type = coalesce(document ->> 'source_type', d.source_type),
            doc_type = coalesce(document ->> 'doc_type', d.doc_type),
            title = document ->> 'title',
            author = coalesce(document ->> 'author', d.author),
            published_at = coalesce((document ->> 'published_at')::timestamptz, d.published_at),
            version = coalesce(document ->> 'version', d.version),
            trust_score = coalesce((document ->> 'trust_score')::real, d.trust_score),
            data_classification = coalesce(document ->> 'data_classification', d.data_classification),
            content_hash = document ->> 'content_hash',
            status = coalesce(document ->> 'status', d.status),
            expires_at = (document ->> 'expires_at')::timestamptz,
            pii_replacements = coalesce((document ->> 'pii_replacements')::integer, d.pii_replacements),
            updated_at = now()
        where d.id = doc_id;
        result_status := case when old_hash = document ->> 'content_hash' then 'embedded' else 'replaced' end;
    end if;

    insert into hipocampo_private.chunks (
        tenant_id, kb_id, document_id, chunk_index, content, token_count, metadata,
        content_hash, ts_config, embedding, embedding_model, expires_at
    )
    select
        k.tenant_id, k.id, doc_id, (c ->> 'chunk_index')::integer, c ->> 'content',
        coalesce((c ->> 'token_count')::integer, 0), coalesce(c -> 'metadata', '{}'::jsonb),
        c ->> 'content_hash', hipocampo_private.text_search_config(k.language),
        (c ->> 'embedding')::extensions.vector, ingest_document.embedding_model,
        (document ->> 'expires_at')::timestamptz
    from jsonb_array_elements(chunks) as c
    on conflict on constraint chunks_tenant_hash_model_key do nothing;
    get diagnostics written = row_count;
    total := jsonb_array_length(chunks);

    update hipocampo_private.documents as d set chunk_count = written where d.id = doc_id;
    return jsonb_build_object(
        'document_id', doc_id, 'status', result_status, 'chunks', written, 'skipped', total - written
    );
exception
    when insufficient_privilege then
        raise exception 'only tenant admins can ingest documents' using errcode = '42501';
    when check_violation then
        raise exception 'invalid document: %', sqlerrm using errcode = '23514';
    when invalid_text_representation or invalid_datetime_format or datetime_field_overflow
        or numeric_value_out_of_range then
        raise exception 'invalid document field: %', sqlerrm using errcode = '22023';
end;
$$;

comment on function hipocampo.ingest_document(uuid, jsonb, jsonb, text) is
'Write one document and its chunks atomically; unchanged documents are not rewritten.';

drop function if exists hipocampo.list_documents(uuid);

/*
list_documents(kb_id uuid) -> table (id, title, source_uri, source_type, doc_type, status,
  trust_score, chunk_count, content_hash, published_at, expires_at, created_at, updated_at,
  pii_replacements)

Purpose: the documents of a knowledge base, by source_uri (RLS: the caller's tenant).
Parameters: kb_id - the knowledge base.
Returns: one row per document; trust_score 0..1; chunk_count chunks of the document (all models);
  pii_replacements personal data replaced in its text at ingestion (as the client reported it).
Errors: 42501 as _caller; P0002 "unknown knowledge base: …".
Example: select title, chunk_count from hipocampo.list_documents('…');
*/
create or replace function hipocampo.list_documents(kb_id uuid)
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
    return query
    select d.id, d.title, d.source_uri, d.source_type, d.doc_type, d.status, d.trust_score, d.chunk_count,
        d.content_hash, d.published_at, d.expires_at, d.created_at, d.updated_at, d.pii_replacements
    from hipocampo_private.documents as d
    where d.kb_id = k.id
    order by d.source_uri;
end;
$$;

comment on function hipocampo.list_documents(uuid) is 'The documents of a knowledge base.';

revoke execute on function hipocampo.list_documents(uuid) from public;
grant execute on function hipocampo.list_documents(kb_id uuid) to authenticated, service_role;
