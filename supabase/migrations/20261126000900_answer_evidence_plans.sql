-- answer_evidence without three costs that had nothing to do with the answer (docs/BENCHMARKS.md
-- §answer_evidence (before / after, one run); FaQuAD 13.2 -> 5.2 ms at the median, same evidence):
-- - the token count of each candidate was joined from chunks, and the planner read every chunk
--   of the tenant through the RLS tenant index and hashed them (5,671 in the benchmark's tenant:
--   a cost that grew with the tenant); it is now a primary-key lookup per candidate;
-- - the near-duplicate lookup, a function scan inside a join, ran once per hit instead of once;
--   it is now a materialized CTE;
-- - the function keeps its statements' generic plans (plan_cache_mode force_generic_plan), as
--   hybrid_search does since migration 20261126000800.
-- _near_duplicates scans a small scope by a static statement (its plan cached) instead of a
-- dynamic one planned for every hit. Restated from supabase/schemas/05_hybrid_search.sql and
-- 10_answers.sql; re-runnable.
set local check_function_bodies = off;

/*
_near_duplicates(chunk_ids bigint[], kb_ids uuid[], tenant uuid, min_cosine double precision,
  per_chunk integer default 3) -> table (of_chunk_id bigint, chunk_id bigint, distance double precision)

Purpose: for each given chunk, its per_chunk nearest chunks of other documents in these knowledge
  bases of the tenant (same embedding model, not among chunk_ids) whose cosine similarity exceeds
  min_cosine. Nearest first, then the threshold (the same rows as filtering first: the order is by
  distance). Scopes above retrieval.exact_scan_max_rows use the model's partial HNSW index
  (vector_cosine_ops <-> <=>, typed cast, hnsw.iterative_scan relaxed_order); smaller ones are
  scanned exactly, from the covering index chunks_scope_vectors_idx when the model has at most
  640 dimensions.
Parameters: min_cosine in [-1, 1] (answer_evidence passes retrieval.dedupe_threshold); per_chunk >= 1.
Returns: of_chunk_id (the given chunk), chunk_id, distance (cosine distance, 1 - similarity).
Errors: none (chunks the caller cannot see are left out, RLS).
Example: select * from hipocampo_private._near_duplicates(array[12], array[kb], tenant, 0.97);
*/
create or replace function hipocampo_private._near_duplicates(
    chunk_ids bigint[], kb_ids uuid[], tenant uuid, min_cosine double precision, per_chunk integer default 3
)
returns table (of_chunk_id bigint, chunk_id bigint, distance double precision)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record;
    dims integer;
    scope_rows bigint;
    exact_max bigint := (hipocampo.effective_config(_near_duplicates.tenant) -> 'retrieval'
                         ->> 'exact_scan_max_rows')::bigint;
    cast_to text;
begin
    for c in
        select ch.id, ch.document_id, ch.embedding, ch.embedding_model
        from hipocampo_private.chunks as ch
        where ch.id = any(_near_duplicates.chunk_ids)
    loop
        select e.dims into dims from hipocampo_private.embedding_models as e where e.name = c.embedding_model;
        select coalesce(sum(st.chunk_count), 0) into scope_rows from hipocampo_private.kb_text_stats as st
        where st.kb_id = any(_near_duplicates.kb_ids) and st.embedding_model = c.embedding_model;
        if scope_rows <= exact_max and dims <= 640 then
            -- A small scope, a model of at most 640 dimensions: the exact scan from the covering
            -- index chunks_scope_vectors_idx (index-only; its predicate repeated), as a static
            -- statement, so its plan is cached (a dynamic one was planned for every hit).
            return query
            select c.id, y.id, y.distance from (
                select c2.id, c2.embedding operator(extensions.<=>) c.embedding as distance
                from hipocampo_private.chunks as c2
                where c2.tenant_id = _near_duplicates.tenant and c2.kb_id = any(_near_duplicates.kb_ids)
                  and c2.embedding_model = c.embedding_model and c2.document_id <> c.document_id
                  and c2.id <> all(_near_duplicates.chunk_ids) and extensions.vector_dims(c2.embedding) <= 640
                order by c2.embedding operator(extensions.<=>) c.embedding
                limit _near_duplicates.per_chunk
            ) as y
            where y.distance < 1 - _near_duplicates.min_cosine
            order by y.distance;
            continue;
        end if;
        -- A large scope: the model's HNSW index through the typed cast (dynamic: the cast names
        -- the dims). A wider model's small scope: the same statement without the cast, an exact
        -- scan of the heap.
        cast_to := '';
        if scope_rows > exact_max then
            cast_to := format('::extensions.vector(%s)', dims);
            perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
        end if;
        return query execute format(
            'select $1, y.id, y.distance from ('
            'select c2.id, c2.embedding%1$s operator(extensions.<=>) $2 as distance '
            'from hipocampo_private.chunks as c2 '
            'where c2.tenant_id = $3 and c2.kb_id = any($4) and c2.embedding_model = $5 '
            'and c2.document_id <> $6 and c2.id <> all($7) '
            'order by c2.embedding%1$s operator(extensions.<=>) $2 limit $8'
            ') as y where y.distance < 1 - $9 order by y.distance',
            cast_to
        )
        using c.id, c.embedding, _near_duplicates.tenant, _near_duplicates.kb_ids, c.embedding_model,
              c.document_id, _near_duplicates.chunk_ids, _near_duplicates.per_chunk, _near_duplicates.min_cosine;
    end loop;
end;
$$;

/*
answer_evidence(query_text text, query_embedding vector, kb_ids uuid[] default null,
  agent text default null, tenant_id uuid default null) -> jsonb

Purpose: everything an answer needs from the database in one call, with the rules of the rag
  config (rag_config): hybrid retrieval of rag.top_k chunks, plus up to 3 near-duplicates of each
  from other documents (retrieval drops those; two versions of a policy are such twins);
  support per chunk (evidence_support);
  evidence = chunks with support >= rag.min_score, in the order of the combined score, under
  rag.evidence_token_budget tokens (near-duplicates: _near_duplicates, HNSW on large scopes); conflicts (detect_conflicts): a resolved one drops the losing
  documents' chunks, an unresolved one refuses; confidence = the best support, refused below
  rag.min_confidence; cross-check: >= rag.cross_check_min_documents distinct documents with
  support >= rag.min_confidence, or one of rag.authoritative_source_types with trust >=
  rag.authoritative_trust.
Parameters: query_text 1..2,000 characters; query_embedding of the active model; kb_ids (default:
  the agent binding's); agent - binding name; tenant_id only for service_role.
Returns: {"decision": "answer" | "refuse", "reason": null | "rag_disabled" | "no_evidence" |
  "low_confidence" | "conflicting_sources" | "cross_check_failed", "confidence", "candidates",
  "filtered" (below min_score), "conflicts" (detect_conflicts), "evidence": [{"n", "chunk_id",
  "document_id", "kb_id", "title", "source_uri", "source_type", "trust_score", "published_at",
  "content", "best_window", "score", "dense_score", "lexical_score", "support", "token_count"}],
  "config": the rag config used}.
Errors: 22023 "no knowledge base: …" when neither kb_ids nor an agent names one; as hybrid_search
  (22023 query length, 22000 dimensions); 42501 no tenant; P0002 unknown agent binding.
Example: select hipocampo.answer_evidence('Qual o prazo?', '[…]'::extensions.vector, array[kb]);
*/
create or replace function hipocampo.answer_evidence(
    query_text text,
    query_embedding extensions.vector,
    kb_ids uuid[] default null,
    agent text default null,
    tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set plan_cache_mode = force_generic_plan
as $$
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
    top_k integer := (cfg ->> 'top_k')::integer;
    min_score double precision := (cfg ->> 'min_score')::double precision;
    min_confidence double precision := (cfg ->> 'min_confidence')::double precision;
    budget integer := (cfg ->> 'evidence_token_budget')::integer;
    dedupe double precision := (hipocampo.effective_config(t) -> 'retrieval' ->> 'dedupe_threshold')::double precision;
    candidates jsonb;
    evidence jsonb := '[]'::jsonb;
    conflicts jsonb := '[]'::jsonb;
    losers jsonb := '[]'::jsonb;
    item jsonb;
    used integer := 0;
    n_candidates integer;
    n_filtered integer;
    confidence double precision;
    agreeing integer;
    authoritative boolean;
    reason text;
begin
    if coalesce(cardinality(kbs), 0) = 0 then
        raise exception 'no knowledge base: pass kb_ids or an agent bound to knowledge bases'
            using errcode = '22023';
    end if;
    if not coalesce((cfg ->> 'enabled')::boolean, true) then
        return jsonb_build_object('decision', 'refuse', 'reason', 'rag_disabled', 'confidence', 0,
            'candidates', 0, 'filtered', 0, 'conflicts', '[]'::jsonb, 'evidence', '[]'::jsonb, 'config', cfg);
    end if;

    select coalesce(jsonb_agg(to_jsonb(h) order by h.rank), '[]'::jsonb) into candidates
    from hipocampo.hybrid_search(
        query_text => answer_evidence.query_text,
        query_embedding => answer_evidence.query_embedding,
        kb_ids => kbs,
        match_count => top_k,
        tenant_id => t
    ) as h;
    -- Near-duplicates of the hits (cosine above retrieval.dedupe_threshold, other active
    -- documents) re-enter as candidates with their twin's scores: retrieval drops them as
    -- duplicates, but two versions of a policy that differ in one number are exactly the
    -- conflicts to see (and the newer version may be the twin that was dropped). The lookup runs
    -- once, materialized: as a function scan inside the join it ran again for every hit.
    with nd as materialized (
        select n.of_chunk_id, n.chunk_id, n.distance
        from hipocampo_private._near_duplicates(
            array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as e), kbs, t, dedupe, 3
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
    -- token_count by primary key per candidate (a scalar subquery): as a join the planner read
    -- every chunk of the tenant (RLS's tenant index) and hashed them.
    select coalesce(jsonb_agg(e || jsonb_build_object(
               'support', coalesce(s.support, 0), 'best_window', s.best_window,
               'token_count', (
                   select ch.token_count from hipocampo_private.chunks as ch
                   where ch.id = (e ->> 'chunk_id')::bigint
               )
           ) order by (e ->> 'rank')::integer, e ->> 'near_duplicate_of' nulls first), '[]'::jsonb)
    into candidates
    from jsonb_array_elements(candidates) as e
    left join hipocampo.evidence_support(
        answer_evidence.query_text,
        array(select (x ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as x),
        cfg -> 'question_stopwords'
    ) as s on s.chunk_id = (e ->> 'chunk_id')::bigint;

    n_candidates := jsonb_array_length(candidates);
    select count(*) into n_filtered from jsonb_array_elements(candidates) as e
    where coalesce((e ->> 'support')::double precision, 0) < min_score;

    conflicts := hipocampo.detect_conflicts(
        answer_evidence.query_text,
        array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as e
              where coalesce((e ->> 'support')::double precision, 0) >= min_score),
        (cfg ->> 'conflict_trust_margin')::double precision,
        cfg -> 'question_stopwords',
        (cfg ->> 'conflict_subject_overlap')::double precision
    );
    -- Resolved conflicts: the losing documents' chunks leave the evidence.
    select coalesce(jsonb_agg(distinct d), '[]'::jsonb) into losers
    from jsonb_array_elements(conflicts) as k, jsonb_array_elements(k -> 'document_ids') as d
    where (k ->> 'resolved')::boolean and d <> k -> 'winner_document_id';

    for item in
        select e from jsonb_array_elements(candidates) as e
        where coalesce((e ->> 'support')::double precision, 0) >= min_score
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
            -- A single chunk over the budget is cut to it (4 characters per token).
            'content', case when used > budget then left(item ->> 'content', budget * 4) else item ->> 'content' end,
            'best_window', item -> 'best_window', 'score', item -> 'final_score',
            'dense_score', item -> 'dense_score', 'lexical_score', item -> 'lexical_score',
            'support', item -> 'support', 'token_count', least((item ->> 'token_count')::integer, budget)
        ));
    end loop;

    select max((e ->> 'support')::double precision) into confidence from jsonb_array_elements(evidence) as e;
    select count(distinct e ->> 'document_id') filter (
               where (e ->> 'support')::double precision >= min_confidence
           ),
           coalesce(bool_or(
               (e ->> 'support')::double precision >= min_confidence
               and (cfg -> 'authoritative_source_types') ? (e ->> 'source_type')
               and (e ->> 'trust_score')::double precision >= (cfg ->> 'authoritative_trust')::double precision
           ), false)
    into agreeing, authoritative
    from jsonb_array_elements(evidence) as e;

    reason := case
        when jsonb_array_length(evidence) = 0 then 'no_evidence'
        when exists (select 1 from jsonb_array_elements(conflicts) as k where not (k ->> 'resolved')::boolean)
            then 'conflicting_sources'
        when coalesce(confidence, 0) < min_confidence then 'low_confidence'
        when agreeing < (cfg ->> 'cross_check_min_documents')::integer and not authoritative
            then 'cross_check_failed'
    end;
    return jsonb_build_object(
        'decision', case when reason is null then 'answer' else 'refuse' end,
        'reason', reason,
        'confidence', coalesce(confidence, 0),
        'candidates', n_candidates,
        'filtered', n_filtered,
        'conflicts', conflicts,
        'evidence', evidence,
        'config', cfg
    );
end;
$$;
