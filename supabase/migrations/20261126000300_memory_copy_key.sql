-- remember's copy test normalises descriptions with hipocampo.normalize_question (the answer
-- cache's key: lower case, unaccented, every run of non-alphanumerics one space, trimmed) instead
-- of a second copy of that expression written twice in _remember (migration 20261126000100).
-- Restated from supabase/schemas/06_memory.sql; re-runnable.
set local check_function_bodies = off;

/*
_remember(…the parameters of hipocampo.remember…, tier text) -> jsonb

Purpose: the gate and the write behind remember (tier 'auto') and promote_memory (tier
  'long_term'). 'auto' routes a write with intensity < memory.staging_below_intensity (7) to
  staging; anything else (no intensity, or intensity >= 7) goes to long-term memory. The gate
  (see hipocampo.remember) reads the memory config from the config rows only
  (_memory_config) and checks the description (_memory_text_problem) and the value
  (_memory_value_problem).
Staging writes: the same gate except the quota and the explicit-user rule (both apply on
  promotion); expires_at defaults to now() + memory.staging_ttl_days and must lie within 30 days
  (22023 otherwise); one staged row per key (a new write replaces it). A long-term write of a key
  removes that key's staged row.
Returns: as hipocampo.remember; staging writes return status 'staged'.
Errors: as hipocampo.remember; 22023 "key /
  scope / source must not be null", 22001 "key is n characters; the limit is 200" (raised);
  55000 "memory config is incomplete: …".
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
    owner_key uuid;
    current_row hipocampo_private.memories;
    staged_id uuid;
    dup_id uuid;
    copy_key text;
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
    -- Arguments the table would refuse with a raw engine error are named here first.
    if _remember.key is null or _remember.scope is null or _remember.source is null then
        raise exception '% must not be null',
            case when _remember.key is null then 'key' when _remember.scope is null then 'scope' else 'source' end
            using errcode = '22023';
    end if;
    if char_length(_remember.key) > 200 then
        raise exception 'key is % characters; the limit is 200', char_length(_remember.key) using errcode = '22001';
    end if;
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
            problem := coalesce(hipocampo_private._memory_text_problem(description, token_count, cfg),
                hipocampo_private._memory_value_problem(_remember.value, cfg));
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
    end if;
    -- A duplicate of another active memory (not the one being replaced), in either tier: a copy
    -- of its description (equal once normalised as the answer cache normalises questions:
    -- case, accents, punctuation and spacing ignored; compared within a few characters' length
    -- only), or with an embedding a semantic duplicate (cosine above the model's
    -- memory.duplicate_cosine). The copy test is the model's blind spot: e5's calibrated 0.995
    -- catches 0.9 % of LoCoMo's facts retyped in lower case without their full stop
    -- (docs/BENCHMARKS.md §duplicate thresholds).
    copy_key := hipocampo.normalize_question(_remember.description);
    select d.id into dup_id from (
        select m.id, m.embedding, m.embedding_model, m.description from hipocampo_private.memories as m
        where m.tenant_id = a.actor_tenant and m.status = 'active'
          and (m.user_id = a.actor_user or m.scope = 'tenant_shared')
          and m.id is distinct from current_row.id
        union all
        select s.id, s.embedding, s.embedding_model, s.description from hipocampo_private.memory_staging as s
        where s.tenant_id = a.actor_tenant
          and (s.user_id = a.actor_user or s.scope = 'tenant_shared')
          and s.id is distinct from staged_id
    ) as d,
    lateral (
        select
            case when abs(char_length(d.description) - char_length(_remember.description))
                    <= greatest(8, char_length(_remember.description) / 10)
                then hipocampo.normalize_question(d.description) = copy_key
                else false
            end as is_copy,
            -- Vectors of another model (another width, during a switch) are not compared.
            case when d.embedding_model = model
                then 1 - (d.embedding operator(extensions.<=>) _remember.embedding)
            end as sim
    ) as c
    where c.is_copy or c.sim > (cfg ->> 'duplicate_cosine')::double precision
    order by c.is_copy desc, c.sim desc nulls last
    limit 1;
    if dup_id is not null then
        perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, dup_id,
            'memory.duplicate', 'semantic_duplicate', attempt);
        return jsonb_build_object('status', 'duplicate', 'memory_id', dup_id);
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
