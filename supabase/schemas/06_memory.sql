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
as $$
declare
    a record := hipocampo_private._memory_actor(memory_consent.user_id, memory_consent.tenant_id);
begin
    return coalesce((
        select mc.granted from hipocampo_private.memory_consents as mc
        where mc.tenant_id = a.actor_tenant and mc.user_id = a.actor_user
    ), false);
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
  string or key (22023), quota of active memories reached (53400), an inferred write over an
  explicit_user memory (55000).
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

-- Short-term staging: memories of intensity < 7 wait here (expires_at required, at most 30 days
-- ahead) until promoted to long-term memory or purged. The memory HNSW indexes.
-- Same shape as memories (columns, defaults, checks, indexes), plus the tenant FK, the expiry
-- rule (at most 30 days ahead of the write; issue: memory engine §2) and fillfactor 80 (the
-- access-count updates stay HOT, as on memories).
create table hipocampo_private.memory_staging (
    like hipocampo_private.memories including defaults including constraints including indexes,
    constraint memory_staging_tenant_id_fkey foreign key (tenant_id)
    references hipocampo_private.tenants (id) on delete cascade,
    constraint memory_staging_expiry_window check (
        expires_at > created_at and expires_at <= created_at + interval '30 days'
    ),
    constraint memory_staging_status_check_active check (status = 'active')
)
with (fillfactor = 80);

-- A staged memory always expires (LIKE cannot change a copied column's nullability).
alter table hipocampo_private.memory_staging alter column expires_at set not null;

alter table hipocampo_private.memory_staging enable row level security;

-- A zero embedding's cosine is NaN, which PostgreSQL orders above every number: the row would pass
-- every similarity floor of every search. Checked on new rows (not valid: rows stored before the
-- check are kept as they are).
alter table hipocampo_private.memories add constraint memories_embedding_not_zero
check (extensions.vector_norm(embedding) <> 0) not valid;

alter table hipocampo_private.memory_staging add constraint memory_staging_embedding_not_zero
check (extensions.vector_norm(embedding) <> 0) not valid;

create policy "users read their staged memories and their tenant's shared ones"
on hipocampo_private.memory_staging
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (user_id = (select auth.uid()) or scope = 'tenant_shared')
);

create policy "users delete their staged memories, admins shared ones"
on hipocampo_private.memory_staging
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
);

comment on table hipocampo_private.memory_staging is
'Short-term memory: intensity < 7, expires within 30 days unless promoted (or pinned).';

/*
_active_model(v vector, label text) -> text

Purpose: the active embedding model's name, after checking that `v` has its dimensions.
Parameters: v - a vector; label - its name in the error message (e.g. 'query_embedding').
Errors: 22000 "<label> has N dimensions; model M expects D".
Returns: the active model's name.
Example: model := hipocampo_private._active_model(embedding, 'embedding');
*/
create or replace function hipocampo_private._active_model(v extensions.vector, label text)
returns text
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    m hipocampo_private.embedding_models;
begin
    select * into m from hipocampo_private.embedding_models as e where e.active;
    if extensions.vector_dims(v) <> m.dims then
        raise exception '% has % dimensions; model % expects %', label, extensions.vector_dims(v), m.name, m.dims
            using errcode = '22000';
    end if;
    return m.name;
end;
$$;

/*
_memory_gate(tenant_id uuid, user_id uuid, category text, confidence double precision, source text,
  description text, token_count integer, value jsonb, cfg jsonb) -> text[]

Purpose: _remember's first step, the gate before any lock: consent (memory_consents), a category,
  the confidence floor (memory.min_confidence, or memory.min_confidence_inferred for inferred
  memories), then the description (_memory_text_problem) and the value (_memory_value_problem).
Returns: null, or [reason, sqlstate, message]: no_consent 42501, missing_category 23502,
  low_confidence 22003, too_long 22001, and the text and value problems 22023.
Errors: none of its own.
*/
create or replace function hipocampo_private._memory_gate(
    tenant_id uuid, user_id uuid, category text, confidence double precision, source text,
    description text, token_count integer, value jsonb, cfg jsonb
)
returns text[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    floor double precision := case when source = 'inferred'
        then (cfg ->> 'min_confidence_inferred')::double precision
        else (cfg ->> 'min_confidence')::double precision end;
    problem text[];
begin
    if not coalesce((select mc.granted from hipocampo_private.memory_consents as mc
                     where mc.tenant_id = _memory_gate.tenant_id and mc.user_id = _memory_gate.user_id), false) then
        return array['no_consent', '42501', 'the user has not consented to long-term memory (LGPD art. 7 I)'];
    end if;
    if category is null or btrim(category) = '' then
        return array['missing_category', '23502', 'a memory needs a category'];
    end if;
    if confidence is null or confidence < floor then
        return array['low_confidence', '22003', format('confidence %s is below %s for %s memories', confidence, floor, source)];
    end if;
    problem := coalesce(hipocampo_private._memory_text_problem(description, token_count, cfg),
        hipocampo_private._memory_value_problem(value, cfg));
    if problem is not null then
        return array[problem[1], case problem[1] when 'too_long' then '22001' else '22023' end, problem[2]];
    end if;
    return null;
end;
$$;

/*
_memory_slot(tenant_id uuid, user_id uuid, scope text, key text, source text, to_staging boolean,
  cfg jsonb, out current_row hipocampo_private.memories, out problem text[])

Purpose: _remember's second step: serialise the writers of this key (a transaction advisory lock
  on tenant, owner, scope and key, both tiers), read the key's active long-term row, and check
  what a long-term write must respect: an inferred memory never overrides one the user stated
  explicitly (explicit_user_wins 55000), and a new personal key counts against
  memory.max_active_per_user (quota 53400). A staging write only takes the lock and the row.
Returns: current_row (nulls when the key has no active row) and problem ([reason, sqlstate,
  message] or null).
Errors: none of its own.
*/
create or replace function hipocampo_private._memory_slot(
    tenant_id uuid, user_id uuid, scope text, key text, source text, to_staging boolean, cfg jsonb,
    out current_row hipocampo_private.memories, out problem text[]
)
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
    owner_key uuid := case when scope = 'personal' then user_id else '00000000-0000-0000-0000-000000000000'::uuid end;
    active_count integer;
begin
    perform pg_advisory_xact_lock(hashtextextended(
        tenant_id::text || '/' || owner_key::text || '/' || scope || '/' || key, 0));
    select * into current_row from hipocampo_private.memories as m
    where m.tenant_id = _memory_slot.tenant_id and m.scope = _memory_slot.scope and m.key = _memory_slot.key
      and m.status = 'active' and (_memory_slot.scope = 'tenant_shared' or m.user_id = _memory_slot.user_id);
    if to_staging then
        return;
    end if;
    if current_row.id is not null and current_row.source = 'explicit_user' and _memory_slot.source = 'inferred' then
        problem := array['explicit_user_wins', '55000', 'an inferred memory never overrides one the user stated explicitly'];
    elsif current_row.id is null and _memory_slot.scope = 'personal' then
        select count(*) into active_count from hipocampo_private.memories as m
        where m.tenant_id = _memory_slot.tenant_id and m.user_id = _memory_slot.user_id and m.status = 'active'
          and m.scope = 'personal';
        if active_count >= (cfg ->> 'max_active_per_user')::integer then
            problem := array['quota', '53400', format('the user already has %s active memories', active_count)];
        end if;
    end if;
end;
$$;

/*
_memory_duplicate(tenant_id uuid, user_id uuid, replacing uuid, staged_id uuid, description text,
  embedding extensions.vector, model text, cfg jsonb) -> uuid

Purpose: _remember's third step: a duplicate of another active memory of the user or the tenant
  (not the one being replaced, nor the key's staged row), in either tier: a copy of its
  description (equal once normalised as the answer cache normalises questions: case, accents,
  punctuation and spacing ignored; compared within a few characters' length only), or with an
  embedding a semantic duplicate (cosine above the model's memory.duplicate_cosine; vectors of
  another model are not compared). The copy test is the model's blind spot: e5's calibrated 0.995
  catches 0.9 % of LoCoMo's facts retyped in lower case without their full stop
  (docs/BENCHMARKS.md §duplicate thresholds).
Returns: the duplicate's id (a copy first, then the most similar), or null.
Errors: none of its own.
*/
create or replace function hipocampo_private._memory_duplicate(
    tenant_id uuid, user_id uuid, replacing uuid, staged_id uuid, description text,
    embedding extensions.vector, model text, cfg jsonb
)
returns uuid
language sql
stable
security invoker
set search_path = ''
as $$
    select d.id from (
        select m.id, m.embedding, m.embedding_model, m.description from hipocampo_private.memories as m
        where m.tenant_id = _memory_duplicate.tenant_id and m.status = 'active'
          and (m.user_id = _memory_duplicate.user_id or m.scope = 'tenant_shared')
          and m.id is distinct from replacing
        union all
        select s.id, s.embedding, s.embedding_model, s.description from hipocampo_private.memory_staging as s
        where s.tenant_id = _memory_duplicate.tenant_id
          and (s.user_id = _memory_duplicate.user_id or s.scope = 'tenant_shared')
          and s.id is distinct from staged_id
    ) as d,
    lateral (
        select
            case when abs(char_length(d.description) - char_length(_memory_duplicate.description))
                    <= greatest(8, char_length(_memory_duplicate.description) / 10)
                then hipocampo.normalize_question(d.description) = hipocampo.normalize_question(_memory_duplicate.description)
                else false
            end as is_copy,
            case when d.embedding_model = model
                then 1 - (d.embedding operator(extensions.<=>) _memory_duplicate.embedding)
            end as sim
    ) as c
    where c.is_copy or c.sim > (cfg ->> 'duplicate_cosine')::double precision
    order by c.is_copy desc, c.sim desc nulls last
    limit 1
$$;

/*
_check_memory_key(key text, scope text, source text) -> void

Purpose: _remember's arguments the table would refuse with a raw engine error, named first: key,
  scope and source present, the key at most 200 characters.
Returns: nothing.
Errors: 22023 "key / scope / source must not be null"; 22001 "key is n characters; the limit is 200".
Example: select hipocampo_private._check_memory_key('prefs.language', 'personal', 'user');
*/
create or replace function hipocampo_private._check_memory_key(key text, scope text, source text)
returns void
language plpgsql
immutable
security invoker
set search_path = ''
as $$
begin
    if key is null or scope is null or source is null then
        raise exception '% must not be null',
            case when key is null then 'key' when scope is null then 'scope' else 'source' end
            using errcode = '22023';
    end if;
    if char_length(key) > 200 then
        raise exception 'key is % characters; the limit is 200', char_length(key) using errcode = '22001';
    end if;
end;
$$;

/*
_memory_stage(tenant uuid, user_id uuid, replaces uuid, model text, tokens integer, cfg jsonb,
  attempt jsonb, key text, value jsonb, description text, category text, scope text,
  confidence double precision, source text, source_ref text, conversation_id uuid, tags text[],
  emotion text, intensity numeric, life_domain text, pinned boolean, embedding vector,
  expires_at timestamptz) -> jsonb

Purpose: _remember's staged write (short-term memory): the row, expiring at expires_at or
  now() + cfg.staging_ttl_days, within 30 days; its memory.staged event (with the staged row it
  replaces, already deleted by _remember).
Parameters: tenant and user the writer's (_memory_actor); replaces the key's previous staged row
  (null: none); model and tokens as _remember computed them; the rest as remember's.
Returns: {"status": "staged", "memory_id", "expires_at", "replaced"}.
Errors: 22023 "a staged memory must expire within 30 days (expires_at t)"; a check constraint's
  23514 (turned into "invalid memory: …" by _remember).
Example: see _remember.
*/
create or replace function hipocampo_private._memory_stage(
    tenant uuid, user_id uuid, replaces uuid, model text, tokens integer, cfg jsonb, attempt jsonb,
    key text, value jsonb, description text, category text, scope text, confidence double precision,
    source text, source_ref text, conversation_id uuid, tags text[], emotion text, intensity numeric,
    life_domain text, pinned boolean, embedding extensions.vector, expires_at timestamptz
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    expiry timestamptz := coalesce(_memory_stage.expires_at,
        now() + make_interval(days => (cfg ->> 'staging_ttl_days')::integer));
    new_id uuid;
begin
    if expiry <= now() or expiry > now() + interval '30 days' then
        raise exception 'a staged memory must expire within 30 days (expires_at %)', expiry
            using errcode = '22023';
    end if;
    insert into hipocampo_private.memory_staging (
        tenant_id, user_id, scope, category, key, value, description, confidence, source, source_ref,
        conversation_id, pinned, tags, emotion, intensity, life_domain, embedding, embedding_model,
        token_count, expires_at
    ) values (
        tenant, _memory_stage.user_id, _memory_stage.scope, _memory_stage.category, _memory_stage.key,
        _memory_stage.value, btrim(_memory_stage.description), _memory_stage.confidence, _memory_stage.source,
        _memory_stage.source_ref, _memory_stage.conversation_id, coalesce(_memory_stage.pinned, false),
        coalesce(_memory_stage.tags, array[_memory_stage.category]), _memory_stage.emotion,
        round(_memory_stage.intensity, 1), _memory_stage.life_domain, _memory_stage.embedding, model, tokens, expiry
    ) returning id into new_id;
    perform hipocampo_private._memory_event(tenant, _memory_stage.user_id, new_id, 'memory.staged', null,
        attempt || jsonb_build_object('replaces', replaces, 'expires_at', expiry));
    return jsonb_build_object('status', 'staged', 'memory_id', new_id, 'expires_at', expiry, 'replaced', replaces);
end;
$$;

/*
_remember(…the parameters of hipocampo.remember…, tier text) -> jsonb

Purpose: the gate and the write behind remember (tier 'auto') and promote_memory (tier
  'long_term'), in named steps: the gate (_memory_gate), the key's slot (_memory_slot: lock, active
  row, explicit-user rule, quota), unchanged values, duplicates (_memory_duplicate), then the
  write (staged: _memory_stage). _check_memory_key names bad arguments first. 'auto' routes a write with intensity < memory.staging_below_intensity (7) to staging;
  anything else (no intensity, or intensity >= 7) goes to long-term memory. Every refusal is
  recorded (memory.write_rejected) and returned, not raised.
Staging writes: the same gate except the quota and the explicit-user rule (both apply on
  promotion); expires_at defaults to now() + memory.staging_ttl_days and must lie within 30 days
  (22023 otherwise); one staged row per key (a new write replaces it). A long-term write of a key
  removes that key's staged row.
Returns: as hipocampo.remember; staging writes return status 'staged'.
Errors: as hipocampo.remember; 22023 "key /
  scope / source must not be null", 22001 "key is n characters; the limit is 200" (raised);
  23514 "invalid memory: …" (a check constraint of memories); 55000 "memory config is incomplete: …".
*/
create or replace function hipocampo_private._remember(
    key text, value jsonb, description text, category text, embedding extensions.vector, scope text,
    confidence double precision, source text, source_ref text, conversation_id uuid, tags text[],
    emotion text, intensity numeric, life_domain text, pinned boolean, token_count integer,
    expires_at timestamptz, user_id uuid, tenant_id uuid, tier text
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(_remember.user_id, _remember.tenant_id);
    cfg jsonb;
    problem text [];
    slot record;
    current_row hipocampo_private.memories;
    staged_id uuid;
    dup_id uuid;
    new_id uuid;
    model text;
    to_staging boolean;
    tokens integer;
    attempt jsonb := jsonb_build_object('key', _remember.key, 'category', _remember.category,
        'source', _remember.source, 'scope', _remember.scope);
begin
    perform hipocampo_private._check_memory_key(_remember.key, _remember.scope, _remember.source);
    cfg := hipocampo_private._memory_config(hipocampo.effective_config(a.actor_tenant) -> 'memory');
    to_staging := tier = 'auto' and intensity is not null
        and round(intensity, 1) < (cfg ->> 'staging_below_intensity')::numeric;
    attempt := attempt || jsonb_build_object('tier', case when to_staging then 'staging' else 'long_term' end);

    problem := hipocampo_private._memory_gate(a.actor_tenant, a.actor_user, category, confidence, source,
        description, token_count, _remember.value, cfg);
    if problem is null then
        slot := hipocampo_private._memory_slot(a.actor_tenant, a.actor_user, scope, key, source, to_staging, cfg);
        current_row := slot.current_row;
        problem := slot.problem;
    end if;
    if problem is not null then  -- recorded and returned: a raised error would roll the record back
        perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, null,
            'memory.write_rejected', problem[1], attempt || jsonb_build_object('sqlstate', problem[2]));
        return jsonb_build_object('status', 'rejected', 'reason', problem[1], 'sqlstate', problem[2],
            'message', problem[3]);
    end if;

    -- Same value in long-term memory: nothing to write.
    if not to_staging and current_row.id is not null and current_row.value = _remember.value then
        perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, current_row.id,
            'memory.unchanged', null, attempt);
        return jsonb_build_object('status', 'unchanged', 'memory_id', current_row.id);
    end if;

    select s.id into staged_id from hipocampo_private.memory_staging as s
    where s.tenant_id = a.actor_tenant and s.scope = _remember.scope and s.key = _remember.key
      and (_remember.scope = 'tenant_shared' or s.user_id = a.actor_user);
    model := case when embedding is not null then hipocampo_private._active_model(embedding, 'embedding') end;
    dup_id := hipocampo_private._memory_duplicate(a.actor_tenant, a.actor_user, current_row.id, staged_id,
        _remember.description, _remember.embedding, model, cfg);
    if dup_id is not null then
        perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, dup_id,
            'memory.duplicate', 'semantic_duplicate', attempt);
        return jsonb_build_object('status', 'duplicate', 'memory_id', dup_id);
    end if;

    tokens := greatest(coalesce(_remember.token_count, 0), ceil(char_length(_remember.description) / 4.0)::integer);
    delete from hipocampo_private.memory_staging as s where s.id = staged_id;
    if to_staging then
        return hipocampo_private._memory_stage(a.actor_tenant, a.actor_user, staged_id, model, tokens, cfg, attempt,
            _remember.key, _remember.value, _remember.description, _remember.category, _remember.scope,
            _remember.confidence, _remember.source, _remember.source_ref, _remember.conversation_id,
            _remember.tags, _remember.emotion, _remember.intensity, _remember.life_domain, _remember.pinned,
            _remember.embedding, _remember.expires_at);
    end if;

    update hipocampo_private.memories as m
    set status = 'deprecated', valid_to = now(), updated_at = now()
    where m.id = current_row.id;
    insert into hipocampo_private.memories (
        tenant_id, user_id, scope, category, key, value, description, confidence, source, source_ref,
        conversation_id, pinned, tags, emotion, intensity, life_domain, embedding, embedding_model,
        token_count, supersedes, expires_at
    ) values (
        a.actor_tenant, a.actor_user, _remember.scope, _remember.category, _remember.key, _remember.value,
        btrim(_remember.description), _remember.confidence, _remember.source, _remember.source_ref,
        _remember.conversation_id, coalesce(_remember.pinned, false),
        coalesce(_remember.tags, array[_remember.category]), _remember.emotion,
        round(_remember.intensity, 1), _remember.life_domain, _remember.embedding, model, tokens,
        current_row.id, _remember.expires_at
    ) returning id into new_id;
    perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, new_id,
        case when current_row.id is null then 'memory.created' else 'memory.updated' end, null,
        attempt || jsonb_build_object('supersedes', current_row.id));
    return jsonb_build_object('status', case when current_row.id is null then 'created' else 'updated' end,
        'memory_id', new_id, 'superseded', current_row.id);
exception when check_violation then
    raise exception 'invalid memory: %', sqlerrm using errcode = '23514';
end;
$$;


/*
promote_memory(staging_id uuid, intensity numeric, override boolean default false) -> jsonb

Purpose: move a staged memory to long-term memory. Without override, `intensity` is the
  recomputed intensity: >= memory.staging_below_intensity (7) promotes, below it the staged row
  keeps the new intensity (status 'kept'). With override (a human decision) the memory is
  promoted whatever the intensity, pinned, with the new intensity. Promotion goes through the
  gate (consent, quota, explicit-user rule); a refusal leaves the staged row in place.
Parameters: staging_id; intensity 0..10 (rounded to 0.1); override.
Returns: remember's result plus {"promoted_from": staging_id}, or {"status": "kept", ...}.
Errors: 42501 as _caller (before any other work); P0002 "unknown staged memory"; 22004
  intensity is null; 22023 "intensity must be 0..10 (got x)" (as remember); 55000 "memory config is incomplete: …".
Example: select hipocampo.promote_memory('…', 8.5);
*/
create or replace function hipocampo.promote_memory(staging_id uuid, intensity numeric, override boolean default false)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    s hipocampo_private.memory_staging;
    cfg jsonb;
    r jsonb;
    level numeric := round(promote_memory.intensity, 1);
begin
    if level is null then
        raise exception 'intensity is required (0..10)' using errcode = '22004';
    end if;
    if level < 0 or level > 10 then
        raise exception 'intensity must be 0..10 (got %)', level using errcode = '22023';
    end if;
    select * into s from hipocampo_private.memory_staging as x where x.id = promote_memory.staging_id for update;
    if s.id is null then
        raise exception 'unknown staged memory: %', staging_id using errcode = 'P0002';
    end if;
    cfg := hipocampo_private._memory_config(hipocampo.effective_config(s.tenant_id) -> 'memory');
    if not coalesce(override, false)
        and level < (cfg ->> 'staging_below_intensity')::numeric then
        update hipocampo_private.memory_staging as x set intensity = level, updated_at = now()
        where x.id = s.id;
        return jsonb_build_object('status', 'kept', 'memory_id', s.id, 'intensity', level);
    end if;
    r := hipocampo_private._remember(
        s.key, s.value, s.description, s.category, s.embedding, s.scope, s.confidence, s.source, s.source_ref,
        s.conversation_id, s.tags, s.emotion, level, s.life_domain, s.pinned or coalesce(override, false),
        s.token_count, null, case when (select auth.uid()) is null then s.user_id end, s.tenant_id, 'long_term'
    );
    if r ->> 'status' = 'rejected' then
        return r;
    end if;
    delete from hipocampo_private.memory_staging as x where x.id = s.id;
    perform hipocampo_private._memory_event(s.tenant_id, coalesce((select auth.uid()), s.user_id),
        (r ->> 'memory_id')::uuid, 'memory.promoted', case when override then 'override' else 'intensity' end,
        jsonb_build_object('staging_id', s.id, 'key', s.key, 'intensity', level, 'result', r ->> 'status'));
    return r || jsonb_build_object('promoted_from', s.id);
end;
$$;

/*
staged_memories() -> setof hipocampo_private.memory_staging

Purpose: the caller's staged memories (own personal ones + the tenant's shared ones), soonest
  expiry first.
Returns: memory_staging rows (every column).
Errors: 42501 as _resolve_tenant.
Example: select key, intensity, expires_at from hipocampo.staged_memories();
*/
create or replace function hipocampo.staged_memories()
returns setof hipocampo_private.memory_staging
language sql
stable
security invoker
set search_path = ''
as $$
    select s.* from hipocampo_private.memory_staging as s
    where s.tenant_id = hipocampo_private._resolve_tenant(null)
      and ((select auth.uid()) is null or s.user_id = (select auth.uid()) or s.scope = 'tenant_shared')
    order by s.expires_at, s.id
$$;

/*
_some_memory_tagged(tenant uuid, who uuid, tags text[], include_staging boolean) -> boolean

Purpose: search_memories' tag fallback test: whether any memory the caller may read (who's own,
  or the tenant's shared ones; every one for a null who) carries one of tags, among the active
  long-term memories and, with include_staging, the staged ones.
Returns: true when one does.
Errors: none.
Example: select hipocampo_private._some_memory_tagged(t, auth.uid(), array['cafe'], true);
*/
create or replace function hipocampo_private._some_memory_tagged(
    tenant uuid, who uuid, tags text[], include_staging boolean
)
returns boolean
language sql
stable
security invoker
set search_path = ''
as $$
    select exists (
        select 1 from hipocampo_private.memories as m
        where m.tenant_id = tenant and m.status = 'active' and m.tags && _some_memory_tagged.tags
          and (who is null or m.user_id = who or m.scope = 'tenant_shared')
        union all
        select 1 from hipocampo_private.memory_staging as s
        where include_staging and s.tenant_id = tenant and s.tags && _some_memory_tagged.tags
          and (who is null or s.user_id = who or s.scope = 'tenant_shared')
    );
$$;

/*
_memory_candidates(tenant uuid, me uuid, model text, query_embedding vector, tags text[],
  emotion text, life_domain text, category text, scope text, include_staging boolean,
  bonus double precision, max_rows integer, threshold double precision, out ids uuid[],
  out tiers text[], out sims double precision[], out scores double precision[], out embs vector[])

Purpose: search_memories' candidates: the tenant's active long-term memories and, with
  include_staging, its staged ones, of the model, the caller's own (me; null = every user's) and the
  tenant's shared ones, under the filters (null = any; tags: any of them); score = cosine
  similarity + bonus when pinned; the best max_rows, then those with score >= threshold.
Parameters: tenant and me the caller's (_resolve_tenant, auth.uid()); the rest as
  search_memories' (bonus = memory.pinned_bonus, max_rows = 8 * match_count).
Returns: ids, tiers ('long_term' | 'staging'), sims (cosine), scores, embs: best score first
  (ties by id); null arrays when none is left.
Errors: none.
Example: select * from hipocampo_private._memory_candidates(tenant, me, model, '[…]', null, null,
  null, null, null, true, 0.05, 40, 0.3);
*/
create or replace function hipocampo_private._memory_candidates(
    tenant uuid, me uuid, model text, query_embedding extensions.vector, tags text[], emotion text,
    life_domain text, category text, scope text, include_staging boolean, bonus double precision,
    max_rows integer, threshold double precision, out ids uuid[], out tiers text[],
    out sims double precision[], out scores double precision[], out embs extensions.vector[]
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    select array_agg(x.id order by x.score desc, x.id), array_agg(x.tier order by x.score desc, x.id),
        array_agg(x.sim order by x.score desc, x.id), array_agg(x.score order by x.score desc, x.id),
        array_agg(x.embedding order by x.score desc, x.id)
    into ids, tiers, sims, scores, embs
    from (
        select u.id, u.tier, u.embedding, 1 - (u.embedding operator(extensions.<=>) _memory_candidates.query_embedding) as sim,
            1 - (u.embedding operator(extensions.<=>) _memory_candidates.query_embedding)
            + case when u.pinned then bonus else 0 end as score
        from (
            select m.id, 'long_term' as tier, m.embedding, m.pinned, m.user_id, m.scope, m.tags, m.emotion,
                m.life_domain, m.category, m.embedding_model
            from hipocampo_private.memories as m
            where m.tenant_id = tenant and m.status = 'active'
            union all
            select s.id, 'staging', s.embedding, s.pinned, s.user_id, s.scope, s.tags, s.emotion,
                s.life_domain, s.category, s.embedding_model
            from hipocampo_private.memory_staging as s
            where _memory_candidates.include_staging and s.tenant_id = tenant
        ) as u
        where u.embedding_model = _memory_candidates.model
          and (me is null or u.user_id = me or u.scope = 'tenant_shared')
          and (_memory_candidates.tags is null or u.tags && _memory_candidates.tags)
          and (_memory_candidates.emotion is null or u.emotion = _memory_candidates.emotion)
          and (_memory_candidates.life_domain is null or u.life_domain = _memory_candidates.life_domain)
          and (_memory_candidates.category is null or u.category = _memory_candidates.category)
          and (_memory_candidates.scope is null or u.scope = _memory_candidates.scope)
        order by score desc, u.id
        limit max_rows
    ) as x
    where x.score >= threshold;
end;
$$;

/*
search_memories(query_embedding vector, mode text default 'context', match_count integer default null,
  filter_tags text[] default null, filter_emotion text default null, filter_life_domain text default null,
  filter_category text default null, filter_scope text default null, min_score double precision default null,
  include_staging boolean default true) -> setof record

Purpose: semantic memory search for the caller (own personal memories + the tenant's shared
  ones), over long-term memory and, unless include_staging is false, short-term staging.
  score = cosine similarity + memory.pinned_bonus for pinned memories; kept when score >=
  memory.context_threshold (mode 'context') or memory.answer_threshold (mode 'answer'), or
  min_score; MMR (memory.mmr_lambda) with near-duplicates (cosine > duplicate_cosine) dropped.
  Tag filtering with an empty tag list, or with tags no memory carries, falls back to searching
  without the tag filter and says so in `fallback` ('empty_tags' | 'no_memory_with_tags').
  Returned memories count as accessed (access_count, last_accessed_at), once drain_read_queue
  has taken the read's record (_record_read).
Parameters: query_embedding of the active model; mode 'context' | 'answer'; match_count k,
  1..100 (default memory.match_count); filters; min_score overrides the mode's threshold
  (cosine, -1..1.05).
Returns: memory_id, key, value, description, category, scope, tags, pinned, confidence,
  similarity, score, rank (1-based), fallback, tier ('long_term' | 'staging').
Errors: 42501 as _resolve_tenant; 22023 on an unknown mode; 22023 "match_count must be 1..100
  (got n)"; 22000 on wrong dimensions; 22023 "query_embedding is a zero vector: its cosine
  similarity is undefined"; 55000 "memory config is incomplete: …".
  In named steps: _memory_candidates, then _mmr.
Example: select key, score from hipocampo.search_memories('[…]'::extensions.vector, 'context');
*/
create or replace function hipocampo.search_memories(
    query_embedding extensions.vector,
    mode text default 'context',
    match_count integer default null,
    filter_tags text[] default null,
    filter_emotion text default null,
    filter_life_domain text default null,
    filter_category text default null,
    filter_scope text default null,
    min_score double precision default null,
    include_staging boolean default true
)
returns table (
    memory_id uuid, key text, value jsonb, description text, category text, scope text,
    tags text[], pinned boolean, confidence real, similarity double precision,
    score double precision, rank integer, fallback text, tier text
)
language plpgsql
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(null);
    me uuid := (select auth.uid());
    cfg jsonb := hipocampo_private._memory_config(hipocampo.effective_config(t) -> 'memory');
    threshold double precision;
    bonus double precision := (cfg ->> 'pinned_bonus')::double precision;
    lambda double precision := (cfg ->> 'mmr_lambda')::double precision;
    dup double precision := (cfg ->> 'duplicate_cosine')::double precision;
    k integer := coalesce(search_memories.match_count, (cfg ->> 'match_count')::integer);
    model text;
    use_tags text [] := search_memories.filter_tags;
    why text;
    c record;  -- _memory_candidates: ids, tiers, sims, scores, embs (best first)
    sel integer [] := '{}';
begin
    if k is null or k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    if mode is null or mode not in ('context', 'answer') then
        raise exception 'mode must be context or answer (got %)', mode using errcode = '22023';
    end if;
    threshold := coalesce(min_score, case mode
        when 'answer' then (cfg ->> 'answer_threshold')::double precision
        else (cfg ->> 'context_threshold')::double precision end);
    model := hipocampo_private._active_model(query_embedding, 'query_embedding');
    -- A zero vector's cosine is NaN, which compares above every number (every memory would pass
    -- the threshold).
    if (query_embedding operator(extensions.<#>) query_embedding) = 0 then
        raise exception 'query_embedding is a zero vector: its cosine similarity is undefined'
            using errcode = '22023';
    end if;
    if use_tags is not null and cardinality(use_tags) = 0 then
        why := 'empty_tags';
        use_tags := null;
    elsif use_tags is not null and not hipocampo_private._some_memory_tagged(t, me, use_tags, include_staging) then
        why := 'no_memory_with_tags';
        use_tags := null;
    end if;

    c := hipocampo_private._memory_candidates(
        t, me, model, query_embedding, use_tags, search_memories.filter_emotion, search_memories.filter_life_domain,
        search_memories.filter_category, search_memories.filter_scope, include_staging, bonus, k * 8, threshold
    );

    if c.ids is not null then
        -- MMR on the scores, near-duplicates dropped (shared with hybrid_search).
        sel := hipocampo_private._mmr(c.embs, c.scores, k, lambda, dup);
    end if;

    return query
    select u.id, u.key, u.value, u.description, u.category, u.scope, u.tags, u.pinned, u.confidence,
        c.sims[o.pos], c.scores[o.pos], o.ord::integer, why, c.tiers[o.pos]
    from unnest(sel) with ordinality as o (pos, ord)
    inner join (
        select m.id, m.key, m.value, m.description, m.category, m.scope, m.tags, m.pinned, m.confidence
        from hipocampo_private.memories as m where m.tenant_id = t
        union all
        select s.id, s.key, s.value, s.description, s.category, s.scope, s.tags, s.pinned, s.confidence
        from hipocampo_private.memory_staging as s where s.tenant_id = t
    ) as u on u.id = c.ids[o.pos]
    order by o.ord;
    if cardinality(sel) = 0 and why is not null then
        -- Still say that the tag filter was dropped, with no rows to carry it.
        return query select null::uuid, null::text, null::jsonb, null::text, null::text, null::text,
            null::text [], null::boolean, null::real, null::double precision, null::double precision,
            0, why, null::text;
    end if;
    perform hipocampo_private._record_read(t, 'search_memories', cardinality(sel), null, null, memory_ids => array(
        select c.ids[x] from unnest(sel) as x), similarity => (select avg(c.sims[x]) from unnest(sel) as x)::real);
end;
$$;

comment on function hipocampo.promote_memory(uuid, numeric, boolean) is
'Move a staged memory to long-term memory (recomputed intensity >= 7, or a human override that pins it).';

comment on function hipocampo.staged_memories() is 'The caller''s short-term (staged) memories.';

comment on function hipocampo.search_memories(
    extensions.vector, text, integer, text[], text, text, text, text, double precision, boolean
) is 'Semantic memory search (long-term + staging) with thresholds, pinned bonus, MMR and tag fallback.';

/*
set_memory_embeddings(items jsonb) -> integer

Purpose: give memories that have no embedding one (of the active model): the profile seed and
  any write made without a vector. Memories that already have an embedding are left alone.
Parameters: items - [{"memory_id": uuid, "embedding": [floats]}]; RLS decides which rows the
  caller may update (own personal memories; admins the tenant's shared ones).
Returns: the number of memories updated.
Errors: 42501 as _caller (before any other work); 22000 wrong dimensions; 22023 items is not a json
  array; 22023 "invalid item <memory_id>: …" (a memory_id that is not a uuid, an embedding that is
  not a vector).
Example: select hipocampo.set_memory_embeddings('[{"memory_id": "…", "embedding": [0.1, …]}]');
*/
create or replace function hipocampo.set_memory_embeddings(items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    item jsonb;
    v extensions.vector;
    model text;
    n integer := 0;
    one integer;
begin
    if items is null or jsonb_typeof(items) <> 'array' then
        raise exception 'items must be a json array' using errcode = '22023';
    end if;
    for item in select x from jsonb_array_elements(items) as x loop
        v := (item ->> 'embedding')::extensions.vector;
        model := hipocampo_private._active_model(v, 'embedding');
        update hipocampo_private.memories as m
        set embedding = v, embedding_model = model, updated_at = now()
        where m.id = (item ->> 'memory_id')::uuid and m.embedding is null;
        get diagnostics one = row_count;
        n := n + one;
    end loop;
    return n;
exception when invalid_text_representation or numeric_value_out_of_range then
    raise exception 'invalid item %: %', item ->> 'memory_id', sqlerrm using errcode = '22023';
end;
$$;

comment on function hipocampo.set_memory_embeddings(jsonb) is
'Embed memories written without a vector (e.g. the profile seed).';

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
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
);

create policy "users update their staged memories, admins shared ones"
on hipocampo_private.memory_staging
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
)
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
);

/*
_pii_problem(content text, cfg jsonb, what text) -> text[]

Purpose: the gate's data check of one text: personal data (any kind the scrubber replaces), a
  kind that never becomes a memory (memory.forbidden_kinds: the first kind, by name, one of whose
  patterns matches the lower-case, unaccented text), or the tenant's sensitive data
  (memory.sensitive_patterns over the same text).
Parameters: content - the text; cfg - the memory config; what - how the message names it
  ('memory text', 'memory value').
Returns: null, or [reason, message] with reason personal_data | credentials | financial_data |
  health_data | opinion_about_person | user_classification | sensitive_data.
Errors: none of its own.
Example: select hipocampo_private._pii_problem('CPF 529 982 247 25', cfg, 'memory value');
  -- {personal_data,"memory value carries personal data (CPF)"}
*/
create or replace function hipocampo_private._pii_problem(content text, cfg jsonb, what text)
returns text[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    found jsonb := (hipocampo_private._pii_scrub(content)).counts;
    plain text := lower(extensions.unaccent(content));
    pattern text;
    kind text;
begin
    if found <> '{}'::jsonb then
        return array['personal_data', format('%s carries personal data (%s)', what, (
            select string_agg(case k when 'EMAIL' then 'e-mail' when 'TELEFONE' then 'phone number'
                when 'CARTAO' then 'card number' else k end, ', ' order by k)
            from jsonb_object_keys(found) as k))];
    end if;
    select f.key into kind
    from jsonb_each(cfg -> 'forbidden_kinds') as f, jsonb_array_elements_text(f.value) as p (pattern)
    where plain ~* p.pattern
    order by f.key
    limit 1;
    if kind is not null then
        return array[kind, format('%s is of a kind never stored as a memory: %s (memory.forbidden_kinds)',
            what, replace(kind, '_', ' '))];
    end if;
    for pattern in select jsonb_array_elements_text(cfg -> 'sensitive_patterns') loop
        if plain ~* pattern then
            return array['sensitive_data', format('%s carries sensitive data (memory.sensitive_patterns)', what)];
        end if;
    end loop;
    return null;
end;
$$;

/*
_memory_value_problem(value jsonb, cfg jsonb) -> text[]

Purpose: the gate's checks of a memory's value: present, at most memory.value_max_bytes bytes as
  JSON text, nesting at most memory.value_max_depth levels (a scalar is level 0, the members of
  an object or array level 1), and no personal or sensitive data in any string or number leaf
  (a number read as its digits), any object key, or the leaves read together (a CPF split across
  fields or written as an array of digits).
Returns: null, or [reason, message] with reason invalid_value | too_long, or one of
  _pii_problem's.
Errors: none of its own.
Example: select hipocampo_private._memory_value_problem('{"cpf": "529.982.247-25"}', cfg);
  -- {personal_data,"memory value carries personal data (CPF)"}
*/
create or replace function hipocampo_private._memory_value_problem(value jsonb, cfg jsonb)
returns text[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    max_bytes integer := (cfg ->> 'value_max_bytes')::integer;
    max_depth integer := (cfg ->> 'value_max_depth')::integer;
    size integer;
    strings text;
begin
    if value is null then
        return array['invalid_value', 'a memory needs a value'];
    end if;
    size := octet_length(value::text);
    if size > max_bytes then
        return array['too_long', format('memory value is %s bytes; the limit is %s (memory.value_max_bytes)',
            size, max_bytes)];
    end if;
    if jsonb_path_exists(value, format('strict $.**{%s}', max_depth + 1)::jsonpath) then
        return array['invalid_value', format('memory value nests deeper than %s levels (memory.value_max_depth)',
            max_depth)];
    end if;
    -- Leaves (numbers read as digit strings) and keys joined by a separator no number or e-mail
    -- runs across, then the leaves again read together (issue 44 §3: a CPF as a JSON number,
    -- split across fields or as an array of digits).
    select string_agg(s, ' ; ') || ' ; ' || coalesce(string_agg(s, '') filter (where leaf), '') into strings from (
        select x #>> '{}' as s, true as leaf
        from jsonb_path_query(value, 'strict $.** ? (@.type() == "string" || @.type() == "number")') as x
        union all
        select x #>> '{}', false
        from jsonb_path_query(value, 'strict $.** ? (@.type() == "object").keyvalue().key') as x
    ) as leaves;
    if strings is null then
        return null;
    end if;
    return hipocampo_private._pii_problem(strings, cfg, 'memory value');
end;
$$;

/*
_memory_write_allowed(tenant_id uuid, user_id uuid, description text, value jsonb,
  token_count integer) -> boolean

Purpose: the gate as a row check, for the INSERT policies of memories and memory_staging: the
  user has consented (memory_consents), and the description and value pass
  _memory_text_problem and _memory_value_problem under the tenant's memory config. A direct
  INSERT as authenticated passes only what remember would store.
Returns: true when the row would pass the gate.
Errors: 55000 as _memory_config; 42501 as effective_config.
*/
create or replace function hipocampo_private._memory_write_allowed(
    tenant_id uuid, user_id uuid, description text, value jsonb, token_count integer
)
returns boolean
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    cfg jsonb;
begin
    if not coalesce((select mc.granted from hipocampo_private.memory_consents as mc
                     where mc.tenant_id = _memory_write_allowed.tenant_id
                       and mc.user_id = _memory_write_allowed.user_id), false) then
        return false;
    end if;
    cfg := hipocampo_private._memory_config(
        hipocampo.effective_config(_memory_write_allowed.tenant_id) -> 'memory');
    return hipocampo_private._memory_text_problem(description, token_count, cfg) is null
        and hipocampo_private._memory_value_problem(value, cfg) is null;
end;
$$;

create policy "users write personal memories the gate passes, admins shared ones"
on hipocampo_private.memories
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
    and (scope = 'personal' or (select hipocampo_private.current_tenant_role()) = 'admin')
    and hipocampo_private._memory_write_allowed(tenant_id, user_id, description, value, token_count)
);

create policy "users stage personal memories the gate passes, admins shared ones"
on hipocampo_private.memory_staging
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
    and (scope = 'personal' or (select hipocampo_private.current_tenant_role()) = 'admin')
    and hipocampo_private._memory_write_allowed(tenant_id, user_id, description, value, token_count)
);

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

comment on function hipocampo.memories_without_embedding(text[], uuid, uuid) is
'The user''s active personal memories stored without a vector.';
