-- summary rolls after add message.
-- issue 59 §6 (also): the rolling summary rolls for conversations written with add_message (the conversations edge function's path), not only for asked turns
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo_private._roll_summary(s hipocampo_private.sessions, cfg jsonb);

set check_function_bodies = off;

create or replace function hipocampo_private._roll_summary(tenant_id uuid, user_id uuid, conversation_id uuid, cfg jsonb)
returns boolean
language plpgsql
set search_path to ''
as $function$
declare
    since bigint := (
        select c.through_message_id from hipocampo_private.conversation_summaries as c
        where c.tenant_id = _roll_summary.tenant_id and c.user_id = _roll_summary.user_id
          and c.conversation_id = _roll_summary.conversation_id
    );
    newest bigint;
    fresh integer;
begin
    select max(m.id), count(*) into newest, fresh from hipocampo_private.messages as m
    where m.tenant_id = _roll_summary.tenant_id and m.user_id = _roll_summary.user_id
      and m.conversation_id = _roll_summary.conversation_id and (since is null or m.id > since);
    if fresh < (cfg ->> 'summary_every_messages')::integer then
        return false;
    end if;
    perform hipocampo.update_conversation_summary(_roll_summary.conversation_id,
        hipocampo_private._extractive_summary(
            _roll_summary.tenant_id, _roll_summary.user_id, _roll_summary.conversation_id,
            (cfg ->> 'summary_max_chars')::integer
        ),
        newest, user_id => _roll_summary.user_id, tenant_id => _roll_summary.tenant_id);
    return true;
end;
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
    return new_id;
exception when check_violation then
    raise exception 'invalid message: %', sqlerrm using errcode = '23514';
end;
$function$;

create or replace function hipocampo.session_record_turn(session_id uuid, question text, resolved_question text, answer jsonb)
returns jsonb
language plpgsql
set search_path to ''
set jit to 'off'
as $function$
declare
    s hipocampo_private.sessions := hipocampo_private._session(session_record_turn.session_id, true);
    cfg jsonb := hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions');
    kept jsonb;
    asked bigint;
    answered bigint;
    rolled boolean;
begin
    if coalesce(btrim(question), '') = '' or jsonb_typeof(answer) is distinct from 'object' then
        raise exception 'question and answer are required' using errcode = '22023';
    end if;
    kept := pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
        'answer', answer -> 'answer', 'refused', answer -> 'refused', 'reason', answer -> 'reason',
        'confidence', answer -> 'confidence', 'sources', answer -> 'sources', 'conflicts', answer -> 'conflicts',
        'answer_source', answer -> 'answer_source'
    ));
    if pg_catalog.octet_length(kept::text) > (cfg ->> 'payload_max_bytes')::integer then
        kept := kept - 'sources' - 'conflicts' || '{"refused": true}';
    end if;
    -- Only the answer path writes an answer's metadata (add_message refuses it otherwise), and
    -- the turn's two messages roll the summary once, below (add_message leaves it to this).
    perform pg_catalog.set_config('hipocampo.recording_turn', 'on', true);
    asked := hipocampo.session_add_message(session_id, 'user', question);
    answered := hipocampo.session_add_message(session_id, 'assistant',
        coalesce(nullif(btrim(answer ->> 'answer'), ''), '[' || coalesce(answer ->> 'reason', 'no answer') || ']'),
        metadata => pg_catalog.jsonb_build_object(
            'question', coalesce(resolved_question, question),
            'question_key', hipocampo.normalize_question(coalesce(resolved_question, question)),
            'trace_id', answer ->> 'trace_id',
            'chunk_ids', coalesce((
                -- numbers, which the messages' scrub leaves alone (a 16-digit id may pass a card's
                -- check); chunks of the session's tenant only, the first 20 cited (issue 57 §3, §7)
                select pg_catalog.jsonb_agg(c.id order by c.id)
                from hipocampo_private.chunks as c
                where c.tenant_id = s.tenant_id and c.id in (
                    select (x ->> 'chunk_id')::bigint
                    from pg_catalog.jsonb_array_elements(
                        case when jsonb_typeof(answer -> 'sources') = 'array' then answer -> 'sources' else '[]' end
                    ) with ordinality as e (x, ord)
                    where x ->> 'chunk_id' ~ '^[0-9]{1,18}$' and e.ord <= 20
                )
            ), '[]'::jsonb),
            'answer', kept
        ));
    perform pg_catalog.set_config('hipocampo.recording_turn', '', true);
    rolled := hipocampo_private._roll_summary(s.tenant_id, s.user_id, s.conversation_id, cfg);
    return pg_catalog.jsonb_build_object('question_message_id', asked, 'answer_message_id', answered,
        'summary_updated', rolled,
        'summary', case when rolled then (
            select c.summary from hipocampo_private.conversation_summaries as c
            where c.tenant_id = s.tenant_id and c.user_id = s.user_id and c.conversation_id = s.conversation_id
        ) end,
        'summary_max_chars', (cfg ->> 'summary_max_chars')::integer);
end;
$function$;

revoke execute on function hipocampo_private._roll_summary(tenant_id uuid, user_id uuid, conversation_id uuid, cfg jsonb) from public;
grant execute on function hipocampo_private._roll_summary(tenant_id uuid, user_id uuid, conversation_id uuid, cfg jsonb) to authenticated;
grant execute on function hipocampo_private._roll_summary(tenant_id uuid, user_id uuid, conversation_id uuid, cfg jsonb) to service_role;
