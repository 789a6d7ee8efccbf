-- The memory and session functions read their thresholds from the config rows only. Since
-- 001100-001500 they fell back to literal values when a key was missing, and several of those
-- were stale copies of config.toml (memory search thresholds 0.78 / 0.85 where config.toml,
-- calibrated for the local model, says 0.35 / 0.55): a database whose config was never seeded
-- (e.g. `supabase db push` without `hipocampo db migrate`) ran on them silently. Now a missing
-- key is an error (55000), as in hybrid_search and search_history; config.toml stays the one
-- place the values live. Behaviour with a seeded config is unchanged.

/*
_require_config(section_config jsonb, section text, keys text[]) -> jsonb

Purpose: a config section (e.g. hipocampo.effective_config(t) -> 'memory') checked to hold every
  key named, returned unchanged: the functions that read it have no values of their own.
Errors: 55000 "<section> config is incomplete: seed it from config.toml (hipocampo db migrate)".
Example: select hipocampo_private._require_config('{"a": 1}', 'memory', array['a']);
*/
create function hipocampo_private._require_config(section_config jsonb, section text, keys text[])
returns jsonb
language plpgsql
immutable
security invoker
set search_path = ''
as $$
begin
    if section_config is null or jsonb_typeof(section_config) <> 'object' or exists (
        select 1 from unnest(keys) as k
        where section_config -> k is null or jsonb_typeof(section_config -> k) = 'null'
    ) then
        raise exception '% config is incomplete: seed it from config.toml (hipocampo db migrate)', section
            using errcode = '55000';
    end if;
    return section_config;
end;
$$;

/*
_memory_config(section_config jsonb) -> jsonb
_sessions_config(section_config jsonb) -> jsonb

Purpose: _require_config with the keys the memory / session functions read.
Errors: 55000 as _require_config.
*/
create function hipocampo_private._memory_config(section_config jsonb)
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
    select hipocampo_private._require_config(section_config, 'memory', array[
        'min_chars', 'max_tokens', 'noise', 'sensitive_patterns', 'min_confidence', 'min_confidence_inferred',
        'max_active_per_user', 'duplicate_cosine', 'staging_below_intensity', 'staging_ttl_days',
        'context_threshold', 'answer_threshold', 'pinned_bonus', 'mmr_lambda', 'match_count',
        'decay_days', 'decay_step', 'deactivate_below'
    ])
$$;

create function hipocampo_private._sessions_config(section_config jsonb)
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
    select hipocampo_private._require_config(section_config, 'sessions', array[
        'inactivity_ttl_minutes', 'absolute_max_minutes', 'pending_confirmation_minutes', 'max_concurrent',
        'last_messages'
    ])
$$;

grant execute on function hipocampo_private._require_config(jsonb, text, text[]) to authenticated, service_role;
grant execute on function hipocampo_private._memory_config(jsonb) to authenticated, service_role;
grant execute on function hipocampo_private._sessions_config(jsonb) to authenticated, service_role;

-- _memory_text_problem: as in migration 001100, reading the memory config without fallback values.
create or replace function hipocampo_private._memory_text_problem(description text, token_count integer, cfg jsonb)
returns text[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    plain text := lower(extensions.unaccent(coalesce(description, '')));
    normalized text := btrim(regexp_replace(plain, '[^a-z0-9 ]+', ' ', 'g'));
    digits text;
    pattern text;
begin
    normalized := regexp_replace(normalized, '\s+', ' ', 'g');
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
    if plain ~ '[[:alnum:]._%+-]+@[[:alnum:]-]+(\.[[:alnum:]-]+)+' then
        return array['personal_data', 'memory text carries personal data (e-mail)'];
    end if;
    if plain ~ '\d{3}\.\d{3}\.\d{3}-\d{2}' or plain ~ '(^|\D)\d{11}(\D|$)' then
        return array['personal_data', 'memory text carries personal data (CPF)'];
    end if;
    if plain ~ '\(?\d{2}\)?\s?9?\d{4}-?\d{4}' then
        return array['personal_data', 'memory text carries personal data (phone number)'];
    end if;
    for digits in select regexp_replace(x[1], '\D', '', 'g')
        from regexp_matches(plain, '((?:\d[ -]?){12,18}\d)', 'g') as x loop
        if hipocampo_private.luhn_is_valid(digits) then
            return array['personal_data', 'memory text carries personal data (card number)'];
        end if;
    end loop;
    for pattern in select jsonb_array_elements_text(cfg -> 'sensitive_patterns') loop
        if plain ~* pattern then
            return array['sensitive_data', 'memory text carries sensitive data (health or financial details)'];
        end if;
    end loop;
    return null;
end;
$$;

-- _remember: as in migration 001200, reading the memory config without fallback values.
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
    cfg := hipocampo_private._memory_config(hipocampo.effective_config(a.actor_tenant) -> 'memory');
    to_staging := tier = 'auto' and intensity is not null
        and round(intensity, 1) < (cfg ->> 'staging_below_intensity')::numeric;
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
            then (cfg ->> 'min_confidence_inferred')::double precision
            else (cfg ->> 'min_confidence')::double precision end;
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
                and active_count >= (cfg ->> 'max_active_per_user')::integer then
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
            > (cfg ->> 'duplicate_cosine')::double precision
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
            now() + make_interval(days => (cfg ->> 'staging_ttl_days')::integer));
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
promote_memory(staging_id uuid, intensity numeric, override boolean default false) -> jsonb

Purpose, parameters and returns: as in migration 001200. Only the config reading changes: the
  memory section comes from the config rows with no values of its own.
Errors: as in 001200, and 55000 "memory config is incomplete: …" (not seeded from config.toml).
*/
create or replace function hipocampo.promote_memory(staging_id uuid, intensity numeric, override boolean default false)
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
search_memories(…) -> setof record

Purpose, parameters and returns: as in migration 001200. Only the config reading changes: the
  memory section comes from the config rows with no values of its own.
Errors: as in 001200, and 55000 "memory config is incomplete: …" (not seeded from config.toml).
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
        when 'answer' then (cfg ->> 'answer_threshold')::double precision
        else (cfg ->> 'context_threshold')::double precision end);
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

Purpose, parameters and returns: as in migration 001200. Only the config reading changes: the
  memory section comes from the config rows with no values of its own.
Errors: as in 001200, and 55000 "memory config is incomplete: …" (not seeded from config.toml).
*/
create or replace function hipocampo.run_memory_maintenance(now timestamptz default now())
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    cfg jsonb := hipocampo_private._memory_config(
        (select s.config -> 'memory' from hipocampo_private.settings as s where s.tenant_id is null)
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

-- _session: as in migration 001500, reading the sessions config without fallback values.
create or replace function hipocampo_private._session(session_id uuid, renew boolean)
returns hipocampo_private.sessions
language plpgsql
security invoker
set search_path = ''
as $$
declare
    s hipocampo_private.sessions;
    cfg jsonb;
begin
    select * into s from hipocampo_private.sessions as x
    where x.id = _session.session_id and x.expires_at > now()
      and ((select auth.uid()) is null or x.user_id = (select auth.uid()))
    for update;
    if s.id is null then
        raise exception 'unknown or expired session: %', session_id using errcode = 'P0002';
    end if;
    if renew then
        cfg := hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions');
        update hipocampo_private.sessions as x
        set last_activity_at = now(),
            expires_at = least(
                now() + make_interval(mins => (cfg ->> 'inactivity_ttl_minutes')::integer),
                x.absolute_expires_at
            )
        where x.id = s.id
        returning * into s;
    end if;
    return s;
end;
$$;

/*
open_session(conversation_id uuid default null, user_id uuid default null, tenant_id uuid default null) -> jsonb

Purpose, parameters and returns: as in migration 001500. Only the config reading changes: the
  sessions section comes from the config rows with no values of its own.
Errors: as in 001500, and 55000 "sessions config is incomplete: …" (not seeded from config.toml).
*/
create or replace function hipocampo.open_session(
    conversation_id uuid default null, user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(open_session.user_id, open_session.tenant_id);
    cfg jsonb := hipocampo_private._sessions_config(hipocampo.effective_config(a.actor_tenant) -> 'sessions');
    max_live integer := (cfg ->> 'max_concurrent')::integer;
    absolute timestamptz := now() + make_interval(mins => (cfg ->> 'absolute_max_minutes')::integer);
    s hipocampo_private.sessions;
    evicted uuid [];
begin
    -- One opener per user at a time, so the cap holds under concurrency.
    perform pg_advisory_xact_lock(hashtextextended('session/' || a.actor_tenant::text || '/' || a.actor_user::text, 0));
    with doomed as (
        select x.id from hipocampo_private.sessions as x
        where x.tenant_id = a.actor_tenant and x.user_id = a.actor_user and x.expires_at > now()
        order by x.last_activity_at desc, x.created_at desc
        offset greatest(max_live - 1, 0)
    ), gone as (
        delete from hipocampo_private.sessions as x using doomed as d where x.id = d.id returning x.id
    )
    select coalesce(array_agg(g.id), '{}') into evicted from gone as g;
    insert into hipocampo_private.sessions (
        tenant_id, user_id, conversation_id, expires_at, absolute_expires_at
    ) values (
        a.actor_tenant, a.actor_user, coalesce(open_session.conversation_id, gen_random_uuid()),
        least(now() + make_interval(mins => (cfg ->> 'inactivity_ttl_minutes')::integer), absolute),
        absolute
    ) returning * into s;
    return hipocampo_private._session_view(s) || jsonb_build_object('evicted', to_jsonb(evicted));
end;
$$;

/*
session_add_message(…) -> jsonb

Purpose, parameters and returns: as in migration 001500. Only the config reading changes: the
  sessions section comes from the config rows with no values of its own.
Errors: as in 001500, and 55000 "sessions config is incomplete: …" (not seeded from config.toml).
*/
create or replace function hipocampo.session_add_message(
    session_id uuid,
    role text,
    content text,
    modality text default 'chat',
    attachments jsonb default '[]'::jsonb,
    embedding extensions.vector default null,
    metadata jsonb default '{}'::jsonb
)
returns bigint
language plpgsql
security invoker
set search_path = ''
as $$
declare
    s hipocampo_private.sessions := hipocampo_private._session(session_add_message.session_id, true);
    keep integer := (
        hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions') ->> 'last_messages'
    )::integer;
    message_id bigint;
begin
    message_id := hipocampo.add_message(
        s.conversation_id, role, content, modality, attachments, embedding, metadata,
        user_id => s.user_id, tenant_id => s.tenant_id
    );
    update hipocampo_private.sessions as x
    set data = jsonb_set(x.data, '{messages}', coalesce((
        select jsonb_agg(m.value order by m.ord)
        from (
            select e.value, e.ord from jsonb_array_elements(
                coalesce(x.data -> 'messages', '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
                    'id', message_id, 'role', session_add_message.role, 'content', session_add_message.content,
                    'modality', coalesce(session_add_message.modality, 'chat'), 'created_at', now()
                ))
            ) with ordinality as e (value, ord)
            order by e.ord desc
            limit keep
        ) as m
    ), '[]'::jsonb))
    where x.id = s.id;
    return message_id;
end;
$$;

/*
add_pending_confirmation(session_id uuid, action text, payload jsonb default '{}') -> jsonb

Purpose, parameters and returns: as in migration 001500. Only the config reading changes: the
  sessions section comes from the config rows with no values of its own.
Errors: as in 001500, and 55000 "sessions config is incomplete: …" (not seeded from config.toml).
*/
create or replace function hipocampo.add_pending_confirmation(session_id uuid, action text, payload jsonb default '{}'::jsonb)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    s hipocampo_private.sessions := hipocampo_private._session(add_pending_confirmation.session_id, true);
    item jsonb;
begin
    if action is null or btrim(action) = '' then
        raise exception 'a pending confirmation needs an action' using errcode = '22023';
    end if;
    item := jsonb_build_object(
        'id', gen_random_uuid(), 'action', action, 'payload', coalesce(payload, '{}'::jsonb),
        'expires_at', now() + make_interval(mins => (
            hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions')
            ->> 'pending_confirmation_minutes'
        )::integer)
    );
    update hipocampo_private.sessions as x
    set pending_confirmations = coalesce((
        select jsonb_agg(p) from jsonb_array_elements(x.pending_confirmations) as p
        where (p ->> 'expires_at')::timestamptz > now()
    ), '[]'::jsonb) || jsonb_build_array(item)
    where x.id = s.id;
    return item;
end;
$$;

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
