-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- The audit row of every answer call (record_answer) and the ContextPack (context_pack and its
-- steps: memories, the window, the session, messages, chunks under a token budget).
/*
record_answer(trace_id uuid, question text, answer_source text, reason text, confidence real,
  candidates integer, filtered integer, evidence_chunk_ids bigint[], timings_ms jsonb,
  latency_ms real, kb_ids uuid[], agent text default null, user_id uuid default null,
  tenant_id uuid default null) -> uuid

Purpose: the audit row of one answer call (also refusals and cache hits). The question is kept
  only as its sha256 and the user as the pseudonymous user_ref.
Returns: the trace id.
Errors: 22023 "trace_id, answer_source and latency_ms are required"; 23514 unknown answer_source
  or timings_ms not an object; 23505
  duplicate trace id; 42501 as _resolve_tenant.
Example: select hipocampo.record_answer(gen_random_uuid(), 'q', 'REFUSAL', 'low_confidence', 0.2,
  4, 3, '{}', '{}', 12.5, array[kb]);
*/
-- definer because audit rows are append-only for clients: no client role may write the table.
create or replace function hipocampo.record_answer(
    trace_id uuid, question text, answer_source text, reason text, confidence real,
    candidates integer, filtered integer, evidence_chunk_ids bigint[], timings_ms jsonb,
    latency_ms real, kb_ids uuid[], agent text default null, user_id uuid default null,
    tenant_id uuid default null
)
returns uuid
language plpgsql
security definer
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(record_answer.tenant_id);
    u uuid := coalesce((select auth.uid()), record_answer.user_id);
begin
    if record_answer.trace_id is null or record_answer.answer_source is null or record_answer.latency_ms is null then
        raise exception 'trace_id, answer_source and latency_ms are required' using errcode = '22023';
    end if;
    insert into hipocampo_private.answer_audit (
        trace_id, tenant_id, user_ref, agent, kb_ids, question_sha256, answer_source, reason, confidence,
        candidates, filtered, evidence_chunk_ids, timings_ms, latency_ms
    ) values (
        record_answer.trace_id, t,
        case when u is not null then hipocampo_private._user_ref(t, u) end,
        record_answer.agent, coalesce(record_answer.kb_ids, '{}'),
        encode(sha256(convert_to(coalesce(question, ''), 'UTF8')), 'hex'),
        record_answer.answer_source, record_answer.reason, record_answer.confidence,
        coalesce(record_answer.candidates, 0), coalesce(record_answer.filtered, 0),
        coalesce(record_answer.evidence_chunk_ids, '{}'), coalesce(record_answer.timings_ms, '{}'::jsonb),
        record_answer.latency_ms
    );
    return record_answer.trace_id;
end;
$$;

comment on function hipocampo.normalize_question(text) is 'The cache key of a question.';

comment on function hipocampo.set_document_status(uuid, text, real) is
'Mark a document superseded / archived / active, or change its trust.';

comment on function hipocampo.cache_get(text, uuid[], text, uuid) is 'A live cached answer, or null.';

comment on function hipocampo.take_rate_limit(double precision, uuid, uuid) is
'Token bucket per tenant and user (rag.rate_limit_per_minute).';

comment on function hipocampo.take_ip_rate_limit(inet) is 'Token bucket per client IP for the HTTP API.';

comment on function hipocampo.take_embedding_budget(text, integer) is
'Characters per caller and minute for serve''s POST /v1/embeddings (a token bucket by input size).';

comment on function hipocampo.record_answer(
    uuid, text, text, text, real, integer, integer, bigint[], jsonb, real, uuid[], text, uuid, uuid
) is 'The audit row of one answer call (question as sha256, user pseudonymous).';

-- The ContextPack: what an assistant needs on every turn, in one round trip and within a token
-- budget. Retrieval order: memory -> session -> RAG -> tools -> model knowledge (wording only).
/*
_pack_tokens(t text) -> integer

Purpose: the token estimate of a text in a pack: ceil(characters / 4) + 4 per item (role,
  separators), the estimate the memory gate uses too.
Returns: the token count.
Errors: none (a pure function).
*/
create or replace function hipocampo_private._pack_tokens(t text)
returns integer
language sql
immutable
security invoker
set search_path = ''
as $$
    select ceil(char_length(coalesce(t, '')) / 4.0)::integer + 4
$$;

/*
_pack_memories(tenant_id uuid, user_id uuid, query_embedding extensions.vector, model text, mem jsonb,
  budget integer, conversation_id uuid) -> (memories jsonb, used integer, dropped integer)

Purpose: context_pack's first step: the user's memories for the context, preferences first
  (category preference or style, or a key under prefs.), then the active memories closest to the
  query above memory.context_threshold, at most memory.match_count, each added while its tokens
  fit the budget; recorded as one read of the conversation with the mean similarity of what it
  returned (_record_read: the per-session similarity of hipocampo.memory_search_similarity).
Parameters: tenant_id, user_id - the resolved actor; query_embedding - of model; model - the
  memories' embedding model; mem - the effective memory config; budget - tokens (>= 1);
  conversation_id - the conversation the pack serves.
Returns: memories - [{memory_id, key, value, description, category, scope, similarity,
  preference}]; used - their tokens; dropped - memories left out for the budget.
Errors: as _record_read.
Example: select * from hipocampo_private._pack_memories(t, u, e, 'all-MiniLM-L6-v2', cfg -> 'memory', 1200, c);
*/
create or replace function hipocampo_private._pack_memories(
    tenant_id uuid,
    user_id uuid,
    query_embedding extensions.vector,
    model text,
    mem jsonb,
    budget integer,
    conversation_id uuid,
    out memories jsonb,
    out used integer,
    out dropped integer
)
language plpgsql
security invoker
set search_path = ''
as $$
declare
    item jsonb;
    cost integer;
begin
    memories := '[]'::jsonb;
    used := 0;
    dropped := 0;
    for item in
        select jsonb_build_object(
            'memory_id', m.id, 'key', m.key, 'value', m.value, 'description', m.description,
            'category', m.category, 'scope', m.scope, 'similarity', 1 - x.distance, 'preference', x.preference
        ) as j
        from hipocampo_private.memories as m
        cross join lateral (
            select
                m.category in ('preference', 'style') or m.key like 'prefs.%' as preference,
                m.embedding operator(extensions.<=>) _pack_memories.query_embedding as distance
        ) as x
        where m.tenant_id = _pack_memories.tenant_id and m.status = 'active'
          and (m.user_id = _pack_memories.user_id and m.scope = 'personal' or m.scope = 'tenant_shared')
          and m.embedding_model = _pack_memories.model
          and (x.preference or 1 - x.distance >= (mem ->> 'context_threshold')::double precision)
        order by x.preference desc, x.distance
        limit (mem ->> 'match_count')::integer
    loop
        cost := hipocampo_private._pack_tokens(item ->> 'description');
        if used + cost <= budget then
            used := used + cost;
            memories := memories || jsonb_build_array(item);
        else
            dropped := dropped + 1;
        end if;
    end loop;
    perform hipocampo_private._record_read(_pack_memories.tenant_id, 'context_pack', jsonb_array_length(memories),
        null, null, memory_ids => array(select (j ->> 'memory_id')::uuid from jsonb_array_elements(memories) as j),
        similarity => (select avg((j ->> 'similarity')::real)::real from jsonb_array_elements(memories) as j),
        conversation_id => _pack_memories.conversation_id);
end;
$$;

/*
context_pack(conversation_id uuid, query text, query_embedding vector default null,
  modality text default 'chat', token_budget integer default null, kb_ids uuid[] default null,
  agent text default null, session_id uuid default null, user_id uuid default null,
  tenant_id uuid default null) -> jsonb

Purpose: the ContextPack of one turn. Window policy (config context_pack): fewer than all_below
  (10) messages -> all of them; up to summary_above (30) -> the last recent_with_summary (10) +
  the rolling summary; more -> the last recent_long (5) + summary. Relevant memories: the user's
  preferences first (category preference/style, keys prefs.*), then memories with cosine >=
  memory.context_threshold (up to memory.match_count). Session: the live session of the
  conversation (or session_id): tools used, pending confirmations, summary (task/artifact state).
  RAG: rag.top_k chunks of hybrid_search with citations, skipped when every one of them is
  already cited in the window's messages (metadata.citations = [chunk ids or {"chunk_id"}]).
  Chat and voice share the conversation: the pack is the same for both apart from "modality".
  Budget: items are added in retrieval order (memories, summary, session state, messages newest
  first, chunks) while they fit; tokens_used <= token_budget always (estimate: _pack_tokens).
  In named steps: _pack_memories, _pack_window, _pack_session, _pack_messages, _pack_chunks.
Parameters: conversation_id; query 1..rag.question_max_chars (2,000) characters; query_embedding of the active model (null:
  no memories, no dense leg: chunks by BM25 are still needed, so RAG is skipped); modality chat |
  voice; token_budget >= context_pack.min_token_budget (default context_pack.default_token_budget);
  kb_ids / agent for RAG (none: RAG skipped); session_id optional; user_id / tenant_id only for
  service_role.
Returns: {"conversation_id", "modality", "token_budget", "tokens_used", "retrieval_order",
  "window": {"policy": "all" | "recent_with_summary" | "recent_long", "total_messages", "included"},
  "summary", "messages": [...], "memories": [{"key", "value", "description", "category",
  "similarity", "preference"}], "session": {...} | null, "chunks": [{"n", "chunk_id", "document_id",
  "title", "source_uri", "content", "score", "citation"}], "rag": {"skipped", "reason"},
  "dropped": {"memories", "messages", "chunks"}}.
Errors: 22023 "query must have 1 to n characters" (n = rag.question_max_chars) / "modality must be chat or voice" /
  "token_budget must be at least …"; 22000 wrong dimensions; 42501 no tenant / user; P0002
  unknown session.
Example: select hipocampo.context_pack(conv, 'Qual o prazo?', emb, 'voice', 800, array[kb]);
*/
create or replace function hipocampo.context_pack(
    conversation_id uuid,
    query text,
    query_embedding extensions.vector default null,
    modality text default 'chat',
    token_budget integer default null,
    kb_ids uuid[] default null,
    agent text default null,
    session_id uuid default null,
    user_id uuid default null,
    tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    a record := hipocampo_private._memory_actor(context_pack.user_id, context_pack.tenant_id);
    cfg jsonb := hipocampo.effective_config(a.actor_tenant);
    cp jsonb := coalesce(cfg -> 'context_pack', '{}'::jsonb);
    budget integer := coalesce(context_pack.token_budget, (cp ->> 'default_token_budget')::integer);
    used integer := 0;
    model text;
    memories jsonb := '[]'::jsonb;
    dropped_memories integer := 0;
    w record;        -- _pack_window: policy, total, window_n, conv, summary, used_after
    sess record;     -- _pack_session: session_view, used_after
    msgs record;     -- _pack_messages: messages, used_after, dropped
    rag record;      -- _pack_chunks: rag_state, chunks, used_after, dropped
begin
    if query is null or char_length(btrim(query)) not between 1 and (cfg #>> '{rag,question_max_chars}')::integer then
        raise exception 'query must have 1 to % characters', cfg #>> '{rag,question_max_chars}' using errcode = '22023';
    end if;
    if modality is null or modality not in ('chat', 'voice') then
        raise exception 'modality must be chat or voice' using errcode = '22023';
    end if;
    if budget is null or budget < (cp ->> 'min_token_budget')::integer then
        raise exception 'token_budget must be at least % tokens', cp ->> 'min_token_budget' using errcode = '22023';
    end if;

    -- 1. Memory: preferences first, then the memories closest to the query.
    if query_embedding is not null then
        model := hipocampo_private._active_model(query_embedding, 'query_embedding');
        select p.memories, p.used, p.dropped into memories, used, dropped_memories
        from hipocampo_private._pack_memories(a.actor_tenant, a.actor_user, query_embedding, model,
            coalesce(cfg -> 'memory', '{}'::jsonb), budget, context_pack.conversation_id) as p;
    end if;
    -- 2. Session: the rolling summary and the window of recent messages, the task state.
    w := hipocampo_private._pack_window(
        a.actor_tenant, a.actor_user, context_pack.conversation_id, cp, budget, used
    );
    sess := hipocampo_private._pack_session(
        a.actor_tenant, a.actor_user, context_pack.conversation_id, context_pack.session_id, budget, w.used_after
    );
    msgs := hipocampo_private._pack_messages(w.conv -> 'messages', budget, sess.used_after);
    -- 3. RAG: chunks with citations, unless the conversation already cited all of them.
    rag := hipocampo_private._pack_chunks(
        a.actor_tenant, a.actor_user, context_pack.conversation_id, context_pack.query,
        context_pack.query_embedding, model, context_pack.kb_ids, context_pack.agent, w.window_n, budget,
        msgs.used_after
    );

    return jsonb_build_object(
        'conversation_id', context_pack.conversation_id,
        'modality', context_pack.modality,
        'query', context_pack.query,
        'token_budget', budget,
        'tokens_used', rag.used_after,
        'retrieval_order', jsonb_build_array('memory', 'session', 'rag', 'tools', 'model'),
        'window', jsonb_build_object(
            'policy', w.policy, 'total_messages', w.total, 'included', jsonb_array_length(msgs.messages)
        ),
        'summary', w.summary,
        'messages', msgs.messages,
        'memories', memories,
        'session', sess.session_view,
        'chunks', rag.chunks,
        'rag', rag.rag_state,
        'dropped', jsonb_build_object(
            'memories', dropped_memories, 'messages', msgs.dropped, 'chunks', rag.dropped
        )
    );
end;
$$;

/*
_pack_window(tenant uuid, user_id uuid, conversation_id uuid, cp jsonb, budget integer,
  used integer, out policy text, out total integer, out window_n integer, out conv jsonb,
  out summary text, out used_after integer)

Purpose: context_pack's window policy and rolling summary: fewer than cp.all_below messages ->
  all of them; up to cp.summary_above -> the last cp.recent_with_summary and the summary; more
  -> the last cp.recent_long and the summary (conversation_context). The summary is cut to what
  is left of the budget (4 characters per token) and left out when nothing is.
Parameters: tenant and user the caller's (_memory_actor); cp the context_pack config; budget and
  used in tokens (_pack_tokens).
Returns: policy ('all' | 'recent_with_summary' | 'recent_long'), total (the conversation's
  messages), window_n (messages in the window), conv (conversation_context's object), summary
  (null when none or none fits) and used_after (used plus the summary's tokens).
Errors: as conversation_context.
Example: select * from hipocampo_private._pack_window(tenant, user, conv, cp, 800, 120);
*/
create or replace function hipocampo_private._pack_window(
    tenant uuid, user_id uuid, conversation_id uuid, cp jsonb, budget integer, used integer,
    out policy text, out total integer, out window_n integer, out conv jsonb, out summary text,
    out used_after integer
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    cost integer;
begin
    used_after := used;
    select count(*) into total from hipocampo_private.messages as m
    where m.tenant_id = tenant and m.user_id = _pack_window.user_id
      and m.conversation_id = _pack_window.conversation_id;
    if total < (cp ->> 'all_below')::integer then
        policy := 'all';
        window_n := total;
    elsif total <= (cp ->> 'summary_above')::integer then
        policy := 'recent_with_summary';
        window_n := (cp ->> 'recent_with_summary')::integer;
    else
        policy := 'recent_long';
        window_n := (cp ->> 'recent_long')::integer;
    end if;
    conv := hipocampo.conversation_context(_pack_window.conversation_id, window_n, _pack_window.user_id, tenant);
    if policy <> 'all' and conv ->> 'summary' is not null then
        summary := conv ->> 'summary';
        cost := hipocampo_private._pack_tokens(summary);
        if used + cost > budget then
            summary := left(summary, greatest((budget - used - 4) * 4, 0));
            cost := hipocampo_private._pack_tokens(summary);
        end if;
        if summary = '' or used + cost > budget then
            summary := null;
        else
            used_after := used + cost;
        end if;
    end if;
end;
$$;

/*
_pack_session(tenant uuid, user_id uuid, conversation_id uuid, session_id uuid, budget integer,
  used integer, out session_view jsonb, out used_after integer)

Purpose: context_pack's session state: the session named (_session, renewed unless the
  transaction is read-only), else the conversation's live session; its view without messages
  (_session_view), or {"session_id", "truncated": true} when the view does not fit the budget.
Parameters: tenant and user the caller's; session_id null = the conversation's live one; budget
  and used in tokens.
Returns: session_view (null without a session) and used_after (used plus its tokens).
Errors: as _session (P0002 unknown session).
Example: select * from hipocampo_private._pack_session(tenant, user, conv, null, 800, 120);
*/
create or replace function hipocampo_private._pack_session(
    tenant uuid, user_id uuid, conversation_id uuid, session_id uuid, budget integer, used integer,
    out session_view jsonb, out used_after integer
)
language plpgsql
security invoker
set search_path = ''
as $$
declare
    sess hipocampo_private.sessions;
    cost integer;
begin
    used_after := used;
    if _pack_session.session_id is not null then
        sess := hipocampo_private._session(_pack_session.session_id, not current_setting('transaction_read_only')::boolean);
    else
        select * into sess from hipocampo_private.sessions as s
        where s.tenant_id = tenant and s.user_id = _pack_session.user_id
          and s.conversation_id = _pack_session.conversation_id and s.expires_at > now()
        order by s.last_activity_at desc
        limit 1;
    end if;
    if sess.id is not null then
        session_view := hipocampo_private._session_view(sess) - 'messages';
        cost := hipocampo_private._pack_tokens((session_view - 'summary')::text);
        if used + cost <= budget then
            used_after := used + cost;
        else
            session_view := jsonb_build_object('session_id', sess.id, 'truncated', true);
            used_after := used + hipocampo_private._pack_tokens(session_view::text);
        end if;
    end if;
end;
$$;

/*
_pack_messages(window_messages jsonb, budget integer, used integer, out messages jsonb,
  out used_after integer, out dropped integer)

Purpose: context_pack's messages: the window's messages newest first while they fit the budget,
  returned in conversation order.
Parameters: window_messages (conversation_context's "messages"); budget and used in tokens.
Returns: messages (those that fit, oldest first), used_after, dropped (those that did not).
Errors: none.
Example: select * from hipocampo_private._pack_messages(conv -> 'messages', 800, 120);
*/
create or replace function hipocampo_private._pack_messages(
    window_messages jsonb, budget integer, used integer, out messages jsonb, out used_after integer,
    out dropped integer
)
language plpgsql
immutable
security invoker
set search_path = ''
as $$
declare
    item jsonb;
    cost integer;
begin
    messages := '[]'::jsonb;
    used_after := used;
    dropped := 0;
    for item in
        select e from jsonb_array_elements(window_messages) as e order by (e ->> 'id')::bigint desc
    loop
        cost := hipocampo_private._pack_tokens(item ->> 'content');
        if used_after + cost <= budget then
            used_after := used_after + cost;
            messages := jsonb_build_array(item) || messages;
        else
            dropped := dropped + 1;
        end if;
    end loop;
end;
$$;

/*
_pack_chunks(tenant uuid, user_id uuid, conversation_id uuid, query text, query_embedding vector,
  model text, kb_ids uuid[], agent text, window_n integer, budget integer, used integer,
  out rag_state jsonb, out chunks jsonb, out used_after integer, out dropped integer)

Purpose: context_pack's RAG step: rag.top_k chunks of hybrid_search (with the memories' model)
  with citations, in rank order while they fit the budget; skipped without a knowledge base
  (kb_ids, or the agent's binding), without a query embedding, when RAG is disabled, or when the
  window's messages already cite every chunk found (metadata.citations = [chunk ids or
  {"chunk_id"}]).
Parameters: tenant and user the caller's; the query and its embedding (of model); kb_ids / agent
  as context_pack's; window_n from _pack_window; budget and used in tokens.
Returns: rag_state ({"skipped", "reason"}), chunks ([{"n", "chunk_id", "document_id", "title",
  "source_uri", "content", "score", "citation"}]), used_after, dropped.
Errors: as hybrid_search; P0002 unknown agent binding (rag_config).
Example: select * from hipocampo_private._pack_chunks(tenant, user, conv, 'prazo?', emb, model,
  array[kb], null, 10, 800, 120);
*/
create or replace function hipocampo_private._pack_chunks(
    tenant uuid, user_id uuid, conversation_id uuid, query text, query_embedding extensions.vector,
    model text, kb_ids uuid[], agent text, window_n integer, budget integer, used integer,
    out rag_state jsonb, out chunks jsonb, out used_after integer, out dropped integer
)
language plpgsql
security invoker
set search_path = ''
as $$
declare
    rag jsonb;
    kbs uuid[];
    cited jsonb;
    hits jsonb;
    item jsonb;
    cost integer;
begin
    rag_state := jsonb_build_object('skipped', true, 'reason', 'no_knowledge_base');
    chunks := '[]'::jsonb;
    used_after := used;
    dropped := 0;
    if kb_ids is null and agent is null then
        return;
    end if;
    rag := hipocampo.rag_config(case when cardinality(kb_ids) = 1 then kb_ids[1] end, agent, tenant);
    kbs := coalesce(kb_ids, (select array_agg(x::uuid) from jsonb_array_elements_text(
        case when jsonb_typeof(rag -> 'kb_ids') = 'array' then rag -> 'kb_ids' else '[]'::jsonb end
    ) as x));
    if query_embedding is null then
        rag_state := jsonb_build_object('skipped', true, 'reason', 'no_query_embedding');
        return;
    elsif not coalesce((rag ->> 'enabled')::boolean, true) then
        rag_state := jsonb_build_object('skipped', true, 'reason', 'rag_disabled');
        return;
    end if;
    select coalesce(jsonb_agg(case jsonb_typeof(x) when 'object' then x -> 'chunk_id' else x end), '[]'::jsonb)
    into cited
    from (
        select m.metadata from hipocampo_private.messages as m
        where m.tenant_id = tenant and m.user_id = _pack_chunks.user_id
          and m.conversation_id = _pack_chunks.conversation_id
        order by m.id desc
        limit greatest(window_n, 1)
    ) as w,
        jsonb_array_elements(coalesce(w.metadata -> 'citations', '[]'::jsonb)) as x;
    select coalesce(jsonb_agg(jsonb_build_object(
        'chunk_id', h.chunk_id, 'document_id', h.document_id, 'title', h.title,
        'source_uri', h.source_uri, 'content', h.content, 'score', h.final_score
    ) order by h.rank), '[]'::jsonb)
    into hits
    from hipocampo.hybrid_search(
        query_text => _pack_chunks.query, query_embedding => _pack_chunks.query_embedding,
        kb_ids => kbs, match_count => (rag ->> 'top_k')::integer, tenant_id => tenant,
        -- The model of the memories' vector (during a switch search_model may name another).
        embedding_model => model
    ) as h;
    if jsonb_array_length(hits) > 0 and not exists (
        select 1 from jsonb_array_elements(hits) as h where not cited @> jsonb_build_array(h -> 'chunk_id')
    ) then
        rag_state := jsonb_build_object('skipped', true, 'reason', 'covered_by_session');
        return;
    end if;
    rag_state := jsonb_build_object('skipped', false, 'reason', null);
    for item in select e from jsonb_array_elements(hits) as e loop
        cost := hipocampo_private._pack_tokens(item ->> 'content');
        if used_after + cost <= budget then
            used_after := used_after + cost;
            chunks := chunks || jsonb_build_array(item || jsonb_build_object(
                'n', jsonb_array_length(chunks) + 1,
                'citation', '[' || (jsonb_array_length(chunks) + 1) || '] ' || (item ->> 'title')
            ));
        else
            dropped := dropped + 1;
        end if;
    end loop;
end;
$$;

comment on function hipocampo.context_pack(
    uuid, text, extensions.vector, text, integer, uuid[], text, uuid, uuid, uuid
) is 'The ContextPack of one turn (memories, session, chunks with citations) within a token budget.';

comment on function hipocampo.cache_put(text, uuid[], jsonb, text, uuid) is
'service_role: caches an answer an answer path computed for the effective rag.cache_ttl_seconds; refuses a malformed or oversized entry or one citing other chunks.';

-- The decisions of an answer that both surfaces share (issue 20 §3): the Python Orchestrator and
-- the Deno ask function call these RPCs in the same order, so the same question gets the same
-- answer or refusal from either (tests/test_edge_functions.py compares them).
