-- remember in named steps.
-- issue 47 §1: _remember (215 lines) in named steps: _memory_gate, _memory_slot, _memory_duplicate; behaviour unchanged
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._memory_duplicate(tenant_id uuid, user_id uuid, replacing uuid, staged_id uuid, description text, embedding extensions.vector, model text, cfg jsonb)
returns uuid
language sql
stable
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._memory_gate(tenant_id uuid, user_id uuid, category text, confidence double precision, source text, description text, token_count integer, value jsonb, cfg jsonb)
returns text[]
language plpgsql
stable
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._memory_slot(tenant_id uuid, user_id uuid, scope text, key text, source text, to_staging boolean, cfg jsonb, out current_row hipocampo_private.memories, out problem text[])
returns record
language plpgsql
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._remember(key text, value jsonb, description text, category text, embedding extensions.vector, scope text, confidence double precision, source text, source_ref text, conversation_id uuid, tags text[], emotion text, intensity numeric, life_domain text, pinned boolean, token_count integer, expires_at timestamp with time zone, user_id uuid, tenant_id uuid, tier text)
returns jsonb
language plpgsql
set search_path to ''
as $function$
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
    if embedding is not null then
        model := hipocampo_private._active_model(embedding, 'embedding');
    end if;
    dup_id := hipocampo_private._memory_duplicate(a.actor_tenant, a.actor_user, current_row.id, staged_id,
        _remember.description, _remember.embedding, model, cfg);
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
    end if;
    delete from hipocampo_private.memory_staging as s where s.id = staged_id;
    if to_staging then
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
$function$;

revoke execute on function hipocampo_private._memory_duplicate(tenant_id uuid, user_id uuid, replacing uuid, staged_id uuid, description text, embedding extensions.vector, model text, cfg jsonb) from public;
revoke execute on function hipocampo_private._memory_gate(tenant_id uuid, user_id uuid, category text, confidence double precision, source text, description text, token_count integer, value jsonb, cfg jsonb) from public;
revoke execute on function hipocampo_private._memory_slot(tenant_id uuid, user_id uuid, scope text, key text, source text, to_staging boolean, cfg jsonb, out current_row hipocampo_private.memories, out problem text[]) from public;
grant execute on function hipocampo_private._memory_duplicate(tenant_id uuid, user_id uuid, replacing uuid, staged_id uuid, description text, embedding extensions.vector, model text, cfg jsonb) to authenticated;
grant execute on function hipocampo_private._memory_duplicate(tenant_id uuid, user_id uuid, replacing uuid, staged_id uuid, description text, embedding extensions.vector, model text, cfg jsonb) to service_role;
grant execute on function hipocampo_private._memory_gate(tenant_id uuid, user_id uuid, category text, confidence double precision, source text, description text, token_count integer, value jsonb, cfg jsonb) to authenticated;
grant execute on function hipocampo_private._memory_gate(tenant_id uuid, user_id uuid, category text, confidence double precision, source text, description text, token_count integer, value jsonb, cfg jsonb) to service_role;
grant execute on function hipocampo_private._memory_slot(tenant_id uuid, user_id uuid, scope text, key text, source text, to_staging boolean, cfg jsonb, out current_row hipocampo_private.memories, out problem text[]) to authenticated;
grant execute on function hipocampo_private._memory_slot(tenant_id uuid, user_id uuid, scope text, key text, source text, to_staging boolean, cfg jsonb, out current_row hipocampo_private.memories, out problem text[]) to service_role;
