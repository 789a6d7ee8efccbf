-- answer evidence and context pack in named steps.
-- Issue 47 §1: answer_evidence (_evidence_candidates, _candidate_support, _evidence_within_budget, _evidence_verdict) and context_pack (_pack_window, _pack_session, _pack_messages, _pack_chunks) in named steps, each under 100 lines; same results.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._candidate_support(candidates jsonb, query_text text, query_embedding extensions.vector, cfg jsonb, out scored jsonb, out babble uuid[])
returns record
language plpgsql
stable
set search_path to ''
as $function$
declare
    w_sentence double precision := (cfg ->> 'sentence_weight')::double precision;
    s_low double precision := (cfg ->> 'sentence_cosine_low')::double precision;
    -- (a step at s_low when the two cosines are equal)
    s_span double precision := greatest(
        (cfg ->> 'sentence_cosine_high')::double precision - (cfg ->> 'sentence_cosine_low')::double precision, 1e-6
    );
begin
    select coalesce(array_agg(d.id), '{}') into babble
    from hipocampo_private.documents as d
    where d.id in (select (e ->> 'document_id')::uuid from jsonb_array_elements(candidates) as e)
      and not hipocampo_private._reads_as_language(d.text_measures, cfg);
    -- token_count and the sentence cosine by primary key per candidate (scalar subqueries): as a
    -- join the planner read every chunk of the tenant (RLS's tenant index) and hashed them.
    select coalesce(jsonb_agg(e || jsonb_build_object(
               'support', case when (e ->> 'document_id')::uuid = any(babble) then 0 else coalesce(s.support, 0) + coalesce(
                   w_sentence * least(1, greatest(0, (x.sim - s_low) / s_span)), 0
               ) end,
               'lexical_support', coalesce(s.support, 0), 'sentence_similarity', x.sim,
               'best_window', s.best_window,
               'token_count', (
                   select ch.token_count from hipocampo_private.chunks as ch
                   where ch.id = (e ->> 'chunk_id')::bigint
               )
           ) order by (e ->> 'rank')::integer, e ->> 'near_duplicate_of' nulls first), '[]'::jsonb)
    into scored
    from jsonb_array_elements(candidates) as e
    cross join lateral (
        select case when w_sentence > 0 then (
            -- (a zero vector's cosine is NaN, which would compare above every number: left out)
            select max(1 - d.d) filter (where d.d <> 'NaN'::double precision)
            from hipocampo_private.chunks as ch
            cross join lateral unnest(ch.sentence_embeddings) as v
            cross join lateral (select v operator(extensions.<=>) _candidate_support.query_embedding as d) as d
            where ch.id = (e ->> 'chunk_id')::bigint
        ) end as sim
    ) as x
    left join hipocampo.evidence_support(
        _candidate_support.query_text,
        array(select (y ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as y),
        cfg -> 'question_stopwords'
    ) as s on s.chunk_id = (e ->> 'chunk_id')::bigint;
end;
$function$;

create or replace function hipocampo_private._evidence_candidates(query_text text, query_embedding extensions.vector, kb_ids uuid[], top_k integer, tenant uuid, dedupe double precision)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    candidates jsonb;
begin
    select coalesce(jsonb_agg(to_jsonb(h) order by h.rank), '[]'::jsonb) into candidates
    from hipocampo.hybrid_search(
        query_text => _evidence_candidates.query_text,
        query_embedding => _evidence_candidates.query_embedding,
        kb_ids => _evidence_candidates.kb_ids,
        match_count => top_k,
        tenant_id => tenant
    ) as h;
    -- The lookup runs once, materialized: as a function scan inside the join it ran again for
    -- every hit.
    with nd as materialized (
        select n.of_chunk_id, n.chunk_id, n.distance
        from hipocampo_private._near_duplicates(
            array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as e),
            _evidence_candidates.kb_ids, tenant, dedupe, 3
        ) as n
    )
    select candidates || coalesce(jsonb_agg(h.e || jsonb_build_object(
               'chunk_id', x.id, 'document_id', x.document_id, 'kb_id', x.kb_id, 'content', x.content,
               'metadata', x.metadata, 'title', d.title, 'source_uri', d.source_uri,
               'source_type', d.source_type, 'trust_score', d.trust_score, 'published_at', d.published_at,
               'near_duplicate_of', h.id
           ) order by h.rank, nd.distance), '[]'::jsonb)
    into candidates
    from (
        select (e ->> 'chunk_id')::bigint as id, (e ->> 'rank')::integer as rank, e
        from jsonb_array_elements(candidates) as e
    ) as h
    inner join nd on nd.of_chunk_id = h.id
    inner join hipocampo_private.chunks as x on x.id = nd.chunk_id
    inner join hipocampo_private.documents as d on d.id = x.document_id and d.status = 'active';
    return candidates;
end;
$function$;

create or replace function hipocampo_private._evidence_verdict(n_candidates integer, evidence jsonb, conflicts jsonb, cfg jsonb, out reason text, out confidence double precision)
returns record
language plpgsql
immutable
set search_path to ''
as $function$
declare
    min_confidence double precision := (cfg ->> 'min_confidence')::double precision;
    agreeing integer;
    authoritative boolean;
begin
    select max((e ->> 'support')::double precision),
           count(distinct e ->> 'document_id') filter (where (e ->> 'support')::double precision >= min_confidence),
           coalesce(bool_or(
               (e ->> 'support')::double precision >= min_confidence
               and (cfg -> 'authoritative_source_types') ? (e ->> 'source_type')
               and (e ->> 'trust_score')::double precision >= (cfg ->> 'authoritative_trust')::double precision
           ), false)
    into confidence, agreeing, authoritative
    from jsonb_array_elements(evidence) as e;
    reason := case
        when n_candidates = 0 then 'no_evidence'
        when jsonb_array_length(evidence) = 0 then 'low_confidence'
        when exists (select 1 from jsonb_array_elements(conflicts) as k where not (k ->> 'resolved')::boolean)
            then 'conflicting_sources'
        when cfg ->> 'provider' in ('openai', 'azure') then null
        when coalesce(confidence, 0) < min_confidence then 'low_confidence'
        when agreeing < (cfg ->> 'cross_check_min_documents')::integer and not authoritative
            then 'cross_check_failed'
    end;
end;
$function$;

create or replace function hipocampo_private._evidence_within_budget(scored jsonb, conflicts jsonb, babble uuid[], cfg jsonb)
returns jsonb
language plpgsql
immutable
set search_path to ''
as $function$
declare
    min_score double precision := (cfg ->> 'min_score')::double precision;
    budget integer := (cfg ->> 'evidence_token_budget')::integer;
    judged_by_model boolean := cfg ->> 'provider' in ('openai', 'azure');
    losers jsonb;
    evidence jsonb := '[]'::jsonb;
    item jsonb;
    used integer := 0;
begin
    -- Resolved conflicts: the losing documents' chunks leave the evidence.
    select coalesce(jsonb_agg(distinct d), '[]'::jsonb) into losers
    from jsonb_array_elements(conflicts) as k, jsonb_array_elements(k -> 'document_ids') as d
    where (k ->> 'resolved')::boolean and d <> k -> 'winner_document_id';
    for item in
        select e from jsonb_array_elements(scored) as e
        where (
            coalesce((e ->> 'support')::double precision, 0) >= min_score
            or judged_by_model and (e ->> 'document_id')::uuid <> all(babble)
        )
          and not losers @> jsonb_build_array(e -> 'document_id')
        order by (e ->> 'final_score')::double precision desc, (e ->> 'rank')::integer
    loop
        exit when used > 0 and used + (item ->> 'token_count')::integer > budget;
        used := used + (item ->> 'token_count')::integer;
        evidence := evidence || jsonb_build_array(jsonb_build_object(
            'n', jsonb_array_length(evidence) + 1,
            'chunk_id', item -> 'chunk_id', 'document_id', item -> 'document_id', 'kb_id', item -> 'kb_id',
            'title', item -> 'title', 'source_uri', item -> 'source_uri', 'source_type', item -> 'source_type',
            'trust_score', item -> 'trust_score', 'published_at', item -> 'published_at',
            'metadata', item -> 'metadata',
            'content', case when used > budget then left(item ->> 'content', budget * 4) else item ->> 'content' end,
            'best_window', item -> 'best_window', 'score', item -> 'final_score',
            'dense_score', item -> 'dense_score', 'lexical_score', item -> 'lexical_score',
            'support', item -> 'support', 'lexical_support', item -> 'lexical_support',
            'sentence_similarity', item -> 'sentence_similarity',
            'token_count', least((item ->> 'token_count')::integer, budget)
        ));
    end loop;
    return evidence;
end;
$function$;

create or replace function hipocampo_private._pack_chunks(tenant uuid, user_id uuid, conversation_id uuid, query text, query_embedding extensions.vector, model text, kb_ids uuid[], agent text, window_n integer, budget integer, used integer, out rag_state jsonb, out chunks jsonb, out used_after integer, out dropped integer)
returns record
language plpgsql
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._pack_messages(window_messages jsonb, budget integer, used integer, out messages jsonb, out used_after integer, out dropped integer)
returns record
language plpgsql
immutable
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._pack_session(tenant uuid, user_id uuid, conversation_id uuid, session_id uuid, budget integer, used integer, out session_view jsonb, out used_after integer)
returns record
language plpgsql
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._pack_window(tenant uuid, user_id uuid, conversation_id uuid, cp jsonb, budget integer, used integer, out policy text, out total integer, out window_n integer, out conv jsonb, out summary text, out used_after integer)
returns record
language plpgsql
stable
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo.answer_evidence(query_text text, query_embedding extensions.vector, kb_ids uuid[] default null::uuid[], agent text default null::text, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
set search_path to ''
set plan_cache_mode to 'force_generic_plan'
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(answer_evidence.tenant_id);
    cfg jsonb := hipocampo.rag_config(
        case when cardinality(answer_evidence.kb_ids) = 1 then answer_evidence.kb_ids[1] end,
        answer_evidence.agent, t
    );
    kbs uuid[] := coalesce(answer_evidence.kb_ids,
        (select array_agg(x::uuid) from jsonb_array_elements_text(
            case when jsonb_typeof(cfg -> 'kb_ids') = 'array' then cfg -> 'kb_ids' else '[]'::jsonb end
        ) as x));
    min_score double precision := (cfg ->> 'min_score')::double precision;
    candidates jsonb;
    support record;  -- _candidate_support: scored, babble
    conflicts jsonb;
    evidence jsonb;
    verdict record;  -- _evidence_verdict: reason, confidence
begin
    if coalesce(cardinality(kbs), 0) = 0 then
        raise exception 'no knowledge base: pass kb_ids or an agent bound to knowledge bases'
            using errcode = '22023';
    end if;
    if not coalesce((cfg ->> 'enabled')::boolean, true) then
        return jsonb_build_object('decision', 'refuse', 'reason', 'rag_disabled', 'confidence', 0,
            'candidates', 0, 'filtered', 0, 'conflicts', '[]'::jsonb, 'evidence', '[]'::jsonb, 'config', cfg);
    end if;

    candidates := hipocampo_private._evidence_candidates(
        answer_evidence.query_text, answer_evidence.query_embedding, kbs, (cfg ->> 'top_k')::integer, t,
        (hipocampo.effective_config(t) -> 'retrieval' ->> 'dedupe_threshold')::double precision
    );
    support := hipocampo_private._candidate_support(
        candidates, answer_evidence.query_text, answer_evidence.query_embedding, cfg
    );
    conflicts := hipocampo.detect_conflicts(
        answer_evidence.query_text,
        array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(support.scored) as e
              where coalesce((e ->> 'support')::double precision, 0) >= min_score),
        (cfg ->> 'conflict_trust_margin')::double precision,
        cfg -> 'question_stopwords',
        (cfg ->> 'conflict_subject_overlap')::double precision
    );
    evidence := hipocampo_private._evidence_within_budget(support.scored, conflicts, support.babble, cfg);
    verdict := hipocampo_private._evidence_verdict(jsonb_array_length(support.scored), evidence, conflicts, cfg);
    return jsonb_build_object(
        'decision', case when verdict.reason is null then 'answer' else 'refuse' end,
        'reason', verdict.reason,
        'confidence', coalesce(verdict.confidence, 0),
        'candidates', jsonb_array_length(support.scored),
        'filtered', (
            select count(*) from jsonb_array_elements(support.scored) as e
            where coalesce((e ->> 'support')::double precision, 0) < min_score
        ),
        'conflicts', conflicts,
        'evidence', evidence,
        'closest', hipocampo_private._closest_passage(support.scored),
        'config', cfg
    );
end;
$function$;

create or replace function hipocampo.context_pack(conversation_id uuid, query text, query_embedding extensions.vector default null::extensions.vector, modality text default 'chat'::text, token_budget integer default null::integer, kb_ids uuid[] default null::uuid[], agent text default null::text, session_id uuid default null::uuid, user_id uuid default null::uuid, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
set search_path to ''
as $function$
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
$function$;

revoke execute on function hipocampo_private._candidate_support(candidates jsonb, query_text text, query_embedding extensions.vector, cfg jsonb, out scored jsonb, out babble uuid[]) from public;
revoke execute on function hipocampo_private._evidence_candidates(query_text text, query_embedding extensions.vector, kb_ids uuid[], top_k integer, tenant uuid, dedupe double precision) from public;
revoke execute on function hipocampo_private._evidence_verdict(n_candidates integer, evidence jsonb, conflicts jsonb, cfg jsonb, out reason text, out confidence double precision) from public;
revoke execute on function hipocampo_private._evidence_within_budget(scored jsonb, conflicts jsonb, babble uuid[], cfg jsonb) from public;
revoke execute on function hipocampo_private._pack_chunks(tenant uuid, user_id uuid, conversation_id uuid, query text, query_embedding extensions.vector, model text, kb_ids uuid[], agent text, window_n integer, budget integer, used integer, out rag_state jsonb, out chunks jsonb, out used_after integer, out dropped integer) from public;
revoke execute on function hipocampo_private._pack_messages(window_messages jsonb, budget integer, used integer, out messages jsonb, out used_after integer, out dropped integer) from public;
revoke execute on function hipocampo_private._pack_session(tenant uuid, user_id uuid, conversation_id uuid, session_id uuid, budget integer, used integer, out session_view jsonb, out used_after integer) from public;
revoke execute on function hipocampo_private._pack_window(tenant uuid, user_id uuid, conversation_id uuid, cp jsonb, budget integer, used integer, out policy text, out total integer, out window_n integer, out conv jsonb, out summary text, out used_after integer) from public;
grant execute on function hipocampo_private._candidate_support(candidates jsonb, query_text text, query_embedding extensions.vector, cfg jsonb, out scored jsonb, out babble uuid[]) to authenticated;
grant execute on function hipocampo_private._candidate_support(candidates jsonb, query_text text, query_embedding extensions.vector, cfg jsonb, out scored jsonb, out babble uuid[]) to service_role;
grant execute on function hipocampo_private._evidence_candidates(query_text text, query_embedding extensions.vector, kb_ids uuid[], top_k integer, tenant uuid, dedupe double precision) to authenticated;
grant execute on function hipocampo_private._evidence_candidates(query_text text, query_embedding extensions.vector, kb_ids uuid[], top_k integer, tenant uuid, dedupe double precision) to service_role;
grant execute on function hipocampo_private._evidence_verdict(n_candidates integer, evidence jsonb, conflicts jsonb, cfg jsonb, out reason text, out confidence double precision) to authenticated;
grant execute on function hipocampo_private._evidence_verdict(n_candidates integer, evidence jsonb, conflicts jsonb, cfg jsonb, out reason text, out confidence double precision) to service_role;
grant execute on function hipocampo_private._evidence_within_budget(scored jsonb, conflicts jsonb, babble uuid[], cfg jsonb) to authenticated;
grant execute on function hipocampo_private._evidence_within_budget(scored jsonb, conflicts jsonb, babble uuid[], cfg jsonb) to service_role;
grant execute on function hipocampo_private._pack_chunks(tenant uuid, user_id uuid, conversation_id uuid, query text, query_embedding extensions.vector, model text, kb_ids uuid[], agent text, window_n integer, budget integer, used integer, out rag_state jsonb, out chunks jsonb, out used_after integer, out dropped integer) to authenticated;
grant execute on function hipocampo_private._pack_chunks(tenant uuid, user_id uuid, conversation_id uuid, query text, query_embedding extensions.vector, model text, kb_ids uuid[], agent text, window_n integer, budget integer, used integer, out rag_state jsonb, out chunks jsonb, out used_after integer, out dropped integer) to service_role;
grant execute on function hipocampo_private._pack_messages(window_messages jsonb, budget integer, used integer, out messages jsonb, out used_after integer, out dropped integer) to authenticated;
grant execute on function hipocampo_private._pack_messages(window_messages jsonb, budget integer, used integer, out messages jsonb, out used_after integer, out dropped integer) to service_role;
grant execute on function hipocampo_private._pack_session(tenant uuid, user_id uuid, conversation_id uuid, session_id uuid, budget integer, used integer, out session_view jsonb, out used_after integer) to authenticated;
grant execute on function hipocampo_private._pack_session(tenant uuid, user_id uuid, conversation_id uuid, session_id uuid, budget integer, used integer, out session_view jsonb, out used_after integer) to service_role;
grant execute on function hipocampo_private._pack_window(tenant uuid, user_id uuid, conversation_id uuid, cp jsonb, budget integer, used integer, out policy text, out total integer, out window_n integer, out conv jsonb, out summary text, out used_after integer) to authenticated;
grant execute on function hipocampo_private._pack_window(tenant uuid, user_id uuid, conversation_id uuid, cp jsonb, budget integer, used integer, out policy text, out total integer, out window_n integer, out conv jsonb, out summary text, out used_after integer) to service_role;
