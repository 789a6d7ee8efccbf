-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

create table hipocampo_private.memory_consents (
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    user_id uuid not null,
    granted boolean not null,
    -- LGPD art. 7 I: processing with the data subject's consent.
    legal_basis text not null default 'lgpd_art_7_i',
    updated_at timestamptz not null default now(),
    primary key (tenant_id, user_id)
);

alter table hipocampo_private.memory_consents enable row level security;

/*
tags_are_unique(tags text[]) -> boolean

Purpose: whether the array holds no tag twice (a CHECK cannot hold a subquery).
Returns: true when no tag repeats (true for null).
Errors: none (a pure function).
*/
create or replace function hipocampo_private.tags_are_unique(tags text[])
returns boolean
language sql
immutable
security invoker
set search_path = ''
as $$
    select cardinality(tags) = (select count(distinct t) from unnest(tags) as t)
$$;

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
    constraint memories_embedding_model check ((embedding is null) = (embedding_model is null)),
    constraint memories_tags_unique check (hipocampo_private.tags_are_unique(tags))
)
-- Room on each page so that the access-count update of each drain of the read queue
-- (hipocampo.drain_read_queue: access_count, last_accessed_at, no indexed column) can be a
-- HOT update: with full pages it writes a new tuple into every index, the HNSW one included.
with (fillfactor = 80);

alter table hipocampo_private.memories enable row level security;

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

-- supersedes references memories (on delete set null): without this index every deleted memory
-- (erasure, purge, a tenant's deletion) scanned the whole table for rows pointing at it (100k
-- memories of a benchmark's tenants: minutes, quadratic).
create index memories_supersedes_idx on hipocampo_private.memories (supersedes)
where supersedes is not null;


create table hipocampo_private.memory_events (
    id bigint primary key default hipocampo_private._opaque_id(true),
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
        'memory.decayed', 'memory.expired', 'memory.consent', 'memory.staged', 'memory.promoted',
        'memory.purged', 'memory.inspected', 'user.exported', 'user.erased'
    ))
);

alter table hipocampo_private.memory_events enable row level security;

create index memory_events_tenant_at_idx on hipocampo_private.memory_events (tenant_id, at);

create index memory_events_tenant_user_idx on hipocampo_private.memory_events (tenant_id, user_id);

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

Purpose: append one row to the memory event log. A user appends events of their own tenant about
  themselves, a tenant admin also about a member of their tenant (_data_subject); service_role any.
  What is written is what _data_subject resolved (a null user or tenant is the caller's own, never
  a row about nobody), and the values are bounded (issue 44 §5): reason at most
  maintenance.memory_event_reason_max_chars characters (200), detail at most
  maintenance.memory_event_detail_max_bytes bytes (131,072: twice the largest memory value
  memory.value_max_bytes allows);
  'user.erased' and 'memory.inspected' are written by erase_user and
  inspect_user_memory alone, never through this helper.
Errors: 42501 / P0002 as _data_subject; 22023 "memory event: … is written only by its RPC" /
  "memory event: reason must be at most n characters (…)" / "memory event: detail must be at most
  n bytes (…)"; 55000 as _operator_limit; 23514 an unknown event (memory_events_event_check).
Returns: nothing.
Example: perform hipocampo_private._memory_event(t, u, null, 'memory.consent', null, '{}');
*/
-- definer because callers append events but may never change or delete them.
create or replace function hipocampo_private._memory_event(
    tenant_id uuid, user_id uuid, memory_id uuid, event text, reason text, detail jsonb
)
returns void
language plpgsql
security definer
set search_path = ''
as $$
declare
    t uuid := _memory_event.tenant_id;
    u uuid := _memory_event.user_id;
    most_reason integer := hipocampo_private._operator_limit('maintenance', 'memory_event_reason_max_chars');
    most_detail integer := hipocampo_private._operator_limit('maintenance', 'memory_event_detail_max_bytes');
begin
    if (hipocampo_private._caller()).kind <> 'service' then
        select s.actor_tenant, s.actor_user into t, u
        from hipocampo_private._data_subject(_memory_event.user_id, _memory_event.tenant_id) as s;
    end if;
    if _memory_event.event in ('user.erased', 'memory.inspected') then
        raise exception 'memory event: % is written only by its RPC', _memory_event.event using errcode = '22023';
    end if;
    if char_length(_memory_event.reason) > most_reason then
        raise exception 'memory event: reason must be at most % characters (maintenance.memory_event_reason_max_chars)',
            most_reason using errcode = '22023';
    end if;
    if octet_length(_memory_event.detail::text) > most_detail then
        raise exception 'memory event: detail must be at most % bytes (maintenance.memory_event_detail_max_bytes)',
            most_detail using errcode = '22023';
    end if;
    insert into hipocampo_private.memory_events (tenant_id, user_id, memory_id, event, reason, detail)
    values (t, u, _memory_event.memory_id, _memory_event.event, _memory_event.reason,
            coalesce(_memory_event.detail, '{}'::jsonb));
end;
$$;

comment on table hipocampo_private.memories is
'Long-term memory: one active row per (tenant, owner, scope, key); history kept as deprecated rows.';

comment on table hipocampo_private.memory_consents is 'Memory consent per user (LGPD art. 7 I).';

comment on table hipocampo_private.memory_events is
'Audit of memory write attempts (with the gate''s reason) and of every change.';

/*
_memory_actor(user_id uuid, tenant_id uuid) -> record (actor_tenant uuid, actor_user uuid)

Purpose: who a memory, conversation or session call acts for, by _caller(): a user acts for
  themselves in their tenant (user_id / tenant_id may repeat them); service_role names both.
Errors: 42501 as _resolve_tenant; 42501 "user mismatch: the JWT names another user" when a user
  names another user; 42501 "no user: service_role must pass user_id".
Returns: (actor_tenant, actor_user): the tenant and user the call acts for.
Example: select actor_tenant, actor_user from hipocampo_private._memory_actor(null, null);
*/
create or replace function hipocampo_private._memory_actor(
    user_id uuid, tenant_id uuid, out actor_tenant uuid, out actor_user uuid
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
begin
    actor_tenant := hipocampo_private._resolve_tenant(_memory_actor.tenant_id);
    if c.kind = 'service' then
        if _memory_actor.user_id is null then
            raise exception 'no user: service_role must pass user_id' using errcode = '42501';
        end if;
        actor_user := _memory_actor.user_id;
        return;
    end if;
    if _memory_actor.user_id is not null and _memory_actor.user_id <> c.user_id then
        raise exception 'user mismatch: the JWT names another user' using errcode = '42501';
    end if;
    actor_user := c.user_id;
end;
$$;

/*
_plain_words(body text) -> text

Purpose: a text reduced to its words, for comparing texts (the answer cache's key,
  normalize_question; the memory gate's noise list and copy check): lower case, unaccented,
  every run of other characters one space, trimmed. Letters and digits of any script are kept:
  ASCII letters and digits and the Unicode blocks that hold letters (U+00C0-U+1FFF: Latin,
  Greek, Cyrillic, Hebrew, Arabic, Indic and the other scripts up to Greek extended; U+2C00-
  U+2DFF; CJK, kana, Hangul; Arabic presentation forms; fullwidth letters and digits; the
  supplementary planes' scripts and CJK). Punctuation, symbols and emoji are not (U+0080-
  U+00BF, U+2000-U+2BFF, U+3000-U+303F, U+FE00-U+FE6F, U+1F000 onwards …). The ranges are
  code points, not [[:alnum:]], so which characters are words does not depend on the
  database's LC_CTYPE (under C, [[:alnum:]] is ASCII only: two questions in Japanese were one
  cache key, and a memory in Cyrillic was refused as noise); lower() does (under C only ASCII
  letters are lowered).
Returns: the words separated by single spaces; '' for null or a text without a word.
Errors: none.
Example: select hipocampo_private._plain_words('  Qual é o PRAZO? 👍'); -- 'qual e o prazo'
*/
create or replace function hipocampo_private._plain_words(body text)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
    select pg_catalog.btrim(pg_catalog.regexp_replace(
        pg_catalog.lower(extensions.unaccent(coalesce(body, ''))),
        '[^a-z0-9\u00c0-\u1fff\u2c00-\u2dff\u2e80-\u2fff\u3040-\ud7ff\uf900-\ufdff\ufe70-\ufeff'
        '\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\uff66-\uffdc\U00010000-\U0001efff\U00020000-\U0003ffff]+',
        ' ', 'g'
    ))
$$;

/*
_memory_text_problem(description text, token_count integer, cfg jsonb) -> text[]

Purpose: the gate's checks of a memory's description: length (memory.min_chars characters,
  memory.max_tokens tokens estimated as ceil(characters / 4) unless the client reports more),
  noise (memory.noise), then personal and sensitive data (_pii_problem).
Returns: null, or [reason, message] with reason too_short | too_long | noise, or one of
  _pii_problem's.
Errors: none of its own (55000 from a config missing its keys is raised by _memory_config).
*/
create or replace function hipocampo_private._memory_text_problem(description text, token_count integer, cfg jsonb)
returns text[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    normalized text := hipocampo_private._plain_words(description);
begin
    if char_length(btrim(coalesce(description, ''))) < (cfg ->> 'min_chars')::integer then
        return array['too_short', format('memory text must have at least %s characters',
            (cfg ->> 'min_chars')::integer)];
    end if;
    if greatest(coalesce(token_count, 0), ceil(char_length(description) / 4.0)::integer)
        > (cfg ->> 'max_tokens')::integer then
        return array['too_long', format('memory text exceeds %s tokens',
            (cfg ->> 'max_tokens')::integer)];
    end if;
    if normalized = '' or normalized in (
        select jsonb_array_elements_text(cfg -> 'noise')
    ) then
        return array['noise', format('"%s" is conversational noise, not a memory', btrim(description))];
    end if;
    return hipocampo_private._pii_problem(description, cfg, 'memory text');
end;
$$;

/*
luhn_is_valid(digits text) -> boolean

Purpose: Luhn checksum of a string of digits (card numbers).
Returns: true when the Luhn checksum holds (non-digits ignored; false for none).
Errors: none (a pure function).
Example: select hipocampo_private.luhn_is_valid('4111111111111111'); -- true
*/
create or replace function hipocampo_private.luhn_is_valid(digits text)
returns boolean
language sql
immutable
security invoker
set search_path = ''
as $$
    select coalesce(sum(
        case when i % 2 = 1 then (d * 2) / 10 + (d * 2) % 10 else d end
    ) % 10 = 0, false)
    from (
        select (ordinality - 1)::integer as i, ch::integer as d
        from unnest(regexp_split_to_array(reverse(digits), '')) with ordinality as u (ch, ordinality)
        where ch ~ '^\d$'
    ) as x
$$;

/*
set_memory_consent(granted boolean, user_id uuid default null, tenant_id uuid default null) -> void

Purpose: record (or revoke) the user's consent to long-term memory (LGPD art. 7 I).
Parameters: granted; user_id / tenant_id only for service_role (users act for themselves).
Errors: 42501 no tenant / no user; 22023 "granted must be true or false".
Returns: nothing.
Example: select hipocampo.set_memory_consent(true);
*/
create or replace function hipocampo.set_memory_consent(
    granted boolean, user_id uuid default null, tenant_id uuid default null
)
returns void
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    a record := hipocampo_private._memory_actor(set_memory_consent.user_id, set_memory_consent.tenant_id);
begin
    if set_memory_consent.granted is null then
        raise exception 'granted must be true or false' using errcode = '22023';
    end if;
    insert into hipocampo_private.memory_consents as mc (tenant_id, user_id, granted)
    values (a.actor_tenant, a.actor_user, set_memory_consent.granted)
    on conflict on constraint memory_consents_pkey do update set granted = excluded.granted, updated_at = now();
    perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, null, 'memory.consent',
        case when granted then 'granted' else 'revoked' end, '{}'::jsonb);
end;
$$;

/*
_has_consent(tenant_id uuid, user_id uuid) -> boolean

Purpose: whether the user has consented to long-term memory in the tenant (memory_consents.granted;
  false when never asked): the one lookup behind memory_consent, the gate (_memory_gate), the
  backfill's check (_memory_write_allowed), the proposals from messages (_propose_memories) and
  inspect_user_memory. Read with the caller's rights (RLS: a user reads their own row, an admin
  their tenant's, service_role any).
Parameters: tenant_id, user_id - the tenant and the user.
Returns: true when the user has granted consent.
Errors: none.
Example: select hipocampo_private._has_consent('8c3a…'::uuid, '1f0e…'::uuid);
*/
create or replace function hipocampo_private._has_consent(tenant_id uuid, user_id uuid)
returns boolean
language sql
stable
security invoker
set search_path = ''
as $$
    select coalesce((
        select mc.granted from hipocampo_private.memory_consents as mc
        where mc.tenant_id = _has_consent.tenant_id and mc.user_id = _has_consent.user_id
    ), false);
$$;

/*
memory_consent(user_id uuid default null, tenant_id uuid default null) -> boolean

Purpose: whether the user has consented to long-term memory (LGPD art. 7 I), read before any
  work a refused write would waste: the Python client asks it before computing a memory's
  embedding, and without consent sends the write without one, so the gate refuses it (and records
  the attempt) without a model being loaded.
Parameters: user_id / tenant_id only for service_role (users read their own).
Returns: true when granted; false when revoked or never given.
Errors: 42501 as _memory_actor.
Example: select hipocampo.memory_consent();
*/
create or replace function hipocampo.memory_consent(user_id uuid default null, tenant_id uuid default null)
returns boolean
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
declare
    a record := hipocampo_private._memory_actor(memory_consent.user_id, memory_consent.tenant_id);
begin
    return hipocampo_private._has_consent(a.actor_tenant, a.actor_user);
end;
$$;

comment on function hipocampo.memory_consent(uuid, uuid) is
'Whether the user has consented to long-term memory (read before a write computes its embedding).';


/*
remember(key text, value jsonb, description text, category text, embedding vector default null,
  scope text default 'personal', confidence double precision default 0.9, source text default 'explicit_user',
  source_ref text default null, conversation_id uuid default null, tags text[] default null,
  emotion text default null, intensity numeric default null, life_domain text default null,
  pinned boolean default false, token_count integer default null, expires_at timestamptz default null,
  user_id uuid default null, tenant_id uuid default null) -> jsonb

Purpose: the memory gate plus upsert (_remember). Every attempt is recorded in memory_events with
  its reason. Refusals (in order): no consent (42501), missing category (23502), confidence <
  memory.min_confidence or < min_confidence_inferred for inferred (22003), description too short
  (22023) or too long (22001), noise (22023), personal or sensitive data in the description
  (22023), a value over memory.value_max_bytes (too_long, 22001) or nested deeper than
  memory.value_max_depth (invalid_value, 22023) or holding personal or sensitive data in any
  string or key (22023), quota of active memories reached (53400), an inferred or conversation
  write over an explicit_user memory (55000).
  Intensity < memory.staging_below_intensity (7) goes to short-term staging (status 'staged',
  expires_at defaulting to memory.staging_ttl_days, at most 30 days); otherwise long-term.
  A duplicate of an active memory returns that memory: a copy of its description (the same
  letters and digits, case, accents, punctuation and spacing ignored) or, with an embedding, a
  semantic duplicate (cosine > memory.duplicate_cosine, the model's calibration).
  Otherwise the one active row of (tenant, owner, scope, key) is replaced: the old one is
  deprecated (valid_to set) and the new one points to it (supersedes). Concurrent calls for one
  key are serialised by an advisory lock, so exactly one active row remains and no caller sees a
  unique violation.
Parameters: key 'a.b' snake_case, at most 200 characters; value any json (8,192 bytes, 8 levels);
  description the text (3 chars .. 3,000 tokens); category one of ten; embedding of the active
  model; confidence 0..1; tags snake_case, unique, default {category}; intensity 0..10 (rounded
  to 0.1); token_count >= 0; user_id/tenant_id only for service_role.
Returns: {"status": "created" | "updated" | "unchanged" | "duplicate" | "staged" | "rejected",
  "memory_id", "superseded", "expires_at", "reason", "sqlstate", "message"}.
Errors (raised, nothing recorded): 42501 as _memory_actor; 22023 "key / scope / source must not
  be null", "confidence must be 0..1 (got x)", "intensity must be 0..10 (got x)", "token_count
  must be >= 0 (got n)"; 22001 "key is n characters; the limit is 200"; 23514 on values outside
  the vocabularies; 22000 wrong dims; 22023 a staging expires_at beyond 30 days.
Example: select hipocampo.remember('prefs.short_answers', 'true', 'Prefere respostas curtas',
  'preference', '[…]'::extensions.vector, tags => array['respostas']);
*/
create or replace function hipocampo.remember(
    key text,
    value jsonb,
    description text,
    category text,
    embedding extensions.vector default null,
    scope text default 'personal',
    confidence double precision default 0.9,
    source text default 'explicit_user',
    source_ref text default null,
    conversation_id uuid default null,
    tags text[] default null,
    emotion text default null,
    intensity numeric default null,
    life_domain text default null,
    pinned boolean default false,
    token_count integer default null,
    expires_at timestamptz default null,
    user_id uuid default null,
    tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
begin
    if remember.confidence is null or not (remember.confidence between 0 and 1) then
        raise exception 'confidence must be 0..1 (got %)', remember.confidence using errcode = '22023';
    end if;
    if remember.intensity is not null and not (remember.intensity between 0 and 10) then
        raise exception 'intensity must be 0..10 (got %)', remember.intensity using errcode = '22023';
    end if;
    if remember.token_count < 0 then
        raise exception 'token_count must be >= 0 (got %)', remember.token_count using errcode = '22023';
    end if;
    return hipocampo_private._remember(
        remember.key, remember.value, remember.description, remember.category, remember.embedding,
        remember.scope, remember.confidence, remember.source, remember.source_ref, remember.conversation_id,
        remember.tags, remember.emotion, remember.intensity, remember.life_domain, remember.pinned,
        remember.token_count, remember.expires_at, remember.user_id, remember.tenant_id, 'auto'
    );
end;
$$;

/*
_correct_memory(old hipocampo_private.memories, value jsonb, description text, embedding vector,
  event_user uuid, reason text, detail jsonb) -> jsonb

Purpose: the correction itself, shared by correct_memory (the owner, under RLS) and
  correct_user_memory (a tenant admin): the old row is deprecated (history kept, valid_to set),
  a new one supersedes it with source explicit_user and confidence 1, and memory.corrected is
  recorded for event_user with reason and detail.
Returns: {"status": "corrected", "memory_id": new id, "superseded": old id}.
Errors: as the insert (RLS for an invoker caller), as _memory_event.
Example: return hipocampo_private._correct_memory(old, '"Ana"', 'O nome é Ana', null, u, null, '{}');
*/
create or replace function hipocampo_private._correct_memory(
    old hipocampo_private.memories, value jsonb, description text, embedding extensions.vector,
    event_user uuid, reason text, detail jsonb
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    new_id uuid;
begin
    update hipocampo_private.memories as m
    set status = 'deprecated', valid_to = now(), updated_at = now()
    where m.id = old.id;
    insert into hipocampo_private.memories (
        tenant_id, user_id, scope, category, key, value, description, confidence, source, source_ref,
        conversation_id, pinned, tags, emotion, intensity, life_domain, embedding, embedding_model,
        token_count, supersedes, expires_at
    ) values (
        old.tenant_id, old.user_id, old.scope, old.category, old.key, _correct_memory.value,
        btrim(_correct_memory.description), 1, 'explicit_user', 'correction', old.conversation_id,
        old.pinned, old.tags, old.emotion, old.intensity, old.life_domain,
        coalesce(_correct_memory.embedding, old.embedding),
        case when _correct_memory.embedding is null then old.embedding_model
             else (select e.name from hipocampo_private.embedding_models as e where e.active) end,
        ceil(char_length(_correct_memory.description) / 4.0)::integer, old.id, old.expires_at
    ) returning id into new_id;
    perform hipocampo_private._memory_event(old.tenant_id, _correct_memory.event_user,
        new_id, 'memory.corrected', _correct_memory.reason,
        jsonb_build_object('key', old.key, 'old_value', old.value, 'supersedes', old.id)
            || coalesce(_correct_memory.detail, '{}'::jsonb));
    return jsonb_build_object('status', 'corrected', 'memory_id', new_id, 'superseded', old.id);
end;
$$;

/*
correct_memory(memory_id uuid, value jsonb, description text, embedding vector default null) -> jsonb

Purpose: "isso está errado": replace a memory's value. The old row is deprecated (history kept,
  valid_to set), the new one supersedes it with source explicit_user and confidence 1; audited
  as memory.corrected (_correct_memory).
Returns: {"status": "corrected", "memory_id": new id, "superseded": old id}.
Errors: 42501 as _caller (before any other work); P0002 "unknown memory" (not visible to the caller, or not active).
Example: select hipocampo.correct_memory('…', '"Ana"', 'O nome do usuário é Ana');
*/
create or replace function hipocampo.correct_memory(
    memory_id uuid, value jsonb, description text, embedding extensions.vector default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    old hipocampo_private.memories;
begin
    select * into old from hipocampo_private.memories as m
    where m.id = correct_memory.memory_id and m.status = 'active'
    for update;
    if old.id is null then
        raise exception 'unknown memory: %', memory_id using errcode = 'P0002';
    end if;
    return hipocampo_private._correct_memory(
        old, correct_memory.value, correct_memory.description, correct_memory.embedding,
        coalesce((select auth.uid()), old.user_id), null, '{}'::jsonb
    );
end;
$$;

/*
forget_memory(memory_id uuid) -> boolean

Purpose: "esquece isso": soft delete (status deleted); the row stays for audit until erased.
Returns: true when an active memory was forgotten, false when none is visible with that id.
Example: select hipocampo.forget_memory('…');
Errors: 42501 as _caller (before any other work).
*/
create or replace function hipocampo.forget_memory(memory_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    m hipocampo_private.memories;
begin
    update hipocampo_private.memories as x
    set status = 'deleted', valid_to = now(), updated_at = now()
    where x.id = forget_memory.memory_id and x.status = 'active'
    returning * into m;
    if m.id is null then
        return false;
    end if;
    perform hipocampo_private._memory_event(m.tenant_id, coalesce((select auth.uid()), m.user_id), m.id,
        'memory.forgotten', null, jsonb_build_object('key', m.key));
    return true;
end;
$$;

/*
hard_delete_memory(memory_id uuid) -> boolean

Purpose: compliance deletion of a memory row and its history chain links (service_role only).
Returns: true when a row was deleted.
Errors: 42501 for any role but service_role (no EXECUTE); 42501 as _caller.
Example: select hipocampo.hard_delete_memory('…');
*/
create or replace function hipocampo.hard_delete_memory(memory_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    m hipocampo_private.memories;
begin
    delete from hipocampo_private.memories as x where x.id = hard_delete_memory.memory_id returning * into m;
    if m.id is null then
        return false;
    end if;
    perform hipocampo_private._memory_event(m.tenant_id, m.user_id, null, 'memory.hard_deleted', null,
        jsonb_build_object('key', m.key));
    return true;
end;
$$;

/*
lookup_memories(key text default null, category text default null, include_history boolean default false)
  -> setof hipocampo_private.memories

Purpose: exact lookup by key and/or category of the caller's visible memories (active ones,
  or the whole history with include_history). Counts as an access (_record_read).
Returns: memories rows (every column; clients drop the embedding), newest first within a key.
Errors: 42501 as _resolve_tenant.
Example: select value from hipocampo.lookup_memories(key => 'user.name');
*/
create or replace function hipocampo.lookup_memories(
    key text default null, category text default null, include_history boolean default false
)
returns setof hipocampo_private.memories
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(null);
    n integer;
begin
    return query
    with found as (
        select m.* from hipocampo_private.memories as m
        where m.tenant_id = t
          and (lookup_memories.key is null or m.key = lookup_memories.key)
          and (lookup_memories.category is null or m.category = lookup_memories.category)
          and (include_history or m.status = 'active')
          and ((select auth.uid()) is null or m.user_id = (select auth.uid()) or m.scope = 'tenant_shared')
    )
    select * from found order by found.key, found.valid_from desc;
    get diagnostics n = row_count;
    perform hipocampo_private._record_read(
        t, 'lookup_memories', n, null, null,
        memory_ids => array(select m.id from hipocampo_private.memories as m
              where m.tenant_id = t and m.status = 'active'
                and (lookup_memories.key is null or m.key = lookup_memories.key)
                and (lookup_memories.category is null or m.category = lookup_memories.category)
                and ((select auth.uid()) is null or m.user_id = (select auth.uid()) or m.scope = 'tenant_shared')
              limit 10000)
    );
end;
$$;

/*
run_memory_maintenance(now timestamptz default now()) -> jsonb

Purpose: decay, expiry and the staging purge, with an explicit clock (tests freeze it). Its
  events take ids in any order within a millisecond (_opaque_id(false)): a run may write
  thousands, and ordered ids cost a millisecond each.
  Memories not accessed for memory.decay_days lose memory.decay_step confidence, once per
  period; below memory.deactivate_below they expire; explicit_user and pinned memories never
  decay; active memories past expires_at expire; staged memories past expires_at are deleted
  unless pinned. Events memory.decayed / memory.expired / memory.purged are recorded.
  Scheduled with pg_cron (schedule_maintenance) where the extension exists; locally
  `hipocampo worker`.
Returns: {"decayed": n, "deactivated": n, "expired": n, "staging_purged": n}.
Errors: 55000 "memory config is incomplete: …" (not seeded from config.toml).
Example: select hipocampo.run_memory_maintenance('2027-01-01'::timestamptz);
*/
create or replace function hipocampo.run_memory_maintenance(now timestamptz default now())
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    -- The global row with the active embedding model's calibration (issue 22 §2): every key of
    -- the section is checked, although maintenance reads only the decay keys.
    cfg jsonb := hipocampo_private._memory_config(
        (select s.config -> 'memory' from hipocampo_private.settings as s where s.tenant_id is null)
        || coalesce(hipocampo_private._calibration() -> 'memory', '{}'::jsonb)
    );
    period interval := make_interval(days => (cfg ->> 'decay_days')::integer);
    step real := (cfg ->> 'decay_step')::real;
    low real := (cfg ->> 'deactivate_below')::real;
    n_decayed integer;
    n_low integer;
    n_expired integer;
    n_purged integer;
begin
    with decayed as (
        update hipocampo_private.memories as m
        set confidence = greatest(m.confidence - step, 0), last_decayed_at = run_memory_maintenance.now,
            updated_at = run_memory_maintenance.now
        where m.status = 'active' and not m.pinned and m.source <> 'explicit_user'
          and run_memory_maintenance.now - greatest(
              coalesce(m.last_accessed_at, m.created_at), coalesce(m.last_decayed_at, '-infinity')
          ) >= period
        returning m.id, m.tenant_id, m.user_id, m.confidence
    ), logged as (
        insert into hipocampo_private.memory_events (id, at, tenant_id, user_id, memory_id, event, detail)
        select hipocampo_private._opaque_id(), run_memory_maintenance.now, d.tenant_id, d.user_id, d.id, 'memory.decayed',
            jsonb_build_object('confidence', d.confidence)
        from decayed as d
    )
    select count(*) into n_decayed from decayed;

    with low_rows as (
        update hipocampo_private.memories as m
        set status = 'expired', valid_to = run_memory_maintenance.now, updated_at = run_memory_maintenance.now
        where m.status = 'active' and m.confidence < low and not m.pinned and m.source <> 'explicit_user'
        returning m.id, m.tenant_id, m.user_id
    ), logged as (
        insert into hipocampo_private.memory_events (id, at, tenant_id, user_id, memory_id, event, reason)
        select hipocampo_private._opaque_id(), run_memory_maintenance.now, l.tenant_id, l.user_id, l.id, 'memory.expired', 'low_confidence'
        from low_rows as l
    )
    select count(*) into n_low from low_rows;

    with gone as (
        update hipocampo_private.memories as m
        set status = 'expired', valid_to = run_memory_maintenance.now, updated_at = run_memory_maintenance.now
        where m.status = 'active' and m.expires_at <= run_memory_maintenance.now
        returning m.id, m.tenant_id, m.user_id
    ), logged as (
        insert into hipocampo_private.memory_events (id, at, tenant_id, user_id, memory_id, event, reason)
        select hipocampo_private._opaque_id(), run_memory_maintenance.now, g.tenant_id, g.user_id, g.id, 'memory.expired', 'expires_at'
        from gone as g
    )
    select count(*) into n_expired from gone;

    with purged as (
        delete from hipocampo_private.memory_staging as s
        where s.expires_at <= run_memory_maintenance.now and not s.pinned
        returning s.id, s.tenant_id, s.user_id, s.key
    ), logged as (
        insert into hipocampo_private.memory_events (id, at, tenant_id, user_id, memory_id, event, reason, detail)
        select hipocampo_private._opaque_id(), run_memory_maintenance.now, p.tenant_id, p.user_id, p.id, 'memory.purged', 'staging_expired',
            jsonb_build_object('key', p.key)
        from purged as p
    )
    select count(*) into n_purged from purged;

    return jsonb_build_object('decayed', n_decayed, 'deactivated', n_low, 'expired', n_expired,
        'staging_purged', n_purged);
end;
$$;

/*
seed_profile(profile jsonb, source_ref text default 'onboarding', user_id uuid default null,
  tenant_id uuid default null) -> jsonb

Purpose: write the onboarding profile as memories (source profile_seed, confidence 1) through
  the gate: user.name, user.preferred_language, user.timezone, user.locale, user.role_title,
  user.communication_style (identity_profile); tenant.name, tenant.segment,
  tenant.business_model (tenant_business); tenant.primary_goals (goals_kpis); prefs.no_emojis,
  prefs.no_tech_terms, prefs.short_answers, prefs.channels_enabled (preference).
  Idempotent (unchanged values write nothing); any other key is refused, so free conversation is
  never stored. Each memory's description is a Portuguese sentence ("Cargo do usuário: síndica";
  yes/no for booleans), so that semantic recall finds profile facts by meaning.
Returns: {"<key>": "<status of remember>", …}.
Errors: 42501 as _caller (before any other work); 22023 "unknown profile keys: …"; 22023 on a source_ref other than onboarding | profile.
Example: select hipocampo.seed_profile('{"user.name": "Ana", "prefs.short_answers": true}');
*/
create or replace function hipocampo.seed_profile(
    profile jsonb, source_ref text default 'onboarding', user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    allowed constant jsonb := '{
        "user.name": "identity_profile", "user.preferred_language": "identity_profile",
        "user.timezone": "identity_profile", "user.locale": "identity_profile",
        "user.role_title": "identity_profile", "user.communication_style": "identity_profile",
        "tenant.name": "tenant_business", "tenant.segment": "tenant_business",
        "tenant.business_model": "tenant_business", "tenant.primary_goals": "goals_kpis",
        "prefs.no_emojis": "preference", "prefs.no_tech_terms": "preference",
        "prefs.short_answers": "preference", "prefs.channels_enabled": "preference"
    }';
    -- What each key means, in the users' language: the description that gets embedded.
    labels constant jsonb := '{
        "user.name": "Nome do usuário", "user.preferred_language": "Idioma preferido do usuário",
        "user.timezone": "Fuso horário do usuário", "user.locale": "Localidade (formato de datas e números) do usuário",
        "user.role_title": "Cargo do usuário", "user.communication_style": "Estilo de comunicação preferido",
        "tenant.name": "Nome da empresa ou organização", "tenant.segment": "Segmento de atuação da empresa",
        "tenant.business_model": "Modelo de negócio da empresa", "tenant.primary_goals": "Objetivos principais da empresa",
        "prefs.no_emojis": "Prefere respostas sem emojis", "prefs.no_tech_terms": "Prefere evitar termos técnicos",
        "prefs.short_answers": "Prefere respostas curtas", "prefs.channels_enabled": "Canais de atendimento habilitados"
    }';
    unknown text;
    item record;
    result jsonb := '{}'::jsonb;
    r jsonb;
begin
    if profile is null or jsonb_typeof(profile) <> 'object' then
        raise exception 'profile must be a json object' using errcode = '22023';
    end if;
    if source_ref not in ('onboarding', 'profile') then
        raise exception 'source_ref must be onboarding or profile (got %)', source_ref using errcode = '22023';
    end if;
    select string_agg(k, ', ' order by k) into unknown from jsonb_object_keys(profile) as k
    where not allowed ? k;
    if unknown is not null then
        raise exception 'unknown profile keys: %', unknown using errcode = '22023',
            hint = 'seed_profile stores only the onboarding keys; use remember for anything else';
    end if;
    for item in select e.key, e.value from jsonb_each(profile) as e order by e.key loop
        r := hipocampo.remember(
            key => item.key, value => item.value,
            description => (labels ->> item.key) || ': ' || case jsonb_typeof(item.value)
                when 'boolean' then case when item.value = 'true'::jsonb then 'sim' else 'não' end
                when 'array' then (select string_agg(x, ', ') from jsonb_array_elements_text(item.value) as x)
                else coalesce(item.value #>> '{}', item.value::text) end,
            category => allowed ->> item.key, confidence => 1.0, source => 'profile_seed',
            source_ref => seed_profile.source_ref,
            tags => array[split_part(item.key, '.', 1), replace(split_part(item.key, '.', 2), '.', '_')],
            user_id => seed_profile.user_id, tenant_id => seed_profile.tenant_id
        );
        result := result || jsonb_build_object(item.key, r ->> 'status');
    end loop;
    return result;
end;
$$;

comment on function hipocampo.set_memory_consent(boolean, uuid, uuid) is
'Record or revoke the user''s consent to long-term memory (LGPD art. 7 I).';

comment on function hipocampo.remember(
    text, jsonb, text, text, extensions.vector, text, double precision, text, text, uuid, text[], text, numeric,
    text, boolean, integer, timestamptz, uuid, uuid
) is 'Memory gate + upsert: refuses (recorded, with SQLSTATE) or stores one active value per key.';

comment on function hipocampo.correct_memory(uuid, jsonb, text, extensions.vector) is
'Correct a memory: new value, old one deprecated, audited.';

comment on function hipocampo.forget_memory(uuid) is 'Forget a memory (soft delete).';

comment on function hipocampo.hard_delete_memory(uuid) is 'Delete a memory row for compliance (service_role).';

comment on function hipocampo.lookup_memories(text, text, boolean) is 'Exact lookup by key and/or category.';

comment on function hipocampo.run_memory_maintenance(timestamptz) is
'Decay, deactivation and expiry of memories at a given clock.';

comment on function hipocampo.seed_profile(jsonb, text, uuid, uuid) is
'Write the onboarding profile keys as memories (idempotent).';
