-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- Conversation history: messages (chat and voice share a conversation_id) and a rolling summary
-- per conversation. History is never promoted to memory by itself: nothing here writes memories.
create table hipocampo_private.messages (
    id bigint primary key default hipocampo_private._opaque_id(true),
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
    -- Contextual token vectors for history search's late-interaction re-rank: WordPiece ids and
    -- the sign bits of their embeddings, written by set_message_tokens (the client that holds the
    -- local model computes them; a message without them is ranked at the tokens' minimum).
    token_ids integer[],
    token_bits varbit[],
    constraint messages_role_check check (role in ('user', 'assistant', 'system', 'tool')),
    constraint messages_modality_check check (modality in ('chat', 'voice')),
    constraint messages_content_length check (char_length(content) between 1 and 100000),
    constraint messages_attachments_is_array check (jsonb_typeof(attachments) = 'array'),
    constraint messages_metadata_is_object check (jsonb_typeof(metadata) = 'object'),
    constraint messages_embedding_model check ((embedding is null) = (embedding_model is null)),
    constraint messages_tokens_paired check (
        (token_ids is null) = (token_bits is null)
        and (token_ids is null or cardinality(token_ids) = cardinality(token_bits))
    ),
    constraint messages_tokens_need_embedding check (token_bits is null or embedding is not null)
);

-- (PostgreSQL 15 has no STORAGE clause in CREATE TABLE; 16 added it.)
alter table hipocampo_private.messages alter column embedding set storage main;

alter table hipocampo_private.messages enable row level security;

-- A zero embedding's cosine is NaN, which PostgreSQL orders above every number: the row would pass
-- every similarity floor of every search. Checked on new rows (not valid: rows stored before the
-- check are kept as they are).
alter table hipocampo_private.messages add constraint messages_embedding_not_zero
check (extensions.vector_norm(embedding) <> 0) not valid;

-- History search re-ranks its best candidates by late interaction over the messages' tokens.
-- LoCoMo's recall@10 stood at 0.805 with one MiniLM vector per message (plus its neighbours'),
-- BM25 and date words; what was left are evidence turns ranked 11-50 (recall@20 0.864,
-- @50 0.919). Re-ranking them by MaxSim (ColBERT's late interaction: each query token's most
-- similar token of the message, idf-weighted) over MiniLM's contextual token embeddings, each
-- message read after its two previous messages, measured 0.832 with the best 50 re-ranked
-- (0.835 with 100; benchmarks/locomo.py, docs/BENCHMARKS.md). The token vectors are kept as
-- sign bits (bit(384) a token, ~35 tokens a message, ~2 KB): with bits the measure moved by less
-- than 0.003 against float vectors (~50 KB a message). Hamming distance is native (bit_count of
-- xor, PostgreSQL 14+).
--

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

alter table hipocampo_private.conversation_summaries enable row level security;

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

Purpose: append a message to a conversation's history (chat or voice). Stored scrubbed of PII
  (content, attachments and metadata strings) unless the tenant turned conversations.scrub_pii
  off (the messages trigger). Rolls the conversation's summary when
  sessions.summary_every_messages messages came after the last one (_roll_summary). A user's
  message passes what it states of the user (their name, unit, preferences, allergies:
  _memory_proposals) through the memory gate, source 'conversation', when they consented and
  memory.propose_from_messages is on (_propose_memories); the message is stored whatever the gate
  says.
Parameters: role user | assistant | system | tool; content 1..100,000 characters; modality chat |
  voice; attachments a json array; embedding of the active model (optional; needed by the dense
  leg of search_history); language portuguese | english | simple (default
  conversations.language); created_at (imports; default now()); user_id / tenant_id only for
  service_role.
Returns: the message id.
Errors: 42501 as _memory_actor; 22023 "conversation_id / role / content must not be null";
  22001 "content is n characters; the limit is 100,000"; 22023 "metadata keys answer,
  question_key and chunk_ids are written by session_record_turn only"; 23514 invalid role / modality /
  attachments; 22023 unsupported language; 22000 wrong dimensions.
Example: select hipocampo.add_message('…'::uuid, 'user', 'Qual o prazo da matrícula?');
*/
create or replace function hipocampo.add_message(
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
set jit = off
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
$$;

/*
update_conversation_summary(conversation_id uuid, summary text, through_message_id bigint,
  user_id uuid default null, tenant_id uuid default null) -> void

Purpose: store the rolling summary of a conversation, covering its messages up to
  through_message_id (the summariser, e.g. the orchestrator's LLM, runs outside the database).
Returns: nothing.
Errors: 42501 as _memory_actor; 22023 "through_message_id is not a message of this conversation"; 22023 empty summary.
Example: select hipocampo.update_conversation_summary('…', 'Usuário pediu o prazo…', 42);
*/
create or replace function hipocampo.update_conversation_summary(
    conversation_id uuid, summary text, through_message_id bigint, user_id uuid default null,
    tenant_id uuid default null
)
returns void
language plpgsql
security invoker
set search_path = ''
set jit = off
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
Errors: 42501 as _memory_actor; 55000 "sessions config is incomplete: …" (last_n null and not seeded).
Example: select hipocampo.conversation_context('…'::uuid, 10);
*/
create or replace function hipocampo.conversation_context(
    conversation_id uuid, last_n integer default null, user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
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

comment on function hipocampo.add_message(
    uuid, text, text, text, jsonb, extensions.vector, jsonb, text, timestamptz, uuid, uuid
) is 'Append a message (chat or voice) to a conversation''s history; writes no memory.';

comment on function hipocampo.update_conversation_summary(uuid, text, bigint, uuid, uuid) is
'Store the rolling summary of a conversation up to a message.';

comment on function hipocampo.conversation_context(uuid, integer, uuid, uuid) is
'A conversation''s rolling summary and last N messages.';

-- History search reads each message with its neighbours (document expansion). A message of a
-- dialogue is often only understandable next to the turn it answers ("Melanie: a sunset" after
-- "Caroline: what did you paint?"), so both legs of search_history now score a message's context:
-- the message plus the weighted previous / next messages of its conversation
-- (conversations.context_weights_before / context_weights_after). The lexical leg also sees the
-- message's date words (day, month name, year of created_at in conversations.time_zone, weight
-- conversations.date_weight), so "what did I say in January 2024" reaches January's messages.
-- Measured on LoCoMo (benchmarks/locomo.py, docs/BENCHMARKS.md): recall@10 0.666 -> see there.
/*
_date_words(day date, config regconfig) -> text

Purpose: the words a message's date is matched by: day of month, month name in the message's
  text-search language (portuguese / portuguese_unaccent -> "janeiro" …, anything else ->
  "january" …) and year.
Parameters: day (a local date); config the message's text-search configuration.
Returns: e.g. '8 may 2023' or '8 maio 2023'.
Errors: none.
Example: select hipocampo_private._date_words('2023-05-08', 'pg_catalog.english');
*/
create or replace function hipocampo_private._date_words(day date, config regconfig)
returns text
language sql
immutable
set search_path = ''
as $$
    select extract(day from _date_words.day)::integer::text || ' '
        || (case when _date_words.config in (
                'hipocampo_private.portuguese_unaccent'::regconfig, 'pg_catalog.portuguese'::regconfig
            )
            then array['janeiro', 'fevereiro', 'março', 'abril', 'maio', 'junho', 'julho', 'agosto',
                       'setembro', 'outubro', 'novembro', 'dezembro']
            else array['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august',
                       'september', 'october', 'november', 'december']
            end)[extract(month from _date_words.day)::integer]
        || ' ' || extract(year from _date_words.day)::integer::text
$$;

comment on column hipocampo_private.messages.token_ids is
'WordPiece ids of the message''s tokens (embedding model''s tokenizer), for the token idf of search_history''s re-rank.';

comment on column hipocampo_private.messages.token_bits is
'Sign bits of each token''s contextual embedding (the embedding''s model, read after the two previous messages).';

create policy "users update the tokens of their own messages"
on hipocampo_private.messages
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
)
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
);

/*
_check_message_tokens(token_ids integer[], token_bits varbit[], dims integer, name text) -> void

Purpose: token ids and bits that belong together: both given, as many of each (1..512), no null,
  every bit string `dims` long (the embedding model's dimensions).
Errors: 22023 "<name>_ids and <name>_bits must have the same 1..512 items, none null";
  22023 "<name>_bits must be bit strings of <dims> bits (the embedding model's dimensions)".
Returns: nothing; it raises on the first problem.
Example: select hipocampo_private._check_message_tokens(array[1], array[b'01'], 2, 'token');
*/
create or replace function hipocampo_private._check_message_tokens(
    token_ids integer[], token_bits varbit[], dims integer, name text
)
returns void
language plpgsql
immutable
security invoker
set search_path = ''
as $$
begin
    if token_ids is null or token_bits is null or cardinality(token_ids) <> cardinality(token_bits)
        or cardinality(token_ids) not between 1 and 512
        or array_position(token_ids, null) is not null or array_position(token_bits, null) is not null then
        raise exception '%_ids and %_bits must have the same 1..512 items, none null', name, name
            using errcode = '22023';
    end if;
    if exists (select 1 from unnest(token_bits) as b where bit_length(b) is distinct from dims) then
        raise exception '%_bits must be bit strings of % bits (the embedding model''s dimensions)',
            name, dims using errcode = '22023';
    end if;
end;
$$;

/*
set_message_tokens(message_id bigint, token_ids integer[], token_bits varbit[]) -> void

Purpose: store a message's tokens for search_history's late-interaction re-rank: the WordPiece
  ids and, for each, the sign bits of its contextual embedding by the message's embedding model
  (hipocampo.LocalMiniLM.embed_tokens reads the message after its two previous ones).
Parameters: message_id - one of the caller's messages (RLS), with an embedding; token_ids /
  token_bits - 1..512 items each, bits as long as the model's dimensions (384).
Returns: nothing.
Errors: 42501 as _caller (before any other work); P0002 "unknown message: <id>" (absent or another user's); 22023 "the message has no
  embedding: its tokens belong to the embedding's model"; 22023 as _check_message_tokens.
Example: select hipocampo.set_message_tokens(42, array[2054, 2003], array[b'0110…', b'1001…']);
*/
create or replace function hipocampo.set_message_tokens(message_id bigint, token_ids integer[], token_bits varbit[])
returns void
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    dims integer;
    found_it boolean;
begin
    select true, extensions.vector_dims(m.embedding) into found_it, dims
    from hipocampo_private.messages as m where m.id = set_message_tokens.message_id;
    if found_it is null then
        raise exception 'unknown message: %', message_id using errcode = 'P0002';
    end if;
    if dims is null then
        raise exception 'the message has no embedding: its tokens belong to the embedding''s model'
            using errcode = '22023';
    end if;
    perform hipocampo_private._check_message_tokens(token_ids, token_bits, dims, 'token');
    update hipocampo_private.messages as m
    set token_ids = set_message_tokens.token_ids, token_bits = set_message_tokens.token_bits
    where m.id = set_message_tokens.message_id;
end;
$$;

comment on function hipocampo.set_message_tokens(bigint, integer[], varbit[]) is
'Store a message''s token ids and contextual token sign bits (search_history''s late-interaction re-rank).';

/*
_history_settings(cfg jsonb, match_count integer, query_text text, query_embedding vector,
  query_token_ids integer[], query_token_bits varbit[], out …) -> record

Purpose: _search_history's first step: checks the call and the conversations config and derives
  what the other steps read: k, the text-search configuration, the query's model, whether the
  token re-rank applies, the context weights by distance (wb before, wa after: 1..5, 0 beyond the
  configured ones), all of them by offset -5..5 (wv[offset + 6]), the farthest apart two offsets
  of a context lie (span) and the query's norm.
Parameters: cfg the conversations config section; the others as hipocampo.search_history's.
Returns: k, ts, model (null without an embedding), rerank, wb, wa, wv, span, q_norm.
Errors: 22023 "match_count must be 1..100", "query_text must have 1..<n> characters", the context
  weights, "unknown conversations.time_zone", "query tokens need query_embedding" and as
  _check_message_tokens; 55000 "conversations config is incomplete"; 22000 as _active_model.
Example: select * from hipocampo_private._history_settings(cfg, 10, 'what did Mel paint?', null, null, null);
*/
create or replace function hipocampo_private._history_settings(
    cfg jsonb, match_count integer, query_text text, query_embedding extensions.vector,
    query_token_ids integer[], query_token_bits varbit[],
    out k integer, out ts regconfig, out model text, out rerank boolean, out wb double precision[],
    out wa double precision[], out wv double precision[], out span integer, out q_norm double precision
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    max_chars integer := (cfg ->> 'max_query_chars')::integer;
    w_before jsonb := cfg -> 'context_weights_before';
    w_after jsonb := cfg -> 'context_weights_after';
    tz text := cfg ->> 'time_zone';
    side record;
begin
    k := coalesce(_history_settings.match_count, (cfg ->> 'match_count')::integer);
    if k is null or k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    if query_text is null or btrim(query_text) = '' or char_length(query_text) > max_chars then
        raise exception 'query_text must have 1..% characters', max_chars using errcode = '22023';
    end if;
    if max_chars is null or (cfg ->> 'bm25_k1') is null or (cfg ->> 'bm25_b') is null
        or (cfg ->> 'dense_weight') is null or (cfg ->> 'lexical_weight') is null or (cfg ->> 'date_weight') is null
        or tz is null or w_before is null or w_after is null or (cfg ->> 'token_rerank_weight') is null
        or (cfg ->> 'token_rerank_candidates') is null or (cfg ->> 'token_idf_sample') is null then
        raise exception 'conversations config is incomplete: seed it from config.toml (hipocampo db migrate)'
            using errcode = '55000';
    end if;
    for side in select * from (values ('before', w_before), ('after', w_after)) as x (name, weights) loop
        if jsonb_typeof(side.weights) <> 'array' or jsonb_array_length(side.weights) > 5
            or exists (
                select 1 from jsonb_array_elements(side.weights) as e
                where jsonb_typeof(e) <> 'number' or (e #>> '{}')::double precision not between 0 and 1
            ) then
            raise exception 'conversations.context_weights_% must be an array of at most 5 numbers in [0, 1]',
                side.name using errcode = '22023';
        end if;
    end loop;
    begin
        perform pg_catalog.now() at time zone tz;
    exception when invalid_parameter_value then
        raise exception 'unknown conversations.time_zone: %', tz using errcode = '22023';
    end;
    ts := hipocampo_private.text_search_config(cfg ->> 'language');
    if query_embedding is not null then
        model := hipocampo_private._active_model(query_embedding, 'query_embedding');
        q_norm := sqrt(-(query_embedding operator(extensions.<#>) query_embedding));
    end if;
    if query_token_bits is not null or query_token_ids is not null then
        if query_embedding is null then
            raise exception 'query tokens need query_embedding (their model''s)' using errcode = '22023';
        end if;
        perform hipocampo_private._check_message_tokens(
            query_token_ids, query_token_bits, extensions.vector_dims(query_embedding), 'query_token'
        );
    end if;
    -- The late-interaction re-rank applies with query tokens, an embedding and a weight > 0.
    rerank := (cfg ->> 'token_rerank_weight')::double precision > 0 and query_embedding is not null
        and cardinality(query_token_bits) > 0;
    wb := array(select coalesce((w_before ->> d)::double precision, 0) from generate_series(0, 4) as d);
    wa := array(select coalesce((w_after ->> d)::double precision, 0) from generate_series(0, 4) as d);
    wv := array(select wb[6 - i] from generate_series(1, 5) as i) || array[1.0::double precision] || wa;
    span := coalesce((select max(i) from generate_series(1, 5) as i where wb[i] > 0), 0)
        + coalesce((select max(i) from generate_series(1, 5) as i where wa[i] > 0), 0);
end;
$$;

/*
_history_terms(actor_tenant uuid, actor_user uuid, conversation uuid, query_text text,
  ts regconfig, out lexemes text[], out q tsquery) -> record

Purpose: _search_history's query terms: the query's lexemes in each text-search configuration the
  searched messages use (ts, the conversations language's, when none is stored yet), and their
  OR as a tsquery (null without a lexeme).
Parameters: the actor's tenant and user; conversation null = all of the user's; ts from
  _history_settings.
Returns: lexemes and q.
Errors: none.
Example: select * from hipocampo_private._history_terms(t, u, null, 'what did Mel paint?', 'english');
*/
create or replace function hipocampo_private._history_terms(
    actor_tenant uuid, actor_user uuid, conversation uuid, query_text text, ts regconfig,
    out lexemes text[], out q tsquery
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    select array_agg(distinct u.lexeme) into lexemes
    from (
        select distinct m.ts_config from hipocampo_private.messages as m
        where m.tenant_id = actor_tenant and m.user_id = actor_user
          and (conversation is null or m.conversation_id = conversation)
    ) as c
    cross join lateral unnest(to_tsvector(c.ts_config, query_text)) as u;
    if lexemes is null then
        lexemes := array(select u.lexeme from unnest(to_tsvector(ts, query_text)) as u);
    end if;
    if cardinality(lexemes) > 0 then
        q := array_to_string(array(select quote_literal(l) from unnest(lexemes) as l), ' | ')::tsquery;
    end if;
end;
$$;

/*
_history_offsets(w_before jsonb, w_after jsonb) -> table (o integer, w double precision)

Purpose: a message's context as offsets: itself (0, weight 1) and its neighbours by position
  (-1.. before, 1.. after) with the configured weights.
Parameters: conversations.context_weights_before / _after (checked by _history_settings).
Returns: one row per offset.
Errors: none.
Example: select * from hipocampo_private._history_offsets('[0.5, 0.3]', '[0.3]');
*/
create or replace function hipocampo_private._history_offsets(w_before jsonb, w_after jsonb)
returns table (o integer, w double precision)
language sql
immutable
security invoker
set search_path = ''
as $$
    select 0, 1.0::double precision
    union all
    select -e.i::integer, (e.w #>> '{}')::double precision
    from jsonb_array_elements(w_before) with ordinality as e (w, i)
    union all
    select e.i::integer, (e.w #>> '{}')::double precision
    from jsonb_array_elements(w_after) with ordinality as e (w, i)
$$;

/*
_history_contexts(actor_tenant uuid, actor_user uuid, conversation uuid, lexemes text[], cfg jsonb,
  wb double precision[], wa double precision[]) -> table (…)

Purpose: the lexical leg's messages: every searched message (without its embedding) with its
  position in its conversation, the length of its context (weighted tokens of itself and its
  neighbours, each message's local day's date words counted at conversations.date_weight) and
  the query lexemes among its day's date words. Lengths by lag / lead in one ordered pass; the
  date words once per local day and language, read per message by key (whatever the estimates).
Parameters: as _history_terms; lexemes from it; cfg the conversations config; wb / wa from
  _history_settings.
Returns: id, conversation_id, modality, fts, pos, len, date_hits.
Errors: none.
Example: select * from hipocampo_private._history_contexts(t, u, null, '{paint}', cfg, wb, wa);
*/
create or replace function hipocampo_private._history_contexts(
    actor_tenant uuid, actor_user uuid, conversation uuid, lexemes text[], cfg jsonb,
    wb double precision[], wa double precision[]
)
returns table (
    id bigint, conversation_id uuid, modality text, fts tsvector, pos bigint, len double precision,
    date_hits text[]
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    tz text := cfg ->> 'time_zone';
    w_date double precision := (cfg ->> 'date_weight')::double precision;
begin
    return query
    with day_terms as materialized (
        -- Date words, once per local day and language.
        select d.day, d.ts_config, u.lexeme
        from (
            select distinct (m.created_at at time zone tz)::date as day, m.ts_config
            from hipocampo_private.messages as m
            where m.tenant_id = actor_tenant and m.user_id = actor_user
              and (conversation is null or m.conversation_id = conversation)
        ) as d
        cross join lateral unnest(to_tsvector(d.ts_config, hipocampo_private._date_words(d.day, d.ts_config))) as u
    ),
    by_day as materialized (
        -- Per local day and language: the weighted date-word count and the query's lexemes among
        -- the date words, as objects read by key (a lookup per message, whatever the estimates).
        select coalesce(jsonb_object_agg(x.key, x.n), '{}'::jsonb) as len,
            coalesce(jsonb_object_agg(x.key, x.hits) filter (where x.hits is not null), '{}'::jsonb) as hits
        from (
            select dt.day::text || ' ' || dt.ts_config::text as key, count(*) * w_date as n,
                jsonb_agg(dt.lexeme) filter (where w_date > 0 and dt.lexeme = any(lexemes)) as hits
            from day_terms as dt group by dt.day, dt.ts_config
        ) as x
    ),
    own as materialized (
        select m.id, m.conversation_id, m.created_at, m.modality, m.fts,
            m.fts_length + coalesce((b.len ->> k.key)::double precision, 0) as len,
            case when b.hits ? k.key then array(select jsonb_array_elements_text(b.hits -> k.key)) end as hits
        from hipocampo_private.messages as m
        cross join by_day as b
        cross join lateral (
            select ((m.created_at at time zone tz)::date)::text || ' ' || m.ts_config::text as key
        ) as k
        where m.tenant_id = actor_tenant and m.user_id = actor_user
          and (conversation is null or m.conversation_id = conversation)
    )
    select s.id, s.conversation_id, s.modality, s.fts,
        row_number() over w,
        s.len
        + wb[1] * coalesce(lag(s.len, 1) over w, 0) + wb[2] * coalesce(lag(s.len, 2) over w, 0)
        + wb[3] * coalesce(lag(s.len, 3) over w, 0) + wb[4] * coalesce(lag(s.len, 4) over w, 0)
        + wb[5] * coalesce(lag(s.len, 5) over w, 0)
        + wa[1] * coalesce(lead(s.len, 1) over w, 0) + wa[2] * coalesce(lead(s.len, 2) over w, 0)
        + wa[3] * coalesce(lead(s.len, 3) over w, 0) + wa[4] * coalesce(lead(s.len, 4) over w, 0)
        + wa[5] * coalesce(lead(s.len, 5) over w, 0),
        s.hits
    from own as s
    window w as (partition by s.conversation_id order by s.created_at, s.id);
end;
$$;

/*
_history_lexical(actor_tenant uuid, actor_user uuid, conversation uuid, modality text,
  lexemes text[], q tsquery, cfg jsonb, wb double precision[], wa double precision[])
  -> table (id bigint, ls double precision)

Purpose: _search_history's lexical leg: Okapi BM25 (conversations.bm25_k1, bm25_b) of each
  searched message's context: a term of the message at position p counts for the message at
  p - o with the weight of offset o (_history_offsets), its day's date words at
  conversations.date_weight; idf and the mean length over the searched messages.
Parameters: as _history_contexts; modality null = every modality; q from _history_terms.
Returns: one row per searched message of the modality, ls null without a query term.
Errors: none.
Example: select * from hipocampo_private._history_lexical(t, u, null, null, '{paint}', 'paint', cfg, wb, wa);
*/
create or replace function hipocampo_private._history_lexical(
    actor_tenant uuid, actor_user uuid, conversation uuid, modality text, lexemes text[], q tsquery,
    cfg jsonb, wb double precision[], wa double precision[]
)
returns table (id bigint, ls double precision)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    k1 double precision := (cfg ->> 'bm25_k1')::double precision;
    b double precision := (cfg ->> 'bm25_b')::double precision;
    w_date double precision := (cfg ->> 'date_weight')::double precision;
begin
    return query
    with scoped as materialized (
        select * from hipocampo_private._history_contexts(actor_tenant, actor_user, conversation, lexemes, cfg, wb, wa)
    ),
    own_terms as (
        -- The query's lexemes in each message (term frequency) and in its date words (date_weight).
        select s.conversation_id, s.pos, u.lexeme, coalesce(array_length(u.positions, 1), 1)::double precision as tf
        from scoped as s
        cross join lateral unnest(s.fts) as u
        where q is not null and s.fts @@ q and u.lexeme = any(lexemes)
        union all
        select s.conversation_id, s.pos, h.lexeme, w_date
        from scoped as s
        cross join lateral unnest(s.date_hits) as h (lexeme)
    ),
    spread_terms as materialized (
        -- A term of the message at position p counts for the message at p - o with weight w(o).
        -- (materialized: the join below must be on both keys, whatever the row estimates)
        select ot.conversation_id, ot.pos - o.o as pos, ot.lexeme, o.w * ot.tf as tf
        from own_terms as ot
        cross join hipocampo_private._history_offsets(cfg -> 'context_weights_before', cfg -> 'context_weights_after') as o
    ),
    ctx_terms as (
        select n.id, n.len, t.lexeme, sum(t.tf) as tf
        from spread_terms as t
        inner join scoped as n on n.conversation_id = t.conversation_id and n.pos = t.pos
        group by n.id, n.len, t.lexeme
    ),
    corpus as materialized (
        select count(*) as n_docs, coalesce(nullif(avg(s.len), 0), 1) as avg_len from scoped as s
    ),
    df as materialized (
        select t.lexeme, count(*) as n from ctx_terms as t group by t.lexeme
    ),
    lexical as materialized (
        select t.id, sum(
            ln(1 + (cp.n_docs - d.n + 0.5) / (d.n + 0.5))
            * t.tf * (k1 + 1) / (t.tf + k1 * (1 - b + b * t.len / cp.avg_len))
        ) as s
        from ctx_terms as t
        inner join df as d on d.lexeme = t.lexeme
        cross join corpus as cp
        group by t.id
    )
    -- A union grouped by message, not an outer join: the plan stays linear whatever the estimates.
    select u.id, max(u.s)
    from (
        select s.id, null::double precision as s, true as searched
        from scoped as s
        where _history_lexical.modality is null or s.modality = _history_lexical.modality
        union all
        select l.id, l.s, false from lexical as l
    ) as u
    group by u.id
    having bool_or(u.searched);
end;
$$;

/*
_history_dense(actor_tenant uuid, actor_user uuid, conversation uuid, modality text,
  query_embedding vector, model text, cfg jsonb, wv double precision[], span integer,
  q_norm double precision) -> table (id bigint, ds double precision)

Purpose: _search_history's dense leg: the cosine of the query to S, the weighted sum of the
  embeddings of a message's context, computed from inner products without building S: q.S is the
  weighted sum of the query's inner products with the context's messages, |S|^2 the weighted sum
  of the messages' inner products with each other (each message paired with its next ones up to
  span). A message without an embedding of the model adds nothing, as a missing neighbour.
Parameters: as _history_lexical; query_embedding null = no dense leg; model, wv, span and q_norm
  from _history_settings.
Returns: one row per searched message of the modality with an embedding of the model.
Errors: none.
Example: select * from hipocampo_private._history_dense(t, u, null, null, '[…]', m, cfg, wv, 5, 1);
*/
create or replace function hipocampo_private._history_dense(
    actor_tenant uuid, actor_user uuid, conversation uuid, modality text, query_embedding extensions.vector,
    model text, cfg jsonb, wv double precision[], span integer, q_norm double precision
)
returns table (id bigint, ds double precision)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    return query
    with own_dots as materialized (
        -- Each searched message's inner products, 0 without an embedding of the model: with the
        -- query (dq), with itself (nn), and with the next 1..10 messages of its conversation (g).
        select m.id, m.modality, x.e is not null as has_e, m.conversation_id, row_number() over w as pos,
            coalesce(-(x.e operator(extensions.<#>) query_embedding), 0) as dq,
            coalesce(-(x.e operator(extensions.<#>) x.e), 0) as nn,
            array[
                case when span >= 1 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 1) over w), 0) end,
                case when span >= 2 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 2) over w), 0) end,
                case when span >= 3 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 3) over w), 0) end,
                case when span >= 4 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 4) over w), 0) end,
                case when span >= 5 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 5) over w), 0) end,
                case when span >= 6 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 6) over w), 0) end,
                case when span >= 7 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 7) over w), 0) end,
                case when span >= 8 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 8) over w), 0) end,
                case when span >= 9 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 9) over w), 0) end,
                case when span >= 10 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 10) over w), 0) end
            ] as g
        from hipocampo_private.messages as m
        cross join lateral (select case when m.embedding_model = model then m.embedding end as e) as x
        where query_embedding is not null
          and m.tenant_id = actor_tenant and m.user_id = actor_user
          and (conversation is null or m.conversation_id = conversation)
        window w as (partition by m.conversation_id order by m.created_at, m.id)
    ),
    dense_parts as materialized (
        -- The message at p + o (weight w(o)) adds w(o) q.e to q.S of the message at p, and
        -- w(o)^2 e.e + 2 w(o) sum_d w(o + d) e.e' (e' the message d further on) to |S|^2.
        select d.conversation_id, d.pos - o.o as pos, sum(o.w * d.dq) as num,
            sum(o.w * o.w * d.nn + 2 * o.w * (
                coalesce(wv[o.o + 7] * d.g[1], 0) + coalesce(wv[o.o + 8] * d.g[2], 0)
                + coalesce(wv[o.o + 9] * d.g[3], 0) + coalesce(wv[o.o + 10] * d.g[4], 0)
                + coalesce(wv[o.o + 11] * d.g[5], 0) + coalesce(wv[o.o + 12] * d.g[6], 0)
                + coalesce(wv[o.o + 13] * d.g[7], 0) + coalesce(wv[o.o + 14] * d.g[8], 0)
                + coalesce(wv[o.o + 15] * d.g[9], 0) + coalesce(wv[o.o + 16] * d.g[10], 0)
            )) as den
        from own_dots as d
        cross join hipocampo_private._history_offsets(cfg -> 'context_weights_before', cfg -> 'context_weights_after') as o
        group by d.conversation_id, d.pos - o.o
    )
    select d.id, p.num / nullif(sqrt(p.den) * q_norm, 0)
    from own_dots as d
    inner join dense_parts as p on p.conversation_id = d.conversation_id and p.pos = d.pos
    where d.has_e and p.den > 0
      and (_history_dense.modality is null or d.modality = _history_dense.modality);
end;
$$;

/*
_history_fused(actor_tenant uuid, actor_user uuid, conversation uuid, modality text,
  query_embedding vector, lexemes text[], q tsquery, cfg jsonb, wb double precision[],
  wa double precision[], wv double precision[], span integer, model text, q_norm double precision,
  n integer) -> table (id bigint, ds double precision, ls double precision, f double precision)

Purpose: _search_history's fusion: both legs (_history_lexical, _history_dense) z-scored over
  every searched message (BM25 0 without a query term, the cosine at the leg's minimum without an
  embedding) and summed with conversations.dense_weight / lexical_weight; the best n.
Parameters: as the two legs (wb, wa, wv, span, model, q_norm from _history_settings); n the rows
  kept (k, or the re-rank's candidates).
Returns: id, the legs' scores ds and ls, the fused score f, best first.
Errors: none.
Example: select * from hipocampo_private._history_fused(t, u, null, null, null, '{paint}', 'paint', cfg, wb, wa, wv, 0, null, null, 10);
*/
create or replace function hipocampo_private._history_fused(
    actor_tenant uuid, actor_user uuid, conversation uuid, modality text, query_embedding extensions.vector,
    lexemes text[], q tsquery, cfg jsonb, wb double precision[], wa double precision[],
    wv double precision[], span integer, model text, q_norm double precision, n integer
)
returns table (id bigint, ds double precision, ls double precision, f double precision)
language plpgsql
stable
-- (at most n rows, n ≤ a few hundred: planned as such, the messages are then read by key)
rows 100
security invoker
set search_path = ''
as $$
declare
    wd double precision := (cfg ->> 'dense_weight')::double precision;
    wl double precision := (cfg ->> 'lexical_weight')::double precision;
begin
    return query
    with scores as materialized (
        -- One row per searched message with both legs' scores: a union grouped by message, not
        -- outer joins, so the plan stays linear whatever the row estimates.
        select u.id, max(u.ds) as ds, max(u.ls) as ls
        from (
            select l.id, null::double precision as ds, l.ls, true as searched
            from hipocampo_private._history_lexical(
                actor_tenant, actor_user, conversation, modality, lexemes, q, cfg, wb, wa
            ) as l
            union all
            select d.id, d.ds, null, false
            from hipocampo_private._history_dense(
                actor_tenant, actor_user, conversation, modality, query_embedding, model, cfg, wv, span, q_norm
            ) as d
        ) as u
        group by u.id
        having bool_or(u.searched)
    ),
    stats as materialized (
        select
            avg(coalesce(x.ls, 0)) as l_mean,
            coalesce(nullif(stddev_pop(coalesce(x.ls, 0)), 0), 1) as l_sd,
            avg(x.ds) as d_mean,
            coalesce(nullif(stddev_pop(x.ds), 0), 1) as d_sd,
            min(x.ds) as d_min
        from scores as x
    )
    select x.id, x.ds, x.ls,
        wd * coalesce((coalesce(x.ds, st.d_min) - st.d_mean) / st.d_sd, 0)
        + wl * (coalesce(x.ls, 0) - st.l_mean) / st.l_sd as f
    from scores as x
    cross join stats as st
    where x.ds is not null or x.ls is not null
    order by 4 desc, 1
    limit n;
end;
$$;

/*
_search_history(…) -> table (…)

Purpose: search_history's ranking, without its read record: the same parameters as
  hipocampo.search_history (below), which calls it and records the read. Steps: _history_settings
  (checks, weights), _history_terms (the query's lexemes), _history_fused (both legs, fused, the
  best k or the re-rank's candidates), then here the late-interaction re-rank: for each query
  token the most similar token of the message (MaxSim over sign bits, 1 - 2 hamming / bits),
  idf-weighted (BM25-style idf over at most the newest token_idf_sample searched messages),
  z-scored with the fused score over the candidates (weight token_rerank_weight).
Returns: as hipocampo.search_history.
Errors: as hipocampo.search_history: 42501 as _memory_actor; 22023, 22000 and 55000 as
  _history_settings.
Example: select content from hipocampo_private._search_history('what did Mel paint?', null, c);
*/
create or replace function hipocampo_private._search_history(
    query_text text, query_embedding extensions.vector default null, filter_conversation_id uuid default null,
    match_count integer default null, filter_modality text default null, user_id uuid default null,
    tenant_id uuid default null, query_token_ids integer[] default null, query_token_bits varbit[] default null
)
returns table (
    message_id bigint, conversation_id uuid, role text, content text, modality text, metadata jsonb,
    created_at timestamptz, dense_score double precision, lexical_score double precision,
    score double precision, rank integer, token_score double precision
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(_search_history.user_id, _search_history.tenant_id);
    cfg jsonb := hipocampo.effective_config(a.actor_tenant) -> 'conversations';
    st record;
    t record;
    w_token double precision := (cfg ->> 'token_rerank_weight')::double precision;
    n_idf integer := (cfg ->> 'token_idf_sample')::integer;
begin
    select * into st from hipocampo_private._history_settings(
        cfg, match_count, query_text, query_embedding, query_token_ids, query_token_bits
    );
    select * into t from hipocampo_private._history_terms(a.actor_tenant, a.actor_user, filter_conversation_id, query_text, st.ts);
    return query
    with fused as materialized (
        select * from hipocampo_private._history_fused(
            a.actor_tenant, a.actor_user, filter_conversation_id, filter_modality, query_embedding, t.lexemes, t.q,
            cfg, st.wb, st.wa, st.wv, st.span, st.model, st.q_norm,
            case when st.rerank then greatest(st.k, (cfg ->> 'token_rerank_candidates')::integer) else st.k end
        )
    ),
    idf_sample as materialized (
        -- The newest token_idf_sample searched messages (a whole history stays cheap): the user's
        -- messages first (offset 0), so the plan never walks the table in id order instead.
        select o.id, o.token_ids from (
            select m.id, m.token_ids from hipocampo_private.messages as m
            where st.rerank and m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
              and (filter_conversation_id is null or m.conversation_id = filter_conversation_id)
            offset 0
        ) as o
        order by o.id desc limit n_idf
    ),
    query_tokens as materialized (
        -- Each query token with its BM25-style idf among the sampled messages (token ids).
        select q.i, q.bits, ln(1 + (n.n - coalesce(d.n, 0) + 0.5) / (coalesce(d.n, 0) + 0.5)) as w
        from unnest(query_token_ids, query_token_bits) with ordinality as q (id, bits, i)
        cross join (select count(*) as n from idf_sample) as n
        left join (
            select u.id, count(distinct o.id) as n
            from idf_sample as o
            cross join lateral unnest(o.token_ids) as u (id)
            where o.token_ids operator(pg_catalog.&&) query_token_ids and u.id = any(query_token_ids)
            group by u.id
        ) as d on d.id = q.id
        where st.rerank
    ),
    token_scores as materialized (
        select f.id, sum(x.w * x.sim) / nullif(sum(x.w), 0) as ts
        from fused as f
        inner join hipocampo_private.messages as m on m.id = f.id
        cross join lateral (
            select max(qt.w) as w, 1 - 2 * min(bit_count(d.b operator(pg_catalog.#) qt.bits))::double precision
                / max(bit_length(qt.bits)) as sim
            from unnest(m.token_bits) as d (b)
            cross join query_tokens as qt
            group by qt.i
        ) as x
        where st.rerank and m.token_bits is not null and m.embedding_model = st.model
        group by f.id
    ),
    candidate_stats as materialized (
        select avg(f.f) as f_mean, coalesce(nullif(stddev_pop(f.f), 0), 1) as f_sd,
            avg(x.ts) as t_mean, coalesce(nullif(stddev_pop(x.ts), 0), 1) as t_sd, min(x.ts) as t_min
        from fused as f
        left join token_scores as x on x.id = f.id
    ),
    ranked as (
        select f.id, f.ds, f.ls, x.ts,
            case when st.rerank then (f.f - cs.f_mean) / cs.f_sd
                + w_token * coalesce((coalesce(x.ts, cs.t_min) - cs.t_mean) / cs.t_sd, 0)
            else f.f end as s
        from fused as f
        cross join candidate_stats as cs
        left join token_scores as x on x.id = f.id
    )
    select m.id, m.conversation_id, m.role, m.content, m.modality, m.metadata, m.created_at,
        r.ds, r.ls, r.s, (row_number() over (order by r.s desc, m.id))::integer, r.ts
    from ranked as r
    inner join hipocampo_private.messages as m on m.id = r.id
    order by r.s desc, m.id
    limit st.k;
end;
$$;

/*
search_history(query_text text, query_embedding vector default null,
  filter_conversation_id uuid default null, match_count integer default null,
  filter_modality text default null, user_id uuid default null,
  tenant_id uuid default null, query_token_ids integer[] default null,
  query_token_bits varbit[] default null) -> setof record

Purpose: search the caller's own conversation history (one conversation, or all), recorded as one
  read (_record_read: its latency in hipocampo.read_stats); the ranking is
  hipocampo_private._search_history's. Each message is scored with its context: itself (weight 1) plus the messages before it in its conversation
  weighted by conversations.context_weights_before (nearest first) and those after it by
  conversations.context_weights_after (order: created_at, id), read with window functions in one
  pass per leg. Lexical leg: Okapi BM25 (conversations.bm25_k1 / bm25_b) over the context's
  weighted term frequencies, which include each message's date words (_date_words of created_at
  in conversations.time_zone, weight conversations.date_weight; 0 = off); document frequencies
  and lengths over the searched messages' contexts. Dense leg (when query_embedding is given):
  cosine to the weighted sum of the context's embeddings of the active model, exact, computed from
  inner products (the query with each message, each message with its next ones) without building
  the sum (a zero query_embedding gives no dense score). Both legs
  are z-scored over every searched message (BM25 0 without a query term; a missing cosine counts
  as the leg's minimum) and summed with conversations.dense_weight / lexical_weight; messages
  matched by neither leg are left out. Then, given the query's tokens, the top
  conversations.token_rerank_candidates are re-ranked: fused score and MaxSim token score, each
  z-scored over the candidates, weighted 1 and conversations.token_rerank_weight (0 = off); the
  query tokens' idf is counted over the newest conversations.token_idf_sample searched messages.
  With filter_modality, neighbours of any modality give context; only messages of that modality
  are returned.
Parameters: query_text 1..conversations.max_query_chars (2,000) characters; query_embedding of
  the active model (optional); filter_conversation_id (null = every conversation of the user);
  match_count k, 1..100 (default
  conversations.match_count); filter_modality chat | voice; user_id / tenant_id only for
  service_role; query_token_ids / query_token_bits - the question's WordPiece ids and the sign
  bits of its token embeddings (same model as query_embedding, which they need; 1..512 items).
Returns: message_id, conversation_id, role, content, modality, metadata, created_at,
  dense_score (cosine of the context), lexical_score (BM25 of the context), score (the ranking
  score), rank (1-based), token_score (MaxSim in [-1, 1]; null without the re-rank or without
  the message's tokens).
Errors: 42501 as _memory_actor; 22023 empty or too long query; 22023 "match_count must be 1..100
  (got n)"; 22023 "conversations.context_weights_before must be an array of at most 5 numbers in
  [0, 1]" (and _after); 22023 unknown conversations.time_zone; 22023 "query tokens need
  query_embedding (their model's)"; 22023 as _check_message_tokens for the query tokens (bits as
  long as query_embedding's dimensions); 22000 wrong dimensions; 55000 "conversations config is
  incomplete: …".
Example: select content, score from hipocampo.search_history('what did Mel paint?', '[…]', '…'::uuid,
  query_token_ids => array[2054, …], query_token_bits => array[b'0110…', …]);
*/
create or replace function hipocampo.search_history(
    query_text text,
    query_embedding extensions.vector default null,
    filter_conversation_id uuid default null,
    match_count integer default null,
    filter_modality text default null,
    user_id uuid default null,
    tenant_id uuid default null,
    query_token_ids integer[] default null,
    query_token_bits varbit[] default null
)
returns table (
    message_id bigint, conversation_id uuid, role text, content text, modality text, metadata jsonb,
    created_at timestamptz, dense_score double precision, lexical_score double precision,
    score double precision, rank integer, token_score double precision
)
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    n integer;
begin
    return query select * from hipocampo_private._search_history(
        search_history.query_text, search_history.query_embedding, search_history.filter_conversation_id,
        search_history.match_count, search_history.filter_modality, search_history.user_id,
        search_history.tenant_id, search_history.query_token_ids, search_history.query_token_bits
    );
    get diagnostics n = row_count;
    perform hipocampo_private._record_read(
        (hipocampo_private._memory_actor(search_history.user_id, search_history.tenant_id)).actor_tenant,
        'search_history', n, null, null
    );
end;
$$;

comment on function hipocampo.search_history(
    text, extensions.vector, uuid, integer, text, uuid, uuid, integer[], varbit[]
) is
'Hybrid (BM25 + cosine) search of the caller''s conversation history, each message with its neighbours and date; re-ranked by late interaction over tokens when the query''s are given.';

create index messages_without_tokens_idx on hipocampo_private.messages (id)
where token_bits is null and embedding is not null;

/*
messages_without_tokens(batch_size integer default 100, filter_tenant_id uuid default null,
  after_message_id bigint default 0) -> table (message_id bigint, tenant_id uuid, content text, context text[])

Purpose: the oldest messages that have an embedding of the active model and no tokens, each with
  the context its tokens are read after (as Memory.add_messages reads them): the previous
  conversations.token_context_messages messages of its conversation (its tenant's config), oldest
  first. The listed messages stay locked (for update skip locked) until the caller's transaction
  ends: store their tokens in the same transaction; concurrent workers take other messages.
Parameters: batch_size 1..1000 messages; filter_tenant_id - only that tenant's messages (null: every
  tenant's); after_message_id - only messages with a greater id (a caller's cursor: a message whose
  tokens it could not compute is not listed to it again).
Returns: at most batch_size rows, by message id; none when every message of the active model has
  its tokens (or no model is active).
Errors: 22023 "batch_size must be 1..1000"; 55000 "conversations config is incomplete: seed it from
  config.toml (hipocampo db migrate)" (token_context_messages missing for a listed message's tenant).
Example: select message_id, content, context from hipocampo.messages_without_tokens(100, null, 0);
*/
create or replace function hipocampo.messages_without_tokens(
    batch_size integer default 100, filter_tenant_id uuid default null, after_message_id bigint default 0
)
returns table (message_id bigint, tenant_id uuid, content text, context text[])
language plpgsql
volatile
security invoker
set search_path = ''
set jit = off
as $$
declare
    model text;
begin
    if batch_size is null or batch_size not between 1 and 1000 then
        raise exception 'batch_size must be 1..1000' using errcode = '22023';
    end if;
    select e.name into model from hipocampo_private.embedding_models as e where e.active;
    return query
    with batch as materialized (
        select m.id, m.tenant_id, m.user_id, m.conversation_id, m.content
        from hipocampo_private.messages as m
        where m.token_bits is null and m.embedding is not null and m.embedding_model = model
          and m.id > coalesce(messages_without_tokens.after_message_id, 0)
          and (messages_without_tokens.filter_tenant_id is null or m.tenant_id = messages_without_tokens.filter_tenant_id)
        order by m.id
        limit batch_size
        for update of m skip locked
    ),
    context_size as materialized (
        select t.tenant_id, (hipocampo_private._require_config(
            hipocampo.effective_config(t.tenant_id) -> 'conversations', 'conversations',
            array['token_context_messages']
        ) ->> 'token_context_messages')::integer as n
        from (select distinct b.tenant_id from batch as b) as t
    )
    select b.id, b.tenant_id, b.content, array(
        select p.content from (
            select x.id, x.content from hipocampo_private.messages as x
            where x.tenant_id = b.tenant_id and x.user_id = b.user_id
              and x.conversation_id = b.conversation_id and x.id < b.id
            order by x.id desc
            limit greatest(cs.n, 0)
        ) as p
        order by p.id
    )
    from batch as b
    inner join context_size as cs on cs.tenant_id = b.tenant_id
    order by b.id;
end;
$$;

comment on function hipocampo.messages_without_tokens(integer, uuid, bigint) is
'Messages with an embedding of the active model and no tokens, each with its previous messages (locked for the caller''s transaction): the token backfill''s work list.';

/*
_scrub_message() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of messages: content, attachments and metadata scrubbed
  when the row's tenant has conversations.scrub_pii (default true).
Returns: NEW, scrubbed or unchanged.
Errors: 42501 as effective_config (the row's tenant must be the caller's).
*/
create or replace function hipocampo_private._scrub_message()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if coalesce((hipocampo.effective_config(new.tenant_id) -> 'conversations' ->> 'scrub_pii')::boolean, true) then
        new.content := (hipocampo_private._pii_scrub(new.content)).text;
        new.attachments := hipocampo_private._pii_scrub_jsonb(new.attachments);
        new.metadata := hipocampo_private._pii_scrub_jsonb(new.metadata);
    end if;
    return new;
end;
$$;

/*
_scrub_summary() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of conversation_summaries: the summary scrubbed like the
  messages it summarises (conversations.scrub_pii, default true).
Returns: NEW, scrubbed or unchanged.
Errors: 42501 as effective_config.
*/
create or replace function hipocampo_private._scrub_summary()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if coalesce((hipocampo.effective_config(new.tenant_id) -> 'conversations' ->> 'scrub_pii')::boolean, true) then
        new.summary := (hipocampo_private._pii_scrub(new.summary)).text;
    end if;
    return new;
end;
$$;

create trigger messages_scrub_pii
before insert or update of content, attachments, metadata on hipocampo_private.messages
for each row execute function hipocampo_private._scrub_message();

create trigger conversation_summaries_scrub_pii
before insert or update of summary on hipocampo_private.conversation_summaries
for each row execute function hipocampo_private._scrub_summary();
