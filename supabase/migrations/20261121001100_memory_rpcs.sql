-- Memory RPCs: consent, the gate + upsert (remember), correct, forget, hard delete, lookup,
-- search, decay/expiry, profile seed. Thresholds come from the config rows (section memory).

/*
_memory_actor(user_id uuid, tenant_id uuid) -> record (tenant_id uuid, user_id uuid)

Purpose: who a memory call acts for: the JWT user in the JWT tenant, or (callers that bypass
  RLS: service_role) the user and tenant named explicitly.
Errors: 42501 "no user: …" when neither a JWT subject nor a user_id is given.
*/
create function hipocampo_private._memory_actor(
    user_id uuid, tenant_id uuid, out actor_tenant uuid, out actor_user uuid
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    actor_tenant := hipocampo_private._resolve_tenant(_memory_actor.tenant_id);
    actor_user := coalesce((select auth.uid()), _memory_actor.user_id);
    if actor_user is null then
        raise exception 'no user: the JWT has no subject and no user_id was given' using errcode = '42501';
    end if;
    if (select auth.uid()) is not null and _memory_actor.user_id is not null
        and _memory_actor.user_id <> (select auth.uid()) then
        raise exception 'user mismatch: the JWT names another user' using errcode = '42501';
    end if;
end;
$$;

/*
_memory_text_problem(description text, cfg jsonb) -> text[2] (reason, message) or null

Purpose: the gate's text checks, in order: length, noise, personal or sensitive data.
Returns: null when the text may be stored; else {reason, message}.
*/
create function hipocampo_private._memory_text_problem(description text, token_count integer, cfg jsonb)
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
    if char_length(btrim(coalesce(description, ''))) < coalesce((cfg ->> 'min_chars')::integer, 3) then
        return array['too_short', format('memory text must have at least %s characters',
            coalesce((cfg ->> 'min_chars')::integer, 3))];
    end if;
    if greatest(coalesce(token_count, 0), ceil(char_length(description) / 4.0)::integer)
        > coalesce((cfg ->> 'max_tokens')::integer, 3000) then
        return array['too_long', format('memory text exceeds %s tokens',
            coalesce((cfg ->> 'max_tokens')::integer, 3000))];
    end if;
    if normalized = '' or normalized in (
        select jsonb_array_elements_text(coalesce(cfg -> 'noise', '[]'::jsonb))
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
    for pattern in select jsonb_array_elements_text(coalesce(cfg -> 'sensitive_patterns', '[]'::jsonb)) loop
        if plain ~* pattern then
            return array['sensitive_data', 'memory text carries sensitive data (health or financial details)'];
        end if;
    end loop;
    return null;
end;
$$;

/*
luhn_is_valid(digits text) -> boolean

Purpose: Luhn checksum of a string of digits (card numbers).
Example: select hipocampo_private.luhn_is_valid('4111111111111111'); -- true
*/
create function hipocampo_private.luhn_is_valid(digits text)
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
Errors: 42501 no tenant / no user.
Example: select hipocampo.set_memory_consent(true);
*/
create function hipocampo.set_memory_consent(
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
    insert into hipocampo_private.memory_consents as mc (tenant_id, user_id, granted)
    values (a.actor_tenant, a.actor_user, set_memory_consent.granted)
    on conflict on constraint memory_consents_pkey do update set granted = excluded.granted, updated_at = now();
    perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, null, 'memory.consent',
        case when granted then 'granted' else 'revoked' end, '{}'::jsonb);
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
  A semantic duplicate (cosine > duplicate_cosine) of an active memory returns that memory.
  Otherwise the one active row of (tenant, owner, scope, key) is replaced: the old one is
  deprecated (valid_to set) and the new one points to it (supersedes). Concurrent calls for one
  key are serialised by an advisory lock, so exactly one active row remains and no caller sees a
  unique violation.
Parameters: key 'a.b' snake_case; value any json; description the text (3 chars .. 3,000 tokens);
  category one of ten; embedding of the active model; confidence 0..1; tags snake_case, unique,
  default {category}; intensity 0..10 (rounded to 0.1); user_id/tenant_id only for service_role.
Returns: {"status": "created" | "updated" | "unchanged" | "duplicate" | "rejected",
  "memory_id", "superseded", "reason", "sqlstate", "message"}.
Errors (raised, nothing recorded): 23514 on values outside the vocabularies; 22000 wrong dims.
Example: select hipocampo.remember('prefs.short_answers', 'true', 'Prefere respostas curtas',
  'preference', '[…]'::extensions.vector, tags => array['respostas']);
*/
create function hipocampo.remember(
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
declare
    a record := hipocampo_private._memory_actor(remember.user_id, remember.tenant_id);
    cfg jsonb;
    problem text [];
    owner_key uuid;
    current_row hipocampo_private.memories;
    dup_id uuid;
    new_id uuid;
    model text;
    active_count integer;
    floor double precision;
    attempt jsonb := jsonb_build_object('key', remember.key, 'category', remember.category,
        'source', remember.source, 'scope', remember.scope);
begin
    cfg := coalesce(hipocampo.effective_config(a.actor_tenant) -> 'memory', '{}'::jsonb);

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

    if problem is null then
        -- Serialise writers of this key; then read the active row.
        owner_key := case when scope = 'personal' then a.actor_user
            else '00000000-0000-0000-0000-000000000000'::uuid end;
        perform pg_advisory_xact_lock(hashtextextended(
            a.actor_tenant::text || '/' || owner_key::text || '/' || scope || '/' || key, 0));
        select * into current_row from hipocampo_private.memories as m
        where m.tenant_id = a.actor_tenant and m.scope = remember.scope and m.key = remember.key
          and m.status = 'active'
          and (remember.scope = 'tenant_shared' or m.user_id = a.actor_user);
        if current_row.id is not null and current_row.source = 'explicit_user'
            and remember.source = 'inferred' then
            problem := array['explicit_user_wins', '55000',
                'an inferred memory never overrides one the user stated explicitly'];
        elsif current_row.id is null then
            select count(*) into active_count from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.status = 'active'
              and m.scope = 'personal';
            if remember.scope = 'personal'
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

    -- Same value: nothing to write.
    if current_row.id is not null and current_row.value = remember.value then
        perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, current_row.id,
            'memory.unchanged', null, attempt);
        return jsonb_build_object('status', 'unchanged', 'memory_id', current_row.id);
    end if;

    if embedding is not null then
        select e.name into model from hipocampo_private.embedding_models as e where e.active;
        if extensions.vector_dims(embedding) <> (select e.dims from hipocampo_private.embedding_models as e
                                                   where e.name = model) then
            raise exception 'embedding has % dimensions; model % expects %', extensions.vector_dims(embedding),
                model, (select e.dims from hipocampo_private.embedding_models as e where e.name = model)
                using errcode = '22000';
        end if;
        -- A semantic duplicate of another active memory (not the one being replaced).
        select m.id into dup_id from hipocampo_private.memories as m
        where m.tenant_id = a.actor_tenant and m.status = 'active' and m.embedding_model = model
          and (m.user_id = a.actor_user or m.scope = 'tenant_shared')
          and m.id is distinct from current_row.id
          and 1 - (m.embedding operator(extensions.<=>) remember.embedding)
              > coalesce((cfg ->> 'duplicate_cosine')::double precision, 0.97)
        order by m.embedding operator(extensions.<=>) remember.embedding
        limit 1;
        if dup_id is not null then
            perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, dup_id,
                'memory.duplicate', 'semantic_duplicate', attempt);
            return jsonb_build_object('status', 'duplicate', 'memory_id', dup_id);
        end if;
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
        a.actor_tenant, a.actor_user, remember.scope, remember.category, remember.key, remember.value,
        btrim(remember.description), remember.confidence, remember.source, remember.source_ref,
        remember.conversation_id, coalesce(remember.pinned, false),
        coalesce(remember.tags, array[remember.category]), remember.emotion,
        round(remember.intensity, 1), remember.life_domain, remember.embedding, model,
        greatest(coalesce(remember.token_count, 0), ceil(char_length(remember.description) / 4.0)::integer),
        current_row.id, remember.expires_at
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
correct_memory(memory_id uuid, value jsonb, description text, embedding vector default null) -> jsonb

Purpose: "isso está errado": replace a memory's value. The old row is deprecated (history kept,
  valid_to set), the new one supersedes it with source explicit_user and confidence 1; audited
  as memory.corrected.
Returns: {"status": "corrected", "memory_id": new id, "superseded": old id}.
Errors: P0002 "unknown memory" (not visible to the caller, or not active).
Example: select hipocampo.correct_memory('…', '"Ana"', 'O nome do usuário é Ana');
*/
create function hipocampo.correct_memory(
    memory_id uuid, value jsonb, description text, embedding extensions.vector default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    old hipocampo_private.memories;
    new_id uuid;
begin
    select * into old from hipocampo_private.memories as m
    where m.id = correct_memory.memory_id and m.status = 'active'
    for update;
    if old.id is null then
        raise exception 'unknown memory: %', memory_id using errcode = 'P0002';
    end if;
    update hipocampo_private.memories as m
    set status = 'deprecated', valid_to = now(), updated_at = now()
    where m.id = old.id;
    insert into hipocampo_private.memories (
        tenant_id, user_id, scope, category, key, value, description, confidence, source, source_ref,
        conversation_id, pinned, tags, emotion, intensity, life_domain, embedding, embedding_model,
        token_count, supersedes, expires_at
    ) values (
        old.tenant_id, old.user_id, old.scope, old.category, old.key, correct_memory.value,
        btrim(correct_memory.description), 1, 'explicit_user', 'correction', old.conversation_id,
        old.pinned, old.tags, old.emotion, old.intensity, old.life_domain,
        coalesce(correct_memory.embedding, old.embedding),
        case when correct_memory.embedding is null then old.embedding_model
             else (select e.name from hipocampo_private.embedding_models as e where e.active) end,
        ceil(char_length(correct_memory.description) / 4.0)::integer, old.id, old.expires_at
    ) returning id into new_id;
    perform hipocampo_private._memory_event(old.tenant_id, coalesce((select auth.uid()), old.user_id),
        new_id, 'memory.corrected', null,
        jsonb_build_object('key', old.key, 'old_value', old.value, 'supersedes', old.id));
    return jsonb_build_object('status', 'corrected', 'memory_id', new_id, 'superseded', old.id);
end;
$$;

/*
forget_memory(memory_id uuid) -> boolean

Purpose: "esquece isso": soft delete (status deleted); the row stays for audit until erased.
Returns: true when an active memory was forgotten, false when none is visible with that id.
Example: select hipocampo.forget_memory('…');
*/
create function hipocampo.forget_memory(memory_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
as $$
declare
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
Example: select hipocampo.hard_delete_memory('…');
*/
create function hipocampo.hard_delete_memory(memory_id uuid)
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
  or the whole history with include_history). Counts as an access.
Example: select value from hipocampo.lookup_memories(key => 'user.name');
*/
create function hipocampo.lookup_memories(
    key text default null, category text default null, include_history boolean default false
)
returns setof hipocampo_private.memories
language plpgsql
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(null);
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
    perform hipocampo_private._touch_memories(
        array(select m.id from hipocampo_private.memories as m
              where m.tenant_id = t and m.status = 'active'
                and (lookup_memories.key is null or m.key = lookup_memories.key)
                and (lookup_memories.category is null or m.category = lookup_memories.category)
                and ((select auth.uid()) is null or m.user_id = (select auth.uid()) or m.scope = 'tenant_shared')),
        t
    );
end;
$$;

/*
_touch_memories(ids uuid[], tenant_id uuid) -> void

Purpose: access_count + 1 and last_accessed_at = now() for memories the caller just read.
*/
-- definer because reading a shared memory must count as an access although only admins may update it.
create function hipocampo_private._touch_memories(ids uuid[], tenant_id uuid)
returns void
language sql
security definer
set search_path = ''
as $$
    update hipocampo_private.memories as m
    set access_count = m.access_count + 1, last_accessed_at = now()
    where m.id = any(_touch_memories.ids) and m.tenant_id = _touch_memories.tenant_id
$$;

/*
search_memories(query_embedding vector, mode text default 'context', match_count integer default null,
  filter_tags text[] default null, filter_emotion text default null, filter_life_domain text default null,
  filter_category text default null, filter_scope text default null, min_score double precision default null)
  -> setof record

Purpose: semantic memory search for the caller (own personal memories + the tenant's shared ones).
  score = cosine similarity + memory.pinned_bonus for pinned memories; kept when score >=
  memory.context_threshold (mode 'context') or memory.answer_threshold (mode 'answer'), or
  min_score; MMR (memory.mmr_lambda) with near-duplicates (cosine > duplicate_cosine) dropped.
  Tag filtering with an empty tag list, or with tags no memory carries, falls back to searching
  without the tag filter and says so in `fallback` ('empty_tags' | 'no_memory_with_tags').
  Returned memories count as accessed (access_count, last_accessed_at).
Returns: memory_id, key, value, description, category, scope, tags, pinned, confidence,
  similarity, score, rank, fallback.
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
    min_score double precision default null
)
returns table (
    memory_id uuid, key text, value jsonb, description text, category text, scope text,
    tags text[], pinned boolean, confidence real, similarity double precision,
    score double precision, rank integer, fallback text
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
    sims double precision [];
    scores double precision [];
    embs extensions.vector [];
    sel integer [] := '{}';
begin
    if mode not in ('context', 'answer') then
        raise exception 'mode must be context or answer (got %)', mode using errcode = '22023';
    end if;
    threshold := coalesce(min_score, case mode
        when 'answer' then coalesce((cfg ->> 'answer_threshold')::double precision, 0.85)
        else coalesce((cfg ->> 'context_threshold')::double precision, 0.78) end);
    select e.name into model from hipocampo_private.embedding_models as e where e.active;
    if extensions.vector_dims(query_embedding)
        <> (select e.dims from hipocampo_private.embedding_models as e where e.name = model) then
        raise exception 'query_embedding has % dimensions; model % expects %',
            extensions.vector_dims(query_embedding), model,
            (select e.dims from hipocampo_private.embedding_models as e where e.name = model)
            using errcode = '22000';
    end if;
    if use_tags is not null and cardinality(use_tags) = 0 then
        why := 'empty_tags';
        use_tags := null;
    elsif use_tags is not null and not exists (
        select 1 from hipocampo_private.memories as m
        where m.tenant_id = t and m.status = 'active' and m.tags && use_tags
          and (me is null or m.user_id = me or m.scope = 'tenant_shared')
    ) then
        why := 'no_memory_with_tags';
        use_tags := null;
    end if;

    select array_agg(x.id order by x.score desc, x.id), array_agg(x.sim order by x.score desc, x.id),
        array_agg(x.score order by x.score desc, x.id), array_agg(x.embedding order by x.score desc, x.id)
    into ids, sims, scores, embs
    from (
        select m.id, m.embedding, 1 - (m.embedding operator(extensions.<=>) query_embedding) as sim,
            1 - (m.embedding operator(extensions.<=>) query_embedding)
            + case when m.pinned then bonus else 0 end as score
        from hipocampo_private.memories as m
        where m.tenant_id = t and m.status = 'active' and m.embedding_model = model
          and (me is null or m.user_id = me or m.scope = 'tenant_shared')
          and (use_tags is null or m.tags && use_tags)
          and (search_memories.filter_emotion is null or m.emotion = search_memories.filter_emotion)
          and (search_memories.filter_life_domain is null or m.life_domain = search_memories.filter_life_domain)
          and (search_memories.filter_category is null or m.category = search_memories.filter_category)
          and (search_memories.filter_scope is null or m.scope = search_memories.filter_scope)
        order by score desc, m.id
        limit k * 8
    ) as x
    where x.score >= threshold;

    if ids is not null then
        -- MMR on the scores, near-duplicates dropped (shared with hybrid_search).
        sel := hipocampo_private._mmr(embs, scores, k, lambda, dup);
    end if;

    return query
    select m.id, m.key, m.value, m.description, m.category, m.scope, m.tags, m.pinned, m.confidence,
        sims[o.pos], scores[o.pos], o.ord::integer, why
    from unnest(sel) with ordinality as o (pos, ord)
    inner join hipocampo_private.memories as m on m.id = ids[o.pos]
    order by o.ord;
    if cardinality(sel) = 0 and why is not null then
        -- Still say that the tag filter was dropped, with no rows to carry it.
        return query select null::uuid, null::text, null::jsonb, null::text, null::text, null::text,
            null::text [], null::boolean, null::real, null::double precision, null::double precision,
            0, why;
    end if;
    perform hipocampo_private._touch_memories(array(select ids[x] from unnest(sel) as x), t);
end;
$$;

/*
run_memory_maintenance(now timestamptz default now()) -> jsonb

Purpose: decay and expiry, with an explicit clock (tests freeze it). Memories not accessed for
  memory.decay_days lose memory.decay_step confidence, once per period; below
  memory.deactivate_below they expire; explicit_user and pinned memories never decay; active
  memories past expires_at expire. Events memory.decayed / memory.expired are recorded.
  Scheduled daily with pg_cron where the extension exists (Supabase); locally `hipocampo worker`.
Returns: {"decayed": n, "deactivated": n, "expired": n}.
Example: select hipocampo.run_memory_maintenance('2027-01-01'::timestamptz);
*/
create function hipocampo.run_memory_maintenance(now timestamptz default now())
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

    return jsonb_build_object('decayed', n_decayed, 'deactivated', n_low, 'expired', n_expired);
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
  never stored.
Returns: {"<key>": "<status of remember>", …}.
Errors: 22023 "unknown profile keys: …"; 22023 on a source_ref other than onboarding | profile.
Example: select hipocampo.seed_profile('{"user.name": "Ana", "prefs.short_answers": true}');
*/
create function hipocampo.seed_profile(
    profile jsonb, source_ref text default 'onboarding', user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    allowed constant jsonb := '{
        "user.name": "identity_profile", "user.preferred_language": "identity_profile",
        "user.timezone": "identity_profile", "user.locale": "identity_profile",
        "user.role_title": "identity_profile", "user.communication_style": "identity_profile",
        "tenant.name": "tenant_business", "tenant.segment": "tenant_business",
        "tenant.business_model": "tenant_business", "tenant.primary_goals": "goals_kpis",
        "prefs.no_emojis": "preference", "prefs.no_tech_terms": "preference",
        "prefs.short_answers": "preference", "prefs.channels_enabled": "preference"
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
            description => item.key || ': ' || coalesce(item.value #>> '{}', item.value::text),
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

grant execute on function hipocampo_private._memory_actor(uuid, uuid) to authenticated, service_role;
grant execute on function hipocampo_private._memory_text_problem(text, integer, jsonb)
to authenticated, service_role;
grant execute on function hipocampo_private.luhn_is_valid(text) to authenticated, service_role;
grant execute on function hipocampo_private._touch_memories(uuid[], uuid) to authenticated, service_role;
grant execute on function hipocampo.set_memory_consent(boolean, uuid, uuid) to authenticated, service_role;
grant execute on function hipocampo.remember(
    text, jsonb, text, text, extensions.vector, text, double precision, text, text, uuid, text[], text, numeric,
    text, boolean, integer, timestamptz, uuid, uuid
) to authenticated, service_role;
grant execute on function hipocampo.correct_memory(uuid, jsonb, text, extensions.vector)
to authenticated, service_role;
grant execute on function hipocampo.forget_memory(uuid) to authenticated, service_role;
grant execute on function hipocampo.hard_delete_memory(uuid) to service_role;
grant execute on function hipocampo.lookup_memories(text, text, boolean) to authenticated, service_role;
grant execute on function hipocampo.search_memories(
    extensions.vector, text, integer, text[], text, text, text, text, double precision
) to authenticated, service_role;
grant execute on function hipocampo.run_memory_maintenance(timestamptz) to service_role;
grant execute on function hipocampo.seed_profile(jsonb, text, uuid, uuid) to authenticated, service_role;

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
comment on function hipocampo.search_memories(
    extensions.vector, text, integer, text[], text, text, text, text, double precision
) is 'Semantic memory search with thresholds, pinned bonus, MMR and tag fallback.';
comment on function hipocampo.run_memory_maintenance(timestamptz) is
'Decay, deactivation and expiry of memories at a given clock.';
comment on function hipocampo.seed_profile(jsonb, text, uuid, uuid) is
'Write the onboarding profile keys as memories (idempotent).';

-- Schedule maintenance daily where pg_cron exists (Supabase); skip cleanly where it does not.
do $$
begin
    if exists (select 1 from pg_catalog.pg_extension where extname = 'pg_cron') then
        perform cron.schedule(
            'hipocampo-memory-maintenance', '17 3 * * *', 'select hipocampo.run_memory_maintenance()'
        );
    end if;
end
$$;

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
