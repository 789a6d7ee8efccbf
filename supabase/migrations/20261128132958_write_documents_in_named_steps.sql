-- write documents in named steps.
-- Issue 47 §1: _write_documents in named steps (_document_states, _replace_documents, _insert_documents, _insert_chunks); the same writes, one statement per step for the batch as before.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._document_states(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text)
returns jsonb
language plpgsql
stable
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._insert_chunks(k hipocampo_private.knowledge_bases, items jsonb, state jsonb, embedding_model text)
returns jsonb
language plpgsql
set search_path to ''
as $function$
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
            c.value ->> 'content_hash', hipocampo_private.text_search_config(k.language),
            (c.value ->> 'embedding')::extensions.vector, _insert_chunks.embedding_model,
            (items -> s.i -> 'document' ->> 'expires_at')::timestamptz,
            case when jsonb_typeof(c.value -> 'sentence_embeddings') = 'array' then array(
                select (x.v #>> '{}')::extensions.vector
                from jsonb_array_elements(c.value -> 'sentence_embeddings') with ordinality as x (v, n)
                order by x.n
            ) end
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
end;
$function$;

create or replace function hipocampo_private._insert_documents(k hipocampo_private.knowledge_bases, items jsonb, state jsonb)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    trust jsonb := hipocampo.effective_config(k.tenant_id, k.id) -> 'retrieval' -> 'default_trust';
    written jsonb;
begin
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
    into written
    from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
    left join inserted as ins
        on s.status = 'inserted' and ins.source_uri = items -> s.i -> 'document' ->> 'source_uri';
    return written;
end;
$function$;

create or replace function hipocampo_private._replace_documents(items jsonb, state jsonb, embedding_model text)
returns void
language plpgsql
set search_path to ''
as $function$
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
        updated_at = now()
    from (
        select s.doc_id, items -> s.i -> 'document' as doc
        from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        where s.status in ('embedded', 'replaced')
    ) as u
    where d.id = u.doc_id;
end;
$function$;

create or replace function hipocampo_private._write_documents(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    state jsonb;  -- [{i, doc_id, old_hash, status}]: one element per item, in order
begin
    state := hipocampo_private._document_states(k, items, _write_documents.embedding_model);
    if not jsonb_path_exists(state, '$[*] ? (@.status != "unchanged")') then
        -- Nothing to write: every document is stored with this model's chunks.
        return (
            select jsonb_agg(jsonb_build_object(
                'document_id', s.doc_id, 'status', s.status, 'chunks', 0, 'skipped', 0) order by s.i)
            from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        );
    end if;
    if jsonb_path_exists(state, '$[*] ? (@.status == "embedded" || @.status == "replaced")') then
        perform hipocampo_private._replace_documents(items, state, _write_documents.embedding_model);
    end if;
    state := hipocampo_private._insert_documents(k, items, state);
    return hipocampo_private._insert_chunks(k, items, state, _write_documents.embedding_model);
exception
    when insufficient_privilege then
        raise exception 'only tenant admins can ingest documents' using errcode = '42501';
    when check_violation then
        raise exception 'invalid document: %', sqlerrm using errcode = '23514';
    when invalid_text_representation or invalid_datetime_format or datetime_field_overflow
        or numeric_value_out_of_range then
        raise exception 'invalid document field: %', sqlerrm using errcode = '22023';
end;
$function$;

revoke execute on function hipocampo_private._document_states(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text) from public;
revoke execute on function hipocampo_private._insert_chunks(k hipocampo_private.knowledge_bases, items jsonb, state jsonb, embedding_model text) from public;
revoke execute on function hipocampo_private._insert_documents(k hipocampo_private.knowledge_bases, items jsonb, state jsonb) from public;
revoke execute on function hipocampo_private._replace_documents(items jsonb, state jsonb, embedding_model text) from public;
grant execute on function hipocampo_private._document_states(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text) to authenticated;
grant execute on function hipocampo_private._document_states(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text) to service_role;
grant execute on function hipocampo_private._insert_chunks(k hipocampo_private.knowledge_bases, items jsonb, state jsonb, embedding_model text) to authenticated;
grant execute on function hipocampo_private._insert_chunks(k hipocampo_private.knowledge_bases, items jsonb, state jsonb, embedding_model text) to service_role;
grant execute on function hipocampo_private._insert_documents(k hipocampo_private.knowledge_bases, items jsonb, state jsonb) to authenticated;
grant execute on function hipocampo_private._insert_documents(k hipocampo_private.knowledge_bases, items jsonb, state jsonb) to service_role;
grant execute on function hipocampo_private._replace_documents(items jsonb, state jsonb, embedding_model text) to authenticated;
grant execute on function hipocampo_private._replace_documents(items jsonb, state jsonb, embedding_model text) to service_role;
