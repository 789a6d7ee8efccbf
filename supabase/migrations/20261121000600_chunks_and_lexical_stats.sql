-- Chunks (content + embedding) and the per-KB statistics the BM25 lexical leg needs.

/*
tsvector_token_count(v tsvector) -> integer

Purpose: number of token occurrences in a tsvector (sum of position counts): the BM25 document length.
Parameters: v - a tsvector with positions.
Returns: 0 for an empty vector.
Errors: none.
Example: select hipocampo_private.tsvector_token_count(to_tsvector('simple', 'a a b')); -- 3
*/
create function hipocampo_private.tsvector_token_count(v tsvector)
returns integer
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    select coalesce(sum(coalesce(pg_catalog.array_length(u.positions, 1), 1)), 0)::integer
    from pg_catalog.unnest(v) as u
$$;

/*
text_search_config(language text) -> regconfig

Purpose: the unaccented full-text configuration of a knowledge-base language.
Parameters: language - 'portuguese' | 'english' | 'simple'.
Returns: hipocampo_private.<language>_unaccent.
Errors: 22023 "unsupported text-search language" for any other value.
Example: select hipocampo_private.text_search_config('portuguese');
*/
create function hipocampo_private.text_search_config(language text)
returns regconfig
language plpgsql
immutable
security invoker
set search_path = ''
as $$
begin
    return case language
        when 'portuguese' then 'hipocampo_private.portuguese_unaccent'::regconfig
        when 'english' then 'hipocampo_private.english_unaccent'::regconfig
        when 'simple' then 'hipocampo_private.simple_unaccent'::regconfig
        else null
    end;
end;
$$;

grant execute on function hipocampo_private.tsvector_token_count(tsvector)
to authenticated, service_role;
grant execute on function hipocampo_private.text_search_config(text)
to authenticated, service_role;

create table hipocampo_private.chunks (
    id bigint generated always as identity primary key,
    tenant_id uuid not null,
    kb_id uuid not null,
    document_id uuid not null,
    chunk_index integer not null,
    content text not null,
    token_count integer not null,
    metadata jsonb not null default '{}'::jsonb,
    content_hash text not null,
    ts_config regconfig not null,
    -- Lexical leg: stemmed, unaccented terms of the document title (metadata.title, a
    -- contextual header) and the content, in the KB's language (GIN index below).
    fts tsvector generated always as (
        to_tsvector(ts_config, coalesce(metadata ->> 'title', '') || E'\n' || content)
    ) stored,
    fts_length integer generated always as (
        hipocampo_private.tsvector_token_count(
            to_tsvector(ts_config, coalesce(metadata ->> 'title', '') || E'\n' || content)
        )
    ) stored,
    -- Dimensions vary by model; each model has its own partial HNSW index on a typed cast.
    embedding extensions.vector not null,
    embedding_model text not null references hipocampo_private.embedding_models (name),
    created_at timestamptz not null default now(),
    last_accessed_at timestamptz,
    expires_at timestamptz,
    constraint chunks_content_length check (char_length(content) between 1 and 100000),
    constraint chunks_chunk_index_check check (chunk_index >= 0),
    constraint chunks_metadata_is_object check (jsonb_typeof(metadata) = 'object'),
    constraint chunks_tenant_hash_model_key unique (tenant_id, content_hash, embedding_model),
    constraint chunks_document_fkey foreign key (document_id, tenant_id)
    references hipocampo_private.documents (id, tenant_id) on delete cascade
);

-- Keep embeddings inline (uncompressed floats do not compress): a row over ~2 kB would
-- otherwise have its vector moved out of line, and every exact distance would read TOAST.
alter table hipocampo_private.chunks alter column embedding set storage main;

-- RLS filters on tenant_id; retrieval scopes on (tenant, kb, model).
create index chunks_scope_idx on hipocampo_private.chunks (tenant_id, kb_id, embedding_model);
create index chunks_document_id_idx on hipocampo_private.chunks (document_id);
-- No GIN index on fts: the lexical leg reads the inverted index kb_postings below.
create index chunks_metadata_idx on hipocampo_private.chunks using gin (metadata jsonb_path_ops);
create index chunks_expires_at_idx on hipocampo_private.chunks (expires_at)
where expires_at is not null;

-- BM25 statistics per (KB, embedding model): document frequency per lexeme, and chunk count
-- plus total length for the average document length. Maintained by statement triggers, with
-- the postings (kb_postings) below.
create table hipocampo_private.kb_term_stats (
    tenant_id uuid not null,
    kb_id uuid not null,
    embedding_model text not null,
    lexeme text not null,
    doc_freq integer not null,
    primary key (kb_id, embedding_model, lexeme)
);

create table hipocampo_private.kb_text_stats (
    tenant_id uuid not null,
    kb_id uuid not null,
    embedding_model text not null,
    chunk_count bigint not null,
    token_total bigint not null,
    primary key (kb_id, embedding_model)
);

-- The inverted index of the BM25 leg: one row per (chunk, lexeme) with the term frequency and
-- the chunk's length, so a query reads the postings of its few terms by primary key and scores
-- with arithmetic only (no tsvector work per candidate). tenant_id leads the key because RLS
-- filters on it.
create table hipocampo_private.kb_postings (
    tenant_id uuid not null,
    kb_id uuid not null,
    lexeme text not null,
    chunk_id bigint not null,
    tf integer not null,
    chunk_length integer not null,
    primary key (tenant_id, kb_id, lexeme, chunk_id)
);

create index kb_term_stats_tenant_id_idx on hipocampo_private.kb_term_stats (tenant_id);
create index kb_text_stats_tenant_id_idx on hipocampo_private.kb_text_stats (tenant_id);

alter table hipocampo_private.chunks enable row level security;
alter table hipocampo_private.kb_term_stats enable row level security;
alter table hipocampo_private.kb_text_stats enable row level security;
alter table hipocampo_private.kb_postings enable row level security;

grant select, insert, delete on hipocampo_private.chunks to authenticated;
grant select on hipocampo_private.kb_term_stats to authenticated;
grant select on hipocampo_private.kb_text_stats to authenticated;
grant select on hipocampo_private.kb_postings to authenticated;
grant all on hipocampo_private.kb_postings to service_role;
grant all on hipocampo_private.chunks to service_role;
grant all on hipocampo_private.kb_term_stats to service_role;
grant all on hipocampo_private.kb_text_stats to service_role;

create policy "members can read chunks of their tenant"
on hipocampo_private.chunks
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can add chunks to their tenant"
on hipocampo_private.chunks
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "admins can delete chunks of their tenant"
on hipocampo_private.chunks
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "members can read term statistics of their tenant"
on hipocampo_private.kb_term_stats
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "members can read text statistics of their tenant"
on hipocampo_private.kb_text_stats
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "members can read postings of their tenant"
on hipocampo_private.kb_postings
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

-- definer because every writer of chunks must keep the statistics right, and writers get no
-- direct write privilege on the statistics tables.
create function hipocampo_private._chunks_stats_after_insert()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
    insert into hipocampo_private.kb_text_stats as s
        (tenant_id, kb_id, embedding_model, chunk_count, token_total)
    select n.tenant_id, n.kb_id, n.embedding_model, count(*), sum(n.fts_length)
    from new_rows as n
    group by n.tenant_id, n.kb_id, n.embedding_model
    on conflict (kb_id, embedding_model) do update
    set chunk_count = s.chunk_count + excluded.chunk_count,
        token_total = s.token_total + excluded.token_total;

    insert into hipocampo_private.kb_term_stats as s
        (tenant_id, kb_id, embedding_model, lexeme, doc_freq)
    select n.tenant_id, n.kb_id, n.embedding_model, u.lexeme, count(*)
    from new_rows as n
    cross join lateral pg_catalog.unnest(n.fts) as u
    group by n.tenant_id, n.kb_id, n.embedding_model, u.lexeme
    order by n.kb_id, n.embedding_model, u.lexeme
    on conflict (kb_id, embedding_model, lexeme) do update
    set doc_freq = s.doc_freq + excluded.doc_freq;

    insert into hipocampo_private.kb_postings (tenant_id, kb_id, lexeme, chunk_id, tf, chunk_length)
    select n.tenant_id, n.kb_id, u.lexeme, n.id,
        coalesce(pg_catalog.array_length(u.positions, 1), 1), n.fts_length
    from new_rows as n
    cross join lateral pg_catalog.unnest(n.fts) as u;
    return null;
end;
$$;

-- definer because, as for inserts, every writer of chunks keeps the statistics right.
create function hipocampo_private._chunks_stats_after_delete()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
    update hipocampo_private.kb_text_stats as s
    set chunk_count = s.chunk_count - d.n,
        token_total = s.token_total - d.len
    from (
        select o.kb_id, o.embedding_model, count(*) as n, sum(o.fts_length) as len
        from old_rows as o
        group by o.kb_id, o.embedding_model
    ) as d
    where s.kb_id = d.kb_id and s.embedding_model = d.embedding_model;

    with removed as (
        select o.kb_id, o.embedding_model, u.lexeme, count(*) as n
        from old_rows as o
        cross join lateral pg_catalog.unnest(o.fts) as u
        group by o.kb_id, o.embedding_model, u.lexeme
    )
    update hipocampo_private.kb_term_stats as s
    set doc_freq = s.doc_freq - r.n
    from removed as r
    where s.kb_id = r.kb_id and s.embedding_model = r.embedding_model and s.lexeme = r.lexeme;

    delete from hipocampo_private.kb_term_stats as s
    where s.doc_freq <= 0
      and s.kb_id in (select o.kb_id from old_rows as o);

    delete from hipocampo_private.kb_postings as p
    using old_rows as o, pg_catalog.unnest(o.fts) as u
    where p.tenant_id = o.tenant_id and p.kb_id = o.kb_id and p.lexeme = u.lexeme and p.chunk_id = o.id;
    return null;
end;
$$;

create trigger chunks_stats_after_insert
after insert on hipocampo_private.chunks
referencing new table as new_rows
for each statement execute function hipocampo_private._chunks_stats_after_insert();

create trigger chunks_stats_after_delete
after delete on hipocampo_private.chunks
referencing old table as old_rows
for each statement execute function hipocampo_private._chunks_stats_after_delete();

/*
_ensure_model_index(model_name text) -> text

Purpose: create the partial HNSW index of one embedding model on chunks, if missing.
  HNSW m=16, ef_construction=64; opclass vector_cosine_ops because retrieval orders by the
  cosine-distance operator <=>.
Parameters: model_name - a registered model.
Returns: the index name.
Errors: P0002 "unknown embedding model" when it is not registered.
Example: select hipocampo_private._ensure_model_index('all-MiniLM-L6-v2');
*/
-- definer because creating an index needs ownership of the chunks table.
create function hipocampo_private._ensure_model_index(model_name text)
returns text
language plpgsql
security definer
set search_path = ''
as $$
declare
    m hipocampo_private.embedding_models;
    idx text;
begin
    select * into m from hipocampo_private.embedding_models as e where e.name = model_name;
    if not found then
        raise exception 'unknown embedding model: %', model_name using errcode = 'P0002';
    end if;
    idx := 'chunks_embedding_hnsw_' || substr(md5(m.name), 1, 12);
    execute format(
        'create index if not exists %I on hipocampo_private.chunks '
        'using hnsw ((embedding::extensions.vector(%s)) extensions.vector_cosine_ops) '
        'with (m = 16, ef_construction = 64) where embedding_model = %L',
        idx, m.dims, m.name
    );
    return idx;
end;
$$;

grant execute on function hipocampo_private._ensure_model_index(text) to service_role;

comment on table hipocampo_private.chunks is
'Chunks of documents with their embedding (one row per embedding model) and a generated tsvector.';
comment on table hipocampo_private.kb_term_stats is
'BM25 document frequency per lexeme, per knowledge base and embedding model (trigger-maintained).';
comment on table hipocampo_private.kb_postings is
'BM25 inverted index: term frequency of each lexeme in each chunk, with the chunk length (trigger-maintained).';
comment on table hipocampo_private.kb_text_stats is
'BM25 chunk count and total length per knowledge base and embedding model (trigger-maintained).';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
