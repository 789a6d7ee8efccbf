-- The ingestion write path: documents and their chunks written in one statement per step
-- (_write_documents, ingest_document(s)), and the ingestion jobs that record each run (leases,
-- the run's own session, recovery).

-- Function bodies may name objects of later schema files; they are checked when called.
set check_function_bodies = off;

/*
_check_chunk_count(n integer) -> void

Purpose: the chunks one document may have (issue 44 §4: 1,500 chunks in one ingest_document call
  were taken): at most embedding.max_chunks_per_document of the global row (the operator's limit,
  tenant_locked).
Parameters: n - the document's number of chunks.
Returns: nothing.
Errors: 22023 "a document takes at most n chunks (embedding.max_chunks_per_document; got m)".
Example: perform hipocampo_private._check_chunk_count(1500);
*/
create or replace function hipocampo_private._check_chunk_count(n integer)
returns void
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    most integer := (
        select (s.config #>> '{embedding,max_chunks_per_document}')::integer
        from hipocampo_private.settings as s where s.tenant_id is null
    );
begin
    if n > most then
        raise exception 'a document takes at most % chunks (embedding.max_chunks_per_document; got %)', most, n
            using errcode = '22023';
    end if;
end;
$$;

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
  is 2048"; 22023 "chunks must be a non-empty json array"; 22023 as _check_chunk_count; P0002 "unknown embedding model: …";
  22000 "embedding of chunk i has n dimensions; model … expects d"; 22023 "chunk i needs content,
  content_hash and chunk_index (an integer >= 0)"; 22023 "sentence_embeddings of chunk i must be a json array of 1 to 64
  embeddings"; 22000 "a sentence embedding of chunk i has n dimensions; model … expects d".
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
    perform hipocampo_private._check_chunk_count(jsonb_array_length(chunks));
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
       or char_length(coalesce(c.chunk ->> 'chunk_index', '')) not between 1 and 9
       or translate(c.chunk ->> 'chunk_index', '0123456789', '') <> ''
    limit 1;
    if found then
        if bad.n is distinct from dims then
            raise exception 'embedding of chunk % has % dimensions; model % expects %',
                bad.i, coalesce(bad.n, 0), embedding_model, dims
                using errcode = '22000';
        end if;
        raise exception 'chunk % needs content, content_hash and chunk_index (an integer >= 0)', bad.i
            using errcode = '22023';
    end if;
    -- Sentence embeddings (optional): 1..64 per chunk, each with the model's dimensions.
    select x.ordinality - 1 as i into bad
    from jsonb_array_elements(chunks) with ordinality as x
    where jsonb_typeof(x.value -> 'sentence_embeddings') <> 'null'
      and (jsonb_typeof(x.value -> 'sentence_embeddings') <> 'array'
          or jsonb_array_length(x.value -> 'sentence_embeddings') not between 1 and 64)
    limit 1;
    if found then
        raise exception 'sentence_embeddings of chunk % must be a json array of 1 to 64 embeddings', bad.i
            using errcode = '22023';
    end if;
    select x.ordinality - 1 as i, y.n into bad
    from jsonb_array_elements(chunks) with ordinality as x
    cross join lateral (
        select case jsonb_typeof(v.value)
                when 'array' then jsonb_array_length(v.value)
                when 'string' then
                    pg_catalog.length(v.value #>> '{}')
                    - pg_catalog.length(pg_catalog.replace(v.value #>> '{}', ',', '')) + 1
            end as n
        from jsonb_array_elements(
            case when jsonb_typeof(x.value -> 'sentence_embeddings') = 'array' then x.value -> 'sentence_embeddings' end
        ) as v
    ) as y
    where y.n is distinct from dims
    limit 1;
    if found then
        raise exception 'a sentence embedding of chunk % has % dimensions; model % expects %',
            bad.i, coalesce(bad.n, 0), embedding_model, dims
            using errcode = '22000';
    end if;
    return document;
end;
$$;

/*
_write_documents(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text) -> jsonb

Purpose: the writes of ingest_document and ingest_documents: first the forbidden-sources check
  (_forbidden_items, issue 57 §6: the database checks whoever writes), then the documents it
  passes are written set-based (_write_checked_documents) and the ones the config quarantines
  become quarantined documents without text (_quarantine; a quarantined document written again
  with its secret rewritten stays quarantined while the check still finds it). A document the
  config refuses refuses the whole call, and nothing is written.
Parameters: k - the knowledge base; items - [{document (checked and scrubbed by _ingest_item),
  chunks}] with distinct source_uris; embedding_model - a registered model.
Returns: [{"document_id", "status", "chunks", "skipped"}], in the order of items; a quarantined
  item's status is "quarantined", with "chunks" 0, "skipped" its chunks and "quarantine" {kind,
  reason}.
Errors: 22023 "document <source_uri> is of a forbidden kind (<kind>): <reason>; forbidden_sources
  refuses it"; 42501 "only tenant admins can ingest documents"; 55000 the forbidden_sources config
  is incomplete; as _write_checked_documents.
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
    held jsonb := hipocampo_private._forbidden_items(k, items);
    refused record;
    clean jsonb;
    written jsonb;
    quarantined jsonb := '{}';  -- position in items -> result
    h record;
    doc jsonb;
begin
    if held = '[]'::jsonb then
        return hipocampo_private._write_checked_documents(k, items, _write_documents.embedding_model);
    end if;
    select * into refused from jsonb_to_recordset(held) as x (i integer, kind text, reason text, action text)
    where x.action = 'refuse' order by x.i limit 1;
    if found then
        raise exception 'document % is of a forbidden kind (%): %; forbidden_sources refuses it',
            items -> refused.i -> 'document' ->> 'source_uri', refused.kind, refused.reason using errcode = '22023';
    end if;
    begin
        for h in select * from jsonb_to_recordset(held) as x (i integer, kind text, reason text) loop
            doc := items -> h.i -> 'document';
            quarantined := quarantined || jsonb_build_object(h.i::text, jsonb_build_object(
                'document_id', hipocampo_private._quarantine(k, doc ->> 'source_uri', doc ->> 'title',
                    coalesce(doc ->> 'source_type', 'other'), h.kind, h.reason, doc ->> 'content_hash'),
                'status', 'quarantined', 'chunks', 0, 'skipped', jsonb_array_length(items -> h.i -> 'chunks'),
                'quarantine', jsonb_build_object('kind', h.kind, 'reason', h.reason)));
        end loop;
    exception when insufficient_privilege then
        raise exception 'only tenant admins can ingest documents' using errcode = '42501';
    end;
    select jsonb_agg(e.value order by e.ordinality) into clean
    from jsonb_array_elements(items) with ordinality as e
    where not quarantined ? (e.ordinality - 1)::text;
    written := case when clean is null then '[]'::jsonb
        else hipocampo_private._write_checked_documents(k, clean, _write_documents.embedding_model) end;
    -- the results in the order of items: a quarantined item's, else the next written one's
    return (
        select jsonb_agg(coalesce(quarantined -> (e.i)::text,
            written -> (e.i - (select count(*) from jsonb_object_keys(quarantined) as q where q::integer < e.i))::integer)
            order by e.i)
        from generate_series(0, jsonb_array_length(items) - 1) as e (i)
    );
end;
$$;

/*
_write_checked_documents(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text) -> jsonb

Purpose: the writes of ingest_document and ingest_documents once _write_documents has held back
  the forbidden ones, set-based: one statement per step
  for the whole batch (look up, delete the replaced chunks, update, insert documents, insert
  chunks, count), so the chunks' statement triggers (PII scrub aside, which is per row) update
  the BM25 statistics and postings once per batch. Semantics per document as ingest_document
  gives them. In named steps: _document_states, _replace_documents, _insert_documents,
  _insert_chunks; their errors are turned into the SQLSTATEs below here.
Parameters: k - the knowledge base; items - [{document (checked and scrubbed by _ingest_item),
  chunks}] with distinct source_uris; embedding_model - a registered model.
Returns: [{"document_id", "status", "chunks", "skipped"}], in the order of items.
Errors: 42501 "only tenant admins can ingest documents" (the policies refused a write); 23514
  "invalid document: …" (a check constraint); 22023 "invalid document field: …" (an unparsable
  date, number or vector).
Example: select hipocampo_private._write_checked_documents(k, '[{"document": {…}, "chunks": […]}]', 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo_private._write_checked_documents(
    k hipocampo_private.knowledge_bases, items jsonb, embedding_model text
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    state jsonb;  -- [{i, doc_id, old_hash, status}]: one element per item, in order
begin
    state := hipocampo_private._document_states(k, items, _write_checked_documents.embedding_model);
    if not jsonb_path_exists(state, '$[*] ? (@.status != "unchanged")') then
        -- Nothing to write: every document is stored with this model's chunks.
        return (
            select jsonb_agg(jsonb_build_object(
                'document_id', s.doc_id, 'status', s.status, 'chunks', 0, 'skipped', 0) order by s.i)
            from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        );
    end if;
    if jsonb_path_exists(state, '$[*] ? (@.status == "embedded" || @.status == "replaced")') then
        perform hipocampo_private._replace_documents(items, state, _write_checked_documents.embedding_model);
    end if;
    state := hipocampo_private._insert_documents(k, items, state);
    perform hipocampo_private._note_document_languages(k, items);
    return hipocampo_private._insert_chunks(k, items, state, _write_checked_documents.embedding_model);
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
_document_states(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text) -> jsonb

Purpose: _write_documents' first step: each item's document looked up by source_uri in the
  knowledge base, and what the write will do with it: 'inserted' (new), 'replaced' (another
  content_hash: every model's chunks go), 'embedded' (the same text without chunks of this model:
  a model switch) or 'unchanged'.
Parameters: as _write_documents'.
Returns: [{"i" (0-based position in items), "doc_id" (null when new), "old_hash", "status"}], in
  the order of items.
Errors: none.
Example: select hipocampo_private._document_states(k, items, 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo_private._document_states(
    k hipocampo_private.knowledge_bases, items jsonb, embedding_model text
)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    state jsonb;
begin
    select jsonb_agg(jsonb_build_object(
        'i', x.i, 'doc_id', d.id, 'old_hash', d.content_hash,
        'status', case
            when d.id is null then 'inserted'
            when d.content_hash is distinct from x.doc ->> 'content_hash' then 'replaced'
            when exists (
                select 1 from hipocampo_private.chunks as c
                where c.document_id = d.id and c.embedding_model = _document_states.embedding_model
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
    return state;
end;
$$;

/*
_note_document_languages(k hipocampo_private.knowledge_bases, items jsonb) -> void

Purpose: add the languages of these documents (document.language, issue 59 §2) that the knowledge
  base does not list yet to its document_languages, which the lexical leg reads a question in
  besides the knowledge base's own language. Writes nothing when none is new.
Parameters: k - the knowledge base; items - _write_documents' items.
Returns: nothing.
Errors: none.
Example: select hipocampo_private._note_document_languages(k, items);
*/
create or replace function hipocampo_private._note_document_languages(k hipocampo_private.knowledge_bases, items jsonb)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
declare
    fresh text[];
begin
    select array_agg(distinct e.v -> 'document' ->> 'language') into fresh
    from jsonb_array_elements(items) as e (v)
    where e.v -> 'document' ->> 'language' is not null
      and e.v -> 'document' ->> 'language' <> k.language
      and not (e.v -> 'document' ->> 'language') = any(k.document_languages);
    if fresh is not null then
        update hipocampo_private.knowledge_bases as kb
        set document_languages = array(
            select distinct x.l from unnest(kb.document_languages || fresh) as x (l) order by x.l
        )
        where kb.id = k.id;
    end if;
end;
$$;

/*
_replace_documents(items jsonb, state jsonb, embedding_model text) -> void

Purpose: _write_documents' second step, for the documents _document_states marked 'replaced' or
  'embedded': a changed text replaces every model's chunks (no model keeps serving the old text);
  the same text for a model without chunks (a model switch) replaces only that model's. The
  document rows take the new fields (absent ones keep theirs; title and expiry are replaced).
Parameters: items as _write_documents'; state from _document_states.
Returns: nothing.
Errors: none of its own (a refused write, a check constraint or an unparsable field surfaces as
  _write_documents' errors).
Example: select hipocampo_private._replace_documents(items, state, 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo_private._replace_documents(items jsonb, state jsonb, embedding_model text)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    -- A changed text replaces every model's chunks (no model keeps serving the old text); the
    -- same text for a model without chunks (a model switch) replaces only that model's.
    delete from hipocampo_private.chunks as c
    using jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
    where s.status in ('embedded', 'replaced') and c.document_id = s.doc_id
      and (c.embedding_model = _replace_documents.embedding_model or s.status = 'replaced');

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
        -- a new text is in the language detected now (null: the knowledge base's); the same text
        -- keeps its language unless one is sent
        language = case when u.status = 'replaced' then u.doc ->> 'language'
            else coalesce(u.doc ->> 'language', d.language) end,
        updated_at = now()
    from (
        select s.doc_id, s.status, items -> s.i -> 'document' as doc
        from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        where s.status in ('embedded', 'replaced')
    ) as u
    where d.id = u.doc_id;
end;
$$;

/*
_insert_documents(k hipocampo_private.knowledge_bases, items jsonb, state jsonb) -> jsonb

Purpose: _write_documents' third step: the documents _document_states marked 'inserted' become
  rows of the knowledge base (trust_score: the item's, else the source type's
  retrieval.default_trust, else 0.5), in the order of items.
Parameters: k and items as _write_documents'; state from _document_states.
Returns: state with the new documents' ids in doc_id.
Errors: none of its own (as _replace_documents).
Example: select hipocampo_private._insert_documents(k, items, state);
*/
create or replace function hipocampo_private._insert_documents(
    k hipocampo_private.knowledge_bases, items jsonb, state jsonb
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    trust jsonb := hipocampo.effective_config(k.tenant_id, k.id) -> 'retrieval' -> 'default_trust';
    written jsonb;
begin
    with inserted as (
        insert into hipocampo_private.documents (
            tenant_id, kb_id, source_type, doc_type, title, source_uri, author, published_at,
            version, trust_score, data_classification, content_hash, status, expires_at, pii_replacements,
            language
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
            coalesce((n.doc ->> 'pii_replacements')::integer, 0), n.doc ->> 'language'
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
    into written
    from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
    left join inserted as ins
        on s.status = 'inserted' and ins.source_uri = items -> s.i -> 'document' ->> 'source_uri';
    return written;
end;
$$;

/*
_insert_chunks(k hipocampo_private.knowledge_bases, items jsonb, state jsonb, embedding_model text)
  -> jsonb

Purpose: _write_documents' last step: every chunk of the documents not 'unchanged', one
  statement for the batch (a chunk whose text the tenant already holds with this model is
  skipped: chunks_tenant_hash_model_key), then each written document's chunk_count.
Parameters: k, items and embedding_model as _write_documents'; state from _insert_documents.
Returns: _write_documents' result: [{"document_id", "status", "chunks", "skipped"}], in the
  order of items.
Errors: none of its own (as _replace_documents).
Example: select hipocampo_private._insert_chunks(k, items, state, 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo_private._insert_chunks(
    k hipocampo_private.knowledge_bases, items jsonb, state jsonb, embedding_model text
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    result jsonb;
begin
    with written as (
        insert into hipocampo_private.chunks (
            tenant_id, kb_id, document_id, chunk_index, content, token_count, metadata,
            content_hash, ts_config, embedding, embedding_model, expires_at, sentence_embeddings
        )
        select
            k.tenant_id, k.id, s.doc_id, (c.value ->> 'chunk_index')::integer, c.value ->> 'content',
            coalesce((c.value ->> 'token_count')::integer, 0), coalesce(c.value -> 'metadata', '{}'::jsonb),
            c.value ->> 'content_hash',
            hipocampo_private.text_search_config(coalesce(d.language, k.language)),
            (c.value ->> 'embedding')::extensions.vector, _insert_chunks.embedding_model,
            (items -> s.i -> 'document' ->> 'expires_at')::timestamptz,
            case when jsonb_typeof(c.value -> 'sentence_embeddings') = 'array' then array(
                select (x.v #>> '{}')::extensions.vector
                from jsonb_array_elements(c.value -> 'sentence_embeddings') with ordinality as x (v, n)
                order by x.n
            ) end
        from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        -- each document's detected language (documents.language) stems its chunks
        inner join hipocampo_private.documents as d on d.id = s.doc_id
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
  chunks - [{chunk_index, content, token_count, content_hash, metadata?, embedding,
    sentence_embeddings?}], embedding a json array of numbers or pgvector's text form
    "[0.1,0.2,…]" (cheaper to parse); sentence_embeddings - 1..64 of the same (the chunk's
    sentences by the same model, for answer_evidence's sentence similarity), or absent.
  embedding_model - a registered model; every embedding must have its dims.
Returns: {"document_id", "status": "inserted" | "replaced" | "embedded" (same text, this
  model's chunks added) | "unchanged", "chunks": n, "skipped": n}.
Errors: 42501 as _caller (before any other work); 42501 "only tenant admins can ingest
  documents"; P0002 unknown (or null) knowledge base / unknown embedding model; 22023
  "embedding_model must not be null"; 22023 bad document or chunks shape; 22001
  "document.title is n characters; the limit is 500", "document.source_uri is n bytes; the limit
  is 2048"; 22000 "embedding of chunk i has n dimensions; model … expects d" (and "a sentence
  embedding of chunk i …"); 22023 "sentence_embeddings of chunk i must be a json array of 1 to
  64 embeddings"; 22023 "invalid document field: …" (unparsable date, number or vector); 23514
  "invalid document: …".
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
set jit = off
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

comment on function hipocampo.ingest_document(uuid, jsonb, jsonb, text) is
'Write one document and its chunks atomically; unchanged documents are not rewritten.';

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
set jit = off
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

comment on function hipocampo.ingest_documents(uuid, jsonb, text) is
'The bulk path: write a batch of documents and their chunks in one transaction, set-based.';

/*
start_ingestion_job(kb_id uuid, documents_total integer, hold_session boolean default false) -> uuid

Purpose: open an ingestion run (status running, lease renewed by heartbeat_ingestion_job). It
  first recovers the knowledge base's interrupted jobs (recover_ingestion_jobs), so a run after a
  crash finds the earlier job failed (interrupted) instead of running forever.
Parameters: kb_id; documents_total >= 0; hold_session - true when the caller keeps this database
  session open for the whole run (a direct connection, as the Python client's; never through
  PostgREST, whose sessions are pooled): the session holds the job's advisory lock
  (_job_lock_key) until finish_ingestion_job or its end, and once the session has ended the job
  counts as interrupted without waiting for its lease (issue 44 §5).
Returns: the job's id.
Errors: 42501 as _caller (before any other work); P0002 unknown knowledge base; 22023
  "documents_total must be >= 0".
Example: select hipocampo.start_ingestion_job(kb, 12, hold_session => true);
*/
create or replace function hipocampo.start_ingestion_job(
    kb_id uuid, documents_total integer, hold_session boolean default false
)
returns uuid
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(start_ingestion_job.kb_id);
    job uuid;
begin
    if documents_total is null or documents_total < 0 then
        raise exception 'documents_total must be >= 0 (got %)', documents_total using errcode = '22023';
    end if;
    perform hipocampo.recover_ingestion_jobs(now(), k.id);
    insert into hipocampo_private.ingestion_jobs (tenant_id, kb_id, documents_total, created_by, session_bound)
    values (k.tenant_id, k.id, documents_total, (select auth.uid()), coalesce(hold_session, false))
    returning id into job;
    if hold_session then
        perform pg_catalog.pg_advisory_lock(k1, k2) from hipocampo_private._job_lock_key(job);
    end if;
    return job;
end;
$$;

comment on function hipocampo.start_ingestion_job(uuid, integer, boolean) is 'Open an ingestion-job record.';

/*
finish_ingestion_job(job_id uuid, status text, counts jsonb, errors jsonb) -> void

Purpose: close an ingestion run (start_ingestion_job): its final status and counts.
Parameters: job_id - the run; status - succeeded | partial | failed; counts - {"documents_ingested",
  "documents_unchanged", "documents_failed", "chunks_written"} (a missing count is 0); errors - a
  json array of {document, error} (null = []).
Returns: nothing.
Errors: 42501 as _caller (before any other work); P0002 "unknown ingestion job: …"; 23514 on an unknown status.
Example: select hipocampo.finish_ingestion_job(j, 'succeeded', '{"documents_ingested": 3}', '[]');
*/
create or replace function hipocampo.finish_ingestion_job(
    job_id uuid, status text, counts jsonb default '{}', errors jsonb default '[]'
)
returns void
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
begin
    perform hipocampo_private._caller();
    update hipocampo_private.ingestion_jobs as j set
        status = finish_ingestion_job.status,
        documents_ingested = coalesce((counts ->> 'documents_ingested')::integer, 0),
        documents_unchanged = coalesce((counts ->> 'documents_unchanged')::integer, 0),
        documents_failed = coalesce((counts ->> 'documents_failed')::integer, 0),
        chunks_written = coalesce((counts ->> 'chunks_written')::integer, 0),
        errors = coalesce(finish_ingestion_job.errors, '[]'::jsonb),
        finished_at = now()
    where j.id = finish_ingestion_job.job_id;
    if not found then
        raise exception 'unknown ingestion job: %', job_id using errcode = 'P0002';
    end if;
    -- The session that started the job with hold_session lets its lock go (no-op elsewhere).
    perform pg_catalog.pg_advisory_unlock(key.k1, key.k2)
    from hipocampo_private._job_lock_key(finish_ingestion_job.job_id) as key
    inner join pg_catalog.pg_locks as l
        on l.locktype = 'advisory' and l.pid = pg_catalog.pg_backend_pid() and l.classid = key.k1::oid
        and l.objid = key.k2::oid and l.objsubid = 2 and l.granted;
end;
$$;

comment on function hipocampo.finish_ingestion_job(uuid, text, jsonb, jsonb) is
'Close an ingestion-job record with its status, counts and errors.';

/*
heartbeat_ingestion_job(job_id uuid) -> void

Purpose: renew a running job's lease (heartbeat_at = now()). Clients call it at least every
  maintenance.ingestion_lease_seconds (300 s) while they work.
Returns: nothing.
Errors: 42501 as _caller; P0002 "ingestion job … is not running" (unknown, finished, or already
  marked interrupted: the client should stop and report it).
Example: select hipocampo.heartbeat_ingestion_job('…');
*/
create or replace function hipocampo.heartbeat_ingestion_job(job_id uuid)
returns void
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
begin
    perform hipocampo_private._caller();
    update hipocampo_private.ingestion_jobs as j set heartbeat_at = now()
    where j.id = heartbeat_ingestion_job.job_id and j.status = 'running';
    if not found then
        raise exception 'ingestion job % is not running', job_id using errcode = 'P0002';
    end if;
end;
$$;

comment on function hipocampo.heartbeat_ingestion_job(uuid) is 'Renew a running ingestion job''s lease.';

/*
_job_lock_key(job_id uuid) -> table (k1 integer, k2 integer)

Purpose: the advisory lock (two-key form) a session holds while it runs an ingestion job started
  with hold_session: k1 names hipocampo's ingestion jobs, k2 is the job id's hash. Two jobs whose
  hashes collide only make each other look alive; their leases still end them.
Parameters: job_id.
Returns: one row (k1, k2).
Errors: none.
Example: select pg_advisory_lock(k1, k2) from hipocampo_private._job_lock_key(j);
*/
create or replace function hipocampo_private._job_lock_key(job_id uuid)
returns table (k1 integer, k2 integer)
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    -- 1751740515 is 'hipc' in ASCII.
    select 1751740515, pg_catalog.hashtext(_job_lock_key.job_id::text)
$$;

/*
_job_session_alive(job_id uuid) -> boolean

Purpose: whether some session of this database holds the job's advisory lock (_job_lock_key):
  the session that started it with hold_session is still open. pg_locks shows every session's
  locks to every role.
Parameters: job_id.
Returns: true while the lock is held.
Errors: none.
Example: select hipocampo_private._job_session_alive(j);
*/
create or replace function hipocampo_private._job_session_alive(job_id uuid)
returns boolean
language sql
stable
security invoker
set search_path = ''
as $$
    select exists (
        select 1
        from hipocampo_private._job_lock_key(_job_session_alive.job_id) as key
        inner join pg_catalog.pg_locks as l
            on l.locktype = 'advisory' and l.classid = key.k1::oid and l.objid = key.k2::oid
            and l.objsubid = 2 and l.granted
        where l.database = (select d.oid from pg_catalog.pg_database as d where d.datname = pg_catalog.current_database())
    )
$$;

/*
recover_ingestion_jobs(now timestamptz default now(), kb_id uuid default null) -> jsonb

Purpose: mark running jobs whose lease expired (heartbeat_at older than
  maintenance.ingestion_lease_seconds) as failed, with the error {"error": "interrupted: no
  heartbeat since …"}, and so those started with hold_session whose session has ended (the
  client was killed: "interrupted: the session that ran it ended …"), and give each of their
  knowledge bases left 'indexing' with no running
  job its status back: ready when it holds documents, error otherwise. Optionally only one
  knowledge base.
Parameters: now - the time to judge leases by (service_role only; users always use now());
  kb_id - only this knowledge base (null: every one the caller sees: a tenant admin their
  tenant's, service_role all).
Returns: {"interrupted": n jobs, "knowledge_bases": n statuses recomputed}.
Errors: 42501 as _caller; 55000 "maintenance config is incomplete: ingestion_lease_seconds …".
Example: select hipocampo.recover_ingestion_jobs();
*/
create or replace function hipocampo.recover_ingestion_jobs(now timestamptz default now(), kb_id uuid default null)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    c record := hipocampo_private._caller();
    lease integer := (select (s.config -> 'maintenance' ->> 'ingestion_lease_seconds')::integer
                      from hipocampo_private.settings as s where s.tenant_id is null);
    at timestamptz := case when c.kind = 'service' then coalesce(recover_ingestion_jobs.now, now()) else now() end;
    kbs uuid [];
    n_jobs integer;
    n_kbs integer;
begin
    if lease is null then
        raise exception 'maintenance config is incomplete: ingestion_lease_seconds (seed it from config.toml: hipocampo db migrate)'
            using errcode = '55000';
    end if;
    -- RLS limits a tenant admin to their tenant's jobs and knowledge bases.
    with gone as (
        update hipocampo_private.ingestion_jobs as j set
            status = 'failed',
            finished_at = at,
            errors = j.errors || jsonb_build_array(jsonb_build_object(
                'error', case when j.heartbeat_at < at - make_interval(secs => lease)
                    then format('interrupted: no heartbeat since %s (lease %s s)', j.heartbeat_at, lease)
                    else format('interrupted: the session that ran it ended (last heartbeat %s)', j.heartbeat_at)
                end))
        where j.status = 'running'
          and (j.heartbeat_at < at - make_interval(secs => lease)
               or (j.session_bound and not hipocampo_private._job_session_alive(j.id)))
          and (recover_ingestion_jobs.kb_id is null or j.kb_id = recover_ingestion_jobs.kb_id)
        returning j.kb_id
    )
    select count(*), array_agg(distinct g.kb_id) into n_jobs, kbs from gone as g;
    update hipocampo_private.knowledge_bases as k set
        status = case when exists (select 1 from hipocampo_private.documents as d where d.kb_id = k.id)
            then 'ready' else 'error' end
    where k.status = 'indexing' and k.id = any(kbs)
      and not exists (select 1 from hipocampo_private.ingestion_jobs as j where j.kb_id = k.id and j.status = 'running');
    get diagnostics n_kbs = row_count;
    return jsonb_build_object('interrupted', n_jobs, 'knowledge_bases', n_kbs);
end;
$$;

comment on function hipocampo.recover_ingestion_jobs(timestamptz, uuid) is
'Mark running ingestion jobs whose lease expired as failed (interrupted) and recompute their knowledge bases'' status.';
