-- ingest chunk bounds.
-- Issue 44 §4 and §5: a document takes at most embedding.max_chunks_per_document chunks (5,000) and a chunk without chunk_index is 22023, not a raw 23502.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._check_chunk_count(n integer)
returns void
language plpgsql
stable
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._ingest_item(document jsonb, chunks jsonb, embedding_model text, dims integer)
returns jsonb
language plpgsql
stable
set search_path to ''
as $function$
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
       or coalesce(c.chunk ->> 'chunk_index', '') !~ '^\d{1,9}$'
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
$function$;

revoke execute on function hipocampo_private._check_chunk_count(n integer) from public;
grant execute on function hipocampo_private._check_chunk_count(n integer) to authenticated;
grant execute on function hipocampo_private._check_chunk_count(n integer) to service_role;
