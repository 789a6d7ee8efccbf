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
    constraint knowledge_bases_name_length check (char_length(name) between 1 and 200),
    constraint knowledge_bases_status_check check (
        status in ('draft', 'indexing', 'ready', 'error')
    ),
    constraint knowledge_bases_language_check check (
        language in ('portuguese', 'english', 'simple')
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
    -- How much the document's text reads as language (_text_measures: words, function_share,
    -- odd_transitions), written when its chunks are (_measure_documents_text); the answer gate
    -- reads it (_reads_as_language). Null: never measured.
    text_measures jsonb,
    -- Why ingestion kept the file out (issue 45 §4, status 'quarantined'): {kind, reason, at},
    -- kind credentials | transcript | financial_statement | biometric; no text and no chunk is
    -- stored for it. Cleared when the file is written again (_clear_quarantine).
    quarantine jsonb,
    constraint documents_source_type_check check (source_type in (
        'regulation', 'policy', 'assembly_minutes', 'reservation', 'decision',
        'penalty', 'metric', 'faq', 'manual', 'other'
    )),
    constraint documents_trust_score_range check (trust_score between 0 and 1),
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

Purpose: the unaccented full-text configuration of a knowledge-base language.
Parameters: language - 'portuguese' | 'english' | 'simple'.
Returns: hipocampo_private.<language>_unaccent.
Errors: 22023 "unsupported text-search language" for any other value.
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

-- Text that is not language (issue 48 §3): a document's words are measured when its chunks are
-- written, and the answer gate reads the measures (rag.language_*): word salad made of a knowledge
-- base's own vocabulary, OCR garbage or a scrambled export is found by search but never answers.
/*
_text_measures(content text) -> jsonb

Purpose: how much a text reads as language, from its words (_plain_words: lower case, unaccented;
  numbers left out):
  "words" (their count), "function_share" (the share that are function words - articles,
  prepositions, conjunctions, pronouns, auxiliaries - of Portuguese or English: 0.18-0.55 in
  prose, about 0.1 in words drawn from a vocabulary at random) and "odd_transitions" (after an
  article or a preposition, the share followed by another article, a preposition or a
  conjunction: at most 0.22 over the FaQuAD, Quati and SciFact documents of 100+ words, 0.25-0.31
  in words drawn at random from a regulation's text; null under 5 such words).
Returns: {"words", "function_share", "odd_transitions"}.
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
        -- Words as _plain_words reads them (lower case, unaccented, any script), numbers left out.
        select coalesce(array_agg(x.word order by x.n), '{}') as a
        from regexp_split_to_table(hipocampo_private._plain_words(content), ' ') with ordinality as x (word, n)
        where x.word !~ '^[0-9]*$'
    ),
    lists as (
        select
            array['o', 'a', 'os', 'as', 'um', 'uma', 'uns', 'umas', 'the', 'an'] as det,
            array['de', 'do', 'da', 'dos', 'das', 'em', 'no', 'na', 'nos', 'nas', 'num', 'numa', 'para', 'pra',
                'por', 'pelo', 'pela', 'pelos', 'pelas', 'com', 'sem', 'sob', 'sobre', 'entre', 'ao', 'aos',
                'of', 'in', 'to', 'for', 'on', 'with', 'by', 'from', 'at'] as prep,
            array['e', 'ou', 'mas', 'nem', 'and', 'or'] as conj,
            array['que', 'se', 'como', 'quando', 'onde', 'porque', 'pois', 'nao', 'ja', 'tambem', 'mais',
                'muito', 'sao', 'foi', 'ser', 'ter', 'tem', 'ha', 'seu', 'sua', 'seus', 'suas', 'este',
                'esta', 'esse', 'essa', 'isso', 'isto', 'ele', 'ela', 'eles', 'elas', 'lhe', 'me', 'te',
                'ate', 'is', 'are', 'be', 'that', 'this', 'it', 'was', 'were', 'not'] as other
    ),
    t as (
        select w.a[i] as word, w.a[i + 1] as next
        from w cross join generate_subscripts(w.a, 1) as i
    ),
    flags as (
        select
            t.word = any(l.det || l.prep || l.conj || l.other) as function_word,
            t.next is not null and (t.word = any(l.det) or t.word = any(l.prep)) as head,
            t.word = any(l.det) and t.next = any(l.det) or t.next = any(l.prep) or t.next = any(l.conj) as odd
        from t cross join lists as l
    )
    select jsonb_build_object(
        'words', count(*),
        'function_share', round(coalesce(avg(f.function_word::integer), 0), 3),
        'odd_transitions', case when count(*) filter (where f.head) >= 5 then round(
            (count(*) filter (where f.head and f.odd))::numeric / count(*) filter (where f.head), 3
        ) end
    )
    from flags as f
$$;

/*
_reads_as_language(measures jsonb, rag jsonb) -> boolean

Purpose: whether a document's text reads as language by the rag config's rules: true for a text
  of fewer than rag.language_min_words words (too short to judge) or never measured; else its
  function-word share reaches rag.language_min_function_share and its odd transitions stay
  under rag.language_max_odd_transitions (_text_measures).
Parameters: measures - documents.text_measures; rag - a rag config (rag_config).
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
    select measures is null
        or coalesce((measures ->> 'words')::integer, 0) < (rag ->> 'language_min_words')::integer
        or (
            (measures ->> 'function_share')::double precision >= (rag ->> 'language_min_function_share')::double precision
            and coalesce((measures ->> 'odd_transitions')::double precision, 0)
            < (rag ->> 'language_max_odd_transitions')::double precision
        )
$$;

/*
_measure_documents_text() -> trigger

Purpose: after chunks are written, the measures of their documents' whole text (_text_measures
  over each document's chunks in order, one row per position whatever the model), stored in
  documents.text_measures when they changed. Statement-level, over the transition table.
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
            select distinct on (c.document_id, c.chunk_index) c.document_id, c.chunk_index, c.content
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
_resolve_tenant(requested uuid) -> uuid

Purpose: the tenant a call acts on, by _caller(): a user acts on the tenant of their claims
  (requested may repeat it); service_role must name one. Every RPC that takes tenant_id calls it.
Parameters: requested - the RPC's tenant_id argument (null for a user: their tenant).
Returns: the tenant id.
Errors: 42501 as _caller; 42501 "tenant mismatch: the JWT claims name another tenant" when a user
  names another tenant; 42501 "no tenant: service_role must pass tenant_id" when service_role names
  none.
Example: select hipocampo_private._resolve_tenant(null);
*/
create or replace function hipocampo_private._resolve_tenant(requested uuid)
returns uuid
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
begin
    if c.kind = 'service' then
        if requested is null then
            raise exception 'no tenant: service_role must pass tenant_id' using errcode = '42501';
        end if;
        return requested;
    end if;
    if requested is not null and requested <> c.tenant_id then
        raise exception 'tenant mismatch: the JWT claims name another tenant' using errcode = '42501';
    end if;
    return c.tenant_id;
end;
$$;

/*
effective_config(tenant_id uuid default null, kb_id uuid default null) -> jsonb

Purpose: the configuration in force: the global row, overridden per section by the active
  embedding model's calibration (model_calibrations: its cosine thresholds and dense weights),
  then by the tenant's tuning for the active model (set_tenant_tuning), then by the tenant's
  row, then by the knowledge base's tuning for the active model (set_knowledge_base_tuning),
  then by the knowledge base's overrides.
Parameters: tenant_id - null = the caller's tenant; kb_id - optional knowledge base.
Returns: a jsonb object with sections retrieval, chunking, embedding, memory, ….
Errors: 42501 as _resolve_tenant.
Example: select hipocampo.effective_config() -> 'retrieval' ->> 'min_similarity';
*/
create or replace function hipocampo.effective_config(tenant_id uuid default null, kb_id uuid default null)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(effective_config.tenant_id);
    active text := (select e.name from hipocampo_private.embedding_models as e where e.active);
    cfg jsonb;
    layer jsonb;
    section text;
begin
    select s.config into cfg from hipocampo_private.settings as s where s.tenant_id is null;
    cfg := coalesce(cfg, '{}'::jsonb);
    for layer in
        select x.config from (
            select 1 as ord, hipocampo_private._calibration() as config
            union all
            -- The tenant's tuning for the active model, then its row: one row read.
            select l.ord, l.config
            from hipocampo_private.settings as s
            cross join lateral (values (2, coalesce(s.tuning -> active, '{}')), (3, s.config)) as l (ord, config)
            where s.tenant_id = t
            union all
            -- The knowledge base's tuning for the active model, then its overrides: one row read.
            select l.ord, l.config
            from hipocampo_private.knowledge_bases as k
            cross join lateral (values (4, coalesce(k.tuning -> active, '{}')), (5, k.overrides)) as l (ord, config)
            where k.id = effective_config.kb_id and k.tenant_id = t
        ) as x
        order by x.ord
    loop
        for section in select jsonb_object_keys(layer) loop
            if jsonb_typeof(layer -> section) = 'object' then
                cfg := jsonb_set(
                    cfg, array[section],
                    coalesce(cfg -> section, '{}'::jsonb) || (layer -> section)
                );
            else
                cfg := jsonb_set(cfg, array[section], layer -> section);
            end if;
        end loop;
    end loop;
    return cfg;
end;
$$;

/*
_config_section(tenant_id uuid, kb_id uuid, section text, model text) -> jsonb

Purpose: one section of effective_config for a tenant already resolved by the caller and a given
  embedding model: the global row's keys, overridden by the model's calibration, by the tenant's
  tuning for that model and then its row, by the knowledge base's tuning for that model and then
  its overrides (when kb_id is given and belongs to the tenant) - effective_config's precedence,
  without resolving the caller again nor merging the other sections, and with the calibration of the model searched rather than the active one (a
  knowledge base searched by name with another model takes that model's thresholds). Granted to
  nobody: for definer functions that have resolved the tenant (hybrid_search).
Parameters: tenant_id - the resolved tenant; kb_id - a knowledge base of it, or null; section -
  e.g. 'retrieval'; model - an embedding model's name.
Returns: the section as a jsonb object ({} when no row has it).
Errors: none.
Example: select hipocampo_private._config_section(t, kb, 'retrieval', 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo_private._config_section(tenant_id uuid, kb_id uuid, section text, model text)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    select coalesce((select g.config -> section from hipocampo_private.settings as g where g.tenant_id is null), '{}')
        || coalesce(hipocampo_private._calibration(_config_section.model) -> section, '{}')
        || coalesce((
            -- The tenant's tuning for the model, then its row: one row read.
            select coalesce(s.tuning -> _config_section.model -> section, '{}') || coalesce(s.config -> section, '{}')
            from hipocampo_private.settings as s
            where s.tenant_id = _config_section.tenant_id
        ), '{}')
        || coalesce((
            -- The knowledge base's tuning for the model, then its overrides: one row read.
            select coalesce(k.tuning -> _config_section.model -> section, '{}')
                || coalesce(k.overrides -> section, '{}')
            from hipocampo_private.knowledge_bases as k
            where k.id = _config_section.kb_id and k.tenant_id = _config_section.tenant_id
        ), '{}')
$$;

/*
register_embedding_model(name text, provider text, dims integer, activate boolean default false) -> text

Purpose: add an embedding model to the registry beside the existing ones and create its
  partial HNSW index. Never changes the dims of a registered model.
Parameters: name; provider 'local' | 'openai' | 'azure'; dims 1..2000; activate - make it the default.
Returns: the HNSW index name.
Errors: 22023 "model … is registered with … dimensions" on a dims change; 23514 on bad values (null
  included: "an embedding model needs a name, a provider (local | openai | azure) and dims
  1..2000").
Example: select hipocampo.register_embedding_model('all-MiniLM-L6-v2', 'local', 384, true);
*/
create or replace function hipocampo.register_embedding_model(
    name text, provider text, dims integer, activate boolean default false
)
returns text
language plpgsql
security invoker
set search_path = ''
as $$
declare
    existing integer;
begin
    if register_embedding_model.name is null or register_embedding_model.provider is null
        or register_embedding_model.dims is null then
        raise exception 'an embedding model needs a name, a provider (local | openai | azure) and dims 1..2000'
            using errcode = '23514';
    end if;
    select e.dims into existing from hipocampo_private.embedding_models as e
    where e.name = register_embedding_model.name;
    if existing is not null and existing <> register_embedding_model.dims then
        raise exception 'model % is registered with % dimensions, not %',
            register_embedding_model.name, existing, register_embedding_model.dims
            using errcode = '22023';
    end if;
    insert into hipocampo_private.embedding_models (name, provider, dims)
    values (register_embedding_model.name, register_embedding_model.provider,
            register_embedding_model.dims)
    on conflict on constraint embedding_models_pkey do nothing;
    if activate then
        perform hipocampo.activate_embedding_model(register_embedding_model.name);
    end if;
    return hipocampo_private._ensure_model_index(register_embedding_model.name);
end;
$$;

/*
activate_embedding_model(name text) -> void

Purpose: confirm the switch to a registered model: it becomes the default of retrieval, and its
  calibration (model_calibrations) the thresholds in force (effective_config).
Returns: nothing.
Errors: 42501 for any role but service_role (no EXECUTE); P0002 "unknown embedding model"; 55000
  "embedding model <name> has no calibration: run hipocampo calibrate --model <name> --write".
Example: select hipocampo.activate_embedding_model('text-embedding-3-small');
*/
create or replace function hipocampo.activate_embedding_model(name text)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if not exists (
        select 1 from hipocampo_private.embedding_models as e
        where e.name = activate_embedding_model.name
    ) then
        raise exception 'unknown embedding model: %', activate_embedding_model.name
            using errcode = 'P0002';
    end if;
    perform hipocampo_private._calibration(activate_embedding_model.name, true);
    update hipocampo_private.embedding_models as e set active = false
    where e.active and e.name <> activate_embedding_model.name;
    update hipocampo_private.embedding_models as e set active = true, activated_at = now()
    where e.name = activate_embedding_model.name;
end;
$$;

/*
_search_model(tenant_id uuid, kb_ids uuid[]) -> text

Purpose: the embedding model a search of these knowledge bases reads when the caller names none.
  The active model once every chunk of the scope has a row of it. During a switch (the new model
  active, its rows being added by the backfill, rows_to_embed / set_row_embeddings), the most
  recently active model that has a row for every chunk of the scope: search keeps answering from
  it until the scope is complete, then moves, knowledge base by knowledge base. With one model
  registered, that one (no scan).
Parameters: tenant_id - the resolved tenant; kb_ids - the scope (null: all its knowledge bases).
Returns: a model's name; null when no model is active.
Errors: none.
Example: select hipocampo_private._search_model(t, array[kb]);
*/
create or replace function hipocampo_private._search_model(tenant_id uuid, kb_ids uuid[])
returns text
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    active text;
    complete text;
begin
    select e.name into active from hipocampo_private.embedding_models as e where e.active;
    if active is null or (select count(*) from hipocampo_private.embedding_models) = 1 then
        return active;
    end if;
    select m.name into complete
    from hipocampo_private.embedding_models as m
    where (m.active or m.activated_at is not null)
      and not exists (
          select 1 from hipocampo_private.chunks as c
          where c.tenant_id = _search_model.tenant_id
            and (_search_model.kb_ids is null or c.kb_id = any(_search_model.kb_ids))
            and c.embedding_model <> m.name
            and not exists (
                select 1 from hipocampo_private.chunks as n
                where n.tenant_id = c.tenant_id and n.content_hash = c.content_hash and n.embedding_model = m.name
            )
      )
    order by m.active desc, m.activated_at desc, m.name
    limit 1;
    return coalesce(complete, active);
end;
$$;

/*
search_model(kb_ids uuid[] default null, tenant_id uuid default null) -> text

Purpose: the embedding model whose query vector a search of these knowledge bases needs now:
  hybrid_search and answer_evidence read this model when the call names none. The active model;
  during a switch, the previously active one until every chunk of these knowledge bases has a row
  of the active model (_search_model). Clients embed the question with it (Orchestrator.ask,
  hipocampo search).
Parameters: kb_ids - the knowledge bases to search (null: all of the tenant's); tenant_id -
  service_role only.
Returns: a model's name; null when no model is active.
Errors: 42501 as _resolve_tenant.
Example: select hipocampo.search_model(array[kb]);
*/
create or replace function hipocampo.search_model(kb_ids uuid[] default null, tenant_id uuid default null)
returns text
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    return hipocampo_private._search_model(hipocampo_private._resolve_tenant(search_model.tenant_id), kb_ids);
end;
$$;

/*
drop_embedding_model(name text) -> bigint

Purpose: after a confirmed switch, delete an inactive model's chunk rows (embeddings) and its
  registry row. Memories that are no longer active (deprecated, deleted, expired: history no
  search reads) lose their vectors of that model; every chunk of it (a chunk's row holds the only
  copy of its text), active and staged memory and message must have been given the active
  model's first (rows_to_embed / set_row_embeddings), so a drop never deletes text.
Returns: number of chunk rows deleted.
Errors: P0002 "unknown embedding model"; 55000 "model … is active" for the active model; 55000
  "model <name> still embeds N chunks, N active memories, N staged memories and N messages that
  the active model does not: embed them with the active model first (hipocampo db
  embed-missing)".
Example: select hipocampo.drop_embedding_model('old-model');
*/
create or replace function hipocampo.drop_embedding_model(name text)
returns bigint
language plpgsql
security invoker
set search_path = ''
as $$
declare
    is_active boolean;
    n bigint;
    n_memories bigint;
    n_staged bigint;
    n_messages bigint;
    n_chunks bigint;
begin
    select e.active into is_active from hipocampo_private.embedding_models as e
    where e.name = drop_embedding_model.name;
    if is_active is null then
        raise exception 'unknown embedding model: %', drop_embedding_model.name
            using errcode = 'P0002';
    end if;
    if is_active then
        raise exception 'model % is active; activate another model first',
            drop_embedding_model.name using errcode = '55000';
    end if;
    select count(*) into n_memories from hipocampo_private.memories as m
    where m.embedding_model = drop_embedding_model.name and m.status = 'active';
    select count(*) into n_staged from hipocampo_private.memory_staging as s
    where s.embedding_model = drop_embedding_model.name;
    select count(*) into n_messages from hipocampo_private.messages as m
    where m.embedding_model = drop_embedding_model.name;
    -- A chunk whose content has no row of the active model would leave with its only text.
    select count(*) into n_chunks from hipocampo_private.chunks as c
    where c.embedding_model = drop_embedding_model.name
      and not exists (
          select 1 from hipocampo_private.chunks as k
          inner join hipocampo_private.embedding_models as e on e.name = k.embedding_model and e.active
          where k.tenant_id = c.tenant_id and k.content_hash = c.content_hash
      );
    if n_chunks + n_memories + n_staged + n_messages > 0 then
        raise exception 'model % still embeds % chunks, % active memories, % staged memories and % messages that the active model does not: embed them with the active model first (hipocampo db embed-missing)',
            drop_embedding_model.name, n_chunks, n_memories, n_staged, n_messages using errcode = '55000';
    end if;
    update hipocampo_private.memories as m set embedding = null, embedding_model = null
    where m.embedding_model = drop_embedding_model.name;
    delete from hipocampo_private.chunks as c where c.embedding_model = drop_embedding_model.name;
    get diagnostics n = row_count;
    delete from hipocampo_private.kb_term_stats as s
    where s.embedding_model = drop_embedding_model.name;
    delete from hipocampo_private.kb_text_stats as s
    where s.embedding_model = drop_embedding_model.name;
    delete from hipocampo_private.embedding_models as e
    where e.name = drop_embedding_model.name;
    return n;
end;
$$;

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
Returns: id, name, description, tags, status, language, documents, chunks, updated_at.
Errors: 42501 as _resolve_tenant.
Example: select * from hipocampo.list_knowledge_bases();
*/
create or replace function hipocampo.list_knowledge_bases(tenant_id uuid default null)
returns table (
    id uuid, name text, description text, tags text[], status text, language text,
    documents bigint, chunks bigint, updated_at timestamptz
)
language sql
stable
security invoker
set search_path = ''
as $$
    select
        k.id, k.name, k.description, k.tags, k.status, k.language,
        (select count(*) from hipocampo_private.documents as d where d.kb_id = k.id),
        (select count(*) from hipocampo_private.chunks as c where c.kb_id = k.id),
        k.updated_at
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
            content_hash, ts_config, embedding, embedding_model, expires_at, sentence_embeddings
        )
        select
            k.tenant_id, k.id, s.doc_id, (c.value ->> 'chunk_index')::integer, c.value ->> 'content',
            coalesce((c.value ->> 'token_count')::integer, 0), coalesce(c.value -> 'metadata', '{}'::jsonb),
            c.value ->> 'content_hash', hipocampo_private.text_search_config(k.language),
            (c.value ->> 'embedding')::extensions.vector, _write_documents.embedding_model,
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

comment on function hipocampo.effective_config(uuid, uuid) is
'Config in force for a tenant (and KB): global row <- model calibration <- tenant tuning for the model <- tenant row <- KB tuning for the model <- KB overrides.';

comment on function hipocampo.register_embedding_model(text, text, integer, boolean) is
'Register an embedding model beside the others and create its partial HNSW index.';

comment on function hipocampo.activate_embedding_model(text) is
'Make a registered embedding model the default of retrieval.';

comment on function hipocampo.drop_embedding_model(text) is
'Delete an inactive model''s embeddings and registry row, after a confirmed switch; refused while any row would lose its only text or vector.';

comment on function hipocampo.documents_not_language(uuid, text[]) is
'A knowledge base''s documents whose text does not read as language: found by search, never evidence.';

comment on function hipocampo.search_model(uuid[], uuid) is
'The embedding model a search of these knowledge bases reads now: the active one, or during a switch the previous one until they are complete.';

comment on function hipocampo.create_knowledge_base(text, text, text[], text, jsonb, uuid) is
'Create (or find by name) a knowledge base in the caller''s tenant.';

comment on function hipocampo.knowledge_base_id(text, uuid) is 'Knowledge-base id by name.';

comment on function hipocampo.list_knowledge_bases(uuid) is
'Knowledge bases of the caller''s tenant with document and chunk counts.';

comment on function hipocampo.set_knowledge_base_status(uuid, text) is
'Set a knowledge base''s status: draft, indexing, ready or error.';

comment on function hipocampo.document_hashes(uuid, text) is
'Content hashes, source types, trust and whether the model embeds them, per document of a knowledge base (client-side dedupe and metadata-only updates).';

comment on function hipocampo.ingest_document(uuid, jsonb, jsonb, text) is
'Write one document and its chunks atomically; unchanged documents are not rewritten.';

comment on function hipocampo.ingest_documents(uuid, jsonb, text) is
'The bulk path: write a batch of documents and their chunks in one transaction, set-based.';

comment on function hipocampo.defer_model_index(text) is
'Before a large first load: drop the model''s HNSW index on chunks (build_model_index builds it after).';

comment on function hipocampo.build_model_index(text) is
'Build the model''s missing HNSW indexes in one pass, with the maintenance config''s memory and workers.';

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

comment on function hipocampo.start_ingestion_job(uuid, integer, boolean) is 'Open an ingestion-job record.';

comment on function hipocampo.finish_ingestion_job(uuid, text, jsonb, jsonb) is
'Close an ingestion-job record with its status, counts and errors.';

/*
_embedding_kind(kind text) -> text

Purpose: the kind of row the embedding backfill handles, checked (rows_to_embed,
  set_row_embeddings, record_embedding_failure, requeue_embedding_failures).
Parameters: kind - chunks | memories | memory_staging | messages.
Returns: kind.
Errors: 22023 "kind must be chunks, memories, memory_staging or messages".
Example: perform hipocampo_private._embedding_kind(kind);
*/
create or replace function hipocampo_private._embedding_kind(kind text)
returns text
language plpgsql
immutable
security invoker
set search_path = ''
as $$
begin
    if kind is null or kind not in ('chunks', 'memories', 'memory_staging', 'messages') then
        raise exception 'kind must be chunks, memories, memory_staging or messages' using errcode = '22023';
    end if;
    return kind;
end;
$$;

/*
rows_to_embed(kind text, batch_size integer default 100, after_id text default null)
  -> table (row_id text, content text)

Purpose: rows that search cannot read with the active model - no embedding, or one of another
  model: chunks whose content has no chunk of the active model ('chunks', one per content hash
  of a tenant, with the text ingestion embeds: its contextual header - metadata.title, the
  document's title and the chunk's heading path; the document's title without one -, a newline,
  the content),
  active memories ('memories') and staged memories ('memory_staging') with their description,
  messages ('messages') with their content. The listed rows stay locked (for update
  skip locked) until the caller's transaction ends: store their vectors with set_row_embeddings
  in the same transaction; concurrent workers take other rows, and a worker that dies leaves its
  rows to the next (its transaction rolls back). Rows whose embedding failed wait for their retry
  time and dead-lettered ones are left out (record_embedding_failure).
Parameters: kind chunks | memories | memory_staging | messages; batch_size 1..1000 rows;
  after_id - only rows with a greater id (a caller's cursor: a chunk's or message's number, a
  memory's uuid, as text).
Returns: at most batch_size rows by id: row_id (the id as text) and the text to embed.
Errors: 22023 "kind must be chunks, memories, memory_staging or messages"; 22023 "batch_size must be
  1..1000"; 22023 "after_id of <kind> must be an id as rows_to_embed gives it (got …)"; 55000 "no
  embedding model is active".
Example: select row_id, content from hipocampo.rows_to_embed('messages', 100);
*/
create or replace function hipocampo.rows_to_embed(kind text, batch_size integer default 100, after_id text default null)
returns table (row_id text, content text)
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
    model text;
begin
    perform hipocampo_private._embedding_kind(kind);
    if batch_size is null or batch_size not between 1 and 1000 then
        raise exception 'batch_size must be 1..1000' using errcode = '22023';
    end if;
    -- A chunk's or message's cursor is a number, a memory's a uuid.
    begin
        if kind in ('chunks', 'messages') then
            perform rows_to_embed.after_id::bigint;
        else
            perform rows_to_embed.after_id::uuid;
        end if;
    exception when invalid_text_representation or numeric_value_out_of_range then
        raise exception 'after_id of % must be an id as rows_to_embed gives it (got %)', kind, after_id
            using errcode = '22023';
    end;
    select e.name into model from hipocampo_private.embedding_models as e where e.active;
    if model is null then
        raise exception 'no embedding model is active' using errcode = '55000';
    end if;
    if kind = 'chunks' then
        return query
        -- The contextual header ingestion embedded (the title and the chunk's heading path).
        select c.id::text, coalesce(c.metadata ->> 'title', d.title) || E'\n' || c.content
        from hipocampo_private.chunks as c
        inner join hipocampo_private.documents as d on d.id = c.document_id
        where c.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or c.id > rows_to_embed.after_id::bigint)
          -- One source row per content: the oldest, of whichever model.
          and c.id = (
              select min(o.id) from hipocampo_private.chunks as o
              where o.tenant_id = c.tenant_id and o.content_hash = c.content_hash
          )
          and not exists (
              select 1 from hipocampo_private.chunks as n
              where n.tenant_id = c.tenant_id and n.content_hash = c.content_hash and n.embedding_model = model
          )
          and not exists (
              select 1 from hipocampo_private.embedding_failures as f
              where f.kind = 'chunks' and f.row_id = c.id::text and (f.dead or f.next_attempt_at > now())
          )
        order by c.id
        limit batch_size
        for update of c skip locked;
    elsif kind = 'memories' then
        return query
        select m.id::text, m.description from hipocampo_private.memories as m
        where m.status = 'active' and m.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or m.id > rows_to_embed.after_id::uuid)
          and not exists (
              select 1 from hipocampo_private.embedding_failures as f
              where f.kind = 'memories' and f.row_id = m.id::text and (f.dead or f.next_attempt_at > now())
          )
        order by m.id
        limit batch_size
        for update of m skip locked;
    elsif kind = 'memory_staging' then
        return query
        select s.id::text, s.description from hipocampo_private.memory_staging as s
        where s.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or s.id > rows_to_embed.after_id::uuid)
          and not exists (
              select 1 from hipocampo_private.embedding_failures as f
              where f.kind = 'memory_staging' and f.row_id = s.id::text and (f.dead or f.next_attempt_at > now())
          )
        order by s.id
        limit batch_size
        for update of s skip locked;
    else
        return query
        select m.id::text, m.content from hipocampo_private.messages as m
        where m.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or m.id > rows_to_embed.after_id::bigint)
          and not exists (
              select 1 from hipocampo_private.embedding_failures as f
              where f.kind = 'messages' and f.row_id = m.id::text and (f.dead or f.next_attempt_at > now())
          )
        order by m.id
        limit batch_size
        for update of m skip locked;
    end if;
end;
$$;

/*
set_row_embeddings(kind text, items jsonb) -> integer

Purpose: store embeddings of the active model for rows rows_to_embed listed. A chunk gets a new
  row of the active model beside its source row (as ingestion adds a model's chunks: postings
  and statistics by the chunks triggers); a chunk of that content already there is kept. A
  memory or message that already has an embedding of the active model keeps it (a repeated
  call changes nothing). A stored row
  leaves the retry bookkeeping (embedding_failures). A message's
  tokens belong to its embedding's model, so they are cleared with it (the token backfill,
  messages_without_tokens, lists the message again).
Parameters: kind as rows_to_embed; items - [{"id": "<a chunk's or message's number, or a uuid>", "embedding":
  [floats]}].
Returns: the number of rows updated.
Errors: 22023 "kind must be chunks, memories, memory_staging or messages"; 22023 "items must be a json
  array"; 22023 "invalid item <id>: …" (an id of the wrong kind, an embedding that is not a
  vector); 22000 "embedding has N dimensions; model M expects D"; 55000 "no embedding model is
  active".
Example: select hipocampo.set_row_embeddings('messages', '[{"id": "42", "embedding": [0.1, …]}]');
*/
create or replace function hipocampo.set_row_embeddings(kind text, items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    item jsonb;
    v extensions.vector;
    model text;
    n integer := 0;
    one integer;
begin
    perform hipocampo_private._embedding_kind(kind);
    if items is null or jsonb_typeof(items) <> 'array' then
        raise exception 'items must be a json array' using errcode = '22023';
    end if;
    if not exists (select 1 from hipocampo_private.embedding_models as e where e.active) then
        raise exception 'no embedding model is active' using errcode = '55000';
    end if;
    for item in select x from jsonb_array_elements(items) as x loop
        v := (item ->> 'embedding')::extensions.vector;
        model := hipocampo_private._active_model(v, 'embedding');
        if kind = 'chunks' then
            insert into hipocampo_private.chunks (
                tenant_id, kb_id, document_id, chunk_index, content, token_count, metadata, content_hash,
                ts_config, embedding, embedding_model, expires_at
            )
            select o.tenant_id, o.kb_id, o.document_id, o.chunk_index, o.content, o.token_count, o.metadata,
                o.content_hash, o.ts_config, v, model, o.expires_at
            from hipocampo_private.chunks as o
            where o.id = (item ->> 'id')::bigint
            on conflict on constraint chunks_tenant_hash_model_key do nothing;
        elsif kind = 'memories' then
            update hipocampo_private.memories as m set embedding = v, embedding_model = model
            where m.id = (item ->> 'id')::uuid and m.embedding_model is distinct from model;
        elsif kind = 'memory_staging' then
            update hipocampo_private.memory_staging as s set embedding = v, embedding_model = model
            where s.id = (item ->> 'id')::uuid and s.embedding_model is distinct from model;
        else
            update hipocampo_private.messages as m
            set embedding = v, embedding_model = model, token_ids = null, token_bits = null
            where m.id = (item ->> 'id')::bigint and m.embedding_model is distinct from model;
        end if;
        get diagnostics one = row_count;
        n := n + one;
        -- Embedded now (or already): no longer a failure waiting for its retry.
        delete from hipocampo_private.embedding_failures as f
        where f.kind = set_row_embeddings.kind and f.row_id = item ->> 'id';
    end loop;
    return n;
exception when invalid_text_representation or numeric_value_out_of_range then
    raise exception 'invalid item %: %', item ->> 'id', sqlerrm using errcode = '22023';
end;
$$;

comment on function hipocampo.rows_to_embed(text, integer, text) is
'Chunks, active and staged memories and messages without an embedding of the active model (locked for the caller''s transaction): the work list after a model switch.';

comment on function hipocampo.set_row_embeddings(text, jsonb) is
'Store embeddings of the active model for rows rows_to_embed listed (a chunk gets a row of the active model; a message''s tokens are cleared with its old embedding).';

/*
chunks_without_sentences(batch_size integer default 100, filter_tenant_id uuid default null,
  after_chunk_id bigint default 0) -> table (chunk_id bigint, tenant_id uuid, content text)

Purpose: the sentence backfill's work list: chunks of the active model without sentence
  embeddings in knowledge bases whose rag.sentence_weight is above 0 (the active model's
  calibration <- the tenant's row <- the knowledge base's overrides), e.g. ingested before the
  weight was set, or given a row of a new model by set_row_embeddings. The listed chunks stay
  locked (for update skip locked) until the caller's transaction ends: store their sentences
  with set_chunk_sentences in the same transaction; concurrent workers take other chunks.
Parameters: batch_size 1..1000 chunks; filter_tenant_id - only that tenant's chunks (null: every
  tenant's); after_chunk_id - only chunks with a greater id (a caller's cursor).
Returns: at most batch_size rows by chunk id, with the chunk's content (its sentences are what
  the client embeds); none when no model is active.
Errors: 42501 for any role but service_role (no EXECUTE); 22023 "batch_size must be 1..1000".
Example: select chunk_id, content from hipocampo.chunks_without_sentences(100);
*/
create or replace function hipocampo.chunks_without_sentences(
    batch_size integer default 100, filter_tenant_id uuid default null, after_chunk_id bigint default 0
)
returns table (chunk_id bigint, tenant_id uuid, content text)
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
    model text;
begin
    if batch_size is null or batch_size not between 1 and 1000 then
        raise exception 'batch_size must be 1..1000' using errcode = '22023';
    end if;
    select e.name into model from hipocampo_private.embedding_models as e where e.active;
    return query
    with weighed as materialized (
        -- The knowledge bases whose gate reads sentences, each with its own config layers.
        select k.id from hipocampo_private.knowledge_bases as k
        where (chunks_without_sentences.filter_tenant_id is null or k.tenant_id = chunks_without_sentences.filter_tenant_id)
          and coalesce((
              hipocampo.effective_config(k.tenant_id, k.id) -> 'rag' ->> 'sentence_weight'
          )::double precision, 0) > 0
    )
    select c.id, c.tenant_id, c.content
    from hipocampo_private.chunks as c
    where c.kb_id in (select w.id from weighed as w)
      and c.embedding_model = model and c.sentence_embeddings is null
      and c.id > coalesce(chunks_without_sentences.after_chunk_id, 0)
    order by c.id
    limit batch_size
    for update of c skip locked;
end;
$$;

comment on function hipocampo.chunks_without_sentences(integer, uuid, bigint) is
'Chunks of the active model without sentence embeddings where rag.sentence_weight > 0 (locked for the caller''s transaction): the sentence backfill''s work list.';

/*
set_chunk_sentences(items jsonb) -> integer

Purpose: store the sentence embeddings of chunks chunks_without_sentences listed (the chunk's
  sentences embedded by its own model as passages, what ingestion sends as
  chunks[i].sentence_embeddings); a chunk's earlier ones are replaced.
Parameters: items - [{"id": "<chunk id>", "sentence_embeddings": [1..64 embeddings, each a json
  array of numbers or pgvector's text form, with the dimensions of the chunk's model]}].
Returns: the number of chunks updated (an id of no chunk counts 0).
Errors: 42501 for any role but service_role (no EXECUTE); 22023 "items must be a json array";
  22023 "sentence_embeddings of chunk <id> must be a json array of 1 to 64 embeddings"; 22023
  "invalid item <id>: …" (an id that is not a number, a sentence embedding that is not a
  vector); 22000 "a sentence embedding of chunk <id> has n dimensions; its model expects d".
Example: select hipocampo.set_chunk_sentences('[{"id": "42", "sentence_embeddings": ["[0.1,…]"]}]');
*/
create or replace function hipocampo.set_chunk_sentences(items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    item jsonb;
    vs extensions.vector [];
    dims integer;
    bad integer;
    n integer := 0;
    one integer;
begin
    if items is null or jsonb_typeof(items) <> 'array' then
        raise exception 'items must be a json array' using errcode = '22023';
    end if;
    for item in select x from jsonb_array_elements(items) as x loop
        if jsonb_typeof(item -> 'sentence_embeddings') is distinct from 'array'
            or jsonb_array_length(item -> 'sentence_embeddings') not between 1 and 64 then
            raise exception 'sentence_embeddings of chunk % must be a json array of 1 to 64 embeddings',
                item ->> 'id' using errcode = '22023';
        end if;
        vs := array(
            select (v.value #>> '{}')::extensions.vector
            from jsonb_array_elements(item -> 'sentence_embeddings') with ordinality as v
            order by v.ordinality
        );
        select extensions.vector_dims(c.embedding) into dims
        from hipocampo_private.chunks as c where c.id = (item ->> 'id')::bigint;
        select extensions.vector_dims(v) into bad from unnest(vs) as v
        where extensions.vector_dims(v) is distinct from dims
        limit 1;
        if dims is not null and bad is not null then
            raise exception 'a sentence embedding of chunk % has % dimensions; its model expects %',
                item ->> 'id', bad, dims using errcode = '22000';
        end if;
        update hipocampo_private.chunks as c set sentence_embeddings = vs
        where c.id = (item ->> 'id')::bigint;
        get diagnostics one = row_count;
        n := n + one;
    end loop;
    return n;
exception when invalid_text_representation or numeric_value_out_of_range then
    raise exception 'invalid item %: %', item ->> 'id', sqlerrm using errcode = '22023';
end;
$$;

comment on function hipocampo.set_chunk_sentences(jsonb) is
'Store chunks'' sentence embeddings (the sentence backfill; service_role).';

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

/*
record_embedding_failure(kind text, row_ids text[], error text) -> jsonb

Purpose: the retry bookkeeping of the embedding backfill (issue 20 §4): rows rows_to_embed listed
  whose vectors could not be computed (the provider failed) are retried after
  maintenance.embedding_retry_seconds * 2^(attempts - 1), at most
  maintenance.embedding_retry_max_seconds, and dead-lettered (no longer listed) after
  maintenance.embedding_max_attempts failures, keeping the last error. A row embedded later
  (set_row_embeddings) leaves the table.
Parameters: kind chunks | memories | memory_staging | messages; row_ids - the rows' ids as rows_to_embed
  gave them; error - what failed (up to 2,000 characters kept).
Returns: {"retrying": n, "dead": n} after this failure.
Errors: 42501 for any role but service_role (no EXECUTE); 22023 "kind must be chunks, memories,
  memory_staging or messages"; 55000 "maintenance config is incomplete: …".
Example: select hipocampo.record_embedding_failure('messages', array['42'], 'HTTP 503 from the provider');
*/
create or replace function hipocampo.record_embedding_failure(kind text, row_ids text[], error text)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    m jsonb := (select s.config -> 'maintenance' from hipocampo_private.settings as s where s.tenant_id is null);
    max_attempts integer := (m ->> 'embedding_max_attempts')::integer;
    base double precision := (m ->> 'embedding_retry_seconds')::double precision;
    cap double precision := (m ->> 'embedding_retry_max_seconds')::double precision;
    result jsonb;
begin
    perform hipocampo_private._embedding_kind(kind);
    if max_attempts is null or base is null or cap is null then
        raise exception 'maintenance config is incomplete: embedding_max_attempts, embedding_retry_seconds, embedding_retry_max_seconds (seed it from config.toml: hipocampo db migrate)'
            using errcode = '55000';
    end if;
    with failed as (
        insert into hipocampo_private.embedding_failures as f
            (kind, row_id, attempts, last_error, next_attempt_at, dead)
        select record_embedding_failure.kind, r, 1, left(coalesce(error, 'unknown error'), 2000),
            now() + make_interval(secs => least(base, cap)), max_attempts <= 1
        from (select distinct unnest(row_ids) as r) as ids
        where r is not null
        on conflict on constraint embedding_failures_pkey do update
        set attempts = f.attempts + 1,
            last_error = excluded.last_error,
            next_attempt_at = now() + make_interval(secs => least(base * power(2, f.attempts), cap)),
            dead = f.attempts + 1 >= max_attempts,
            updated_at = now()
        returning f.dead
    )
    select jsonb_build_object(
        'retrying', count(*) filter (where not failed.dead), 'dead', count(*) filter (where failed.dead)
    ) into result
    from failed;
    return result;
end;
$$;

/*
requeue_embedding_failures(kind text default null) -> integer

Purpose: give dead-lettered rows (and those waiting for a retry) back to the backfill at once,
  e.g. after the provider is fixed: their failure records are deleted, so rows_to_embed lists them
  again.
Parameters: kind - chunks | memories | memory_staging | messages, or null for all.
Returns: the number of rows requeued.
Errors: 42501 for any role but service_role (no EXECUTE); 22023 on an unknown kind.
Example: select hipocampo.requeue_embedding_failures('messages');
*/
create or replace function hipocampo.requeue_embedding_failures(kind text default null)
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    n integer;
begin
    if kind is not null then
        perform hipocampo_private._embedding_kind(kind);
    end if;
    delete from hipocampo_private.embedding_failures as f
    where requeue_embedding_failures.kind is null or f.kind = requeue_embedding_failures.kind;
    get diagnostics n = row_count;
    return n;
end;
$$;

comment on function hipocampo.record_embedding_failure(text, text[], text) is
'Record that rows could not be embedded: retried with exponential backoff, dead-lettered after maintenance.embedding_max_attempts.';

comment on function hipocampo.requeue_embedding_failures(text) is
'Give dead-lettered and waiting rows back to the embedding backfill.';

create index ingestion_jobs_running_idx on hipocampo_private.ingestion_jobs (heartbeat_at)
where status = 'running';

comment on column hipocampo_private.ingestion_jobs.heartbeat_at is
'Last sign of life of the running job (start, heartbeat_ingestion_job); a job silent for longer than maintenance.ingestion_lease_seconds is interrupted.';

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

comment on function hipocampo.heartbeat_ingestion_job(uuid) is 'Renew a running ingestion job''s lease.';

comment on function hipocampo.recover_ingestion_jobs(timestamptz, uuid) is
'Mark running ingestion jobs whose lease expired as failed (interrupted) and recompute their knowledge bases'' status.';

-- What the Python package read from hipocampo_private directly gets an RPC (issue 17 §2: Python
-- calls the public surface only): the tenant of a slug (Hipocampo.tenant_id), the documents of a
-- knowledge base (the agents' store clear, and a document listing for clients), a user's
-- membership role (the CLI's "make the local user a member" without demoting an admin), the
-- caller's memories without a vector (Memory.embed_missing), and the active embedding model
-- (the backfills' check).
/*
tenant_by_slug(slug text) -> uuid

Purpose: the id of the tenant with this slug, as the caller may see it: any tenant for
  service_role, the caller's own tenant for a member (null for another tenant's slug).
Parameters: slug - the tenant's slug.
Returns: the tenant id, or null.
Errors: 42501 as _caller; 22023 "slug must not be null".
Example: select hipocampo.tenant_by_slug('demo');
*/
create or replace function hipocampo.tenant_by_slug(slug text)
returns uuid
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
begin
    if tenant_by_slug.slug is null then
        raise exception 'slug must not be null' using errcode = '22023';
    end if;
    return (
        select t.id from hipocampo_private.tenants as t
        where t.slug = tenant_by_slug.slug and (c.kind = 'service' or t.id = c.tenant_id)
    );
end;
$$;

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

/*
membership_role(user_id uuid default null, tenant_id uuid default null) -> text

Purpose: a user's role in a tenant: admin | member, or null when not a member. A signed-in user
  asks about themselves; service_role names the user and the tenant.
Returns: 'admin' | 'member', or null when the user is not a member.
Errors: 42501 as _memory_actor (no tenant / no user / user mismatch).
Example: select hipocampo.membership_role('…'::uuid, '…'::uuid);  -- as service_role
*/
create or replace function hipocampo.membership_role(user_id uuid default null, tenant_id uuid default null)
returns text
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(membership_role.user_id, membership_role.tenant_id);
begin
    return (
        select m.role from hipocampo_private.memberships as m
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
    );
end;
$$;

/*
memories_without_embedding(keys text[] default null, user_id uuid default null,
  tenant_id uuid default null) -> table (id uuid, key text, description text)

Purpose: the user's active personal memories stored without a vector (written in SQL, e.g. by
  seed_profile), optionally only these keys, for the client to embed (set_memory_embeddings).
Returns: one row per memory, by key.
Errors: 42501 as _memory_actor.
Example: select * from hipocampo.memories_without_embedding();
*/
create or replace function hipocampo.memories_without_embedding(
    keys text[] default null, user_id uuid default null, tenant_id uuid default null
)
returns table (id uuid, key text, description text)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(memories_without_embedding.user_id,
        memories_without_embedding.tenant_id);
begin
    return query
    select m.id, m.key, m.description
    from hipocampo_private.memories as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.scope = 'personal'
      and m.status = 'active' and m.embedding is null
      and (memories_without_embedding.keys is null or m.key = any(memories_without_embedding.keys))
    order by m.key;
end;
$$;

/*
active_embedding_model() -> table (name text, provider text, dims integer, distance text)

Purpose: the embedding model search reads (the registry's active row); no row when none is
  active.
Returns: at most one row.
Errors: 42501 as _caller.
Example: select name, dims from hipocampo.active_embedding_model();
*/
create or replace function hipocampo.active_embedding_model()
returns table (name text, provider text, dims integer, distance text)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._caller();
    return query
    select e.name, e.provider, e.dims, e.distance from hipocampo_private.embedding_models as e where e.active;
end;
$$;

comment on function hipocampo.tenant_by_slug(text) is 'The id of the tenant with this slug, as the caller may see it.';

comment on function hipocampo.list_documents(uuid, text, integer) is
'The documents of a knowledge base by source_uri, a keyset page at a time (after_source_uri, max_rows).';

comment on function hipocampo.get_document(uuid, uuid) is 'One document of the tenant by id, with its knowledge base.';

comment on function hipocampo.membership_role(uuid, uuid) is 'A user''s role in a tenant (admin | member | null).';

comment on function hipocampo.memories_without_embedding(text[], uuid, uuid) is
'The user''s active personal memories stored without a vector.';

comment on function hipocampo.active_embedding_model() is 'The active embedding model of the registry.';
