-- Long-term memory: consent, memories (one active row per key), and the memory event log.
--
-- Rules live here, not in clients: the gate (hipocampo.remember), upsert with supersede,
-- correction, forgetting, search and decay are SQL functions (next migrations).

create table hipocampo_private.memory_consents (
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    user_id uuid not null,
    granted boolean not null,
    -- LGPD art. 7 I: processing with the data subject's consent.
    legal_basis text not null default 'lgpd_art_7_i',
    updated_at timestamptz not null default now(),
    primary key (tenant_id, user_id)
);

create table hipocampo_private.memories (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    -- Owner (personal) or author (tenant_shared).
    user_id uuid not null,
    scope text not null default 'personal',
    category text not null,
    key text not null,
    value jsonb not null,
    description text not null,
    confidence real not null,
    status text not null default 'active',
    source text not null,
    source_ref text,
    conversation_id uuid,
    pinned boolean not null default false,
    tags text[] not null,
    emotion text,
    intensity numeric(3, 1),
    life_domain text,
    embedding extensions.vector,
    embedding_model text references hipocampo_private.embedding_models (name),
    emotional_embedding extensions.vector,
    token_count integer not null default 0,
    valid_from timestamptz not null default now(),
    valid_to timestamptz,
    supersedes uuid references hipocampo_private.memories (id) on delete set null,
    access_count integer not null default 0,
    last_accessed_at timestamptz,
    last_decayed_at timestamptz,
    expires_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint memories_scope_check check (scope in ('personal', 'tenant_shared')),
    constraint memories_category_check check (category in (
        'identity_profile', 'tenant_business', 'operating_model', 'goals_kpis',
        'tools_integrations', 'people_contacts', 'projects', 'preference', 'pattern', 'style'
    )),
    constraint memories_key_format check (key ~ '^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$'),
    constraint memories_confidence_range check (confidence between 0 and 1),
    constraint memories_status_check check (status in ('active', 'deprecated', 'deleted', 'expired')),
    constraint memories_source_check check (source in (
        'profile_seed', 'explicit_user', 'inferred', 'admin_system', 'conversation', 'behavior_analysis'
    )),
    -- Tags: at least one, snake_case, no repeats.
    constraint memories_tags_check check (
        cardinality(tags) >= 1
        and array_to_string(tags, ',') ~ '^[a-z][a-z0-9_]*(,[a-z][a-z0-9_]*)*$'
    ),
    constraint memories_emotion_check check (emotion is null or emotion in (
        'alegria', 'tristeza', 'ansiedade', 'raiva', 'medo', 'surpresa', 'calma', 'nojo',
        'frustracao', 'gratidao', 'esperanca', 'orgulho', 'vergonha', 'culpa', 'neutro'
    )),
    constraint memories_intensity_range check (intensity is null or intensity between 0 and 10),
    constraint memories_life_domain_check check (life_domain is null or life_domain in (
        'trabalho', 'relacionamentos', 'saude', 'financas', 'outros'
    )),
    constraint memories_embedding_model check ((embedding is null) = (embedding_model is null))
);

-- Exactly one active memory per (tenant, owner, scope, key); tenant_shared keys are per tenant.
create unique index memories_one_active_per_key on hipocampo_private.memories (
    tenant_id, scope, key,
    (case when scope = 'personal' then user_id else '00000000-0000-0000-0000-000000000000'::uuid end)
)
where status = 'active';

-- RLS filters on tenant_id and user_id; searches scope on (tenant, status).
create index memories_tenant_user_idx on hipocampo_private.memories (tenant_id, user_id, status);
create index memories_tenant_scope_idx on hipocampo_private.memories (tenant_id, scope, status);
create index memories_tags_idx on hipocampo_private.memories using gin (tags);
create index memories_expires_at_idx on hipocampo_private.memories (expires_at)
where expires_at is not null;

-- The unique-tags check needs a function: a CHECK cannot hold a subquery.
create function hipocampo_private.tags_are_unique(tags text[])
returns boolean
language sql
immutable
security invoker
set search_path = ''
as $$
    select cardinality(tags) = (select count(distinct t) from unnest(tags) as t)
$$;

alter table hipocampo_private.memories
add constraint memories_tags_unique check (hipocampo_private.tags_are_unique(tags));

create table hipocampo_private.memory_events (
    id bigint generated always as identity primary key,
    at timestamptz not null default now(),
    tenant_id uuid not null,
    -- Pseudonymous after erasure: user_id is replaced by a hash.
    user_id uuid,
    user_ref text,
    memory_id uuid,
    event text not null,
    reason text,
    detail jsonb not null default '{}'::jsonb,
    constraint memory_events_event_check check (event in (
        'memory.write_rejected', 'memory.created', 'memory.updated', 'memory.duplicate',
        'memory.unchanged', 'memory.corrected', 'memory.forgotten', 'memory.hard_deleted',
        'memory.decayed', 'memory.expired', 'memory.consent', 'user.erased'
    ))
);

create index memory_events_tenant_at_idx on hipocampo_private.memory_events (tenant_id, at);
create index memory_events_tenant_user_idx on hipocampo_private.memory_events (tenant_id, user_id);

alter table hipocampo_private.memory_consents enable row level security;
alter table hipocampo_private.memories enable row level security;
alter table hipocampo_private.memory_events enable row level security;

grant select, insert, update on hipocampo_private.memory_consents to authenticated;
grant select, insert, update, delete on hipocampo_private.memories to authenticated;
grant select on hipocampo_private.memory_events to authenticated;
grant all on hipocampo_private.memory_consents to service_role;
grant all on hipocampo_private.memories to service_role;
grant all on hipocampo_private.memory_events to service_role;

create policy "users can read their own consent"
on hipocampo_private.memory_consents
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
);

create policy "users can record their own consent"
on hipocampo_private.memory_consents
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
);

create policy "users can change their own consent"
on hipocampo_private.memory_consents
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
)
with check (user_id = (select auth.uid()));

create policy "users read their personal memories and their tenant's shared ones"
on hipocampo_private.memories
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (user_id = (select auth.uid()) or scope = 'tenant_shared')
);

create policy "users write personal memories, admins shared ones"
on hipocampo_private.memories
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
    and (scope = 'personal' or (select hipocampo_private.current_tenant_role()) = 'admin')
);

create policy "users update their personal memories, admins shared ones"
on hipocampo_private.memories
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
)
with check (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "users delete their personal memories, admins shared ones"
on hipocampo_private.memories
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
);

create policy "users read their own memory events, admins their tenant's"
on hipocampo_private.memory_events
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (user_id = (select auth.uid()) or (select hipocampo_private.current_tenant_role()) = 'admin')
);

/*
_memory_event(tenant_id uuid, user_id uuid, memory_id uuid, event text, reason text, detail jsonb) -> void

Purpose: append one row to the memory event log (audit of every write attempt and change).
*/
-- definer because callers append events but may never change or delete them.
create function hipocampo_private._memory_event(
    tenant_id uuid, user_id uuid, memory_id uuid, event text, reason text, detail jsonb
)
returns void
language sql
security definer
set search_path = ''
as $$
    insert into hipocampo_private.memory_events (tenant_id, user_id, memory_id, event, reason, detail)
    values (
        _memory_event.tenant_id, _memory_event.user_id, _memory_event.memory_id,
        _memory_event.event, _memory_event.reason, coalesce(_memory_event.detail, '{}'::jsonb)
    )
$$;

grant execute on function hipocampo_private.tags_are_unique(text[]) to authenticated, service_role;
grant execute on function hipocampo_private._memory_event(uuid, uuid, uuid, text, text, jsonb)
to authenticated, service_role;

comment on table hipocampo_private.memories is
'Long-term memory: one active row per (tenant, owner, scope, key); history kept as deprecated rows.';
comment on table hipocampo_private.memory_consents is 'Memory consent per user (LGPD art. 7 I).';
comment on table hipocampo_private.memory_events is
'Audit of memory write attempts (with the gate''s reason) and of every change.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
