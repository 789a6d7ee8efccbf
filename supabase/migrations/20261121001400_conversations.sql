-- Conversation history: messages (chat and voice share a conversation_id) and a rolling summary
-- per conversation. History is never promoted to memory by itself: nothing here writes memories.

create table hipocampo_private.messages (
    id bigint generated always as identity primary key,
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    user_id uuid not null,
    conversation_id uuid not null,
    role text not null,
    content text not null,
    modality text not null default 'chat',
    attachments jsonb not null default '[]'::jsonb,
    metadata jsonb not null default '{}'::jsonb,
    ts_config regconfig not null,
    -- Lexical leg of the history search (Okapi BM25 over the tsvector's term frequencies).
    fts tsvector generated always as (to_tsvector(ts_config, content)) stored,
    fts_length integer generated always as (
        hipocampo_private.tsvector_token_count(to_tsvector(ts_config, content))
    ) stored,
    -- Optional; a user's history is searched exactly (scoped by the index below), no HNSW.
    embedding extensions.vector,
    embedding_model text references hipocampo_private.embedding_models (name),
    created_at timestamptz not null default now(),
    constraint messages_role_check check (role in ('user', 'assistant', 'system', 'tool')),
    constraint messages_modality_check check (modality in ('chat', 'voice')),
    constraint messages_content_length check (char_length(content) between 1 and 100000),
    constraint messages_attachments_is_array check (jsonb_typeof(attachments) = 'array'),
    constraint messages_metadata_is_object check (jsonb_typeof(metadata) = 'object'),
    constraint messages_embedding_model check ((embedding is null) = (embedding_model is null))
);

alter table hipocampo_private.messages alter column embedding set storage main;

-- RLS filters on (tenant_id, user_id); the history reads one conversation in order.
create index messages_tenant_user_conversation_idx on hipocampo_private.messages (
    tenant_id, user_id, conversation_id, id
);
create index messages_fts_idx on hipocampo_private.messages using gin (fts);

create table hipocampo_private.conversation_summaries (
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    user_id uuid not null,
    conversation_id uuid not null,
    summary text not null,
    -- The summary covers the conversation's messages up to this id.
    through_message_id bigint not null,
    updated_at timestamptz not null default now(),
    primary key (tenant_id, user_id, conversation_id)
);

alter table hipocampo_private.messages enable row level security;
alter table hipocampo_private.conversation_summaries enable row level security;

grant select, insert, delete on hipocampo_private.messages to authenticated;
grant select, insert, update, delete on hipocampo_private.conversation_summaries to authenticated;
grant all on hipocampo_private.messages to service_role;
grant all on hipocampo_private.conversation_summaries to service_role;

create policy "users read their own messages"
on hipocampo_private.messages
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

create policy "users write their own messages"
on hipocampo_private.messages
for insert
to authenticated
with check (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

create policy "users delete their own messages"
on hipocampo_private.messages
for delete
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

create policy "users read their own conversation summaries"
on hipocampo_private.conversation_summaries
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

create policy "users write their own conversation summaries"
on hipocampo_private.conversation_summaries
for insert
to authenticated
with check (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

create policy "users update their own conversation summaries"
on hipocampo_private.conversation_summaries
for update
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()))
with check (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

create policy "users delete their own conversation summaries"
on hipocampo_private.conversation_summaries
for delete
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()) and user_id = (select auth.uid()));

comment on table hipocampo_private.messages is
'Conversation history (chat and voice share conversation_id); never promoted to memory by itself.';
comment on table hipocampo_private.conversation_summaries is
'Rolling summary per conversation, covering its messages up to through_message_id.';

/*
add_message(conversation_id uuid, role text, content text, modality text default 'chat',
  attachments jsonb default '[]', embedding vector default null, metadata jsonb default '{}',
  language text default null, created_at timestamptz default null, user_id uuid default null,
  tenant_id uuid default null) -> bigint

Purpose: append a message to a conversation's history (chat or voice). Writes no memory.
Parameters: role user | assistant | system | tool; content 1..100,000 characters; modality chat |
  voice; attachments a json array; embedding of the active model (optional; needed by the dense
  leg of search_history); language portuguese | english | simple (default
  conversations.language); created_at (imports; default now()); user_id / tenant_id only for
  service_role.
Returns: the message id.
Errors: 23514 invalid role / modality / content / attachments; 22023 unsupported language;
  22000 wrong dimensions; 42501 no tenant or user.
Example: select hipocampo.add_message('…'::uuid, 'user', 'Qual o prazo da matrícula?');
*/
create function hipocampo.add_message(
    conversation_id uuid,
    role text,
    content text,
    modality text default 'chat',
    attachments jsonb default '[]'::jsonb,
    embedding extensions.vector default null,
    metadata jsonb default '{}'::jsonb,
    language text default null,
    created_at timestamptz default null,
    user_id uuid default null,
    tenant_id uuid default null
)
returns bigint
language plpgsql
security invoker
set search_path = ''
as $$
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
    if conversation_id is null then
        raise exception 'conversation_id is required' using errcode = '23502';
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
    return new_id;
exception when check_violation then
    raise exception 'invalid message: %', sqlerrm using errcode = '23514';
end;
$$;

/*
update_conversation_summary(conversation_id uuid, summary text, through_message_id bigint,
  user_id uuid default null, tenant_id uuid default null) -> void

Purpose: store the rolling summary of a conversation, covering its messages up to
  through_message_id (the summariser, e.g. the orchestrator's LLM, runs outside the database).
Errors: 22023 "through_message_id is not a message of this conversation"; 22023 empty summary.
Example: select hipocampo.update_conversation_summary('…', 'Usuário pediu o prazo…', 42);
*/
create function hipocampo.update_conversation_summary(
    conversation_id uuid, summary text, through_message_id bigint, user_id uuid default null,
    tenant_id uuid default null
)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(update_conversation_summary.user_id,
        update_conversation_summary.tenant_id);
begin
    if summary is null or btrim(summary) = '' then
        raise exception 'summary must not be empty' using errcode = '22023';
    end if;
    if not exists (
        select 1 from hipocampo_private.messages as m
        where m.id = through_message_id and m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and m.conversation_id = update_conversation_summary.conversation_id
    ) then
        raise exception 'through_message_id % is not a message of this conversation', through_message_id
            using errcode = '22023';
    end if;
    insert into hipocampo_private.conversation_summaries as s (
        tenant_id, user_id, conversation_id, summary, through_message_id
    ) values (
        a.actor_tenant, a.actor_user, update_conversation_summary.conversation_id,
        btrim(update_conversation_summary.summary), update_conversation_summary.through_message_id
    )
    on conflict on constraint conversation_summaries_pkey do update
    set summary = excluded.summary, through_message_id = excluded.through_message_id, updated_at = now();
end;
$$;

/*
conversation_context(conversation_id uuid, last_n integer default null, user_id uuid default null,
  tenant_id uuid default null) -> jsonb

Purpose: what an assistant needs of a conversation: its rolling summary and the last N messages
  (default sessions.last_messages), oldest first.
Returns: {"conversation_id", "summary", "summary_through", "unsummarized": n messages after the
  summary, "messages": [{"id", "role", "content", "modality", "attachments", "created_at"}]}.
Example: select hipocampo.conversation_context('…'::uuid, 10);
*/
create function hipocampo.conversation_context(
    conversation_id uuid, last_n integer default null, user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(conversation_context.user_id, conversation_context.tenant_id);
    n integer := coalesce(last_n,
        (hipocampo.effective_config(a.actor_tenant) -> 'sessions' ->> 'last_messages')::integer, 20);
    s hipocampo_private.conversation_summaries;
begin
    select * into s from hipocampo_private.conversation_summaries as x
    where x.tenant_id = a.actor_tenant and x.user_id = a.actor_user
      and x.conversation_id = conversation_context.conversation_id;
    return jsonb_build_object(
        'conversation_id', conversation_id,
        'summary', s.summary,
        'summary_through', s.through_message_id,
        'unsummarized', (
            select count(*) from hipocampo_private.messages as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
              and m.conversation_id = conversation_context.conversation_id
              and m.id > coalesce(s.through_message_id, 0)
        ),
        'messages', coalesce((
            select jsonb_agg(jsonb_build_object(
                'id', x.id, 'role', x.role, 'content', x.content, 'modality', x.modality,
                'attachments', x.attachments, 'created_at', x.created_at
            ) order by x.id)
            from (
                select m.* from hipocampo_private.messages as m
                where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
                  and m.conversation_id = conversation_context.conversation_id
                order by m.id desc
                limit greatest(n, 0)
            ) as x
        ), '[]'::jsonb)
    );
end;
$$;

/*
search_history(query_text text, query_embedding vector default null,
  filter_conversation_id uuid default null, match_count integer default null,
  filter_modality text default null, user_id uuid default null,
  tenant_id uuid default null) -> setof record

Purpose: search the caller's own conversation history (one conversation, or all): Okapi BM25
  over the messages' tsvectors (conversations.bm25_k1 / bm25_b; document frequencies over the
  searched messages) and, when query_embedding is given, exact cosine over the messages that
  have an embedding of the active model; the top conversations.candidate_count of each leg are
  z-scored and summed with conversations.dense_weight / lexical_weight (a leg's missing score
  counts as that leg's minimum).
Parameters: query_text 1..2,000 characters; query_embedding of the active model (optional);
  filter_conversation_id (null = every conversation of the user); match_count k (default
  conversations.match_count); filter_modality chat | voice.
Returns: message_id, conversation_id, role, content, modality, metadata, created_at,
  dense_score (cosine), lexical_score (BM25), score (fused), rank (1-based).
Errors: 22023 empty or too long query; 22000 wrong dimensions; 42501 no tenant or user.
Example: select content, score from hipocampo.search_history('prazo da matrícula', '[…]', '…'::uuid);
*/
create function hipocampo.search_history(
    query_text text,
    query_embedding extensions.vector default null,
    filter_conversation_id uuid default null,
    match_count integer default null,
    filter_modality text default null,
    user_id uuid default null,
    tenant_id uuid default null
)
returns table (
    message_id bigint, conversation_id uuid, role text, content text, modality text, metadata jsonb,
    created_at timestamptz, dense_score double precision, lexical_score double precision,
    score double precision, rank integer
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(search_history.user_id, search_history.tenant_id);
    cfg jsonb := coalesce(hipocampo.effective_config(a.actor_tenant) -> 'conversations', '{}'::jsonb);
    k integer := coalesce(search_history.match_count, (cfg ->> 'match_count')::integer, 10);
    n_cand integer := greatest(coalesce((cfg ->> 'candidate_count')::integer, 50), k);
    k1 double precision := coalesce((cfg ->> 'bm25_k1')::double precision, 1.2);
    b double precision := coalesce((cfg ->> 'bm25_b')::double precision, 0.75);
    wd double precision := coalesce((cfg ->> 'dense_weight')::double precision, 1.0);
    wl double precision := coalesce((cfg ->> 'lexical_weight')::double precision, 1.0);
    ts regconfig := hipocampo_private.text_search_config(coalesce(cfg ->> 'language', 'portuguese'));
    model text;
    lexemes text [];
    q tsquery;
    n_docs bigint;
    avg_len double precision;
begin
    if query_text is null or btrim(query_text) = '' or char_length(query_text) > 2000 then
        raise exception 'query_text must have 1..2000 characters' using errcode = '22023';
    end if;
    if query_embedding is not null then
        model := hipocampo_private._active_model(query_embedding, 'query_embedding');
    end if;

    -- Query lexemes in each text-search configuration the searched messages use.
    select array_agg(distinct u.lexeme) into lexemes
    from (
        select distinct m.ts_config from hipocampo_private.messages as m
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and (search_history.filter_conversation_id is null or m.conversation_id = search_history.filter_conversation_id)
    ) as c
    cross join lateral unnest(to_tsvector(c.ts_config, query_text)) as u;
    if lexemes is null then
        lexemes := array(select u.lexeme from unnest(to_tsvector(ts, query_text)) as u);
    end if;
    if cardinality(lexemes) > 0 then
        q := array_to_string(array(select quote_literal(l) from unnest(lexemes) as l), ' | ')::tsquery;
    end if;
    select count(*), coalesce(avg(m.fts_length), 1) into n_docs, avg_len
    from hipocampo_private.messages as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
      and (search_history.filter_conversation_id is null or m.conversation_id = search_history.filter_conversation_id)
      and (search_history.filter_modality is null or m.modality = search_history.filter_modality);

    return query
    with scoped as (
        select m.* from hipocampo_private.messages as m
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and (search_history.filter_conversation_id is null or m.conversation_id = search_history.filter_conversation_id)
          and (search_history.filter_modality is null or m.modality = search_history.filter_modality)
    ),
    matched as (
        select s.id, s.fts, s.fts_length from scoped as s where q is not null and s.fts @@ q
    ),
    terms as (
        select mt.id, mt.fts_length, u.lexeme, coalesce(array_length(u.positions, 1), 1) as tf
        from matched as mt
        cross join lateral unnest(mt.fts) as u
        where u.lexeme = any(lexemes)
    ),
    df as (
        select t.lexeme, count(*) as n from terms as t group by t.lexeme
    ),
    lexical as (
        select t.id, sum(
            ln(1 + (n_docs - d.n + 0.5) / (d.n + 0.5))
            * t.tf * (k1 + 1) / (t.tf + k1 * (1 - b + b * t.fts_length / avg_len))
        ) as s
        from terms as t inner join df as d on d.lexeme = t.lexeme
        group by t.id
        order by s desc, t.id
        limit n_cand
    ),
    dense as (
        select s.id, 1 - (s.embedding operator(extensions.<=>) query_embedding) as s
        from scoped as s
        where query_embedding is not null and s.embedding_model = model
        order by s.embedding operator(extensions.<=>) query_embedding, s.id
        limit n_cand
    ),
    stats as (
        select
            (select avg(l.s) from lexical as l) as l_mean,
            (select coalesce(nullif(stddev_pop(l.s), 0), 1) from lexical as l) as l_sd,
            (select min(l.s) from lexical as l) as l_min,
            (select avg(d.s) from dense as d) as d_mean,
            (select coalesce(nullif(stddev_pop(d.s), 0), 1) from dense as d) as d_sd,
            (select min(d.s) from dense as d) as d_min
    ),
    fused as (
        select c.id, d.s as ds, l.s as ls,
            wd * coalesce((coalesce(d.s, st.d_min) - st.d_mean) / st.d_sd, 0)
            + wl * coalesce((coalesce(l.s, st.l_min) - st.l_mean) / st.l_sd, 0) as f
        from (select x.id from lexical as x union select y.id from dense as y) as c
        cross join stats as st
        left join lexical as l on l.id = c.id
        left join dense as d on d.id = c.id
    )
    select m.id, m.conversation_id, m.role, m.content, m.modality, m.metadata, m.created_at,
        f.ds, f.ls, f.f, (row_number() over (order by f.f desc, m.id))::integer
    from fused as f
    inner join hipocampo_private.messages as m on m.id = f.id
    order by f.f desc, m.id
    limit k;
end;
$$;

grant execute on function hipocampo.add_message(
    uuid, text, text, text, jsonb, extensions.vector, jsonb, text, timestamptz, uuid, uuid
) to authenticated, service_role;
grant execute on function hipocampo.update_conversation_summary(uuid, text, bigint, uuid, uuid)
to authenticated, service_role;
grant execute on function hipocampo.conversation_context(uuid, integer, uuid, uuid) to authenticated, service_role;
grant execute on function hipocampo.search_history(
    text, extensions.vector, uuid, integer, text, uuid, uuid
) to authenticated, service_role;

comment on function hipocampo.add_message(
    uuid, text, text, text, jsonb, extensions.vector, jsonb, text, timestamptz, uuid, uuid
) is 'Append a message (chat or voice) to a conversation''s history; writes no memory.';
comment on function hipocampo.update_conversation_summary(uuid, text, bigint, uuid, uuid) is
'Store the rolling summary of a conversation up to a message.';
comment on function hipocampo.conversation_context(uuid, integer, uuid, uuid) is
'A conversation''s rolling summary and last N messages.';
comment on function hipocampo.search_history(text, extensions.vector, uuid, integer, text, uuid, uuid) is
'Hybrid (BM25 + cosine) search of the caller''s conversation history.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
