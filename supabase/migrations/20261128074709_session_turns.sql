-- session turns.
-- issue 45 §3: the retrieval hierarchy in one answer: session_turn (follow-up resolution, answer reuse, recent turns, the user's style) and session_record_turn (turns recorded, rolling summary); answer_source SESSION
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

alter table hipocampo_private.answer_audit drop constraint "answer_audit_source_check";

alter table hipocampo_private.answer_audit add constraint answer_audit_source_check check ((answer_source = any(array['CACHE'::text, 'SESSION'::text, 'LLM'::text, 'EXTRACTIVE'::text, 'REFUSAL'::text]))) not valid;

alter table hipocampo_private.answer_audit validate constraint "answer_audit_source_check";

set check_function_bodies = off;

create or replace function hipocampo.session_record_turn(session_id uuid, question text, resolved_question text, answer jsonb)
returns jsonb
language plpgsql
set search_path to ''
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
    asked := hipocampo.session_add_message(session_id, 'user', question);
    answered := hipocampo.session_add_message(session_id, 'assistant',
        coalesce(nullif(btrim(answer ->> 'answer'), ''), '[' || coalesce(answer ->> 'reason', 'no answer') || ']'),
        metadata => pg_catalog.jsonb_build_object(
            'question', coalesce(resolved_question, question),
            'question_key', hipocampo.normalize_question(coalesce(resolved_question, question)),
            'trace_id', answer ->> 'trace_id',
            'chunk_ids', coalesce((
                -- numbers, which the messages' scrub leaves alone (a 16-digit id may pass a card's check)
                select pg_catalog.jsonb_agg((x ->> 'chunk_id')::bigint)
                from pg_catalog.jsonb_array_elements(coalesce(answer -> 'sources', '[]')) as x
                where x ->> 'chunk_id' ~ '^[0-9]{1,18}$'
            ), '[]'::jsonb),
            'answer', kept
        ));
    rolled := hipocampo_private._roll_summary(s, cfg);
    return pg_catalog.jsonb_build_object('question_message_id', asked, 'answer_message_id', answered,
        'summary_updated', rolled,
        'summary', case when rolled then (
            select c.summary from hipocampo_private.conversation_summaries as c
            where c.tenant_id = s.tenant_id and c.user_id = s.user_id and c.conversation_id = s.conversation_id
        ) end,
        'summary_max_chars', (cfg ->> 'summary_max_chars')::integer);
end;
$function$;

create or replace function hipocampo.session_turn(session_id uuid, question text, query_embedding extensions.vector default null::extensions.vector)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    s hipocampo_private.sessions := hipocampo_private._session(session_turn.session_id, true);
    cfg jsonb := hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions');
    last hipocampo_private.messages := hipocampo_private._session_last_answer(s);
    resolved text := hipocampo_private._follow_up(question, last.metadata ->> 'question', cfg);
    vector extensions.vector := query_embedding;
begin
    if coalesce(btrim(question), '') = '' then
        raise exception 'question is required' using errcode = '22023';
    end if;
    if resolved is not null then
        vector := hipocampo_private._topic_vector(query_embedding,
            array(select pg_catalog.jsonb_array_elements_text(coalesce(last.metadata -> 'chunk_ids', '[]'))::bigint),
            (cfg ->> 'follow_up_topic_weight')::double precision);
    end if;
    return pg_catalog.jsonb_build_object(
        'conversation_id', s.conversation_id,
        'question', coalesce(resolved, btrim(question)),
        'follow_up', resolved is not null,
        'query_embedding', vector::text::jsonb,
        'reused', case when (cfg ->> 'reuse_answers')::boolean then hipocampo_private._session_reuse(
            s, hipocampo.normalize_question(coalesce(resolved, question))) end,
        'turns', coalesce((
            select pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('role', t.role, 'content', t.content)
                order by t.id)
            from (
                select m.id, m.role, m.content from hipocampo_private.messages as m
                where m.tenant_id = s.tenant_id and m.conversation_id = s.conversation_id
                order by m.id desc
                limit (cfg ->> 'ask_turns')::integer
            ) as t
        ), '[]'::jsonb),
        'summary', (
            select c.summary from hipocampo_private.conversation_summaries as c
            where c.tenant_id = s.tenant_id and c.user_id = s.user_id and c.conversation_id = s.conversation_id
        ),
        'style', hipocampo_private._answer_style(s.tenant_id, s.user_id)
    );
end;
$function$;

create or replace function hipocampo_private._answer_style(tenant_id uuid, user_id uuid)
returns jsonb
language sql
stable
set search_path to ''
as $function$
    select pg_catalog.jsonb_build_object(
        'max_quotes', (
            select 1 from hipocampo_private.memories as m
            where m.tenant_id = _answer_style.tenant_id and m.user_id = _answer_style.user_id
              and m.status = 'active' and m.category = 'style' and m.key = 'style.answer_length'
              and m.value #>> '{}' = 'short'
            limit 1
        ),
        'notes', coalesce((
            select pg_catalog.jsonb_agg(x.description order by x.updated_at desc)
            from (
                select m.description, m.updated_at from hipocampo_private.memories as m
                where m.tenant_id = _answer_style.tenant_id and m.user_id = _answer_style.user_id
                  and m.status = 'active' and m.category = 'style'
                order by m.updated_at desc
                limit 5
            ) as x
        ), '[]'::jsonb)
    )
$function$;

create or replace function hipocampo_private._extractive_summary(tenant_id uuid, conversation_id uuid, max_chars integer)
returns text
language sql
stable
set search_path to ''
as $function$
    with lines as (
        select m.id,
            case m.role when 'user' then 'Usuário: ' else 'Assistente: ' end || pg_catalog.left(coalesce((
                select s.sentence from hipocampo_private._sentences(m.content) as s order by s.ord limit 1
            ), m.content), 300) as line
        from hipocampo_private.messages as m
        where m.tenant_id = _extractive_summary.tenant_id and m.conversation_id = _extractive_summary.conversation_id
          and m.role in ('user', 'assistant')
    ),
    kept as (
        select l.id, l.line,
            pg_catalog.sum(pg_catalog.char_length(l.line) + 1) over (order by l.id desc) as from_newest
        from lines as l
    )
    select pg_catalog.string_agg(k.line, E'\n' order by k.id)
    from kept as k
    where k.from_newest <= max_chars
$function$;

create or replace function hipocampo_private._follow_up(question text, previous text, cfg jsonb)
returns text
language sql
stable
set search_path to ''
as $function$
    select case
        when coalesce(btrim(previous), '') <> ''
            and pg_catalog.array_length(pg_catalog.regexp_split_to_array(
                hipocampo_private._plain_words(question), ' '), 1) <= (cfg ->> 'follow_up_max_words')::integer
            and hipocampo_private._plain_words(question) ~ (cfg ->> 'follow_up_pattern')
            then btrim(previous) || ' ' || btrim(question)
    end
$function$;

create or replace function hipocampo_private._norm(v real[])
returns double precision
language sql
immutable parallel safe
set search_path to ''
as $function$
    select greatest(pg_catalog.sqrt(coalesce(pg_catalog.sum(x::double precision * x), 0)), 1e-12)
    from pg_catalog.unnest(v) as x
$function$;

create or replace function hipocampo_private._roll_summary(s hipocampo_private.sessions, cfg jsonb)
returns boolean
language plpgsql
set search_path to ''
as $function$
declare
    since bigint := (
        select c.through_message_id from hipocampo_private.conversation_summaries as c
        where c.tenant_id = s.tenant_id and c.user_id = s.user_id and c.conversation_id = s.conversation_id
    );
    newest bigint;
    fresh integer;
begin
    select max(m.id), count(*) into newest, fresh from hipocampo_private.messages as m
    where m.tenant_id = s.tenant_id and m.conversation_id = s.conversation_id
      and (since is null or m.id > since);
    if fresh < (cfg ->> 'summary_every_messages')::integer then
        return false;
    end if;
    perform hipocampo.update_conversation_summary(s.conversation_id,
        hipocampo_private._extractive_summary(s.tenant_id, s.conversation_id, (cfg ->> 'summary_max_chars')::integer),
        newest, user_id => s.user_id, tenant_id => s.tenant_id);
    return true;
end;
$function$;

create or replace function hipocampo_private._session_last_answer(s hipocampo_private.sessions)
returns hipocampo_private.messages
language sql
stable
set search_path to ''
as $function$
    select m.*
    from hipocampo_private.messages as m
    where m.tenant_id = s.tenant_id and m.conversation_id = s.conversation_id and m.role = 'assistant'
      and m.created_at >= s.created_at and m.metadata ? 'question'
    order by m.id desc
    limit 1
$function$;

create or replace function hipocampo_private._session_reuse(s hipocampo_private.sessions, question_key text)
returns jsonb
language sql
stable
set search_path to ''
as $function$
    select m.metadata -> 'answer'
    from hipocampo_private.messages as m
    where m.tenant_id = s.tenant_id and m.conversation_id = s.conversation_id and m.role = 'assistant'
      and m.created_at >= s.created_at and m.metadata ->> 'question_key' = question_key
      and m.metadata ? 'answer' and not coalesce((m.metadata #>> '{answer,refused}')::boolean, true)
      and not exists (
          select 1 from pg_catalog.jsonb_array_elements_text(coalesce(m.metadata -> 'chunk_ids', '[]')) as k (id)
          where not exists (
              select 1 from hipocampo_private.chunks as c
              inner join hipocampo_private.documents as d on d.id = c.document_id and d.status = 'active'
              where c.id = k.id::bigint
          )
      )
    order by m.id desc
    limit 1
$function$;

create or replace function hipocampo_private._topic_vector(query_vector extensions.vector, chunk_ids bigint[], weight double precision)
returns extensions.vector
language plpgsql
stable
set search_path to ''
as $function$
declare
    q real[] := query_vector::real[];
    topic real[];
    mixed double precision[];
begin
    if query_vector is null or coalesce(weight, 0) = 0 then
        return query_vector;
    end if;
    topic := (
        select extensions.avg(ch.embedding)::real[] from hipocampo_private.chunks as ch
        where ch.id = any(chunk_ids) and extensions.vector_dims(ch.embedding) = extensions.vector_dims(query_vector)
    );
    if topic is null then
        return query_vector;
    end if;
    select pg_catalog.array_agg(
        q[i] / hipocampo_private._norm(q) + weight * topic[i] / hipocampo_private._norm(topic) order by i
    ) into mixed
    from pg_catalog.generate_series(1, pg_catalog.cardinality(q)) as i;
    return (
        select pg_catalog.array_agg(x / hipocampo_private._norm(mixed::real[]) order by i)::real[]::extensions.vector
        from pg_catalog.unnest(mixed) with ordinality as t (x, i)
    );
end;
$function$;

create or replace function hipocampo_private._sessions_config(section_config jsonb)
returns jsonb
language sql
immutable
set search_path to ''
as $function$
    select hipocampo_private._require_config(section_config, 'sessions', array[
        'inactivity_ttl_minutes', 'absolute_max_minutes', 'pending_confirmation_minutes', 'max_concurrent',
        'last_messages', 'summary_max_chars', 'tool_max_chars', 'action_max_chars', 'payload_max_bytes',
        'max_pending', 'follow_up_max_words', 'follow_up_pattern', 'follow_up_topic_weight', 'reuse_answers',
        'ask_turns', 'summary_every_messages'
    ])
$function$;

revoke execute on function hipocampo.session_record_turn(session_id uuid, question text, resolved_question text, answer jsonb) from public;
revoke execute on function hipocampo.session_turn(session_id uuid, question text, query_embedding extensions.vector) from public;
revoke execute on function hipocampo_private._answer_style(tenant_id uuid, user_id uuid) from public;
revoke execute on function hipocampo_private._extractive_summary(tenant_id uuid, conversation_id uuid, max_chars integer) from public;
revoke execute on function hipocampo_private._follow_up(question text, previous text, cfg jsonb) from public;
revoke execute on function hipocampo_private._norm(v real[]) from public;
revoke execute on function hipocampo_private._roll_summary(s hipocampo_private.sessions, cfg jsonb) from public;
revoke execute on function hipocampo_private._session_last_answer(s hipocampo_private.sessions) from public;
revoke execute on function hipocampo_private._session_reuse(s hipocampo_private.sessions, question_key text) from public;
revoke execute on function hipocampo_private._topic_vector(query_vector extensions.vector, chunk_ids bigint[], weight double precision) from public;
grant execute on function hipocampo.session_record_turn(session_id uuid, question text, resolved_question text, answer jsonb) to authenticated;
grant execute on function hipocampo.session_record_turn(session_id uuid, question text, resolved_question text, answer jsonb) to service_role;
grant execute on function hipocampo.session_turn(session_id uuid, question text, query_embedding extensions.vector) to authenticated;
grant execute on function hipocampo.session_turn(session_id uuid, question text, query_embedding extensions.vector) to service_role;
grant execute on function hipocampo_private._answer_style(tenant_id uuid, user_id uuid) to authenticated;
grant execute on function hipocampo_private._answer_style(tenant_id uuid, user_id uuid) to service_role;
grant execute on function hipocampo_private._extractive_summary(tenant_id uuid, conversation_id uuid, max_chars integer) to authenticated;
grant execute on function hipocampo_private._extractive_summary(tenant_id uuid, conversation_id uuid, max_chars integer) to service_role;
grant execute on function hipocampo_private._follow_up(question text, previous text, cfg jsonb) to authenticated;
grant execute on function hipocampo_private._follow_up(question text, previous text, cfg jsonb) to service_role;
grant execute on function hipocampo_private._norm(v real[]) to authenticated;
grant execute on function hipocampo_private._norm(v real[]) to service_role;
grant execute on function hipocampo_private._roll_summary(s hipocampo_private.sessions, cfg jsonb) to authenticated;
grant execute on function hipocampo_private._roll_summary(s hipocampo_private.sessions, cfg jsonb) to service_role;
grant execute on function hipocampo_private._session_last_answer(s hipocampo_private.sessions) to authenticated;
grant execute on function hipocampo_private._session_last_answer(s hipocampo_private.sessions) to service_role;
grant execute on function hipocampo_private._session_reuse(s hipocampo_private.sessions, question_key text) to authenticated;
grant execute on function hipocampo_private._session_reuse(s hipocampo_private.sessions, question_key text) to service_role;
grant execute on function hipocampo_private._topic_vector(query_vector extensions.vector, chunk_ids bigint[], weight double precision) to authenticated;
grant execute on function hipocampo_private._topic_vector(query_vector extensions.vector, chunk_ids bigint[], weight double precision) to service_role;
comment on function hipocampo.session_record_turn(pg_catalog.uuid, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb) is 'Record an answered turn in the session (question, answer, cited chunks) and roll the summary when due.';
comment on function hipocampo.session_turn(pg_catalog.uuid, pg_catalog.text, extensions.vector) is 'What a session holds for the next question: resolved follow-up, reusable answer, recent turns, summary, the user''s style.';
