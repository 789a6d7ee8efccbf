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
    constraint embedding_models_name_format check (name ~ '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$'),
    constraint embedding_models_provider_check check (provider in ('local', 'openai', 'azure')),
    -- pgvector's HNSW indexes vectors of up to 2,000 dimensions.
    constraint embedding_models_dims_check check (dims between 1 and 2000),
    constraint embedding_models_distance_check check (distance = 'cosine')
);

-- At most one active model: queries without an explicit model use it.
create unique index embedding_models_one_active on hipocampo_private.embedding_models (active)
where active;

alter table hipocampo_private.embedding_models enable row level security;

grant select on hipocampo_private.embedding_models to authenticated;
grant all on hipocampo_private.embedding_models to service_role;

create policy "authenticated users can read the embedding-model registry"
on hipocampo_private.embedding_models
for select
to authenticated
using (true);

comment on table hipocampo_private.embedding_models is
'Embedding models (name, provider, dims, distance); one active. Each has a partial HNSW index on chunks.';
