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
    constraint knowledge_bases_name_length check (char_length(name) between 1 and 200),
    constraint knowledge_bases_status_check check (
        status in ('draft', 'indexing', 'ready', 'error')
    ),
    constraint knowledge_bases_language_check check (
        language in ('portuguese', 'english', 'simple')
    ),
    constraint knowledge_bases_overrides_is_object check (jsonb_typeof(overrides) = 'object'),
    constraint knowledge_bases_tenant_name_key unique (tenant_id, name),
    -- Target of the (kb_id, tenant_id) foreign keys: a row never points into another tenant.
    constraint knowledge_bases_id_tenant_key unique (id, tenant_id)
);

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
    constraint documents_source_type_check check (source_type in (
        'regulation', 'policy', 'assembly_minutes', 'reservation', 'decision',
        'penalty', 'metric', 'faq', 'manual', 'other'
    )),
    constraint documents_trust_score_range check (trust_score between 0 and 1),
    constraint documents_data_classification_check check (
        data_classification in ('public', 'internal', 'confidential', 'restricted')
    ),
    constraint documents_status_check check (status in ('active', 'superseded', 'archived')),
    constraint documents_title_length check (char_length(title) between 1 and 500),
    constraint documents_kb_source_uri_key unique (kb_id, source_uri),
    constraint documents_id_tenant_key unique (id, tenant_id),
    constraint documents_kb_fkey foreign key (kb_id, tenant_id)
    references hipocampo_private.knowledge_bases (id, tenant_id) on delete cascade
);

create index knowledge_bases_tenant_id_idx on hipocampo_private.knowledge_bases (tenant_id);
create index documents_tenant_kb_idx on hipocampo_private.documents (tenant_id, kb_id);
create index documents_expires_at_idx on hipocampo_private.documents (expires_at)
where expires_at is not null;

alter table hipocampo_private.knowledge_bases enable row level security;
alter table hipocampo_private.documents enable row level security;

grant select, insert, update, delete on hipocampo_private.knowledge_bases to authenticated;
grant select, insert, update, delete on hipocampo_private.documents to authenticated;
grant all on hipocampo_private.knowledge_bases to service_role;
grant all on hipocampo_private.documents to service_role;

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
comment on table hipocampo_private.documents is
'Source documents; deleting one deletes its chunks and their embeddings (on delete cascade).';
