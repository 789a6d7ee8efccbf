-- memories from messages.
-- a user's message passes what it states of them (name, unit, preferences, allergies) through the memory gate, source conversation (issue 59 §6); a conversation-sourced write never overrides an explicit_user memory; the memory inspector shows the message a memory came from
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._memory_proposals(content text)
returns table (key text, value jsonb, description text, category text, rule text)
language plpgsql
immutable
set search_path to ''
as $function$
declare
    body text := left(coalesce(content, ''), 4000);
    upper_word constant text := '[A-ZÀ-Ý][a-zà-ÿA-ZÀ-Ý''-]+';
    found text[];
    words text;
begin
    found := regexp_match(body, '(?:^|[^[:alpha:]])(?:[Mm]eu nome (?:é|e)|[Mm]e chamo|[Pp]ode me chamar de|[Mm]y name is|[Cc]all me)\s+('
        || upper_word || '(?:\s+(?:d[aeo]s?\s+)?' || upper_word || '){0,3})');
    if found is not null then
        return query select 'identity.name', to_jsonb(found[1]), 'Nome: ' || found[1], 'identity_profile', 'name';
    end if;
    found := regexp_match(body, '(?:^|[^[:alpha:]])(?:[Mm]oro n[oa]|[Ss]ou d[oa]|[Mm]eu apartamento (?:é|e) o|I live in)\s+'
        || '(?:(?:o |a |the )?(?:apto\.?|apartamento|ap\.?|unidade|casa|apartment|unit|flat)\s*)(?:n[º°o]\.?\s*)?(\d{1,5}[A-Za-z]?)\M');
    if found is not null then
        return query select 'identity.unit', to_jsonb(found[1]), 'Mora na unidade ' || found[1], 'identity_profile', 'unit';
    end if;
    found := regexp_match(body, '(?:^|[^[:alpha:]])(?:[Ee]u )?(?:[Pp]refiro|I prefer)\s+([^.!?\n]{3,120})');
    if found is not null then
        words := array_to_string((regexp_split_to_array(hipocampo_private._plain_words(found[1]), '\s+'))[1:3], '_');
        if words ~ '^[a-z0-9_]+$' then
            return query select 'preference.' || words, to_jsonb(btrim(found[1])), 'Prefere ' || btrim(found[1]),
                'preference', 'preference';
        end if;
    end if;
    found := regexp_match(body, '(?:^|[^[:alpha:]])(?:[Ss]ou al[ée]rgic[oa] (?:a|ao|à)|[Tt]enho alergia (?:a|ao|à)|I''?m allergic to|I am allergic to)\s+([^.!?,;\n]{2,80})');
    if found is not null then
        return query select 'health.allergy', to_jsonb(btrim(found[1])), 'Alergia a ' || btrim(found[1]),
            'identity_profile', 'allergy';
    end if;
end;
$function$;

create or replace function hipocampo_private._propose_memories(tenant_id uuid, user_id uuid, conversation_id uuid, message_id bigint, content text)
returns integer
language plpgsql
set search_path to ''
as $function$
declare
    p record;
    out_ jsonb;
    taken integer := 0;
begin
    if not coalesce((hipocampo.effective_config(_propose_memories.tenant_id) #>> '{memory,propose_from_messages}')::boolean, true)
        or not coalesce((select mc.granted from hipocampo_private.memory_consents as mc
            where mc.tenant_id = _propose_memories.tenant_id and mc.user_id = _propose_memories.user_id), false) then
        return 0;
    end if;
    for p in select * from hipocampo_private._memory_proposals(_propose_memories.content) loop
        out_ := hipocampo_private._remember(
            p.key, p.value, p.description, p.category, null, 'personal', 0.8, 'conversation',
            'message:' || _propose_memories.message_id, _propose_memories.conversation_id,
            array[p.category, 'from_conversation'], null, null, null, false, null, null,
            _propose_memories.user_id, _propose_memories.tenant_id, 'auto'
        );
        if out_ ->> 'status' in ('created', 'updated', 'staged') then
            taken := taken + 1;
        end if;
    end loop;
    return taken;
end;
$function$;

create or replace function hipocampo_private._source_message(tenant_id uuid, user_id uuid, source_ref text)
returns jsonb
language sql
stable
set search_path to ''
as $function$
    select jsonb_build_object(
        'id', m.id, 'conversation_id', m.conversation_id, 'created_at', m.created_at, 'content', left(m.content, 300)
    )
    from hipocampo_private.messages as m
    where _source_message.source_ref ~ '^message:[0-9]{1,18}$'
      and m.id = substr(_source_message.source_ref, 9)::bigint
      and m.tenant_id = _source_message.tenant_id and m.user_id = _source_message.user_id
$function$;

create or replace function hipocampo.add_message(conversation_id uuid, role text, content text, modality text default 'chat'::text, attachments jsonb default '[]'::jsonb, embedding extensions.vector default null::extensions.vector, metadata jsonb default '{}'::jsonb, language text default null::text, created_at timestamp with time zone default null::timestamp with time zone, user_id uuid default null::uuid, tenant_id uuid default null::uuid)
returns bigint
language plpgsql
set search_path to ''
set jit to 'off'
as $function$
declare
    a record := hipocampo_private._memory_actor(add_message.user_id, add_message.tenant_id);
    cfg jsonb := coalesce(hipocampo.effective_config(a.actor_tenant) -> 'conversations', '{}'::jsonb);
    lang text := coalesce(add_message.language, cfg ->> 'language', 'portuguese');
    ts regconfig := hipocampo_private.text_search_config(lang);
    model text;
    new_id bigint;
begin
    if ts is null then
        raise exception 'unsupported text-search language: %', lang using errcode = '22023';
    end if;
    if conversation_id is null or add_message.role is null or add_message.content is null then
        raise exception '% must not be null', case when conversation_id is null then 'conversation_id'
            when add_message.role is null then 'role' else 'content' end using errcode = '22023';
    end if;
    if char_length(add_message.content) > 100000 then
        raise exception 'content is % characters; the limit is 100,000', char_length(add_message.content)
            using errcode = '22001';
    end if;
    -- An answer's metadata is session_record_turn's to write (issue 57 §3: a member wrote an
    -- assistant message carrying answer metadata, and a backend's session reused it).
    if jsonb_typeof(add_message.metadata) = 'object'
        and add_message.metadata ?| array['answer', 'question_key', 'chunk_ids']
        and coalesce(current_setting('hipocampo.recording_turn', true), '') <> 'on' then
        raise exception 'metadata keys answer, question_key and chunk_ids are written by session_record_turn only'
            using errcode = '22023';
    end if;
    if embedding is not null then
        model := hipocampo_private._active_model(embedding, 'embedding');
    end if;
    insert into hipocampo_private.messages (
        tenant_id, user_id, conversation_id, role, content, modality, attachments, metadata, ts_config,
        embedding, embedding_model, created_at
    ) values (
        a.actor_tenant, a.actor_user, add_message.conversation_id, add_message.role, add_message.content,
        coalesce(add_message.modality, 'chat'), coalesce(add_message.attachments, '[]'::jsonb),
        coalesce(add_message.metadata, '{}'::jsonb), ts, add_message.embedding, model,
        coalesce(add_message.created_at, now())
    ) returning id into new_id;
    -- The rolling summary when it is due (an asked turn's is rolled by session_record_turn, which
    -- tells a chat model to write its own over it).
    if coalesce(current_setting('hipocampo.recording_turn', true), '') <> 'on' then
        perform hipocampo_private._roll_summary(a.actor_tenant, a.actor_user, add_message.conversation_id,
            hipocampo.effective_config(a.actor_tenant) -> 'sessions');
    end if;
    -- What the user says of themselves, through the memory gate (issue 59 §6), from the text as
    -- stored (scrubbed).
    if add_message.role = 'user' then
        perform hipocampo_private._propose_memories(a.actor_tenant, a.actor_user, add_message.conversation_id,
            new_id, (select m.content from hipocampo_private.messages as m where m.id = new_id));
    end if;
    return new_id;
exception when check_violation then
    raise exception 'invalid message: %', sqlerrm using errcode = '23514';
end;
$function$;

-- definer because a member's personal memories are visible to their owner only (RLS); a tenant
-- admin reads them through this audited call only.
create or replace function hipocampo.inspect_user_memory(user_id uuid default null::uuid, key text default null::text, history_limit integer default 100, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
security definer
set search_path to ''
set jit to 'off'
as $function$
declare
    a record := hipocampo_private._data_subject(inspect_user_memory.user_id, inspect_user_memory.tenant_id);
    who record := hipocampo_private._acting_for(a.actor_tenant, a.actor_user);
    result jsonb;
begin
    if inspect_user_memory.history_limit is null or inspect_user_memory.history_limit not between 1 and 1000 then
        raise exception 'history_limit must lie in [1, 1000] (got %)',
            coalesce(inspect_user_memory.history_limit::text, 'null') using errcode = '22023';
    end if;
    result := jsonb_build_object(
        'tenant_id', a.actor_tenant,
        'user_id', a.actor_user,
        'consent', coalesce((
            select mc.granted from hipocampo_private.memory_consents as mc
            where mc.tenant_id = a.actor_tenant and mc.user_id = a.actor_user
        ), false),
        'memories', coalesce((
            select jsonb_agg(
                (to_jsonb(m) - 'embedding') || jsonb_build_object(
                    'source_message', hipocampo_private._source_message(m.tenant_id, m.user_id, m.source_ref)
                ) order by m.updated_at desc, m.key
            )
            from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.status = 'active'
        ), '[]'::jsonb),
        'staged', coalesce((
            select jsonb_agg(
                (to_jsonb(s) - 'embedding') || jsonb_build_object(
                    'source_message', hipocampo_private._source_message(s.tenant_id, s.user_id, s.source_ref)
                ) order by s.expires_at, s.key
            )
            from hipocampo_private.memory_staging as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'history', coalesce((
            select jsonb_agg(to_jsonb(m) - 'embedding' order by m.valid_from desc)
            from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.key = inspect_user_memory.key
        ), '[]'::jsonb),
        'events', coalesce((
            select jsonb_agg(to_jsonb(e) order by e.id desc)
            from (
                select x.* from hipocampo_private.memory_events as x
                where x.tenant_id = a.actor_tenant and x.user_id = a.actor_user
                order by x.id desc
                limit inspect_user_memory.history_limit
            ) as e
        ), '[]'::jsonb)
    );
    insert into hipocampo_private.memory_events (tenant_id, user_id, event, reason, detail)
    values (a.actor_tenant, a.actor_user, 'memory.inspected', who.reason,
        who.detail || jsonb_build_object(
            'key', inspect_user_memory.key, 'memories', jsonb_array_length(result -> 'memories')
        ));
    return result;
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
$function$;

revoke execute on function hipocampo_private._memory_proposals(content text) from public;
revoke execute on function hipocampo_private._propose_memories(tenant_id uuid, user_id uuid, conversation_id uuid, message_id bigint, content text) from public;
revoke execute on function hipocampo_private._source_message(tenant_id uuid, user_id uuid, source_ref text) from public;
grant execute on function hipocampo_private._memory_proposals(content text) to authenticated;
grant execute on function hipocampo_private._memory_proposals(content text) to service_role;
grant execute on function hipocampo_private._propose_memories(tenant_id uuid, user_id uuid, conversation_id uuid, message_id bigint, content text) to authenticated;
grant execute on function hipocampo_private._propose_memories(tenant_id uuid, user_id uuid, conversation_id uuid, message_id bigint, content text) to service_role;
grant execute on function hipocampo_private._source_message(tenant_id uuid, user_id uuid, source_ref text) to service_role;
