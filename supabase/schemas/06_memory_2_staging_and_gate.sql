-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

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
    if not hipocampo_private._has_consent(_memory_gate.tenant_id, _memory_gate.user_id) then
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
    if current_row.id is not null and current_row.source = 'explicit_user'
        and _memory_slot.source in ('inferred', 'conversation') then
        problem := array['explicit_user_wins', '55000',
            'a memory inferred or taken from the conversation never overrides one the user stated explicitly'];
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
set jit = off
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
set jit = off
as $$
    select s.* from hipocampo_private.memory_staging as s
    where s.tenant_id = hipocampo_private._resolve_tenant(null)
      and ((select auth.uid()) is null or s.user_id = (select auth.uid()) or s.scope = 'tenant_shared')
    order by s.expires_at, s.id
$$;
