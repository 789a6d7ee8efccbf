-- The retrieval hierarchy in one answer (issue 45 §3): asked within a session, a question is
-- read with what the session already holds before the knowledge bases are searched. The order
-- the design gives: the user's memory (preferences: the wording, never the facts), the current
-- session (a follow-up is resolved against the previous turn; a question the session already
-- answered reuses that answer and its evidence), then the knowledge bases (cited), and the
-- model's own knowledge only for wording. Every surface (Orchestrator.ask, serve's /ask, the ask
-- edge function, MCP, from_supabase) calls session_turn before its answer and
-- session_record_turn after it, so they resolve and record a turn alike.

/*
_session_last_answer(s hipocampo_private.sessions) -> hipocampo_private.messages

Purpose: the newest answer recorded in the session (an assistant message of its user in its
  conversation written since the session opened, whose metadata holds the resolved question).
  By the session's tenant and user whoever calls (issue 57 §3: a service_role caller sees every
  user's messages, and another member's message in the same conversation id is not this turn's).
Returns: that message, or a row of nulls when the session has recorded no answer.
Errors: none of its own.
*/
create or replace function hipocampo_private._session_last_answer(s hipocampo_private.sessions)
returns hipocampo_private.messages
language sql
stable
security invoker
set search_path = ''
as $$
    select m.*
    from hipocampo_private.messages as m
    where m.tenant_id = s.tenant_id and m.user_id = s.user_id and m.conversation_id = s.conversation_id
      and m.role = 'assistant' and m.created_at >= s.created_at and m.metadata ? 'question'
    order by m.id desc
    limit 1
$$;

/*
_follow_up(question text, previous text, cfg jsonb) -> text

Purpose: a follow-up question resolved against the previous turn's (resolved) question: when the
  question has at most sessions.follow_up_max_words words and its plain words (unaccented, lower
  case) match sessions.follow_up_pattern ("e aos domingos?", "and on sundays?", "e quanto custa?"),
  the previous question and this one, joined; otherwise null (the question stands alone).
Parameters: question - as asked; previous - the previous turn's resolved question (null: none);
  cfg - the sessions config section.
Returns: the resolved question, or null.
Errors: none of its own.
Example: select hipocampo_private._follow_up('e aos domingos?', 'qual o horário da piscina?', cfg);
  -- 'qual o horário da piscina? e aos domingos?'
*/
create or replace function hipocampo_private._follow_up(question text, previous text, cfg jsonb)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
    select case
        when coalesce(btrim(previous), '') <> ''
            and pg_catalog.array_length(pg_catalog.regexp_split_to_array(
                hipocampo_private._plain_words(question), ' '), 1) <= (cfg ->> 'follow_up_max_words')::integer
            and hipocampo_private._plain_words(question) ~ (cfg ->> 'follow_up_pattern')
            then btrim(previous) || ' ' || btrim(question)
    end
$$;

/*
_topic_vector(query_vector extensions.vector, chunk_ids bigint[], weight double precision) -> extensions.vector

Purpose: the search vector of a resolved follow-up: the question's own vector (L2-normalised)
  plus weight times the mean of the vectors of the chunks the previous answer cited (normalised),
  normalised again, so the dense leg searches near the previous answer's topic. The query's
  vector alone when no cited chunk has a vector of its dimensions, or weight is 0.
Parameters: query_vector - the follow-up's query vector; chunk_ids - the previous answer's cited chunks;
  weight - sessions.follow_up_topic_weight (0..10).
Returns: a vector of query_vector's dimensions, or null when it is null.
Errors: none of its own.
*/
create or replace function hipocampo_private._topic_vector(
    query_vector extensions.vector, chunk_ids bigint[], weight double precision
)
returns extensions.vector
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    q real[] := query_vector::real[];
    topic real[];
    q_norm double precision := hipocampo_private._norm(q);
    topic_norm double precision;
    mixed double precision[];
    mixed_norm double precision;
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
    topic_norm := hipocampo_private._norm(topic);  -- each norm once, not once per dimension
    select pg_catalog.array_agg(q[i] / q_norm + weight * topic[i] / topic_norm order by i) into mixed
    from pg_catalog.generate_series(1, pg_catalog.cardinality(q)) as i;
    mixed_norm := hipocampo_private._norm(mixed::real[]);
    return (
        select pg_catalog.array_agg(x / mixed_norm order by i)::real[]::extensions.vector
        from pg_catalog.unnest(mixed) with ordinality as t (x, i)
    );
end;
$$;

/*
_norm(v real[]) -> double precision

Purpose: the Euclidean length of a vector given as an array, at least 1e-12 (safe to divide by).
Returns: the length (1e-12 for an empty or all-zero array).
Errors: none.
Example: select hipocampo_private._norm(array[3, 4]::real[]); -- 5
*/
create or replace function hipocampo_private._norm(v real[])
returns double precision
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    select greatest(pg_catalog.sqrt(coalesce(pg_catalog.sum(x::double precision * x), 0)), 1e-12)
    from pg_catalog.unnest(v) as x
$$;

/*
_session_reuse(s hipocampo_private.sessions, question_key text) -> jsonb

Purpose: the answer the session already gave to this (resolved, normalised) question, to reuse
  instead of searching again: the newest non-refused answer recorded in the session (its tenant
  and user, whoever calls) under the same key, when every chunk it cited is still stored in an active document (otherwise null:
  the knowledge base changed, search again).
Returns: the recorded answer (answer, refused, reason, confidence, sources, conflicts,
  answer_source), or null.
Errors: none of its own.
*/
create or replace function hipocampo_private._session_reuse(s hipocampo_private.sessions, question_key text)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    select m.metadata -> 'answer'
    from hipocampo_private.messages as m
    where m.tenant_id = s.tenant_id and m.user_id = s.user_id and m.conversation_id = s.conversation_id
      and m.role = 'assistant' and m.created_at >= s.created_at and m.metadata ->> 'question_key' = question_key
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
$$;

/*
_answer_style(tenant_id uuid, user_id uuid) -> jsonb

Purpose: how the user wants answers worded, from their active memories of category style (the
  memory design: memories shape the wording, never the facts): a style.answer_length of "short"
  makes the offline answer quote one passage (max_quotes 1); every style memory's description is
  a note for a chat model's prompt.
Returns: {"max_quotes": 1 | null, "notes": [description, …]} (at most 5 notes, newest first).
Errors: none of its own.
*/
create or replace function hipocampo_private._answer_style(tenant_id uuid, user_id uuid)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
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
$$;

/*
session_turn(session_id uuid, question text, query_embedding extensions.vector default null) -> jsonb

Purpose: what a session holds for the question about to be answered (the retrieval hierarchy's
  first steps): the question resolved against the previous turn when it is a follow-up
  (_follow_up; its search vector moved toward the previous answer's evidence, _topic_vector), the
  answer the session already gave to it (_session_reuse: answer it again without searching), the
  session's recent turns and summary (context for a chat model's wording), and the user's style
  (_answer_style). Renews the session.
Parameters: session_id - a live session of the caller (service_role: any); question - as asked
  (1..rag.question_max_chars characters; the guardrails have run); query_embedding - the question's
  vector as the surface computed it (null: none is resolved).
Returns: {"conversation_id", "question": the resolved question, "follow_up": boolean,
  "query_embedding": the resolved vector (a json array) or null, "reused": a recorded answer or
  null, "turns": [{"role", "content"}] (the last sessions.ask_turns messages, oldest first),
  "summary": text or null, "style": {"max_quotes", "notes"}}. Every read is by the session's
  tenant and user (a service_role caller sees every user's messages), and a follow-up's vector
  moves only toward chunks of the session's tenant (issue 57 §3).
Errors: 42501 as _caller (before any other work); P0002 "unknown or expired session: …";
  22023 "question is required"; 55000 "sessions config is incomplete: …".
Example: select hipocampo.session_turn('…', 'e aos domingos?', '[…]');
*/
create or replace function hipocampo.session_turn(
    session_id uuid, question text, query_embedding extensions.vector default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
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
        -- (the previous answer's cited chunks of the session's tenant only)
        vector := hipocampo_private._topic_vector(query_embedding,
            array(
                select c.id from hipocampo_private.chunks as c
                where c.tenant_id = s.tenant_id and c.id in (
                    select k::bigint from pg_catalog.jsonb_array_elements_text(
                        coalesce(last.metadata -> 'chunk_ids', '[]')) as k
                    where k ~ '^[0-9]{1,18}$'
                )
            ),
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
                where m.tenant_id = s.tenant_id and m.user_id = s.user_id and m.conversation_id = s.conversation_id
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
$$;

/*
_extractive_summary(tenant_id uuid, user_id uuid, conversation_id uuid, max_chars integer) -> text

Purpose: the offline rolling summary of a user's conversation: each user message and the first sentence
  of each answer, oldest first, as "Usuário: …" / "Assistente: …" lines, the newest kept when
  they exceed max_chars characters.
Returns: the summary, or null for a conversation without messages.
Errors: none of its own.
*/
create or replace function hipocampo_private._extractive_summary(
    tenant_id uuid, user_id uuid, conversation_id uuid, max_chars integer
)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
    with lines as (
        select m.id,
            case m.role when 'user' then 'Usuário: ' else 'Assistente: ' end || pg_catalog.left(coalesce((
                select s.sentence from hipocampo_private._sentences(m.content) as s order by s.ord limit 1
            ), m.content), 300) as line
        from hipocampo_private.messages as m
        where m.tenant_id = _extractive_summary.tenant_id and m.user_id = _extractive_summary.user_id
          and m.conversation_id = _extractive_summary.conversation_id and m.role in ('user', 'assistant')
    ),
    kept as (
        select l.id, l.line,
            pg_catalog.sum(pg_catalog.char_length(l.line) + 1) over (order by l.id desc) as from_newest
        from lines as l
    )
    select pg_catalog.string_agg(k.line, E'\n' order by k.id)
    from kept as k
    where k.from_newest <= max_chars
$$;

/*
_roll_summary(tenant_id uuid, user_id uuid, conversation_id uuid, cfg jsonb) -> boolean

Purpose: the rolling summary no caller has to write: when a user's conversation holds
  sessions.summary_every_messages messages or more after the last summary (or since it began),
  the extractive summary (_extractive_summary, at most sessions.summary_max_chars) is stored as
  the conversation's summary (update_conversation_summary). Called after every message written by
  add_message (the conversations edge function's path, chat and voice) and by session_record_turn
  for an asked turn; a surface with a chat model may write the model's summary over it.
Parameters: the conversation's tenant, user and id; cfg - the tenant's sessions section.
Returns: true when a summary was written.
Errors: as update_conversation_summary.
*/
create or replace function hipocampo_private._roll_summary(tenant_id uuid, user_id uuid, conversation_id uuid, cfg jsonb)
returns boolean
language plpgsql
security invoker
set search_path = ''
as $$
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
$$;

/*
session_record_turn(session_id uuid, question text, resolved_question text, answer jsonb) -> jsonb

Purpose: record one answered (or refused) turn in the session: the question as the user asked it
  and the answer as an assistant message (session_add_message, scrubbed like every message) whose
  metadata keeps the resolved question, its normalised key, the cited chunk ids (of the session's
  tenant, the first 20 sources) and the answer
  (its answer, refused, reason, confidence, sources, conflicts and answer_source: what
  session_turn reads for the next follow-up and for reuse); then the rolling summary when
  it is due (_roll_summary).
Parameters: session_id - a live session of the caller; question - as asked; resolved_question -
  session_turn's "question"; answer - the surface's answer ({"answer", "refused", "reason",
  "confidence", "sources": [{"chunk_id", …}], "conflicts", "answer_source", "trace_id"}), at most
  sessions.payload_max_bytes as json text (a larger one is recorded without its sources and
  is not reused).
Returns: {"question_message_id", "answer_message_id", "summary_updated": boolean, "summary": the
  new summary when one was written, else null, "summary_max_chars"}.
Errors: 42501 as _caller (before any other work); P0002 "unknown or expired session: …"; 22023
  "question and answer are required"; as add_message.
Example: select hipocampo.session_record_turn('…', 'e aos domingos?', 'qual o horário? e aos domingos?', '{…}');
*/
create or replace function hipocampo.session_record_turn(
    session_id uuid, question text, resolved_question text, answer jsonb
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
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
$$;

comment on function hipocampo.session_turn(uuid, text, extensions.vector) is
'What a session holds for the next question: resolved follow-up, reusable answer, recent turns, summary, the user''s style.';

comment on function hipocampo.session_record_turn(uuid, text, text, jsonb) is
'Record an answered turn in the session (question, answer, cited chunks) and roll the summary when due.';
