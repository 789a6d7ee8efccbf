-- The bulk ingestion path (issue 18 §3): hipocampo.ingest_documents writes a batch of documents
-- and their chunks in one transaction, set-based (one statement per step for the whole batch),
-- so the chunks' statement triggers write the BM25 postings and statistics once per batch, and
-- in key order. ingest_document keeps its semantics and errors and shares the checks
-- (_ingest_item) and the writes (_write_documents). An embedding may be sent as pgvector's text
-- form (a json string), cheaper to parse than a json array of numbers. chunks.fts_length is
-- dropped: it repeated to_tsvector for every row; the triggers sum the length from fts. For a
-- large first load, defer_model_index drops a model's HNSW index on chunks and
-- build_model_index builds it after the load in one pass (memory and workers from the
-- maintenance config rows); _model_index_name gives the one index name _ensure_model_index
-- creates and _drop_model_index drops. A knowledge base left without chunks (deleted, or its
-- tenant) loses its postings and statistics by key range in the delete trigger;
-- delete_knowledge_base deletes the chunks in one statement first so that it takes that path.
-- Restated from supabase/schemas/03_knowledge_bases.sql and 13_grants.sql; re-runnable.
set local check_function_bodies = off;

/*
_chunks_stats_after_insert() -> trigger

Purpose: AFTER INSERT (statement, transition table) trigger of chunks: adds the new chunks' terms
  to the BM25 statistics of their knowledge bases (kb_term_stats document frequencies,
  kb_text_stats counts and lengths, kb_postings term frequencies). The chunks' tsvectors are
  unnested once for the three writes, and the postings are inserted in key order (a batch of
  many chunks then fills the postings index page by page instead of at random).
Returns: null (a statement trigger).
Errors: none of its own.
*/
-- definer because every writer of chunks must keep the statistics right, and writers get no
-- direct write privilege on the statistics tables.
create or replace function hipocampo_private._chunks_stats_after_insert()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
    with terms as materialized (
        select n.tenant_id, n.kb_id, n.embedding_model, n.id, u.lexeme,
            coalesce(pg_catalog.array_length(u.positions, 1), 1) as tf
        from new_rows as n
        cross join lateral pg_catalog.unnest(n.fts) as u
    ),

    lengths as materialized (
        -- The BM25 document length: token occurrences (tsvector_token_count of fts).
        select t.id, sum(t.tf)::integer as len from terms as t group by t.id
    ),

    text_stats as (
        insert into hipocampo_private.kb_text_stats as s
            (tenant_id, kb_id, embedding_model, chunk_count, token_total)
        select n.tenant_id, n.kb_id, n.embedding_model, count(*), coalesce(sum(l.len), 0)
        from new_rows as n
        left join lengths as l on l.id = n.id
        group by n.tenant_id, n.kb_id, n.embedding_model
        on conflict (kb_id, embedding_model) do update
        set chunk_count = s.chunk_count + excluded.chunk_count,
            token_total = s.token_total + excluded.token_total
    ),

    term_stats as (
        insert into hipocampo_private.kb_term_stats as s
            (tenant_id, kb_id, embedding_model, lexeme, doc_freq)
        select t.tenant_id, t.kb_id, t.embedding_model, t.lexeme, count(*)
        from terms as t
        group by t.tenant_id, t.kb_id, t.embedding_model, t.lexeme
        order by t.kb_id, t.embedding_model, t.lexeme
        on conflict (kb_id, embedding_model, lexeme) do update
        set doc_freq = s.doc_freq + excluded.doc_freq
    )

    insert into hipocampo_private.kb_postings (tenant_id, kb_id, lexeme, chunk_id, tf, chunk_length)
    select t.tenant_id, t.kb_id, t.lexeme, t.id, t.tf, l.len
    from terms as t
    inner join lengths as l on l.id = t.id
    order by t.tenant_id, t.kb_id, t.lexeme, t.id;
    return null;
end;
$$;

/*
_chunks_stats_after_delete() -> trigger

Purpose: AFTER DELETE (statement, transition table) trigger of chunks: removes the deleted
  chunks' terms from the BM25 statistics of their knowledge bases. A knowledge base left without
  any chunk (deleted, or its tenant) loses its postings and statistics whole, by key range: one
  probe of the postings key per posting of every deleted chunk did not finish in minutes for a
  million chunks (docs/SCALE.md).
Returns: null (a statement trigger).
Errors: none of its own.
*/
-- definer because, as for inserts, every writer of chunks keeps the statistics right.
create or replace function hipocampo_private._chunks_stats_after_delete()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
    emptied uuid[];  -- knowledge bases without chunks of any model now
begin
    select coalesce(array_agg(k.kb_id), '{}') into emptied
    from (select distinct o.tenant_id, o.kb_id from old_rows as o) as k
    where not exists (
        select 1 from hipocampo_private.chunks as c
        where c.tenant_id = k.tenant_id and c.kb_id = k.kb_id
    );
    if cardinality(emptied) > 0 then
        delete from hipocampo_private.kb_postings as p
        using (select distinct o.tenant_id, o.kb_id from old_rows as o where o.kb_id = any(emptied)) as k
        where p.tenant_id = k.tenant_id and p.kb_id = k.kb_id;
        delete from hipocampo_private.kb_term_stats as s where s.kb_id = any(emptied);
        delete from hipocampo_private.kb_text_stats as s where s.kb_id = any(emptied);
    end if;

    update hipocampo_private.kb_text_stats as s
    set chunk_count = s.chunk_count - d.n,
        token_total = s.token_total - d.len
    from (
        select o.kb_id, o.embedding_model, count(*) as n,
            sum(hipocampo_private.tsvector_token_count(o.fts)) as len
        from old_rows as o
        where o.kb_id <> all(emptied)
        group by o.kb_id, o.embedding_model
    ) as d
    where s.kb_id = d.kb_id and s.embedding_model = d.embedding_model;

    with removed as (
        select o.kb_id, o.embedding_model, u.lexeme, count(*) as n
        from old_rows as o
        cross join lateral pg_catalog.unnest(o.fts) as u
        where o.kb_id <> all(emptied)
        group by o.kb_id, o.embedding_model, u.lexeme
    )
    update hipocampo_private.kb_term_stats as s
    set doc_freq = s.doc_freq - r.n
    from removed as r
    where s.kb_id = r.kb_id and s.embedding_model = r.embedding_model and s.lexeme = r.lexeme;

    delete from hipocampo_private.kb_term_stats as s
    where s.doc_freq <= 0
      and s.kb_id in (select o.kb_id from old_rows as o where o.kb_id <> all(emptied));

    delete from hipocampo_private.kb_postings as p
    using old_rows as o, pg_catalog.unnest(o.fts) as u
    where o.kb_id <> all(emptied)
      and p.tenant_id = o.tenant_id and p.kb_id = o.kb_id and p.lexeme = u.lexeme and p.chunk_id = o.id;
    return null;
end;
$$;

alter table hipocampo_private.chunks drop column if exists fts_length;

/*
_ingest_item(document jsonb, chunks jsonb, embedding_model text, dims integer) -> jsonb

Purpose: check one document and its chunks for ingest_document / ingest_documents, before
  anything is written (in ingest_document's order of checks), and return the document with its
  title and source_uri scrubbed of PII (what the documents trigger stores, so the lookup by
  source_uri finds it).
Parameters: document, chunks - as ingest_document takes them; embedding_model, dims - the
  model and its dimensions (null: the model is not registered).
Returns: the document object, title and source_uri scrubbed.
Errors: 22023 "document must be an object with title, source_uri and content_hash"; 22001
  "document.title is n characters; the limit is 500", "document.source_uri is n bytes; the limit
  is 2048"; 22023 "chunks must be a non-empty json array"; P0002 "unknown embedding model: …";
  22000 "embedding of chunk i has n dimensions; model … expects d"; 22023 "chunk i needs content
  and content_hash".
Example: select hipocampo_private._ingest_item('{"title":"t","source_uri":"u","content_hash":"h"}',
  '[{"chunk_index":0,"content":"c","content_hash":"x","embedding":"[0.1,…]"}]', 'all-MiniLM-L6-v2', 384);
*/
create or replace function hipocampo_private._ingest_item(
    document jsonb, chunks jsonb, embedding_model text, dims integer
)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    bad record;
begin
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
    if dims is null then
        raise exception 'unknown embedding model: %', embedding_model using errcode = 'P0002';
    end if;
    -- An embedding is a json array of numbers or pgvector's text form '[0.1,0.2,…]' (parsed
    -- once, by the insert; here its elements are counted by its commas).
    select c.i, c.n into bad
    from (
        select x.ordinality - 1 as i, x.value as chunk,
            case jsonb_typeof(x.value -> 'embedding')
                when 'array' then jsonb_array_length(x.value -> 'embedding')
                when 'string' then
                    pg_catalog.length(x.value ->> 'embedding')
                    - pg_catalog.length(pg_catalog.replace(x.value ->> 'embedding', ',', '')) + 1
            end as n
        from jsonb_array_elements(chunks) with ordinality as x
    ) as c
    where c.n is distinct from dims
       or coalesce(c.chunk ->> 'content', '') = ''
       or coalesce(c.chunk ->> 'content_hash', '') = ''
    limit 1;
    if found then
        if bad.n is distinct from dims then
            raise exception 'embedding of chunk % has % dimensions; model % expects %',
                bad.i, coalesce(bad.n, 0), embedding_model, dims
                using errcode = '22000';
        end if;
        raise exception 'chunk % needs content and content_hash', bad.i using errcode = '22023';
    end if;
    return document;
end;
$$;

/*
_write_documents(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text) -> jsonb

Purpose: the writes of ingest_document and ingest_documents, set-based: one statement per step
  for the whole batch (look up, delete the replaced chunks, update, insert documents, insert
  chunks, count), so the chunks' statement triggers (PII scrub aside, which is per row) update
  the BM25 statistics and postings once per batch. Semantics per document as ingest_document
  gives them.
Parameters: k - the knowledge base; items - [{document (checked and scrubbed by _ingest_item),
  chunks}] with distinct source_uris; embedding_model - a registered model.
Returns: [{"document_id", "status", "chunks", "skipped"}], in the order of items.
Errors: 42501 "only tenant admins can ingest documents" (the policies refused a write); 23514
  "invalid document: …" (a check constraint); 22023 "invalid document field: …" (an unparsable
  date, number or vector).
Example: select hipocampo_private._write_documents(k, '[{"document": {…}, "chunks": […]}]', 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo_private._write_documents(
    k hipocampo_private.knowledge_bases, items jsonb, embedding_model text
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    trust jsonb := hipocampo.effective_config(k.tenant_id, k.id) -> 'retrieval' -> 'default_trust';
    state jsonb;  -- [{i, doc_id, old_hash, status}]: one element per item, in order
    result jsonb;
begin
    select jsonb_agg(jsonb_build_object(
        'i', x.i, 'doc_id', d.id, 'old_hash', d.content_hash,
        'status', case
            when d.id is null then 'inserted'
            when d.content_hash is distinct from x.doc ->> 'content_hash' then 'replaced'
            when exists (
                select 1 from hipocampo_private.chunks as c
                where c.document_id = d.id and c.embedding_model = _write_documents.embedding_model
            ) then 'unchanged'
            else 'embedded'
        end) order by x.i)
    into state
    from (
        select (e.ordinality - 1)::integer as i, e.value -> 'document' as doc
        from jsonb_array_elements(items) with ordinality as e
    ) as x
    left join hipocampo_private.documents as d
        on d.kb_id = k.id and d.source_uri = x.doc ->> 'source_uri';

    if not jsonb_path_exists(state, '$[*] ? (@.status != "unchanged")') then
        -- Nothing to write: every document is stored with this model's chunks.
        return (
            select jsonb_agg(jsonb_build_object(
                'document_id', s.doc_id, 'status', s.status, 'chunks', 0, 'skipped', 0) order by s.i)
            from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        );
    end if;

    if jsonb_path_exists(state, '$[*] ? (@.status == "embedded" || @.status == "replaced")') then
        -- A changed text replaces every model's chunks (no model keeps serving the old text); the
        -- same text for a model without chunks (a model switch) replaces only that model's.
        delete from hipocampo_private.chunks as c
        using jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        where s.status in ('embedded', 'replaced') and c.document_id = s.doc_id
          and (c.embedding_model = _write_documents.embedding_model or s.status = 'replaced');

        update hipocampo_private.documents as d set
            source_type = coalesce(u.doc ->> 'source_type', d.source_type),
            doc_type = coalesce(u.doc ->> 'doc_type', d.doc_type),
            title = u.doc ->> 'title',
            author = coalesce(u.doc ->> 'author', d.author),
            published_at = coalesce((u.doc ->> 'published_at')::timestamptz, d.published_at),
            version = coalesce(u.doc ->> 'version', d.version),
            trust_score = coalesce((u.doc ->> 'trust_score')::real, d.trust_score),
            data_classification = coalesce(u.doc ->> 'data_classification', d.data_classification),
            content_hash = u.doc ->> 'content_hash',
            status = coalesce(u.doc ->> 'status', d.status),
            expires_at = (u.doc ->> 'expires_at')::timestamptz,
            pii_replacements = coalesce((u.doc ->> 'pii_replacements')::integer, d.pii_replacements),
            updated_at = now()
        from (
            select s.doc_id, items -> s.i -> 'document' as doc
            from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
            where s.status in ('embedded', 'replaced')
        ) as u
        where d.id = u.doc_id;
    end if;

    with inserted as (
        insert into hipocampo_private.documents (
            tenant_id, kb_id, source_type, doc_type, title, source_uri, author, published_at,
            version, trust_score, data_classification, content_hash, status, expires_at, pii_replacements
        )
        select
            k.tenant_id, k.id, coalesce(n.doc ->> 'source_type', 'other'),
            n.doc ->> 'doc_type', n.doc ->> 'title', n.doc ->> 'source_uri',
            n.doc ->> 'author', (n.doc ->> 'published_at')::timestamptz,
            n.doc ->> 'version',
            -- the source type's default trust (retrieval.default_trust; 0.5 when it has none)
            coalesce((n.doc ->> 'trust_score')::real,
                (trust ->> coalesce(n.doc ->> 'source_type', 'other'))::real, 0.5),
            coalesce(n.doc ->> 'data_classification', 'internal'), n.doc ->> 'content_hash',
            coalesce(n.doc ->> 'status', 'active'), (n.doc ->> 'expires_at')::timestamptz,
            coalesce((n.doc ->> 'pii_replacements')::integer, 0)
        from (
            select s.i, items -> s.i -> 'document' as doc
            from jsonb_to_recordset(state) as s (i integer, status text)
            where s.status = 'inserted'
        ) as n
        order by n.i
        returning id, source_uri
    )

    select jsonb_agg(jsonb_build_object(
        'i', s.i, 'doc_id', coalesce(s.doc_id, ins.id), 'status', s.status) order by s.i)
    into state
    from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
    left join inserted as ins
        on s.status = 'inserted' and ins.source_uri = items -> s.i -> 'document' ->> 'source_uri';

    with written as (
        insert into hipocampo_private.chunks (
            tenant_id, kb_id, document_id, chunk_index, content, token_count, metadata,
            content_hash, ts_config, embedding, embedding_model, expires_at
        )
        select
            k.tenant_id, k.id, s.doc_id, (c.value ->> 'chunk_index')::integer, c.value ->> 'content',
            coalesce((c.value ->> 'token_count')::integer, 0), coalesce(c.value -> 'metadata', '{}'::jsonb),
            c.value ->> 'content_hash', hipocampo_private.text_search_config(k.language),
            (c.value ->> 'embedding')::extensions.vector, _write_documents.embedding_model,
            (items -> s.i -> 'document' ->> 'expires_at')::timestamptz
        from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        cross join lateral jsonb_array_elements(items -> s.i -> 'chunks') with ordinality as c
        where s.status <> 'unchanged'
        order by s.i, c.ordinality
        on conflict on constraint chunks_tenant_hash_model_key do nothing
        returning document_id
    )

    select jsonb_agg(jsonb_build_object(
        'document_id', s.doc_id, 'status', s.status, 'chunks', coalesce(w.n, 0),
        'skipped', case
            when s.status = 'unchanged' then 0
            else jsonb_array_length(items -> s.i -> 'chunks') - coalesce(w.n, 0)
        end) order by s.i)
    into result
    from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
    left join (
        select w.document_id, count(*)::integer as n from written as w group by w.document_id
    ) as w on w.document_id = s.doc_id;

    update hipocampo_private.documents as d set chunk_count = (r.value ->> 'chunks')::integer
    from jsonb_array_elements(result) as r
    where d.id = (r.value ->> 'document_id')::uuid and r.value ->> 'status' <> 'unchanged';
    return result;
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
ingest_document(kb_id uuid, document jsonb, chunks jsonb, embedding_model text) -> jsonb

Purpose: write one document and all its chunks in one transaction. A document is identified by
  (kb_id, document.source_uri): unchanged content_hash with chunks of this model -> nothing
  written; unchanged content_hash without them (a model switch) -> this model's chunks are added
  beside the other models'; changed content_hash -> the chunks of every model are replaced (no
  model keeps serving the old text); new -> inserted. A chunk whose (tenant, content_hash,
  model) already exists is skipped. A document without trust_score gets the default of its
  source type, retrieval.default_trust in the config rows (config.toml; 0.5 when the type has
  none). The title and source_uri are scrubbed of PII before the lookup (what the documents
  trigger stores); chunk content and metadata are scrubbed by the chunks trigger. Many
  documents at once: ingest_documents (the same writes, set-based).
Parameters:
  kb_id - the knowledge base (the caller must be its tenant's admin, or service_role).
  document - {title (1..500 characters), source_uri (1..2,048 bytes), content_hash,
    source_type?, doc_type?, author?, published_at?, version?, trust_score? 0..1 (default
    retrieval.default_trust[source_type]),
    data_classification?, expires_at?, status?, pii_replacements? (personal data the client
    replaced while scrubbing the text, >= 0; default 0)}
  chunks - [{chunk_index, content, token_count, content_hash, metadata?, embedding}], embedding
    a json array of numbers or pgvector's text form "[0.1,0.2,…]" (cheaper to parse).
  embedding_model - a registered model; every embedding must have its dims.
Returns: {"document_id", "status": "inserted" | "replaced" | "embedded" (same text, this
  model's chunks added) | "unchanged", "chunks": n, "skipped": n}.
Errors: 42501 as _caller (before any other work); 42501 "only tenant admins can ingest
  documents"; P0002 unknown (or null) knowledge base / unknown embedding model; 22023
  "embedding_model must not be null"; 22023 bad document or chunks shape; 22001
  "document.title is n characters; the limit is 500", "document.source_uri is n bytes; the limit
  is 2048"; 22000 "embedding of chunk i has n dimensions; model … expects d"; 22023 "invalid
  document field: …" (unparsable date, number or vector); 23514 "invalid document: …".
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
begin
    if ingest_document.embedding_model is null then
        raise exception 'embedding_model must not be null' using errcode = '22023';
    end if;
    select e.dims into model_dims from hipocampo_private.embedding_models as e
    where e.name = ingest_document.embedding_model;
    document := hipocampo_private._ingest_item(document, chunks, ingest_document.embedding_model, model_dims);
    return hipocampo_private._write_documents(
        k, jsonb_build_array(jsonb_build_object('document', document, 'chunks', chunks)),
        ingest_document.embedding_model
    ) -> 0;
end;
$$;

/*
ingest_documents(kb_id uuid, documents jsonb, embedding_model text) -> jsonb

Purpose: the bulk path: write a batch of documents and their chunks in one transaction, with
  ingest_document's semantics for each document (inserted, replaced, embedded, unchanged; a
  chunk whose (tenant, content_hash, model) exists is skipped) but set-based: one statement per
  step for the whole batch, so the BM25 postings and statistics are written once per batch, in
  key order. Every document is checked before anything is written; one bad document refuses the
  batch, with its position, and nothing of the batch is written (the Python client then writes
  the batch's documents one by one to report the bad one alone).
Parameters:
  kb_id - the knowledge base (the caller must be its tenant's admin, or service_role).
  documents - [{"document": {…}, "chunks": […]}], 1..1,000 items with distinct
    document.source_uri, each as ingest_document's document and chunks arguments; at most
    10,000 chunks in all.
  embedding_model - a registered model; every embedding must have its dims.
Returns: [{"document_id", "status", "chunks", "skipped"}], one per item, in order.
Errors: 42501 as _caller (before any other work); 42501 "only tenant admins can ingest
  documents"; P0002 unknown (or null) knowledge base / unknown embedding model; 22023
  "embedding_model must not be null"; 22023 "documents must be a json array of 1 to 1000
  items"; 22023 "documents hold n chunks; the limit is 10000"; 22023 "documents[i] and
  documents[j] have the same source_uri"; ingest_document's errors for an item, with the same
  SQLSTATE and "documents[i]: " before the message; 22023 "invalid document field: …"; 23514
  "invalid document: …".
Example: select hipocampo.ingest_documents(kb, '[{"document": {"title":"Regimento",
  "source_uri":"file:///r.pdf","content_hash":"ab…"}, "chunks": [{"chunk_index":0,
  "content":"…","token_count":12,"content_hash":"cd…","embedding":"[0.1,…]"}]}]',
  'all-MiniLM-L6-v2');
*/
create or replace function hipocampo.ingest_documents(
    kb_id uuid, documents jsonb, embedding_model text
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(ingest_documents.kb_id);
    model_dims integer;
    checked jsonb[] := '{}';  -- the documents, checked and scrubbed, in order
    items jsonb;
    item record;
    chunk_total bigint;
    twin record;
    state text;
    message text;
begin
    if ingest_documents.embedding_model is null then
        raise exception 'embedding_model must not be null' using errcode = '22023';
    end if;
    if documents is null or jsonb_typeof(documents) <> 'array'
        or jsonb_array_length(documents) not between 1 and 1000 then
        raise exception 'documents must be a json array of 1 to 1000 items' using errcode = '22023';
    end if;
    select coalesce(sum(case
        when jsonb_typeof(d.value -> 'chunks') = 'array' then jsonb_array_length(d.value -> 'chunks')
        else 0 end), 0)
    into chunk_total
    from jsonb_array_elements(documents) as d;
    if chunk_total > 10000 then
        raise exception 'documents hold % chunks; the limit is 10000', chunk_total using errcode = '22023';
    end if;
    select e.dims into model_dims from hipocampo_private.embedding_models as e
    where e.name = ingest_documents.embedding_model;
    for item in
        select d.ordinality - 1 as i, d.value from jsonb_array_elements(documents) with ordinality as d
    loop
        begin
            checked := checked || hipocampo_private._ingest_item(
                case when jsonb_typeof(item.value) = 'object' then item.value -> 'document' end,
                case when jsonb_typeof(item.value) = 'object' then item.value -> 'chunks' end,
                ingest_documents.embedding_model, model_dims);
        exception when others then
            get stacked diagnostics state = returned_sqlstate, message = message_text;
            raise exception 'documents[%]: %', item.i, message using errcode = state;
        end;
    end loop;
    select min(c.i) as i, max(c.i) as j into twin
    from (
        select u.ordinality - 1 as i, u.doc ->> 'source_uri' as uri
        from pg_catalog.unnest(checked) with ordinality as u (doc, ordinality)
    ) as c
    group by c.uri
    having count(*) > 1
    order by max(c.i)
    limit 1;
    if found then
        raise exception 'documents[%] and documents[%] have the same source_uri', twin.i, twin.j
            using errcode = '22023';
    end if;
    select jsonb_agg(jsonb_build_object(
        'document', u.doc, 'chunks', documents -> (u.ordinality - 1)::integer -> 'chunks') order by u.ordinality)
    into items
    from pg_catalog.unnest(checked) with ordinality as u (doc, ordinality);
    return hipocampo_private._write_documents(k, items, ingest_documents.embedding_model);
end;
$$;

/*
_model_index_name(tbl text, model_name text) -> text

Purpose: the name of one embedding model's partial HNSW index on a table (chunks, memories or
  memory_staging): <table>_embedding_hnsw_<the first 12 hex digits of md5(model)>, short enough
  for any model name. One place for the name _ensure_model_index creates and _drop_model_index
  drops.
Parameters: tbl - the table's name in hipocampo_private; model_name - the model.
Returns: the index name.
Errors: none.
Example: select hipocampo_private._model_index_name('chunks', 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo_private._model_index_name(tbl text, model_name text)
returns text
language sql
immutable
security invoker
set search_path = ''
as $$
    select tbl || '_embedding_hnsw_' || pg_catalog.substr(pg_catalog.md5(model_name), 1, 12)
$$;

/*
_ensure_model_index(model_name text) -> text

Purpose: create the partial HNSW indexes of one embedding model on chunks, memories and
  memory_staging, if missing. HNSW m=16, ef_construction=64; opclass vector_cosine_ops because
  retrieval orders by the cosine-distance operator <=>.
Parameters: model_name - a registered model.
Returns: the chunks index name.
Errors: P0002 "unknown embedding model" when it is not registered.
Example: select hipocampo_private._ensure_model_index('all-MiniLM-L6-v2');
*/
-- definer because creating an index needs ownership of the tables.
create or replace function hipocampo_private._ensure_model_index(model_name text)
returns text
language plpgsql
security definer
set search_path = ''
as $$
declare
    m hipocampo_private.embedding_models;
    tbl text;
    idx text;
begin
    select * into m from hipocampo_private.embedding_models as e where e.name = model_name;
    if not found then
        raise exception 'unknown embedding model: %', model_name using errcode = 'P0002';
    end if;
    foreach tbl in array array['chunks', 'memories', 'memory_staging'] loop
        idx := hipocampo_private._model_index_name(tbl, m.name);
        execute format(
            'create index if not exists %I on hipocampo_private.%I '
            'using hnsw ((embedding::extensions.vector(%s)) extensions.vector_cosine_ops) '
            'with (m = 16, ef_construction = 64) where embedding_model = %L',
            idx, tbl, m.dims, m.name
        );
    end loop;
    return hipocampo_private._model_index_name('chunks', m.name);
end;
$$;


/*
_drop_model_index(model_name text) -> boolean

Purpose: drop the partial HNSW index of one embedding model on chunks (defer_model_index).
Parameters: model_name - a registered model.
Returns: true when the index existed and was dropped.
Errors: P0002 "unknown embedding model: …" when it is not registered.
Example: select hipocampo_private._drop_model_index('all-MiniLM-L6-v2');
*/
-- definer because dropping an index needs ownership of the table.
create or replace function hipocampo_private._drop_model_index(model_name text)
returns boolean
language plpgsql
security definer
set search_path = ''
as $$
declare
    idx text := hipocampo_private._model_index_name('chunks', model_name);
begin
    if not exists (select 1 from hipocampo_private.embedding_models as e where e.name = model_name) then
        raise exception 'unknown embedding model: %', model_name using errcode = 'P0002';
    end if;
    if to_regclass('hipocampo_private.' || idx) is null then
        return false;
    end if;
    execute format('drop index hipocampo_private.%I', idx);
    return true;
end;
$$;

/*
defer_model_index(embedding_model text) -> boolean

Purpose: before a large first load of a model's chunks (the bulk path, `hipocampo ingest
  --defer-index`): drop the model's HNSW index on chunks, so the load does not add each chunk to
  the graph one by one; build_model_index builds it after the load in one pass (faster: 100k
  SciFact chunks, docs/BENCHMARKS.md §Bulk ingestion). Until then searches of knowledge bases
  over retrieval.exact_scan_max_rows chunks scan exactly (same results, slower): meant for a
  first load, before the knowledge bases serve.
Parameters: embedding_model - a registered model.
Returns: true when the index existed and was dropped; false when it was already absent.
Errors: 42501 for any caller but service_role (grant); P0002 "unknown embedding model: …".
Example: select hipocampo.defer_model_index('all-MiniLM-L6-v2');
*/
create or replace function hipocampo.defer_model_index(embedding_model text)
returns boolean
language plpgsql
security invoker
set search_path = ''
as $$
begin
    return hipocampo_private._drop_model_index(defer_model_index.embedding_model);
end;
$$;

/*
build_model_index(embedding_model text) -> text

Purpose: build the model's HNSW indexes (chunks, memories, memory_staging) that are missing,
  after defer_model_index and a bulk load: one pass over the rows with
  maintenance.index_build_maintenance_work_mem_mb of memory (the graph is built in memory when
  it fits) and maintenance.index_build_parallel_workers parallel workers (config rows, from
  config.toml; set for this transaction only). Writes to the tables wait while it builds.
Parameters: embedding_model - a registered model.
Returns: the chunks index name.
Errors: 42501 for any caller but service_role (grant); P0002 "unknown embedding model: …";
  55000 "maintenance config is incomplete: index_build_maintenance_work_mem_mb,
  index_build_parallel_workers" when the global row lacks them (run `hipocampo db migrate`).
Example: select hipocampo.build_model_index('all-MiniLM-L6-v2');
*/
create or replace function hipocampo.build_model_index(embedding_model text)
returns text
language plpgsql
security invoker
set search_path = ''
as $$
declare
    cfg jsonb := (
        select s.config -> 'maintenance' from hipocampo_private.settings as s
        where s.tenant_id is null
    );
begin
    if cfg ->> 'index_build_maintenance_work_mem_mb' is null or cfg ->> 'index_build_parallel_workers' is null then
        raise exception 'maintenance config is incomplete: index_build_maintenance_work_mem_mb, index_build_parallel_workers'
            using errcode = '55000';
    end if;
    perform pg_catalog.set_config(
        'maintenance_work_mem', (cfg ->> 'index_build_maintenance_work_mem_mb') || 'MB', true
    );
    perform pg_catalog.set_config(
        'max_parallel_maintenance_workers', cfg ->> 'index_build_parallel_workers', true
    );
    return hipocampo_private._ensure_model_index(build_model_index.embedding_model);
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
    -- The chunks first, in one statement: the delete trigger then drops the knowledge base's
    -- postings and statistics by key range (through the documents' cascade it would see one
    -- document's chunks at a time and probe the postings once per posting).
    delete from hipocampo_private.chunks as c where c.tenant_id = k.tenant_id and c.kb_id = k.id;
    delete from hipocampo_private.documents as d where d.kb_id = k.id;
    delete from hipocampo_private.knowledge_bases as x where x.id = k.id;
    update hipocampo_private.agent_bindings as b
    set kb_ids = array_remove(b.kb_ids, k.id), updated_at = now()
    where b.tenant_id = k.tenant_id and k.id = any(b.kb_ids);
    return jsonb_build_object('kb_id', k.id, 'name', k.name, 'documents', n_docs, 'chunks', n_chunks);
end;
$$;

comment on function hipocampo.ingest_documents(uuid, jsonb, text) is
'The bulk path: write a batch of documents and their chunks in one transaction, set-based.';

comment on function hipocampo.defer_model_index(text) is
'Before a large first load: drop the model''s HNSW index on chunks (build_model_index builds it after).';

comment on function hipocampo.build_model_index(text) is
'Build the model''s missing HNSW indexes in one pass, with the maintenance config''s memory and workers.';

revoke execute on function hipocampo_private._ingest_item(jsonb, jsonb, text, integer) from public;
revoke execute on function hipocampo_private._write_documents(hipocampo_private.knowledge_bases, jsonb, text) from public;
revoke execute on function hipocampo.ingest_documents(uuid, jsonb, text) from public;
grant execute on function hipocampo.ingest_documents(kb_id uuid, documents jsonb, embedding_model text) to authenticated, service_role;
grant execute on function hipocampo_private._ingest_item(document jsonb, chunks jsonb, embedding_model text, dims integer) to authenticated, service_role;
grant execute on function hipocampo_private._write_documents(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text) to authenticated, service_role;
revoke execute on function hipocampo_private._drop_model_index(text) from public;
revoke execute on function hipocampo.defer_model_index(text) from public;
revoke execute on function hipocampo.build_model_index(text) from public;
grant execute on function hipocampo.build_model_index(embedding_model text) to service_role;
grant execute on function hipocampo.defer_model_index(embedding_model text) to service_role;
grant execute on function hipocampo_private._drop_model_index(model_name text) to service_role;
revoke execute on function hipocampo_private._model_index_name(text, text) from public;
