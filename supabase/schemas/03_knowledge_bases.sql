-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- Embedding-model registry.
--
-- Seed rule: embeddings are never overwritten. A new model is registered beside the old one
-- (its own partial HNSW index), documents are re-embedded into new rows, the switch is made
-- with activate_embedding_model(), and only then are the old model's rows deleted with
-- drop_embedding_model().
create table hipocampo_private.embedding_models (
    name text primary key,
    provider text not null,
    dims integer not null,
    distance text not null default 'cosine',
    active boolean not null default false,
    created_at timestamptz not null default now(),
    -- When it was last made the active model (activate_embedding_model); null if never. During a
    -- switch, search reads the most recently active model that is complete for its scope
    -- (_search_model).
    activated_at timestamptz,
    constraint embedding_models_name_format check (name ~ '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$'),
    constraint embedding_models_provider_check check (provider in ('local', 'openai', 'azure')),
    -- pgvector's HNSW indexes vectors of up to 2,000 dimensions.
    constraint embedding_models_dims_check check (dims between 1 and 2000),
    constraint embedding_models_distance_check check (distance = 'cosine')
);

alter table hipocampo_private.embedding_models enable row level security;

-- At most one active model: queries without an explicit model use it.
create unique index embedding_models_one_active on hipocampo_private.embedding_models (active)
where active;

create policy "authenticated users can read the embedding-model registry"
on hipocampo_private.embedding_models
for select
to authenticated
using (true);

comment on table hipocampo_private.embedding_models is
'Embedding models (name, provider, dims, distance); one active. Each has a partial HNSW index on chunks.';

-- Knowledge bases and documents.
create table hipocampo_private.knowledge_bases (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    name text not null,
    description text,
    tags text[] not null default '{}',
    status text not null default 'draft',
    -- Text-search language of the lexical leg; maps to hipocampo_private.<language>_unaccent.
    language text not null default 'portuguese',
    -- Per-KB overrides of the config rows, e.g. {"retrieval": {"match_count": 8}}.
    overrides jsonb not null default '{}'::jsonb,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    -- Values chosen for one embedding model (issue 22 §2), e.g. by `hipocampo kb eval --tune
    -- --write`: {"<model>": {"retrieval": {"dense_weight": 1.0}, "rag": {"min_confidence": 0.55}}}.
    -- In force only while that model is the one searched; see set_knowledge_base_tuning.
    tuning jsonb not null default '{}'::jsonb,
    -- The other languages its documents were written in (documents.language, detected at
    -- ingestion): the lexical leg reads a question's words in each of them too. Grows as documents
    -- of a new language arrive; never shrinks (a language no document has any more costs a
    -- tokenisation of the question, not a wrong result).
    document_languages text[] not null default '{}',
    constraint knowledge_bases_name_length check (char_length(name) between 1 and 200),
    constraint knowledge_bases_status_check check (
        status in ('draft', 'indexing', 'ready', 'error')
    ),
    constraint knowledge_bases_language_check check (
        language in (
            'portuguese', 'english', 'spanish', 'french', 'german', 'italian', 'dutch', 'danish', 'finnish',
            'hungarian', 'norwegian', 'russian', 'swedish', 'turkish', 'simple'
        )
    ),
    constraint knowledge_bases_overrides_is_object check (jsonb_typeof(overrides) = 'object'),
    constraint knowledge_bases_tuning_is_object check (jsonb_typeof(tuning) = 'object'),
    constraint knowledge_bases_tenant_name_key unique (tenant_id, name),
    -- Target of the (kb_id, tenant_id) foreign keys: a row never points into another tenant.
    constraint knowledge_bases_id_tenant_key unique (id, tenant_id)
);

alter table hipocampo_private.knowledge_bases enable row level security;

create table hipocampo_private.documents (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    kb_id uuid not null,
    source_type text not null default 'other',
    doc_type text,
    title text not null,
    source_uri text not null,
    author text,
    published_at timestamptz,
    version text,
    trust_score real not null default 0.5,
    data_classification text not null default 'internal',
    content_hash text not null,
    status text not null default 'active',
    chunk_count integer not null default 0,
    expires_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    -- Personal data the client's scrub replaced in the text (scrub_pii counts), as it reported
    -- them; what the documents and chunks triggers replace afterwards is not counted here.
    pii_replacements integer not null default 0,
    -- How much the document's text reads as language (_text_measures: words, word_order and its parts),
    -- written when its chunks are (_measure_documents_text); the answer gate and search read it
    -- (_reads_as_language). Null: never measured.
    text_measures jsonb,
    -- Why ingestion kept the file out (issue 45 §4, status 'quarantined'): {kind, reason, at},
    -- kind credentials | transcript | financial_statement | biometric; no text and no chunk is
    -- stored for it. Cleared when the file is written again (_clear_quarantine).
    quarantine jsonb,
    -- The language its text was detected in at ingestion (one of the knowledge bases' languages),
    -- whose text-search configuration its chunks use; null: the knowledge base's language.
    language text,
    constraint documents_source_type_check check (source_type in (
        'regulation', 'policy', 'assembly_minutes', 'reservation', 'decision',
        'penalty', 'metric', 'faq', 'manual', 'other'
    )),
    constraint documents_trust_score_range check (trust_score between 0 and 1),
    constraint documents_language_check check (
        language in (
            'portuguese', 'english', 'spanish', 'french', 'german', 'italian', 'dutch', 'danish', 'finnish',
            'hungarian', 'norwegian', 'russian', 'swedish', 'turkish', 'simple'
        )
    ),
    constraint documents_pii_replacements_nonnegative check (pii_replacements >= 0),
    constraint documents_data_classification_check check (
        data_classification in ('public', 'internal', 'confidential', 'restricted')
    ),
    constraint documents_status_check check (status in ('active', 'superseded', 'archived', 'quarantined')),
    constraint documents_quarantine_reason check ((status = 'quarantined') = (quarantine is not null)),
    constraint documents_title_length check (char_length(title) between 1 and 500),
    constraint documents_kb_source_uri_key unique (kb_id, source_uri),
    constraint documents_id_tenant_key unique (id, tenant_id),
    constraint documents_kb_fkey foreign key (kb_id, tenant_id)
    references hipocampo_private.knowledge_bases (id, tenant_id) on delete cascade
);

alter table hipocampo_private.documents enable row level security;

create index knowledge_bases_tenant_id_idx on hipocampo_private.knowledge_bases (tenant_id);

create index documents_tenant_kb_idx on hipocampo_private.documents (tenant_id, kb_id);

create index documents_expires_at_idx on hipocampo_private.documents (expires_at)
where expires_at is not null;

create policy "members can read knowledge bases of their tenant"
on hipocampo_private.knowledge_bases
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can create knowledge bases in their tenant"
on hipocampo_private.knowledge_bases
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "admins can update knowledge bases of their tenant"
on hipocampo_private.knowledge_bases
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
)
with check (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can delete knowledge bases of their tenant"
on hipocampo_private.knowledge_bases
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "members can read documents of their tenant"
on hipocampo_private.documents
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can add documents to their tenant"
on hipocampo_private.documents
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "admins can update documents of their tenant"
on hipocampo_private.documents
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
)
with check (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can delete documents of their tenant"
on hipocampo_private.documents
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

comment on table hipocampo_private.knowledge_bases is
'Knowledge bases of a tenant: status draft|indexing|ready|error, language, per-KB overrides.';

comment on column hipocampo_private.knowledge_bases.tuning is
'Per embedding model: values chosen for this knowledge base (set_knowledge_base_tuning), in force while that model is searched.';

comment on table hipocampo_private.documents is
'Source documents; deleting one deletes its chunks and their embeddings (on delete cascade).';

-- Chunks (content + embedding) and the per-KB statistics the BM25 lexical leg needs.
/*
tsvector_token_count(v tsvector) -> integer

Purpose: number of token occurrences in a tsvector (sum of position counts): the BM25 document length.
Parameters: v - a tsvector with positions.
Returns: 0 for an empty vector.
Errors: none.
Example: select hipocampo_private.tsvector_token_count(to_tsvector('simple', 'a a b')); -- 3
*/
create or replace function hipocampo_private.tsvector_token_count(v tsvector)
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

Purpose: the unaccented full-text configuration of a knowledge-base or document language.
Parameters: language - portuguese | english | spanish | french | german | italian | dutch |
  danish | finnish | hungarian | norwegian | russian | swedish | turkish | simple (PostgreSQL's
  Snowball stemmers with stop words, 15 and later).
Returns: hipocampo_private.<language>_unaccent; null for any other value.
Errors: none (its callers raise 22023 "unsupported text-search language" on null).
Example: select hipocampo_private.text_search_config('portuguese');
*/
create or replace function hipocampo_private.text_search_config(language text)
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
        when 'spanish' then 'hipocampo_private.spanish_unaccent'::regconfig
        when 'french' then 'hipocampo_private.french_unaccent'::regconfig
        when 'german' then 'hipocampo_private.german_unaccent'::regconfig
        when 'italian' then 'hipocampo_private.italian_unaccent'::regconfig
        when 'dutch' then 'hipocampo_private.dutch_unaccent'::regconfig
        when 'danish' then 'hipocampo_private.danish_unaccent'::regconfig
        when 'finnish' then 'hipocampo_private.finnish_unaccent'::regconfig
        when 'hungarian' then 'hipocampo_private.hungarian_unaccent'::regconfig
        when 'norwegian' then 'hipocampo_private.norwegian_unaccent'::regconfig
        when 'russian' then 'hipocampo_private.russian_unaccent'::regconfig
        when 'swedish' then 'hipocampo_private.swedish_unaccent'::regconfig
        when 'turkish' then 'hipocampo_private.turkish_unaccent'::regconfig
        when 'simple' then 'hipocampo_private.simple_unaccent'::regconfig
        else null
    end;
end;
$$;

create table hipocampo_private.chunks (
    id bigint primary key default hipocampo_private._opaque_id(),
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
    -- contextual header) and the content, in the KB's language, read by the statistics triggers
    -- into the postings (kb_postings below). Computed once per row: the BM25 length is summed
    -- from it by the triggers (a second generated column repeating to_tsvector cost ~0.1 ms
    -- per chunk).
    fts tsvector generated always as (
        to_tsvector(ts_config, coalesce(metadata ->> 'title', '') || E'\n' || content)
    ) stored,
    -- Dimensions vary by model; each model has its own partial HNSW index on a typed cast.
    embedding extensions.vector not null,
    embedding_model text not null references hipocampo_private.embedding_models (name),
    created_at timestamptz not null default now(),
    expires_at timestamptz,
    -- The chunk's sentences embedded by the same model (as passages), for the answer gate's
    -- sentence similarity (rag.sentence_weight, a calibrated key); null when the model's weight
    -- was 0 at ingestion. Read only by answer_evidence, a few chunks per call.
    sentence_embeddings extensions.vector[],
    constraint chunks_content_length check (char_length(content) between 1 and 100000),
    constraint chunks_chunk_index_check check (chunk_index >= 0),
    constraint chunks_metadata_is_object check (jsonb_typeof(metadata) = 'object'),
    constraint chunks_tenant_hash_model_key unique (tenant_id, content_hash, embedding_model),
    constraint chunks_document_fkey foreign key (document_id, tenant_id)
    references hipocampo_private.documents (id, tenant_id) on delete cascade,
    constraint chunks_sentence_embeddings_count check (cardinality(sentence_embeddings) between 1 and 64)
);

-- Keep embeddings inline (uncompressed floats do not compress): a row over ~2 kB would
-- otherwise have its vector moved out of line, and every exact distance would read TOAST.
-- (PostgreSQL 15 has no STORAGE clause in CREATE TABLE; 16 added it.)
alter table hipocampo_private.chunks alter column embedding set storage main;

alter table hipocampo_private.chunks enable row level security;

-- A zero embedding's cosine is NaN, which PostgreSQL orders above every number: the row would pass
-- every similarity floor of every search. Checked on new rows (not valid: rows stored before the
-- check are kept as they are).
alter table hipocampo_private.chunks add constraint chunks_embedding_not_zero
check (extensions.vector_norm(embedding) <> 0) not valid;

-- RLS filters on tenant_id; retrieval scopes on (tenant, kb, model).
create index chunks_scope_idx on hipocampo_private.chunks (tenant_id, kb_id, embedding_model);
-- A knowledge base belongs to one tenant: without this the planner multiplied the two columns'
-- selectivities (2,718 rows estimated for a tenant of 50,000 in a million chunks) and sorted the
-- scope exactly instead of walking the HNSW graph (benchmarks/tenants.py).
create statistics hipocampo_private.chunks_scope_stats (dependencies) on tenant_id, kb_id
from hipocampo_private.chunks;

-- The exact scan of a small scope (hybrid_search's dense leg at or under
-- retrieval.exact_scan_max_rows chunks) reads the vectors from this index alone (an index-only
-- scan): a knowledge base's entries are contiguous here wherever its rows lie in the heap of a
-- multi-tenant table, and an entry is ~1.6 kB against a ~2 kB row plus its neighbours' (SciFact,
-- 5,183 chunks: the dense leg 2.4 ms against 5-9 ms through the heap; docs/BENCHMARKS.md
-- §Exact scans from a covering index). A btree entry holds at most ~2.7 kB, so only vectors of
-- up to 640 dimensions are covered (both offline models: 384); a larger model's exact scan reads
-- the heap.
create index chunks_scope_vectors_idx on hipocampo_private.chunks (tenant_id, kb_id, embedding_model)
include (id, document_id, expires_at, embedding)
where extensions.vector_dims(embedding) <= 640;

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

alter table hipocampo_private.kb_term_stats enable row level security;

create table hipocampo_private.kb_text_stats (
    tenant_id uuid not null,
    kb_id uuid not null,
    embedding_model text not null,
    chunk_count bigint not null,
    token_total bigint not null,
    primary key (kb_id, embedding_model)
);

alter table hipocampo_private.kb_text_stats enable row level security;

-- The inverted index of the BM25 leg: one row per (chunk, lexeme) with the term frequency and
-- the chunk's length, so a query reads the postings of its few terms by primary key and scores
-- with arithmetic only (no tsvector work per candidate). tenant_id leads the key because RLS
-- filters on it. The key includes tf and chunk_length, so a term's postings are read by an
-- index-only scan, without the heap (SciFact, 5,183 chunks: hybrid_search p50 13.4 -> 9.4 ms,
-- docs/BENCHMARKS.md §Covering postings).
create table hipocampo_private.kb_postings (
    tenant_id uuid not null,
    kb_id uuid not null,
    lexeme text not null,
    chunk_id bigint not null,
    tf integer not null,
    chunk_length integer not null,
    primary key (tenant_id, kb_id, lexeme, chunk_id) include (tf, chunk_length)
);

alter table hipocampo_private.kb_postings enable row level security;

-- When a search last returned a chunk (hipocampo.embedding_stats counts chunks not retrieved for
-- 90 days). A narrow table of its own: as a column of chunks, each touch rewrote the whole row
-- (vector, content) and, the page being full, inserted it again into every index of chunks,
-- the HNSW graph too: ~3 ms a search (docs/BENCHMARKS.md §The access-time touch of a search).
-- No foreign key (a key-share lock per touch on the chunk's row): the chunks' delete trigger
-- removes the rows of deleted chunks.
create table hipocampo_private.chunk_access (
    chunk_id bigint primary key,
    tenant_id uuid not null,
    last_accessed_at timestamptz not null
);

alter table hipocampo_private.chunk_access enable row level security;

create index chunk_access_tenant_id_idx on hipocampo_private.chunk_access (tenant_id);

create index kb_term_stats_tenant_id_idx on hipocampo_private.kb_term_stats (tenant_id);

create index kb_text_stats_tenant_id_idx on hipocampo_private.kb_text_stats (tenant_id);

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

-- set_document_metadata copies a document's expires_at to its chunks (retention); the column
-- grant (13_grants.sql) lets authenticated change that column only.
create policy "admins can update chunks of their tenant"
on hipocampo_private.chunks
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
)
with check (tenant_id = (select hipocampo_private.current_tenant_id()));

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

create policy "members can read chunk access times of their tenant"
on hipocampo_private.chunk_access
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

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
    -- Knowledge bases without chunks of any model now, with their tenants (the postings key).
    emptied uuid[];
    emptied_tenants uuid[];
begin
    select coalesce(array_agg(k.kb_id), '{}'), coalesce(array_agg(k.tenant_id), '{}')
    into emptied, emptied_tenants
    from (select distinct o.tenant_id, o.kb_id from old_rows as o) as k
    where not exists (
        select 1 from hipocampo_private.chunks as c
        where c.tenant_id = k.tenant_id and c.kb_id = k.kb_id
    );
    if cardinality(emptied) > 0 then
        delete from hipocampo_private.kb_postings as p
        using unnest(emptied_tenants, emptied) as k (tenant_id, kb_id)
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

/*
_chunks_access_after_delete() -> trigger

Purpose: AFTER DELETE (statement, transition table) trigger of chunks: removes the access times
  (chunk_access) of the deleted chunks, which have no foreign key to them.
Returns: null (a statement trigger).
Errors: none of its own.
*/
-- definer because every deleter of chunks must leave no access time behind, and writers get no
-- direct write privilege on chunk_access.
create or replace function hipocampo_private._chunks_access_after_delete()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
    delete from hipocampo_private.chunk_access as a
    using old_rows as o
    where a.chunk_id = o.id;
    return null;
end;
$$;

/*
_check_knowledge_base_write() -> trigger

Purpose: the rules of set_knowledge_base_config and set_knowledge_base_tuning wherever a row of
  knowledge_bases is written (issue 44 §5: a tenant admin's direct update stored an operator-only
  provider with the service key's secret name, and a tuning of min_confidence -5 or min_score
  "abc"): for a caller other than the operator writing a row of their own tenant (another
  tenant's row is refused by RLS, 42501), each section of overrides the write changes passes
  _check_config_patch with the changed keys (operator-only keys, secret names, known keys, types,
  ranges), and each (model, section) of tuning it changes passes _tuning_after (a registered
  model, keys tuned per model, the same checks).
Returns: the new row.
Errors: 22023 / 22003 / 42501 as _check_config_patch and _changed_keys; P0002 / 22023 as
  _tuning_after.
*/
create or replace function hipocampo_private._check_knowledge_base_write()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
declare
    before_overrides jsonb := case when tg_op = 'UPDATE' then old.overrides else '{}'::jsonb end;
    before_tuning jsonb := case when tg_op = 'UPDATE' then old.tuning else '{}'::jsonb end;
    c record := hipocampo_private._caller();
    item record;
begin
    -- (a row of another tenant is RLS's to refuse, 42501, which runs after this trigger)
    if c.kind = 'service' or new.tenant_id is distinct from c.tenant_id then
        return new;
    end if;
    for item in
        select s.key from (
            select jsonb_object_keys(new.overrides) as key union select jsonb_object_keys(before_overrides)
        ) as s
        where new.overrides -> s.key is distinct from before_overrides -> s.key
    loop
        perform hipocampo_private._check_config_patch(
            item.key, hipocampo_private._changed_keys(before_overrides -> item.key, new.overrides -> item.key)
        );
    end loop;
    for item in
        select m.key as model, s.key as section
        from (select jsonb_object_keys(new.tuning) as key union select jsonb_object_keys(before_tuning)) as m
        cross join lateral (
            select jsonb_object_keys(hipocampo_private._changed_keys(before_tuning -> m.key, new.tuning -> m.key)) as key
        ) as s
    loop
        perform hipocampo_private._tuning_after('{}'::jsonb, item.model, item.section, hipocampo_private._changed_keys(
            before_tuning #> array[item.model, item.section], new.tuning #> array[item.model, item.section]
        ), hipocampo_private._tuned_keys() - 'memory' - 'conversations');
    end loop;
    return new;
end;
$$;

create trigger knowledge_bases_check_write
before insert or update of overrides, tuning on hipocampo_private.knowledge_bases
for each row execute function hipocampo_private._check_knowledge_base_write();

-- Only the columns effective_config reads: ingestion's status and counters leave the cache.
create trigger knowledge_bases_forget_config_cache
after insert or update of overrides, tuning, tenant_id or delete or truncate on hipocampo_private.knowledge_bases
for each statement execute function hipocampo_private._forget_config_cache();

create trigger embedding_models_forget_config_cache
after insert or update or delete or truncate on hipocampo_private.embedding_models
for each statement execute function hipocampo_private._forget_config_cache();

create trigger chunks_stats_after_insert
after insert on hipocampo_private.chunks
referencing new table as new_rows
for each statement execute function hipocampo_private._chunks_stats_after_insert();

create trigger chunks_stats_after_delete
after delete on hipocampo_private.chunks
referencing old table as old_rows
for each statement execute function hipocampo_private._chunks_stats_after_delete();

create trigger chunks_access_after_delete
after delete on hipocampo_private.chunks
referencing old table as old_rows
for each statement execute function hipocampo_private._chunks_access_after_delete();

-- Text that is not language (issues 48 §3, 61 §5): a document's words are measured when its
-- chunks are written, and the answer gate and search read the measures (rag.language_*): word
-- salad made of a knowledge base's own vocabulary, OCR garbage or a scrambled export is found by
-- search below every chunk that reads as language, and never answers. The measure is the words'
-- order, so it judges every language alike.
/*
_text_measures(content text) -> jsonb

Purpose: how much a text reads as language, from the order of its words (_plain_words: lower
  case, unaccented, any script; numbers left out), two signals every language gives and words in
  a random order do not, each in standard deviations from what the same words in a random order
  would give:
  "repeated_pairs": o = sum over the distinct adjacent word pairs of k * (k - 1) (k: the pair's
  count) against a random order's e = (S2 / n)^2 * r^2, variance 4 * S3^2 / n^3 * r^3 + 2 * e
  (S2, S3: sums of each word's count squared, cubed; n words; r = (n - 1) / n): languages repeat
  their pairs ("de la", "of the", "in der");
  "length_alternation": minus the correlation of adjacent words' lengths, times sqrt(n): short
  words (articles, prepositions) alternate with long ones;
  "word_order": their sum. Over real text in nine languages (benchmarks/language_check.py,
  docs/BENCHMARKS.md §Text that reads as language) every piece of 500 words measured 2.5 or more,
  and the measure grows with the length; the same words shuffled, words drawn from a knowledge
  base's vocabulary (at its frequencies or uniformly) and OCR garbage stay near 0 whatever the
  length (0.997 of those of 500 words under 2.5). Null under 3 words.
Returns: {"words", "word_order", "repeated_pairs", "length_alternation"}.
Errors: none (a pure function).
Example: select hipocampo_private._text_measures('O prazo de recurso é de 15 dias.');
*/
create or replace function hipocampo_private._text_measures(content text)
returns jsonb
language sql
stable
parallel safe
security invoker
set search_path = ''
as $$
    with w as (
        -- Words as _plain_words reads them (lower case, unaccented, any script), numbers left out;
        -- rows, not an array: subscripting a long text array walks it (quadratic in the words).
        -- (string functions, not regular expressions: a backend caches 32 compiled expressions and
        -- ingestion's checks use more, so each one here would be compiled again per document)
        select x.word, x.n
        from string_to_table(hipocampo_private._plain_words(content), ' ') with ordinality as x (word, n)
        where translate(x.word, '0123456789', '') <> ''
    ),
    counts as (
        -- n words; S2 and S3, the sums of each distinct word's count squared and cubed.
        select coalesce(sum(k.n), 0)::double precision as n, coalesce(sum(k.n ^ 2), 0)::double precision as s2,
            coalesce(sum(k.n ^ 3), 0)::double precision as s3
        from (select count(*)::double precision as n from w group by w.word) as k
    ),
    adjacent as (
        select a.word, a.next
        from (select w.word, lead(w.word) over (order by w.n) as next from w) as a
        where a.next is not null
    ),
    pairs as (
        -- o: the sum over the distinct adjacent pairs of k * (k - 1).
        select coalesce(sum(p.k * (p.k - 1)), 0)::double precision as o
        from (select count(*)::double precision as k from adjacent as j group by j.word, j.next) as p
    ),
    lengths as (
        select coalesce(corr(char_length(j.word), char_length(j.next)), 0) as rho from adjacent as j
    ),
    z as (
        select c.n,
            (p.o - (c.s2 / c.n) ^ 2 * ((c.n - 1) / c.n) ^ 2) / sqrt(
                4 * c.s3 ^ 2 / c.n ^ 3 * ((c.n - 1) / c.n) ^ 3 + 2 * (c.s2 / c.n) ^ 2 * ((c.n - 1) / c.n) ^ 2
            ) as pairs,
            -l.rho * sqrt(c.n) as alternation
        from counts as c cross join pairs as p cross join lengths as l
        where c.n >= 3
    )
    select jsonb_build_object(
        'words', c.n::bigint,
        'word_order', round((z.pairs + z.alternation)::numeric, 3),
        'repeated_pairs', round(z.pairs::numeric, 3),
        'length_alternation', round(z.alternation::numeric, 3)
    )
    from counts as c left join z on true
$$;

/*
_language_verdicts(measures jsonb[], rag jsonb) -> boolean[]

Purpose: whether each document's text reads as language by the rag config's rules, for many
  documents in one call (a search judges its ~50 candidates at once: a call of a function that
  sets search_path costs a few microseconds): true for a text of fewer than rag.language_min_words
  words (too short to judge) or never measured; else its word order (_text_measures, in standard
  deviations) reaches rag.language_min_word_order. The one place of the rule (_reads_as_language
  is this for one document).
Parameters: measures - documents.text_measures, in any order; rag - a rag config (rag_config),
  or any object holding language_min_words and language_min_word_order.
Returns: the verdicts, in the order of measures (null for a null array).
Errors: none.
Example: select hipocampo_private._language_verdicts(array_agg(d.text_measures), hipocampo.rag_config()) from …;
*/
create or replace function hipocampo_private._language_verdicts(measures jsonb[], rag jsonb)
returns boolean[]
language sql
immutable
security invoker
set search_path = ''
as $$
    select case when measures is not null then array(
        select m.v is null
            or coalesce((m.v ->> 'words')::integer, 0) < (rag ->> 'language_min_words')::integer
            or coalesce((m.v ->> 'word_order')::double precision, 0)
            >= (rag ->> 'language_min_word_order')::double precision
        from unnest(measures) with ordinality as m (v, n)
        order by m.n
    ) end
$$;

/*
_reads_as_language(measures jsonb, rag jsonb) -> boolean

Purpose: whether a document's text reads as language by the rag config's rules
  (_language_verdicts, for one document).
Parameters: measures - documents.text_measures; rag - a rag config (rag_config), or any object
  holding language_min_words and language_min_word_order.
Returns: the verdict.
Errors: none.
Example: select hipocampo_private._reads_as_language(d.text_measures, hipocampo.rag_config()) from …;
*/
create or replace function hipocampo_private._reads_as_language(measures jsonb, rag jsonb)
returns boolean
language sql
immutable
security invoker
set search_path = ''
as $$
    select (hipocampo_private._language_verdicts(array[measures], rag))[1]
$$;

/*
_chunk_own_text(content text, metadata jsonb) -> text

Purpose: a chunk's text without the characters that repeat the previous chunk's end
  (metadata.overlap_chars, written by the chunker; a value that is not a number, or none, leaves
  the text whole).
Returns: the text from character overlap_chars + 1 on.
Errors: none.
Example: select hipocampo_private._chunk_own_text('B. C.', '{"overlap_chars": 3}'); -- 'C.'
*/
create or replace function hipocampo_private._chunk_own_text(content text, metadata jsonb)
returns text
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    select case when jsonb_typeof(metadata -> 'overlap_chars') = 'number'
        then substr(content, least(greatest((metadata ->> 'overlap_chars')::numeric, 0), 1e9)::integer + 1)
        else content
    end
$$;

/*
_measure_documents_text() -> trigger

Purpose: after chunks are written, the measures of their documents' whole text (_text_measures
  over each document's chunks in order, one row per position whatever the model, each without
  the first metadata.overlap_chars characters that repeat the previous chunk: a repeat would read
  as repeated word pairs), stored in documents.text_measures when they changed. Statement-level,
  over the transition table.
Returns: null (a statement trigger).
Errors: none of its own.
*/
-- definer because an ingestion's writer may not update every column of documents, and the
-- measures are the database's, not the writer's.
create or replace function hipocampo_private._measure_documents_text()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
    update hipocampo_private.documents as d
    set text_measures = m.measures
    from (
        select x.document_id, hipocampo_private._text_measures(string_agg(x.content, E'\n' order by x.chunk_index)) as measures
        from (
            select distinct on (c.document_id, c.chunk_index) c.document_id, c.chunk_index,
                hipocampo_private._chunk_own_text(c.content, c.metadata) as content
            from hipocampo_private.chunks as c
            where c.document_id in (select distinct n.document_id from new_rows as n)
            order by c.document_id, c.chunk_index, c.id
        ) as x
        group by x.document_id
    ) as m
    where d.id = m.document_id and d.text_measures is distinct from m.measures;
    return null;
end;
$$;

create trigger chunks_measure_documents_text
after insert on hipocampo_private.chunks
referencing new table as new_rows
for each statement execute function hipocampo_private._measure_documents_text();

/*
documents_not_language(kb_id uuid, source_uris text[] default null)
  -> table (document_id uuid, source_uri text, title text, text_measures jsonb)

Purpose: the documents of a knowledge base whose text does not read as language by its rag
  config's rules (_reads_as_language over documents.text_measures: word salad, OCR garbage, a
  scrambled export): found by search, never evidence for an answer. What `hipocampo ingest`,
  `doc show` and the hub warn about.
Parameters: kb_id - a knowledge base of the caller's tenant; source_uris - only these documents
  (null: all of the knowledge base's).
Returns: one row per such document, by source_uri.
Errors: 42501 as _caller (before any other work); P0002 "unknown knowledge base: …" (also another
  tenant's, RLS).
Example: select * from hipocampo.documents_not_language('…', array['file:///…/ata.txt']);
*/
create or replace function hipocampo.documents_not_language(kb_id uuid, source_uris text[] default null)
returns table (document_id uuid, source_uri text, title text, text_measures jsonb)
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(documents_not_language.kb_id);
    rag jsonb := hipocampo.rag_config(k.id, null, k.tenant_id);
begin
    return query
    select d.id, d.source_uri, d.title, d.text_measures
    from hipocampo_private.documents as d
    where d.kb_id = k.id
      and (documents_not_language.source_uris is null or d.source_uri = any(documents_not_language.source_uris))
      and not hipocampo_private._reads_as_language(d.text_measures, rag)
    order by d.source_uri;
end;
$$;

comment on table hipocampo_private.chunks is
'Chunks of documents with their embedding (one row per embedding model) and a generated tsvector.';

comment on table hipocampo_private.kb_term_stats is
'BM25 document frequency per lexeme, per knowledge base and embedding model (trigger-maintained).';

comment on table hipocampo_private.kb_postings is
'BM25 inverted index: term frequency of each lexeme in each chunk, with the chunk length (trigger-maintained).';

comment on table hipocampo_private.chunk_access is
'When a search last returned each chunk (drain_read_queue writes it from the searches'' records; embedding_stats reads it).';

comment on table hipocampo_private.kb_text_stats is
'BM25 chunk count and total length per knowledge base and embedding model (trigger-maintained).';

-- Ingestion jobs and the data-access log written by every retrieval RPC.
create table hipocampo_private.ingestion_jobs (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    kb_id uuid not null,
    status text not null default 'running',
    documents_total integer not null default 0,
    documents_ingested integer not null default 0,
    documents_unchanged integer not null default 0,
    documents_failed integer not null default 0,
    chunks_written integer not null default 0,
    errors jsonb not null default '[]'::jsonb,
    created_by uuid,
    started_at timestamptz not null default now(),
    finished_at timestamptz,
    -- The run's lease: renewed by heartbeat_ingestion_job; see recover_ingestion_jobs.
    heartbeat_at timestamptz not null default now(),
    -- Started with hold_session: the client's session holds the job's advisory lock until it ends,
    -- so a killed client's job is interrupted at once, not when its lease runs out.
    session_bound boolean not null default false,
    constraint ingestion_jobs_status_check check (
        status in ('running', 'succeeded', 'partial', 'failed')
    ),
    constraint ingestion_jobs_errors_is_array check (jsonb_typeof(errors) = 'array'),
    constraint ingestion_jobs_kb_fkey foreign key (kb_id, tenant_id)
    references hipocampo_private.knowledge_bases (id, tenant_id) on delete cascade
);

alter table hipocampo_private.ingestion_jobs enable row level security;

create table hipocampo_private.data_access_log (
    id bigint primary key default hipocampo_private._opaque_id(),
    at timestamptz not null default now(),
    caller uuid,
    caller_role text not null,
    tenant_id uuid,
    rpc text not null,
    rows_returned integer not null,
    query_hash text,
    latency_ms double precision not null,
    -- A memory read's mean similarity and the conversation it served (read_queue's, drained).
    conversation_id uuid,
    similarity real
);

alter table hipocampo_private.data_access_log enable row level security;

create index ingestion_jobs_tenant_kb_idx on hipocampo_private.ingestion_jobs (tenant_id, kb_id);

create index data_access_log_tenant_at_idx on hipocampo_private.data_access_log (tenant_id, at);

create policy "members can read ingestion jobs of their tenant"
on hipocampo_private.ingestion_jobs
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can start ingestion jobs in their tenant"
on hipocampo_private.ingestion_jobs
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "admins can update ingestion jobs of their tenant"
on hipocampo_private.ingestion_jobs
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
)
with check (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can read the access log of their tenant"
on hipocampo_private.data_access_log
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

comment on table hipocampo_private.ingestion_jobs is 'One row per ingestion run: status, counts, errors.';

comment on table hipocampo_private.data_access_log is
'Who read what: caller, tenant, RPC, rows returned, query hash (sha256), latency in ms.';

/*
create_knowledge_base(name text, description text default null, tags text[] default '{}',
  language text default 'portuguese', overrides jsonb default '{}', tenant_id uuid default null) -> uuid

Purpose: create a knowledge base (status draft) in the caller's tenant; idempotent by name.
Parameters: name 1..200 chars, unique per tenant; language 'portuguese' | 'english' | 'simple'
  (null = 'portuguese'); overrides - per-KB config sections, {section: {key: value}}, each
  validated as set_knowledge_base_config validates it (null = none); tenant_id - service_role only.
Returns: the knowledge-base id (the existing one when the name exists).
Errors: 42501 no tenant / "only tenant admins can create knowledge bases"; 23514 on a bad name
  (null included: "a knowledge base needs a name of 1..200 characters") or language; 22023
  "overrides must be a json object of config sections" / 22023 / 22003 / 42501 (an operator-only
  key or a secret name) as _check_config_patch.
Example: select hipocampo.create_knowledge_base('regulamentos');
*/
create or replace function hipocampo.create_knowledge_base(
    name text,
    description text default null,
    tags text[] default '{}',
    language text default 'portuguese',
    overrides jsonb default '{}',
    tenant_id uuid default null
)
returns uuid
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(create_knowledge_base.tenant_id);
    caller record := hipocampo_private._caller();
    kb uuid;
    section record;
begin
    if caller.kind <> 'service' and caller.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can create knowledge bases' using errcode = '42501';
    end if;
    if create_knowledge_base.name is null then
        raise exception 'a knowledge base needs a name of 1..200 characters' using errcode = '23514';
    end if;
    if jsonb_typeof(coalesce(overrides, '{}')) <> 'object' then
        raise exception 'overrides must be a json object of config sections' using errcode = '22023';
    end if;
    for section in select e.key, e.value from jsonb_each(coalesce(overrides, '{}')) as e loop
        perform hipocampo_private._check_config_patch(section.key, section.value);
    end loop;
    insert into hipocampo_private.knowledge_bases (tenant_id, name, description, tags, language, overrides)
    values (t, create_knowledge_base.name, create_knowledge_base.description,
            coalesce(create_knowledge_base.tags, '{}'), coalesce(create_knowledge_base.language, 'portuguese'),
            jsonb_strip_nulls(coalesce(create_knowledge_base.overrides, '{}')))
    on conflict on constraint knowledge_bases_tenant_name_key do nothing
    returning id into kb;
    if kb is null then
        select k.id into kb from hipocampo_private.knowledge_bases as k
        where k.tenant_id = t and k.name = create_knowledge_base.name;
    end if;
    return kb;
end;
$$;

/*
_kb(kb_id uuid) -> hipocampo_private.knowledge_bases

Purpose: the knowledge base row, as the caller's RLS sees it.
Errors: P0002 "unknown knowledge base: …" when it does not exist or is another tenant's.
Returns: the knowledge_bases row.
*/
create or replace function hipocampo_private._kb(kb_id uuid)
returns hipocampo_private.knowledge_bases
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    k hipocampo_private.knowledge_bases;
begin
    select * into k from hipocampo_private.knowledge_bases as b where b.id = _kb.kb_id;
    if not found then
        raise exception 'unknown knowledge base: %', kb_id using errcode = 'P0002';
    end if;
    return k;
end;
$$;

/*
knowledge_base_id(name text, tenant_id uuid default null) -> uuid

Purpose: look a knowledge base up by name in the caller's tenant.
Returns: the knowledge base's id.
Errors: 42501 as _resolve_tenant; P0002 "unknown knowledge base: …".
Example: select hipocampo.knowledge_base_id('regulamentos');
*/
create or replace function hipocampo.knowledge_base_id(name text, tenant_id uuid default null)
returns uuid
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(knowledge_base_id.tenant_id);
    kb uuid;
begin
    select k.id into kb from hipocampo_private.knowledge_bases as k
    where k.tenant_id = t and k.name = knowledge_base_id.name;
    if kb is null then
        raise exception 'unknown knowledge base: %', knowledge_base_id.name using errcode = 'P0002';
    end if;
    return kb;
end;
$$;

/*
list_knowledge_bases(tenant_id uuid default null) -> setof record

Purpose: the caller's knowledge bases with document and chunk counts.
Returns: id, name, description, tags, status, language, documents, chunks, updated_at, and
  overrides (the knowledge base's own config sections, {section: {key: value}}; its tuning is
  not in them: effective_config(kb_id) gives what is in force).
Errors: 42501 as _resolve_tenant.
Example: select * from hipocampo.list_knowledge_bases();
*/
create or replace function hipocampo.list_knowledge_bases(tenant_id uuid default null)
returns table (
    id uuid, name text, description text, tags text[], status text, language text,
    documents bigint, chunks bigint, updated_at timestamptz, overrides jsonb
)
language sql
stable
security invoker
set search_path = ''
set jit = off
as $$
    select
        k.id, k.name, k.description, k.tags, k.status, k.language,
        (select count(*) from hipocampo_private.documents as d where d.kb_id = k.id),
        (select count(*) from hipocampo_private.chunks as c where c.kb_id = k.id),
        k.updated_at, k.overrides
    from hipocampo_private.knowledge_bases as k
    where k.tenant_id = hipocampo_private._resolve_tenant(list_knowledge_bases.tenant_id)
    order by k.name
$$;

/*
set_knowledge_base_status(kb_id uuid, status text) -> void

Purpose: move a knowledge base through draft -> indexing -> ready | error.
Errors: 42501 as _caller (before any other work); P0002 unknown knowledge base; 23514 on an unknown status
  (null included: "a knowledge base's status is one of draft, indexing, ready, error").
Returns: nothing.
Example: select hipocampo.set_knowledge_base_status(kb, 'indexing');
*/
create or replace function hipocampo.set_knowledge_base_status(kb_id uuid, status text)
returns void
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
begin
    perform hipocampo_private._caller();
    perform hipocampo_private._kb(set_knowledge_base_status.kb_id);
    if set_knowledge_base_status.status is null then
        raise exception 'a knowledge base''s status is one of draft, indexing, ready, error' using errcode = '23514';
    end if;
    update hipocampo_private.knowledge_bases as k
    set status = set_knowledge_base_status.status, updated_at = now()
    where k.id = set_knowledge_base_status.kb_id;
end;
$$;

/*
document_hashes(kb_id uuid, embedding_model text default null) -> setof (document_id uuid,
  source_uri text, content_hash text, source_type text, trust_score real, expires_at timestamptz,
  embedded boolean, version text)

Purpose: what a knowledge base holds, so a client can skip unchanged documents before embedding
  and apply a metadata-only change (source type, trust, expiry) without re-embedding.
Parameters: kb_id - the knowledge base; embedding_model - null = the active model.
Returns: one row per document of the knowledge base; embedded = the document has chunks of that
  model (false after a model switch until it is re-ingested with the new model); version = the
  document's version as written (a web page's HTTP validator, which the next sync sends back).
Errors: 42501 as _caller (before any other work); P0002 unknown knowledge base.
Example: select * from hipocampo.document_hashes(kb);
*/
create or replace function hipocampo.document_hashes(kb_id uuid, embedding_model text default null)
returns table (
    document_id uuid, source_uri text, content_hash text, source_type text, trust_score real,
    expires_at timestamptz, embedded boolean, version text
)
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
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
        ),
        d.version
    from hipocampo_private.documents as d
    where d.kb_id = document_hashes.kb_id;
end;
$$;

/*
delete_document(document_id uuid) -> boolean

Purpose: delete a document; its chunks and their embeddings go with it (cascade).
Returns: true when a document was deleted, false when none is visible with that id.
Errors: 42501 as _caller (before any other work); 42501 not an admin.
Example: select hipocampo.delete_document('…');
*/
create or replace function hipocampo.delete_document(document_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
begin
    perform hipocampo_private._caller();
    delete from hipocampo_private.documents as d where d.id = delete_document.document_id;
    return found;
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
set jit = off
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

/*
update_knowledge_base(kb_id uuid, name text default null, description text default null) -> jsonb

Purpose: rename a knowledge base or change its description (the hub's knowledge-base settings).
Parameters: kb_id - a knowledge base of the caller's tenant; name - 1..200 characters, unique in
  the tenant (null = unchanged); description - null = unchanged, '' = none.
Returns: {"kb_id", "name", "description"} after the change.
Errors: 42501 as _caller (before any other work); 42501 "only tenant admins can change knowledge
  bases"; P0002 "unknown knowledge base: …" (also another tenant's); 23505 "a knowledge base
  named … exists already"; 23514 on a name of 0 or more than 200 characters.
Example: select hipocampo.update_knowledge_base(kb, name => 'regulamentos 2026');
*/
create or replace function hipocampo.update_knowledge_base(
    kb_id uuid, name text default null, description text default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases;
    r jsonb;
begin
    if gate.kind <> 'service' and gate.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can change knowledge bases' using errcode = '42501';
    end if;
    k := hipocampo_private._kb(update_knowledge_base.kb_id);
    update hipocampo_private.knowledge_bases as x
    set
        name = coalesce(update_knowledge_base.name, x.name),
        description = case
            when update_knowledge_base.description is null then x.description
            else nullif(btrim(update_knowledge_base.description), '')
        end,
        updated_at = now()
    where x.id = k.id
    returning jsonb_build_object('kb_id', x.id, 'name', x.name, 'description', x.description) into r;
    return r;
exception when unique_violation then
    raise exception 'a knowledge base named % exists already', update_knowledge_base.name
        using errcode = '23505';
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
  document: …" (also another tenant's); 22023 "trust_score must lie in [0, 1] (got …)"; 23514
  "invalid document: …" (unknown source type or classification).
Example: select hipocampo.set_document_metadata(doc, '{"trust_score": 0.9, "source_type": "regulation"}');
*/
create or replace function hipocampo.set_document_metadata(document_id uuid, metadata jsonb)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
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
        raise exception 'trust_score must lie in [0, 1] (got %)', metadata ->> 'trust_score' using errcode = '22023';
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
    when invalid_text_representation or invalid_datetime_format or datetime_field_overflow
        or invalid_time_zone_displacement_value then
        raise exception 'invalid document field: %', sqlerrm using errcode = '22023';
end;
$$;

/*
purge_expired(now timestamptz default now()) -> jsonb

Purpose: retention: delete documents and chunks whose expires_at has passed, and the audit trail
  past its retention (maintenance.access_log_retention_days 180, answer_audit_retention_days 365,
  memory_events_retention_days 730: data_access_log, answer_audit, memory_events rows older than
  that many days).
Parameters: now - the clock (tests pass a frozen one).
Returns: {"documents": n, "chunks": n, "data_access_log": n, "answer_audit": n, "memory_events": n}.
Errors: 42501 for any role but service_role (no EXECUTE); 55000 "maintenance config is
  incomplete: …".
Example: select hipocampo.purge_expired();
*/
create or replace function hipocampo.purge_expired(now timestamptz default now())
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    cfg jsonb := hipocampo_private._require_config(
        (select g.config -> 'maintenance' from hipocampo_private.settings as g where g.tenant_id is null), 'maintenance',
        array['access_log_retention_days', 'answer_audit_retention_days', 'memory_events_retention_days']
    );
    n_docs integer;
    n_chunks integer;
    n_access integer;
    n_audit integer;
    n_events integer;
begin
    delete from hipocampo_private.chunks as c where c.expires_at <= purge_expired.now;
    get diagnostics n_chunks = row_count;
    delete from hipocampo_private.documents as d where d.expires_at <= purge_expired.now;
    get diagnostics n_docs = row_count;
    delete from hipocampo_private.data_access_log as l
    where l.at < purge_expired.now - make_interval(days => (cfg ->> 'access_log_retention_days')::integer);
    get diagnostics n_access = row_count;
    delete from hipocampo_private.answer_audit as a
    where a.created_at < purge_expired.now - make_interval(days => (cfg ->> 'answer_audit_retention_days')::integer);
    get diagnostics n_audit = row_count;
    delete from hipocampo_private.memory_events as e
    where e.at < purge_expired.now - make_interval(days => (cfg ->> 'memory_events_retention_days')::integer);
    get diagnostics n_events = row_count;
    return jsonb_build_object('documents', n_docs, 'chunks', n_chunks, 'data_access_log', n_access,
        'answer_audit', n_audit, 'memory_events', n_events);
end;
$$;

comment on function hipocampo.documents_not_language(uuid, text[]) is
'A knowledge base''s documents whose text does not read as language: found by search, never evidence.';

comment on function hipocampo.create_knowledge_base(text, text, text[], text, jsonb, uuid) is
'Create (or find by name) a knowledge base in the caller''s tenant.';

comment on function hipocampo.knowledge_base_id(text, uuid) is 'Knowledge-base id by name.';

comment on function hipocampo.list_knowledge_bases(uuid) is
'Knowledge bases of the caller''s tenant with document and chunk counts.';

comment on function hipocampo.set_knowledge_base_status(uuid, text) is
'Set a knowledge base''s status: draft, indexing, ready or error.';

comment on function hipocampo.document_hashes(uuid, text) is
'Content hashes, source types, trust and whether the model embeds them, per document of a knowledge base (client-side dedupe and metadata-only updates).';

comment on function hipocampo.delete_document(uuid) is
'Delete a document with its chunks and embeddings.';

comment on function hipocampo.delete_knowledge_base(uuid) is
'Delete a knowledge base with its documents, chunks and jobs, and drop it from agent bindings (tenant admins).';

comment on function hipocampo.update_knowledge_base(uuid, text, text) is
'Rename a knowledge base or change its description (tenant admins).';

comment on function hipocampo.set_document_metadata(uuid, jsonb) is
'Change a document''s source type, trust, dates, version, author or classification without re-embedding it (tenant admins).';

comment on function hipocampo.purge_expired(timestamptz) is
'Delete documents and chunks past their expires_at.';

-- The retry bookkeeping of the embedding backfill (issue 20 §4): a row whose vector could not be
-- computed (the provider failed) is retried with exponential backoff and, after
-- maintenance.embedding_max_attempts failures, dead-lettered with its last error. Rows still
-- waiting are the ones rows_to_embed lists; this table holds only those that failed. Service
-- only (RLS on, no policy; the backfill and the operator run as service_role).
create table hipocampo_private.embedding_failures (
    kind text not null,
    row_id text not null,
    attempts integer not null default 1,
    last_error text not null,
    next_attempt_at timestamptz not null,
    dead boolean not null default false,
    updated_at timestamptz not null default now(),
    primary key (kind, row_id),
    constraint embedding_failures_kind_check check (kind in ('chunks', 'memories', 'memory_staging', 'messages')),
    constraint embedding_failures_attempts_check check (attempts >= 1),
    constraint embedding_failures_error_length check (char_length(last_error) <= 2000)
);

alter table hipocampo_private.embedding_failures enable row level security;

comment on table hipocampo_private.embedding_failures is
'Rows whose embedding failed: attempts, last error, when to retry; dead after maintenance.embedding_max_attempts (the dead letters).';

create index ingestion_jobs_running_idx on hipocampo_private.ingestion_jobs (heartbeat_at)
where status = 'running';

comment on column hipocampo_private.ingestion_jobs.heartbeat_at is
'Last sign of life of the running job (start, heartbeat_ingestion_job); a job silent for longer than maintenance.ingestion_lease_seconds is interrupted.';

-- What the Python package read from hipocampo_private directly gets an RPC (issue 17 §2: Python
-- calls the public surface only): the tenant of a slug (Hipocampo.tenant_id), the documents of a
-- knowledge base (the agents' store clear, and a document listing for clients), a user's
-- membership role (the CLI's "make the local user a member" without demoting an admin), the
-- caller's memories without a vector (Memory.embed_missing), and the active embedding model
-- (the backfills' check).
/*
list_documents(kb_id uuid, after_source_uri text default null, max_rows integer default null)
  -> table (id, title, source_uri, source_type, doc_type, status, trust_score, chunk_count,
  content_hash, published_at, expires_at, created_at, updated_at, pii_replacements, quarantine)

Purpose: the documents of a knowledge base, by source_uri, a page at a time (RLS: the caller's
  tenant). Pages are keyset pages on the (kb_id, source_uri) key: each costs its own rows
  whatever the knowledge base's size.
Parameters: kb_id - the knowledge base; after_source_uri - only documents whose source_uri sorts
  after this one (the last row of the previous page; null: from the first); max_rows - at most
  this many rows, 1..10000 (null: every document after after_source_uri, as before pages).
Returns: one row per document; trust_score 0..1; chunk_count chunks of the document (all models);
  pii_replacements personal data replaced in its text at ingestion (as the client reported it);
  quarantine {kind, reason, at} for a file ingestion kept out (status quarantined), else null.
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
    created_at timestamptz, updated_at timestamptz, pii_replacements integer, quarantine jsonb
)
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
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
        d.content_hash, d.published_at, d.expires_at, d.created_at, d.updated_at, d.pii_replacements, d.quarantine
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
  expires_at, created_at, updated_at, pii_replacements, quarantine)

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
    expires_at timestamptz, created_at timestamptz, updated_at timestamptz, pii_replacements integer,
    quarantine jsonb
)
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(get_document.tenant_id);  -- 42501 before any other work
begin
    return query
    select d.id, d.kb_id, k.name, d.title, d.source_uri, d.source_type, d.doc_type, d.status, d.trust_score,
        d.chunk_count, d.content_hash, d.published_at, d.expires_at, d.created_at, d.updated_at,
        d.pii_replacements, d.quarantine
    from hipocampo_private.documents as d
    inner join hipocampo_private.knowledge_bases as k on d.kb_id = k.id
    where d.id = get_document.document_id and d.tenant_id = t;
end;
$$;

/*
document_text(document_id uuid, tenant_id uuid default null) -> table (chunk_index integer, section
  text, content text)

Purpose: a document's text as stored, chunk by chunk in order (the hub's document view): the
  chunks of one embedding model (the search model of its knowledge base when the document has its
  chunks, else another model's; during a model switch the text is not shown twice), each with its
  section heading (metadata.section) when it has one.
  The text is the scrubbed text (PII already replaced).
Parameters: document_id; tenant_id - service_role names the tenant.
Returns: one row per chunk, chunk_index ascending; no row for an unknown document or another
  tenant's.
Errors: 42501 as _resolve_tenant (before any other work).
Example: select string_agg(content, E'\n\n' order by chunk_index) from hipocampo.document_text('…');
*/
create or replace function hipocampo.document_text(document_id uuid, tenant_id uuid default null)
returns table (chunk_index integer, section text, content text)
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
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
$$;

comment on function hipocampo.document_text(uuid, uuid) is 'A document''s stored (scrubbed) text, chunk by chunk in order.';

comment on function hipocampo.list_documents(uuid, text, integer) is
'The documents of a knowledge base by source_uri, a keyset page at a time (after_source_uri, max_rows).';

comment on function hipocampo.get_document(uuid, uuid) is 'One document of the tenant by id, with its knowledge base.';
