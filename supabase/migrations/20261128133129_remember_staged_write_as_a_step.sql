-- remember staged write as a step.
-- Issue 47 §1: _remember's staged write (_memory_stage) and argument check (_check_memory_key) as steps; the same rows, events and errors.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._check_memory_key(key text, scope text, source text)
returns void
language plpgsql
immutable
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._memory_stage(tenant uuid, user_id uuid, replaces uuid, model text, tokens integer, cfg jsonb, attempt jsonb, key text, value jsonb, description text, category text, scope text, confidence double precision, source text, source_ref text, conversation_id uuid, tags text[], emotion text, intensity numeric, life_domain text, pinned boolean, embedding extensions.vector, expires_at timestamp with time zone)
returns jsonb
language plpgsql
set search_path to ''
as $function$
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
$function$;

revoke execute on function hipocampo_private._check_memory_key(key text, scope text, source text) from public;
revoke execute on function hipocampo_private._memory_stage(tenant uuid, user_id uuid, replaces uuid, model text, tokens integer, cfg jsonb, attempt jsonb, key text, value jsonb, description text, category text, scope text, confidence double precision, source text, source_ref text, conversation_id uuid, tags text[], emotion text, intensity numeric, life_domain text, pinned boolean, embedding extensions.vector, expires_at timestamp with time zone) from public;
grant execute on function hipocampo_private._check_memory_key(key text, scope text, source text) to authenticated;
grant execute on function hipocampo_private._check_memory_key(key text, scope text, source text) to service_role;
grant execute on function hipocampo_private._memory_stage(tenant uuid, user_id uuid, replaces uuid, model text, tokens integer, cfg jsonb, attempt jsonb, key text, value jsonb, description text, category text, scope text, confidence double precision, source text, source_ref text, conversation_id uuid, tags text[], emotion text, intensity numeric, life_domain text, pinned boolean, embedding extensions.vector, expires_at timestamp with time zone) to authenticated;
grant execute on function hipocampo_private._memory_stage(tenant uuid, user_id uuid, replaces uuid, model text, tokens integer, cfg jsonb, attempt jsonb, key text, value jsonb, description text, category text, scope text, confidence double precision, source text, source_ref text, conversation_id uuid, tags text[], emotion text, intensity numeric, life_domain text, pinned boolean, embedding extensions.vector, expires_at timestamp with time zone) to service_role;
