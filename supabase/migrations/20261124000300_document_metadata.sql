-- Documents (issue 19 §1.1, §1.2): document_hashes says per document its source type, trust and
-- whether the model embeds it, so `hipocampo ingest` re-embeds after a model switch and applies a
-- metadata-only change without re-embedding (set_document_metadata, new); ingest_document takes a
-- document's default trust from retrieval.default_trust (per source type, config rows) instead of
-- a literal 0.5, adds a new model's chunks beside the old model's when the text is unchanged, and
-- replaces every model's chunks when it changed. Restated from supabase/schemas/03_knowledge_bases.sql.

drop function if exists hipocampo.document_hashes(uuid);

/*
document_hashes(kb_id uuid, embedding_model text default null) -> setof (document_id uuid,
  source_uri text, content_hash text, source_type text, trust_score real, expires_at timestamptz,
  embedded boolean)

Purpose: what a knowledge base holds, so a client can skip unchanged documents before embedding
  and apply a metadata-only change (source type, trust, expiry) without re-embedding.
Parameters: kb_id - the knowledge base; embedding_model - null = the active model.
Returns: one row per document of the knowledge base; embedded = the document has chunks of that
  model (false after a model switch until it is re-ingested with the new model).
Errors: 42501 as _caller (before any other work); P0002 unknown knowledge base.
Example: select * from hipocampo.document_hashes(kb);
*/
create or replace function hipocampo.document_hashes(kb_id uuid, embedding_model text default null)
returns table (
    document_id uuid, source_uri text, content_hash text, source_type text, trust_score real,
    expires_at timestamptz, embedded boolean
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    model text;
begin
    perform hipocampo_private._caller();
    perform hipocampo_private._kb(document_hashes.kb_id);
    model := coalesce(
        document_hashes.embedding_model,
        (select e.name from hipocampo_private.embedding_models as e where e.active)
    );
    return query
    select d.id, d.source_uri, d.content_hash, d.source_type, d.trust_score, d.expires_at,
        exists (
            select 1 from hipocampo_private.chunks as c
            where c.document_id = d.id and c.embedding_model = model
        )
    from hipocampo_private.documents as d
    where d.kb_id = document_hashes.kb_id;
end;
$$;

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
    data_classification?, expires_at?, status?}
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
            version, trust_score, data_classification, content_hash, status, expires_at
        ) values (
            k.tenant_id, k.id, coalesce(document ->> 'source_type', 'other'),
            document ->> 'doc_type', document ->> 'title', document ->> 'source_uri',
            document ->> 'author', (document ->> 'published_at')::timestamptz,
            document ->> 'version', coalesce((document ->> 'trust_score')::real, default_trust),
            coalesce(document ->> 'data_classification', 'internal'), document ->> 'content_hash',
            coalesce(document ->> 'status', 'active'), (document ->> 'expires_at')::timestamptz
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

/*
set_document_metadata(document_id uuid, metadata jsonb) -> jsonb

Purpose: change what describes a document without touching its text, chunks or embeddings:
  source type, trust, dates, version, author, classification (what `hipocampo ingest` applies
  when only these changed: "metadata updated", no embedding call). expires_at is copied to the
  document's chunks (retention). The change drops the knowledge base's cached answers (the
  documents trigger).
Parameters: document_id; metadata - a json object with any of source_type, doc_type, author,
  published_at (timestamptz), version, trust_score (0..1), data_classification, expires_at
  (timestamptz or null = never); a key that is absent is left as it is.
Returns: {"document_id", "source_type", "trust_score", "expires_at", "updated": [keys changed]}.
Errors: 42501 as _caller (before any other work); 42501 "only tenant admins can change
  documents"; 22023 "metadata must be a json object" / "unknown document field …" / "invalid
  document field: …" (unparsable date or number) / "… must not be null"; P0002 "unknown
  document: …" (also another tenant's); 22003 "trust_score must lie in [0, 1] (got …)"; 23514
  "invalid document: …" (unknown source type or classification).
Example: select hipocampo.set_document_metadata(doc, '{"trust_score": 0.9, "source_type": "regulation"}');
*/
create or replace function hipocampo.set_document_metadata(document_id uuid, metadata jsonb)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    allowed constant text[] := array[
        'source_type', 'doc_type', 'author', 'published_at', 'version', 'trust_score',
        'data_classification', 'expires_at'
    ];
    bad text;
    before hipocampo_private.documents;
    d hipocampo_private.documents;
begin
    if gate.kind <> 'service' and gate.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can change documents' using errcode = '42501';
    end if;
    if metadata is null or jsonb_typeof(metadata) <> 'object' then
        raise exception 'metadata must be a json object' using errcode = '22023';
    end if;
    select string_agg(e.key, ', ' order by e.key) into bad from jsonb_object_keys(metadata) as e (key)
    where e.key <> all(allowed);
    if bad is not null then
        raise exception 'unknown document field %; one of %', bad, array_to_string(allowed, ', ')
            using errcode = '22023';
    end if;
    select string_agg(e.key, ', ' order by e.key) into bad from jsonb_each(metadata) as e
    where e.key in ('source_type', 'trust_score', 'data_classification') and jsonb_typeof(e.value) = 'null';
    if bad is not null then
        raise exception '% must not be null', bad using errcode = '22023';
    end if;
    if jsonb_typeof(metadata -> 'trust_score') = 'number'
        and (metadata ->> 'trust_score')::numeric not between 0 and 1 then
        raise exception 'trust_score must lie in [0, 1] (got %)', metadata ->> 'trust_score' using errcode = '22003';
    end if;
    select * into before from hipocampo_private.documents as x where x.id = set_document_metadata.document_id;
    update hipocampo_private.documents as x set
        source_type = coalesce(metadata ->> 'source_type', x.source_type),
        doc_type = case when metadata ? 'doc_type' then metadata ->> 'doc_type' else x.doc_type end,
        author = case when metadata ? 'author' then metadata ->> 'author' else x.author end,
        published_at = case
            when metadata ? 'published_at' then (metadata ->> 'published_at')::timestamptz else x.published_at
        end,
        version = case when metadata ? 'version' then metadata ->> 'version' else x.version end,
        trust_score = coalesce((metadata ->> 'trust_score')::real, x.trust_score),
        data_classification = coalesce(metadata ->> 'data_classification', x.data_classification),
        expires_at = case
            when metadata ? 'expires_at' then (metadata ->> 'expires_at')::timestamptz else x.expires_at
        end,
        updated_at = now()
    where x.id = set_document_metadata.document_id
    returning * into d;
    if d.id is null then
        raise exception 'unknown document: %', document_id using errcode = 'P0002';
    end if;
    if d.expires_at is distinct from before.expires_at then
        update hipocampo_private.chunks as c set expires_at = d.expires_at where c.document_id = d.id;
    end if;
    return jsonb_build_object(
        'document_id', d.id, 'source_type', d.source_type, 'trust_score', d.trust_score,
        'expires_at', d.expires_at,
        'updated', coalesce((
            select jsonb_agg(x.key order by x.key)
            from jsonb_each(to_jsonb(d)) as x
            where x.key = any(allowed) and x.value is distinct from to_jsonb(before) -> x.key
        ), '[]'::jsonb)
    );
exception
    when insufficient_privilege then
        raise exception 'only tenant admins can change documents' using errcode = '42501';
    when check_violation then
        raise exception 'invalid document: %', sqlerrm using errcode = '23514';
    when invalid_text_representation or invalid_datetime_format or datetime_field_overflow then
        raise exception 'invalid document field: %', sqlerrm using errcode = '22023';
end;
$$;

comment on function hipocampo.document_hashes(uuid, text) is
'Content hashes, source types, trust and whether the model embeds them, per document of a knowledge base (client-side dedupe and metadata-only updates).';

comment on function hipocampo.ingest_document(uuid, jsonb, jsonb, text) is
'Write one document and its chunks atomically; unchanged documents are not rewritten.';

comment on function hipocampo.set_document_metadata(uuid, jsonb) is
'Change a document''s source type, trust, dates, version, author or classification without re-embedding it (tenant admins).';

grant execute on function hipocampo.document_hashes(kb_id uuid, embedding_model text) to authenticated, service_role;
grant execute on function hipocampo.set_document_metadata(document_id uuid, metadata jsonb) to authenticated, service_role;

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
