-- Short-term staging: memories of intensity < 7 wait here (expires_at required, at most 30 days
-- ahead) until promoted to long-term memory or purged. The memory HNSW indexes.
--
-- Replaces (same signatures): remember (routing by intensity, through _remember),
-- _touch_memories (both tiers), run_memory_maintenance (staging purge), _ensure_model_index
-- (memory indexes). Replaces search_memories with a version that also searches staging.

-- Same shape as memories (columns, defaults, checks, indexes); the tenant FK and the expiry rule
-- are added below.
create table hipocampo_private.memory_staging (
    like hipocampo_private.memories including defaults including constraints including indexes
);

alter table hipocampo_private.memory_staging
add constraint memory_staging_tenant_id_fkey foreign key (tenant_id)
references hipocampo_private.tenants (id) on delete cascade;

alter table hipocampo_private.memory_staging
alter column expires_at set not null;

-- At most 30 days ahead of the write (issue: memory engine §2).
alter table hipocampo_private.memory_staging
add constraint memory_staging_expiry_window check (
    expires_at > created_at and expires_at <= created_at + interval '30 days'
);

alter table hipocampo_private.memory_staging
add constraint memory_staging_status_check_active check (status = 'active');

alter table hipocampo_private.memory_staging enable row level security;

grant select, insert, update, delete on hipocampo_private.memory_staging to authenticated;
grant all on hipocampo_private.memory_staging to service_role;

create policy "users read their staged memories and their tenant's shared ones"
on hipocampo_private.memory_staging
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (user_id = (select auth.uid()) or scope = 'tenant_shared')
);

create policy "users stage personal memories, admins shared ones"
on hipocampo_private.memory_staging
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
    and (scope = 'personal' or (select hipocampo_private.current_tenant_role()) = 'admin')
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
with check (tenant_id = (select hipocampo_private.current_tenant_id()));

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

-- New events: staging writes, promotion, purge; session and export audit.
alter table hipocampo_private.memory_events drop constraint memory_events_event_check;
alter table hipocampo_private.memory_events add constraint memory_events_event_check check (event in (
    'memory.write_rejected', 'memory.created', 'memory.updated', 'memory.duplicate',
    'memory.unchanged', 'memory.corrected', 'memory.forgotten', 'memory.hard_deleted',
    'memory.decayed', 'memory.expired', 'memory.consent', 'memory.staged', 'memory.promoted',
    'memory.purged', 'user.exported', 'user.erased'
));

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
        idx := tbl || '_embedding_hnsw_' || substr(md5(m.name), 1, 12);
        execute format(
            'create index if not exists %I on hipocampo_private.%I '
            'using hnsw ((embedding::extensions.vector(%s)) extensions.vector_cosine_ops) '
            'with (m = 16, ef_construction = 64) where embedding_model = %L',
            idx, tbl, m.dims, m.name
        );
    end loop;
    return 'chunks_embedding_hnsw_' || substr(md5(m.name), 1, 12);
end;
$$;

-- The models registered before this migration get their memory indexes now.
select hipocampo_private._ensure_model_index(e.name) from hipocampo_private.embedding_models as e;

/*
_active_model(v vector, label text) -> text

Purpose: the active embedding model's name, after checking that `v` has its dimensions.
Parameters: v - a vector; label - its name in the error message (e.g. 'query_embedding').
Errors: 22000 "<label> has N dimensions; model M expects D".
Example: model := hipocampo_private._active_model(embedding, 'embedding');
*/
create function hipocampo_private._active_model(v extensions.vector, label text)
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
_remember(…same parameters as hipocampo.remember…, tier text) -> jsonb

Purpose: the gate and the write behind remember (tier 'auto') and promote_memory (tier
  'long_term'). 'auto' routes a write with intensity < memory.staging_below_intensity (7) to
  staging; anything else (no intensity, or intensity >= 7) goes to long-term memory.
Staging writes: the same gate except the quota and the explicit-user rule (both apply on
  promotion); expires_at defaults to now() + memory.staging_ttl_days and must lie within 30 days
  (22023 otherwise); one staged row per key (a new write replaces it). A long-term write of a key
  removes that key's staged row.
Returns / errors: as hipocampo.remember; staging writes return status 'staged'.
*/
create function hipocampo_private._remember(
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
    owner_key uuid;
    current_row hipocampo_private.memories;
    staged_id uuid;
    dup_id uuid;
    new_id uuid;
    model text;
    active_count integer;
    floor double precision;
    to_staging boolean;
    expiry timestamptz;
    tokens integer;
    attempt jsonb := jsonb_build_object('key', _remember.key, 'category', _remember.category,
        'source', _remember.source, 'scope', _remember.scope);
begin
    cfg := coalesce(hipocampo.effective_config(a.actor_tenant) -> 'memory', '{}'::jsonb);
    to_staging := tier = 'auto' and intensity is not null
        and round(intensity, 1) < coalesce((cfg ->> 'staging_below_intensity')::numeric, 7);
    attempt := attempt || jsonb_build_object('tier', case when to_staging then 'staging' else 'long_term' end);

    -- The gate. A refusal is recorded and returned (a raised error would roll the record back).
    if not coalesce((select mc.granted from hipocampo_private.memory_consents as mc
                     where mc.tenant_id = a.actor_tenant and mc.user_id = a.actor_user), false) then
        problem := array['no_consent', '42501',
            'the user has not consented to long-term memory (LGPD art. 7 I)'];
    elsif category is null or btrim(category) = '' then
        problem := array['missing_category', '23502', 'a memory needs a category'];
    else
        floor := case when source = 'inferred'
            then coalesce((cfg ->> 'min_confidence_inferred')::double precision, 0.70)
            else coalesce((cfg ->> 'min_confidence')::double precision, 0.6) end;
        if confidence is null or confidence < floor then
            problem := array['low_confidence', '22003',
                format('confidence %s is below %s for %s memories', confidence, floor, source)];
        else
            problem := hipocampo_private._memory_text_problem(description, token_count, cfg);
            if problem is not null then
                problem := array[problem[1],
                    case problem[1] when 'too_long' then '22001' else '22023' end, problem[2]];
            end if;
        end if;
    end if;

    -- Serialise writers of this key (both tiers); then read the active row.
    owner_key := case when scope = 'personal' then a.actor_user
        else '00000000-0000-0000-0000-000000000000'::uuid end;
    if problem is null then
        perform pg_advisory_xact_lock(hashtextextended(
            a.actor_tenant::text || '/' || owner_key::text || '/' || scope || '/' || key, 0));
        select * into current_row from hipocampo_private.memories as m
        where m.tenant_id = a.actor_tenant and m.scope = _remember.scope and m.key = _remember.key
          and m.status = 'active'
          and (_remember.scope = 'tenant_shared' or m.user_id = a.actor_user);
        if to_staging then
            null;
        elsif current_row.id is not null and current_row.source = 'explicit_user'
            and _remember.source = 'inferred' then
            problem := array['explicit_user_wins', '55000',
                'an inferred memory never overrides one the user stated explicitly'];
        elsif current_row.id is null then
            select count(*) into active_count from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.status = 'active'
              and m.scope = 'personal';
            if _remember.scope = 'personal'
                and active_count >= coalesce((cfg ->> 'max_active_per_user')::integer, 50) then
                problem := array['quota', '53400', format('the user already has %s active memories',
                    active_count)];
            end if;
        end if;
    end if;

    if problem is not null then
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

    if embedding is not null then
        model := hipocampo_private._active_model(embedding, 'embedding');
        -- A semantic duplicate of another active memory (not the one being replaced), in either tier.
        select d.id into dup_id from (
            select m.id, m.embedding from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.status = 'active' and m.embedding_model = model
              and (m.user_id = a.actor_user or m.scope = 'tenant_shared')
              and m.id is distinct from current_row.id
            union all
            select s.id, s.embedding from hipocampo_private.memory_staging as s
            where s.tenant_id = a.actor_tenant and s.embedding_model = model
              and (s.user_id = a.actor_user or s.scope = 'tenant_shared')
              and s.id is distinct from staged_id
        ) as d
        where 1 - (d.embedding operator(extensions.<=>) _remember.embedding)
            > coalesce((cfg ->> 'duplicate_cosine')::double precision, 0.97)
        order by d.embedding operator(extensions.<=>) _remember.embedding
        limit 1;
        if dup_id is not null then
            perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, dup_id,
                'memory.duplicate', 'semantic_duplicate', attempt);
            return jsonb_build_object('status', 'duplicate', 'memory_id', dup_id);
        end if;
    end if;

    tokens := greatest(coalesce(_remember.token_count, 0), ceil(char_length(_remember.description) / 4.0)::integer);

    if to_staging then
        expiry := coalesce(_remember.expires_at,
            now() + make_interval(days => coalesce((cfg ->> 'staging_ttl_days')::integer, 30)));
        if expiry <= now() or expiry > now() + interval '30 days' then
            raise exception 'a staged memory must expire within 30 days (expires_at %)', expiry
                using errcode = '22023';
        end if;
        if staged_id is not null then
            delete from hipocampo_private.memory_staging as s where s.id = staged_id;
        end if;
        insert into hipocampo_private.memory_staging (
            tenant_id, user_id, scope, category, key, value, description, confidence, source, source_ref,
            conversation_id, pinned, tags, emotion, intensity, life_domain, embedding, embedding_model,
            token_count, expires_at
        ) values (
            a.actor_tenant, a.actor_user, _remember.scope, _remember.category, _remember.key, _remember.value,
            btrim(_remember.description), _remember.confidence, _remember.source, _remember.source_ref,
            _remember.conversation_id, coalesce(_remember.pinned, false),
            coalesce(_remember.tags, array[_remember.category]), _remember.emotion,
            round(_remember.intensity, 1), _remember.life_domain, _remember.embedding, model, tokens, expiry
        ) returning id into new_id;
        perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, new_id, 'memory.staged', null,
            attempt || jsonb_build_object('replaces', staged_id, 'expires_at', expiry));
        return jsonb_build_object('status', 'staged', 'memory_id', new_id, 'expires_at', expiry,
            'replaced', staged_id);
    end if;

    if staged_id is not null then
        delete from hipocampo_private.memory_staging as s where s.id = staged_id;
    end if;
    if current_row.id is not null then
        update hipocampo_private.memories as m
        set status = 'deprecated', valid_to = now(), updated_at = now()
        where m.id = current_row.id;
    end if;
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
remember(key text, value jsonb, description text, category text, embedding vector default null,
  scope text default 'personal', confidence double precision default 0.9, source text default 'explicit_user',
  source_ref text default null, conversation_id uuid default null, tags text[] default null,
  emotion text default null, intensity numeric default null, life_domain text default null,
  pinned boolean default false, token_count integer default null, expires_at timestamptz default null,
  user_id uuid default null, tenant_id uuid default null) -> jsonb

Purpose: the memory gate plus upsert. Every attempt is recorded in memory_events with its reason.
  Refusals (in order): no consent (42501), missing category (23502), confidence < min_confidence
  or < min_confidence_inferred for inferred (22003), text too short (22023) or too long (22001),
  noise (22023), personal or sensitive data (22023), quota of active memories reached (53400),
  an inferred write over an explicit_user memory (55000).
  Intensity < memory.staging_below_intensity (7) goes to short-term staging (status 'staged',
  expires_at defaulting to memory.staging_ttl_days, at most 30 days); otherwise long-term.
  A semantic duplicate (cosine > duplicate_cosine) of an active memory returns that memory.
  Otherwise the one active row of (tenant, owner, scope, key) is replaced: the old one is
  deprecated (valid_to set) and the new one points to it (supersedes). Concurrent calls for one
  key are serialised by an advisory lock, so exactly one active row remains and no caller sees a
  unique violation.
Parameters: key 'a.b' snake_case; value any json; description the text (3 chars .. 3,000 tokens);
  category one of ten; embedding of the active model; confidence 0..1; tags snake_case, unique,
  default {category}; intensity 0..10 (rounded to 0.1); user_id/tenant_id only for service_role.
Returns: {"status": "created" | "updated" | "unchanged" | "duplicate" | "staged" | "rejected",
  "memory_id", "superseded", "expires_at", "reason", "sqlstate", "message"}.
Errors (raised, nothing recorded): 23514 on values outside the vocabularies; 22000 wrong dims;
  22023 a staging expires_at beyond 30 days.
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
language sql
security invoker
set search_path = ''
as $$
    select hipocampo_private._remember(
        key, value, description, category, embedding, scope, confidence, source, source_ref,
        conversation_id, tags, emotion, intensity, life_domain, pinned, token_count, expires_at,
        user_id, tenant_id, 'auto'
    )
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
Errors: P0002 "unknown staged memory"; 22004 intensity is null; 23514 intensity outside 0..10.
Example: select hipocampo.promote_memory('…', 8.5);
*/
create function hipocampo.promote_memory(staging_id uuid, intensity numeric, override boolean default false)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    s hipocampo_private.memory_staging;
    cfg jsonb;
    r jsonb;
    level numeric := round(promote_memory.intensity, 1);
begin
    if level is null then
        raise exception 'intensity is required (0..10)' using errcode = '22004';
    end if;
    if level < 0 or level > 10 then
        raise exception 'intensity must lie in 0..10 (got %)', level using errcode = '23514';
    end if;
    select * into s from hipocampo_private.memory_staging as x where x.id = promote_memory.staging_id for update;
    if s.id is null then
        raise exception 'unknown staged memory: %', staging_id using errcode = 'P0002';
    end if;
    cfg := coalesce(hipocampo.effective_config(s.tenant_id) -> 'memory', '{}'::jsonb);
    if not coalesce(override, false)
        and level < coalesce((cfg ->> 'staging_below_intensity')::numeric, 7) then
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
Example: select key, intensity, expires_at from hipocampo.staged_memories();
*/
create function hipocampo.staged_memories()
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
_touch_memories(ids uuid[], tenant_id uuid) -> void

Purpose: access_count + 1 and last_accessed_at = now() for memories (either tier) the caller
  just read.
*/
-- definer because reading a shared memory must count as an access although only admins may update it.
create or replace function hipocampo_private._touch_memories(ids uuid[], tenant_id uuid)
returns void
language sql
security definer
set search_path = ''
as $$
    update hipocampo_private.memories as m
    set access_count = m.access_count + 1, last_accessed_at = now()
    where m.id = any(_touch_memories.ids) and m.tenant_id = _touch_memories.tenant_id;
    update hipocampo_private.memory_staging as s
    set access_count = s.access_count + 1, last_accessed_at = now()
    where s.id = any(_touch_memories.ids) and s.tenant_id = _touch_memories.tenant_id;
$$;

drop function hipocampo.search_memories(
    extensions.vector, text, integer, text[], text, text, text, text, double precision
);

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
  Returned memories count as accessed (access_count, last_accessed_at).
Parameters: query_embedding of the active model; mode 'context' | 'answer'; match_count k
  (default memory.match_count); filters; min_score overrides the mode's threshold (cosine, -1..1.05).
Returns: memory_id, key, value, description, category, scope, tags, pinned, confidence,
  similarity, score, rank (1-based), fallback, tier ('long_term' | 'staging').
Errors: 22023 on an unknown mode; 22000 on wrong dimensions; 42501 no tenant.
Example: select key, score from hipocampo.search_memories('[…]'::extensions.vector, 'context');
*/
create function hipocampo.search_memories(
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
    cfg jsonb := coalesce(hipocampo.effective_config(t) -> 'memory', '{}'::jsonb);
    threshold double precision;
    bonus double precision := coalesce((cfg ->> 'pinned_bonus')::double precision, 0.05);
    lambda double precision := coalesce((cfg ->> 'mmr_lambda')::double precision, 0.5);
    dup double precision := coalesce((cfg ->> 'duplicate_cosine')::double precision, 0.97);
    k integer := coalesce(search_memories.match_count, (cfg ->> 'match_count')::integer, 5);
    model text;
    use_tags text [] := search_memories.filter_tags;
    why text;
    ids uuid [];
    tiers text [];
    sims double precision [];
    scores double precision [];
    embs extensions.vector [];
    sel integer [] := '{}';
begin
    if mode is null or mode not in ('context', 'answer') then
        raise exception 'mode must be context or answer (got %)', mode using errcode = '22023';
    end if;
    threshold := coalesce(min_score, case mode
        when 'answer' then coalesce((cfg ->> 'answer_threshold')::double precision, 0.85)
        else coalesce((cfg ->> 'context_threshold')::double precision, 0.78) end);
    model := hipocampo_private._active_model(query_embedding, 'query_embedding');
    if use_tags is not null and cardinality(use_tags) = 0 then
        why := 'empty_tags';
        use_tags := null;
    elsif use_tags is not null and not exists (
        select 1 from hipocampo_private.memories as m
        where m.tenant_id = t and m.status = 'active' and m.tags && use_tags
          and (me is null or m.user_id = me or m.scope = 'tenant_shared')
        union all
        select 1 from hipocampo_private.memory_staging as s
        where include_staging and s.tenant_id = t and s.tags && use_tags
          and (me is null or s.user_id = me or s.scope = 'tenant_shared')
    ) then
        why := 'no_memory_with_tags';
        use_tags := null;
    end if;

    select array_agg(x.id order by x.score desc, x.id), array_agg(x.tier order by x.score desc, x.id),
        array_agg(x.sim order by x.score desc, x.id), array_agg(x.score order by x.score desc, x.id),
        array_agg(x.embedding order by x.score desc, x.id)
    into ids, tiers, sims, scores, embs
    from (
        select u.id, u.tier, u.embedding, 1 - (u.embedding operator(extensions.<=>) query_embedding) as sim,
            1 - (u.embedding operator(extensions.<=>) query_embedding)
            + case when u.pinned then bonus else 0 end as score
        from (
            select m.id, 'long_term' as tier, m.embedding, m.pinned, m.user_id, m.scope, m.tags, m.emotion,
                m.life_domain, m.category, m.embedding_model
            from hipocampo_private.memories as m
            where m.tenant_id = t and m.status = 'active'
            union all
            select s.id, 'staging', s.embedding, s.pinned, s.user_id, s.scope, s.tags, s.emotion,
                s.life_domain, s.category, s.embedding_model
            from hipocampo_private.memory_staging as s
            where include_staging and s.tenant_id = t
        ) as u
        where u.embedding_model = model
          and (me is null or u.user_id = me or u.scope = 'tenant_shared')
          and (use_tags is null or u.tags && use_tags)
          and (search_memories.filter_emotion is null or u.emotion = search_memories.filter_emotion)
          and (search_memories.filter_life_domain is null or u.life_domain = search_memories.filter_life_domain)
          and (search_memories.filter_category is null or u.category = search_memories.filter_category)
          and (search_memories.filter_scope is null or u.scope = search_memories.filter_scope)
        order by score desc, u.id
        limit k * 8
    ) as x
    where x.score >= threshold;

    if ids is not null then
        -- MMR on the scores, near-duplicates dropped (shared with hybrid_search).
        sel := hipocampo_private._mmr(embs, scores, k, lambda, dup);
    end if;

    return query
    select u.id, u.key, u.value, u.description, u.category, u.scope, u.tags, u.pinned, u.confidence,
        sims[o.pos], scores[o.pos], o.ord::integer, why, tiers[o.pos]
    from unnest(sel) with ordinality as o (pos, ord)
    inner join (
        select m.id, m.key, m.value, m.description, m.category, m.scope, m.tags, m.pinned, m.confidence
        from hipocampo_private.memories as m where m.tenant_id = t
        union all
        select s.id, s.key, s.value, s.description, s.category, s.scope, s.tags, s.pinned, s.confidence
        from hipocampo_private.memory_staging as s where s.tenant_id = t
    ) as u on u.id = ids[o.pos]
    order by o.ord;
    if cardinality(sel) = 0 and why is not null then
        -- Still say that the tag filter was dropped, with no rows to carry it.
        return query select null::uuid, null::text, null::jsonb, null::text, null::text, null::text,
            null::text [], null::boolean, null::real, null::double precision, null::double precision,
            0, why, null::text;
    end if;
    perform hipocampo_private._touch_memories(array(select ids[x] from unnest(sel) as x), t);
end;
$$;

/*
run_memory_maintenance(now timestamptz default now()) -> jsonb

Purpose: decay, expiry and the staging purge, with an explicit clock (tests freeze it).
  Memories not accessed for memory.decay_days lose memory.decay_step confidence, once per
  period; below memory.deactivate_below they expire; explicit_user and pinned memories never
  decay; active memories past expires_at expire; staged memories past expires_at are deleted
  unless pinned. Events memory.decayed / memory.expired / memory.purged are recorded.
  Scheduled daily with pg_cron where the extension exists (Supabase); locally `hipocampo worker`.
Returns: {"decayed": n, "deactivated": n, "expired": n, "staging_purged": n}.
Example: select hipocampo.run_memory_maintenance('2027-01-01'::timestamptz);
*/
create or replace function hipocampo.run_memory_maintenance(now timestamptz default now())
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    cfg jsonb := coalesce((select s.config -> 'memory' from hipocampo_private.settings as s
                           where s.tenant_id is null), '{}'::jsonb);
    period interval := make_interval(days => coalesce((cfg ->> 'decay_days')::integer, 90));
    step real := coalesce((cfg ->> 'decay_step')::real, 0.1);
    low real := coalesce((cfg ->> 'deactivate_below')::real, 0.3);
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
        insert into hipocampo_private.memory_events (at, tenant_id, user_id, memory_id, event, detail)
        select run_memory_maintenance.now, d.tenant_id, d.user_id, d.id, 'memory.decayed',
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
        insert into hipocampo_private.memory_events (at, tenant_id, user_id, memory_id, event, reason)
        select run_memory_maintenance.now, l.tenant_id, l.user_id, l.id, 'memory.expired', 'low_confidence'
        from low_rows as l
    )
    select count(*) into n_low from low_rows;

    with gone as (
        update hipocampo_private.memories as m
        set status = 'expired', valid_to = run_memory_maintenance.now, updated_at = run_memory_maintenance.now
        where m.status = 'active' and m.expires_at <= run_memory_maintenance.now
        returning m.id, m.tenant_id, m.user_id
    ), logged as (
        insert into hipocampo_private.memory_events (at, tenant_id, user_id, memory_id, event, reason)
        select run_memory_maintenance.now, g.tenant_id, g.user_id, g.id, 'memory.expired', 'expires_at'
        from gone as g
    )
    select count(*) into n_expired from gone;

    with purged as (
        delete from hipocampo_private.memory_staging as s
        where s.expires_at <= run_memory_maintenance.now and not s.pinned
        returning s.id, s.tenant_id, s.user_id, s.key
    ), logged as (
        insert into hipocampo_private.memory_events (at, tenant_id, user_id, memory_id, event, reason, detail)
        select run_memory_maintenance.now, p.tenant_id, p.user_id, p.id, 'memory.purged', 'staging_expired',
            jsonb_build_object('key', p.key)
        from purged as p
    )
    select count(*) into n_purged from purged;

    return jsonb_build_object('decayed', n_decayed, 'deactivated', n_low, 'expired', n_expired,
        'staging_purged', n_purged);
end;
$$;

grant execute on function hipocampo_private._active_model(extensions.vector, text) to authenticated, service_role;
grant execute on function hipocampo_private._remember(
    text, jsonb, text, text, extensions.vector, text, double precision, text, text, uuid, text[], text, numeric,
    text, boolean, integer, timestamptz, uuid, uuid, text
) to authenticated, service_role;
grant execute on function hipocampo.promote_memory(uuid, numeric, boolean) to authenticated, service_role;
grant execute on function hipocampo.staged_memories() to authenticated, service_role;
grant execute on function hipocampo.search_memories(
    extensions.vector, text, integer, text[], text, text, text, text, double precision, boolean
) to authenticated, service_role;

comment on function hipocampo.promote_memory(uuid, numeric, boolean) is
'Move a staged memory to long-term memory (recomputed intensity >= 7, or a human override that pins it).';
comment on function hipocampo.staged_memories() is 'The caller''s short-term (staged) memories.';
comment on function hipocampo.search_memories(
    extensions.vector, text, integer, text[], text, text, text, text, double precision, boolean
) is 'Semantic memory search (long-term + staging) with thresholds, pinned bonus, MMR and tag fallback.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
