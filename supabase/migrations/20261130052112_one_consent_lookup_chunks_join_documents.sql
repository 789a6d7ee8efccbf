-- one consent lookup chunks join documents.
-- the consent lookup is one helper (_has_consent) in its five places; _insert_chunks joins documents for each document's language instead of a subquery per chunk
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._has_consent(tenant_id uuid, user_id uuid)
returns boolean
language sql
stable
set search_path to ''
as $function$
    select coalesce((
        select mc.granted from hipocampo_private.memory_consents as mc
        where mc.tenant_id = _has_consent.tenant_id and mc.user_id = _has_consent.user_id
    ), false);
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
        'consent', hipocampo_private._has_consent(a.actor_tenant, a.actor_user),
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

create or replace function hipocampo.memory_consent(user_id uuid default null::uuid, tenant_id uuid default null::uuid)
returns boolean
language plpgsql
stable
set search_path to ''
set jit to 'off'
as $function$
declare
    a record := hipocampo_private._memory_actor(memory_consent.user_id, memory_consent.tenant_id);
begin
    return hipocampo_private._has_consent(a.actor_tenant, a.actor_user);
end;
$function$;

create or replace function hipocampo_private._insert_chunks(k hipocampo_private.knowledge_bases, items jsonb, state jsonb, embedding_model text)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    result jsonb;
begin
    with written as (
        insert into hipocampo_private.chunks (
            tenant_id, kb_id, document_id, chunk_index, content, token_count, metadata,
            content_hash, ts_config, embedding, embedding_model, expires_at, sentence_embeddings
        )
        select
            k.tenant_id, k.id, s.doc_id, (c.value ->> 'chunk_index')::integer, c.value ->> 'content',
            coalesce((c.value ->> 'token_count')::integer, 0), coalesce(c.value -> 'metadata', '{}'::jsonb),
            c.value ->> 'content_hash',
            hipocampo_private.text_search_config(coalesce(d.language, k.language)),
            (c.value ->> 'embedding')::extensions.vector, _insert_chunks.embedding_model,
            (items -> s.i -> 'document' ->> 'expires_at')::timestamptz,
            case when jsonb_typeof(c.value -> 'sentence_embeddings') = 'array' then array(
                select (x.v #>> '{}')::extensions.vector
                from jsonb_array_elements(c.value -> 'sentence_embeddings') with ordinality as x (v, n)
                order by x.n
            ) end
        from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        -- each document's detected language (documents.language) stems its chunks
        inner join hipocampo_private.documents as d on d.id = s.doc_id
        cross join lateral jsonb_array_elements(items -> s.i -> 'chunks') with ordinality as c
        where s.status <> 'unchanged'
        order by s.i, c.ordinality
        on conflict on constraint chunks_tenant_hash_model_key do nothing
        returning document_id
    )

    select jsonb_agg(jsonb_build_object(
        'document_id', s.doc_id, 'status', s.status, 'chunks', coalesce(w.n, 0),
        'skipped', case
            when s.status = 'unchanged' then 0
            else jsonb_array_length(items -> s.i -> 'chunks') - coalesce(w.n, 0)
        end) order by s.i)
    into result
    from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
    left join (
        select w.document_id, count(*)::integer as n from written as w group by w.document_id
    ) as w on w.document_id = s.doc_id;

    update hipocampo_private.documents as d set chunk_count = (r.value ->> 'chunks')::integer
    from jsonb_array_elements(result) as r
    where d.id = (r.value ->> 'document_id')::uuid and r.value ->> 'status' <> 'unchanged';
    return result;
end;
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
$function$;

create or replace function hipocampo_private._memory_write_allowed(tenant_id uuid, user_id uuid, description text, value jsonb, token_count integer)
returns boolean
language plpgsql
stable
set search_path to ''
as $function$
declare
    cfg jsonb;
begin
    if not hipocampo_private._has_consent(_memory_write_allowed.tenant_id, _memory_write_allowed.user_id) then
        return false;
    end if;
    cfg := hipocampo_private._memory_config(
        hipocampo.effective_config(_memory_write_allowed.tenant_id) -> 'memory');
    return hipocampo_private._memory_text_problem(description, token_count, cfg) is null
        and hipocampo_private._memory_value_problem(value, cfg) is null;
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
        or not hipocampo_private._has_consent(_propose_memories.tenant_id, _propose_memories.user_id) then
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

revoke execute on function hipocampo_private._has_consent(tenant_id uuid, user_id uuid) from public;
grant execute on function hipocampo_private._has_consent(tenant_id uuid, user_id uuid) to authenticated;
grant execute on function hipocampo_private._has_consent(tenant_id uuid, user_id uuid) to service_role;
