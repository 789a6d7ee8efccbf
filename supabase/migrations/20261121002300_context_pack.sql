-- The ContextPack: what an assistant needs on every turn, in one round trip and within a token
-- budget. Retrieval order: memory -> session -> RAG -> tools -> model knowledge (wording only).

/*
_pack_tokens(t text) -> integer

Purpose: the token estimate of a text in a pack: ceil(characters / 4) + 4 per item (role,
  separators), the estimate the memory gate uses too.
*/
create function hipocampo_private._pack_tokens(t text)
returns integer
language sql
immutable
security invoker
set search_path = ''
as $$
    select ceil(char_length(coalesce(t, '')) / 4.0)::integer + 4
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
Parameters: conversation_id; query 1..2,000 characters; query_embedding of the active model (null:
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
Errors: 22023 "query must have 1 to 2000 characters" / "modality must be chat or voice" /
  "token_budget must be at least …"; 22000 wrong dimensions; 42501 no tenant / user; P0002
  unknown session.
Example: select hipocampo.context_pack(conv, 'Qual o prazo?', emb, 'voice', 800, array[kb]);
*/
create function hipocampo.context_pack(
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
as $$
declare
    a record := hipocampo_private._memory_actor(context_pack.user_id, context_pack.tenant_id);
    cfg jsonb := hipocampo.effective_config(a.actor_tenant);
    cp jsonb := coalesce(cfg -> 'context_pack', '{}'::jsonb);
    mem jsonb := coalesce(cfg -> 'memory', '{}'::jsonb);
    rag jsonb;
    budget integer := coalesce(context_pack.token_budget, (cp ->> 'default_token_budget')::integer);
    used integer := 0;
    total integer;
    policy text;
    window_n integer;
    conv jsonb;
    model text;
    sess hipocampo_private.sessions;
    kbs uuid[];
    cited jsonb;
    item jsonb;
    cost integer;
    summary text;
    memories jsonb := '[]'::jsonb;
    messages jsonb := '[]'::jsonb;
    chunks jsonb := '[]'::jsonb;
    session_view jsonb;
    rag_state jsonb := jsonb_build_object('skipped', true, 'reason', 'no_knowledge_base');
    dropped_memories integer := 0;
    dropped_messages integer := 0;
    dropped_chunks integer := 0;
    touched uuid[] := '{}';
begin
    if query is null or char_length(btrim(query)) not between 1 and 2000 then
        raise exception 'query must have 1 to 2000 characters' using errcode = '22023';
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
        for item in
            select jsonb_build_object(
                'memory_id', m.id, 'key', m.key, 'value', m.value, 'description', m.description,
                'category', m.category, 'scope', m.scope, 'similarity', 1 - x.distance, 'preference', x.preference
            ) as j
            from hipocampo_private.memories as m
            cross join lateral (
                select
                    m.category in ('preference', 'style') or m.key like 'prefs.%' as preference,
                    m.embedding operator(extensions.<=>) query_embedding as distance
            ) as x
            where m.tenant_id = a.actor_tenant and m.status = 'active'
              and (m.user_id = a.actor_user and m.scope = 'personal' or m.scope = 'tenant_shared')
              and m.embedding_model = model
              and (x.preference or 1 - x.distance >= (mem ->> 'context_threshold')::double precision)
            order by x.preference desc, x.distance
            limit (mem ->> 'match_count')::integer
        loop
            cost := hipocampo_private._pack_tokens(item ->> 'description');
            if used + cost <= budget then
                used := used + cost;
                memories := memories || jsonb_build_array(item);
                touched := touched || (item ->> 'memory_id')::uuid;
            else
                dropped_memories := dropped_memories + 1;
            end if;
        end loop;
        perform hipocampo_private._touch_memories(touched, a.actor_tenant);
    end if;

    -- 2. Session: the rolling summary and the window of recent messages, the task state.
    select count(*) into total from hipocampo_private.messages as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
      and m.conversation_id = context_pack.conversation_id;
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
    conv := hipocampo.conversation_context(context_pack.conversation_id, window_n, a.actor_user, a.actor_tenant);
    if policy <> 'all' and conv ->> 'summary' is not null then
        summary := conv ->> 'summary';
        cost := hipocampo_private._pack_tokens(summary);
        if used + cost > budget then
            -- The summary is cut to what is left (4 characters per token).
            summary := left(summary, greatest((budget - used - 4) * 4, 0));
            cost := hipocampo_private._pack_tokens(summary);
        end if;
        if summary = '' or used + cost > budget then
            summary := null;
        else
            used := used + cost;
        end if;
    end if;

    if context_pack.session_id is not null then
        sess := hipocampo_private._session(context_pack.session_id, true);
    else
        select * into sess from hipocampo_private.sessions as s
        where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
          and s.conversation_id = context_pack.conversation_id and s.expires_at > now()
        order by s.last_activity_at desc
        limit 1;
    end if;
    if sess.id is not null then
        session_view := hipocampo_private._session_view(sess) - 'messages';
        cost := hipocampo_private._pack_tokens((session_view - 'summary')::text);
        if used + cost <= budget then
            used := used + cost;
        else
            session_view := jsonb_build_object('session_id', sess.id, 'truncated', true);
            used := used + hipocampo_private._pack_tokens(session_view::text);
        end if;
    end if;

    for item in
        select e from jsonb_array_elements(conv -> 'messages') as e order by (e ->> 'id')::bigint desc
    loop
        cost := hipocampo_private._pack_tokens(item ->> 'content');
        if used + cost <= budget then
            used := used + cost;
            messages := jsonb_build_array(item) || messages;
        else
            dropped_messages := dropped_messages + 1;
        end if;
    end loop;

    -- 3. RAG: chunks with citations, unless the conversation already cited all of them.
    if kb_ids is not null or agent is not null then
        rag := hipocampo.rag_config(
            case when cardinality(context_pack.kb_ids) = 1 then context_pack.kb_ids[1] end,
            context_pack.agent, a.actor_tenant
        );
        kbs := coalesce(context_pack.kb_ids,
            (select array_agg(x::uuid) from jsonb_array_elements_text(
            case when jsonb_typeof(rag -> 'kb_ids') = 'array' then rag -> 'kb_ids' else '[]'::jsonb end
        ) as x));
        if query_embedding is null then
            rag_state := jsonb_build_object('skipped', true, 'reason', 'no_query_embedding');
        elsif not coalesce((rag ->> 'enabled')::boolean, true) then
            rag_state := jsonb_build_object('skipped', true, 'reason', 'rag_disabled');
        else
            select coalesce(jsonb_agg(case jsonb_typeof(x) when 'object' then x -> 'chunk_id' else x end), '[]'::jsonb)
            into cited
            from (
                select m.metadata from hipocampo_private.messages as m
                where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
                  and m.conversation_id = context_pack.conversation_id
                order by m.id desc
                limit greatest(window_n, 1)
            ) as w,
                jsonb_array_elements(coalesce(w.metadata -> 'citations', '[]'::jsonb)) as x;
            select coalesce(jsonb_agg(jsonb_build_object(
                'chunk_id', h.chunk_id, 'document_id', h.document_id, 'title', h.title,
                'source_uri', h.source_uri, 'content', h.content, 'score', h.final_score
            ) order by h.rank), '[]'::jsonb)
            into item
            from hipocampo.hybrid_search(
                query_text => context_pack.query, query_embedding => context_pack.query_embedding,
                kb_ids => kbs, match_count => (rag ->> 'top_k')::integer, tenant_id => a.actor_tenant
            ) as h;
            if jsonb_array_length(item) > 0 and not exists (
                select 1 from jsonb_array_elements(item) as h where not cited @> jsonb_build_array(h -> 'chunk_id')
            ) then
                rag_state := jsonb_build_object('skipped', true, 'reason', 'covered_by_session');
            else
                rag_state := jsonb_build_object('skipped', false, 'reason', null);
                for item in select e from jsonb_array_elements(item) as e loop
                    cost := hipocampo_private._pack_tokens(item ->> 'content');
                    if used + cost <= budget then
                        used := used + cost;
                        chunks := chunks || jsonb_build_array(item || jsonb_build_object(
                            'n', jsonb_array_length(chunks) + 1,
                            'citation', '[' || (jsonb_array_length(chunks) + 1) || '] ' || (item ->> 'title')
                        ));
                    else
                        dropped_chunks := dropped_chunks + 1;
                    end if;
                end loop;
            end if;
        end if;
    end if;

    return jsonb_build_object(
        'conversation_id', context_pack.conversation_id,
        'modality', context_pack.modality,
        'query', context_pack.query,
        'token_budget', budget,
        'tokens_used', used,
        'retrieval_order', jsonb_build_array('memory', 'session', 'rag', 'tools', 'model'),
        'window', jsonb_build_object(
            'policy', policy, 'total_messages', total, 'included', jsonb_array_length(messages)
        ),
        'summary', summary,
        'messages', messages,
        'memories', memories,
        'session', session_view,
        'chunks', chunks,
        'rag', rag_state,
        'dropped', jsonb_build_object(
            'memories', dropped_memories, 'messages', dropped_messages, 'chunks', dropped_chunks
        )
    );
end;
$$;

grant execute on function hipocampo_private._pack_tokens(text) to authenticated, service_role;
grant execute on function hipocampo.context_pack(
    uuid, text, extensions.vector, text, integer, uuid[], text, uuid, uuid, uuid
) to authenticated, service_role;

comment on function hipocampo.context_pack(
    uuid, text, extensions.vector, text, integer, uuid[], text, uuid, uuid, uuid
) is 'The ContextPack of one turn (memories, session, chunks with citations) within a token budget.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
