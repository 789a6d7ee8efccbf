-- The memory gate reads the whole memory (issue 16 §1.3, §1.4). Before, it checked only the
-- description: value could hold a CPF or an e-mail ({"cpf": "529.982.247-25"} was stored), be
-- 10 MB or nest 5,000 levels, and a member with no consent could INSERT a memory straight into
-- the table, skipping the gate.
-- - _memory_text_problem finds personal data with the one scrubber (_pii_scrub, 004000) instead
--   of its own patterns;
-- - _memory_value_problem: value must be at most memory.value_max_bytes (22001) and nest at most
--   memory.value_max_depth levels (22023); every string leaf and object key is checked for
--   personal and sensitive data like the description (22023);
-- - _remember runs both, and names a null key / scope / source (22023) or a key over 200
--   characters (22001) instead of the table's 23502 / 23514;
-- - direct writes as authenticated: the INSERT policies of memories and memory_staging pass only
--   rows the gate would pass (consent, text, value: _memory_write_allowed), and UPDATE is granted
--   only on the columns the RPCs change (status, validity, access counters, confidence,
--   embeddings), so a member cannot rewrite a stored description or value behind the gate.

/*
_memory_config(section_config jsonb) -> jsonb

Purpose: _require_config with the keys the memory / session functions read; 004100 adds
  value_max_bytes and value_max_depth.
Errors: 55000 as _require_config.
*/
create or replace function hipocampo_private._memory_config(section_config jsonb)
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
        'decay_days', 'decay_step', 'deactivate_below', 'value_max_bytes', 'value_max_depth'
    ])
$$;

/*
_pii_problem(content text, cfg jsonb, what text) -> text[]

Purpose: the gate's data check of one text: personal data (any kind the scrubber replaces) or
  sensitive data (memory.sensitive_patterns over the lower-case, unaccented text).
Parameters: content - the text; cfg - the memory config; what - how the message names it
  ('memory text', 'memory value').
Returns: null, or [reason, message] with reason personal_data | sensitive_data.
Example: select hipocampo_private._pii_problem('CPF 529 982 247 25', cfg, 'memory value');
  -- {personal_data,"memory value carries personal data (CPF)"}
*/
create function hipocampo_private._pii_problem(content text, cfg jsonb, what text)
returns text[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    found jsonb := (hipocampo_private._pii_scrub(content)).counts;
    pattern text;
begin
    if found <> '{}'::jsonb then
        return array['personal_data', format('%s carries personal data (%s)', what, (
            select string_agg(case k when 'EMAIL' then 'e-mail' when 'TELEFONE' then 'phone number'
                when 'CARTAO' then 'card number' else k end, ', ' order by k)
            from jsonb_object_keys(found) as k))];
    end if;
    for pattern in select jsonb_array_elements_text(cfg -> 'sensitive_patterns') loop
        if lower(extensions.unaccent(content)) ~* pattern then
            return array['sensitive_data', format('%s carries sensitive data (health or financial details)', what)];
        end if;
    end loop;
    return null;
end;
$$;

/*
_memory_text_problem(description text, token_count integer, cfg jsonb) -> text[]

Purpose: the gate's checks of a memory's description: length (memory.min_chars characters,
  memory.max_tokens tokens estimated as ceil(characters / 4) unless the client reports more),
  noise (memory.noise), then personal and sensitive data (_pii_problem).
Returns: null, or [reason, message] with reason too_short | too_long | noise | personal_data |
  sensitive_data.
*/
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
    return hipocampo_private._pii_problem(description, cfg, 'memory text');
end;
$$;

/*
_memory_value_problem(value jsonb, cfg jsonb) -> text[]

Purpose: the gate's checks of a memory's value: present, at most memory.value_max_bytes bytes as
  JSON text, nesting at most memory.value_max_depth levels (a scalar is level 0, the members of
  an object or array level 1), and no personal or sensitive data in any string leaf or object key.
Returns: null, or [reason, message] with reason invalid_value | too_long | personal_data |
  sensitive_data.
Example: select hipocampo_private._memory_value_problem('{"cpf": "529.982.247-25"}', cfg);
  -- {personal_data,"memory value carries personal data (CPF)"}
*/
create function hipocampo_private._memory_value_problem(value jsonb, cfg jsonb)
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
    -- Leaves and keys joined by a separator no number or e-mail runs across.
    select string_agg(s, ' ; ') into strings from (
        select x #>> '{}' as s from jsonb_path_query(value, 'strict $.** ? (@.type() == "string")') as x
        union all
        select x #>> '{}' from jsonb_path_query(value, 'strict $.** ? (@.type() == "object").keyvalue().key') as x
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
*/
create function hipocampo_private._memory_write_allowed(
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

/*
_remember(...) -> jsonb

Purpose: the memory gate and upsert behind remember (migration 001200's contract, config from
  the config rows, 003100). 004100: a null key / scope / source is 22023 and a key over 200
  characters 22001 (raised, before the gate); the gate also refuses a value that is too large
  (too_long, 22001), nests too deep (invalid_value, 22023) or carries personal or sensitive data
  in any string leaf or key (personal_data / sensitive_data, 22023), recorded and returned as a
  rejection like every gate refusal.
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

drop policy "users write personal memories, admins shared ones" on hipocampo_private.memories;

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

drop policy "users stage personal memories, admins shared ones" on hipocampo_private.memory_staging;

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

-- What the RPCs running as authenticated update; description, value, key, scope and owner are
-- written only by INSERT (through the policy above).
revoke update on hipocampo_private.memories from authenticated;
grant update (
    status, valid_to, updated_at, access_count, last_accessed_at, confidence, last_decayed_at, embedding,
    embedding_model
) on hipocampo_private.memories to authenticated;
revoke update on hipocampo_private.memory_staging from authenticated;
grant update (
    intensity, updated_at, access_count, last_accessed_at, embedding, embedding_model
) on hipocampo_private.memory_staging to authenticated;

grant execute on function hipocampo_private._pii_problem(text, jsonb, text) to authenticated, service_role;
grant execute on function hipocampo_private._memory_value_problem(jsonb, jsonb) to authenticated, service_role;
grant execute on function hipocampo_private._memory_write_allowed(uuid, uuid, text, jsonb, integer)
to authenticated, service_role;

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
