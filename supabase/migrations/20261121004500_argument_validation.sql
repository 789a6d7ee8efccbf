-- Arguments are checked up front (issue 16 §1.9, §2 "Validation"): the fuzzer
-- (tests/sql/test_fuzz_rpcs.py) found raw engine errors where a documented SQLSTATE naming the
-- argument belongs:
-- - search_memories / search_history: match_count -1 gave 2201W (negative LIMIT) and -2^31 22003;
--   now 22023 "match_count must be 1..100", hybrid_search's range;
-- - add_message (and session_add_message through it): a null conversation_id, role or content
--   gave 23502 from the table; now 22023 naming it, and content over 100,000 characters 22001
--   (the table's check said 23514);
-- - ingest_document: a source_uri over ~2.7 KB gave 54000 from the btree; now 22001 over 2,048
--   bytes (documented limit), a title over 500 characters 22001 (was 23514), a null
--   embedding_model 22023. The document's title and source_uri are scrubbed before the lookup,
--   so a client that sends them raw finds the document the trigger stored scrubbed (before, a
--   second ingest of a raw URI with PII missed it and hit the unique index).
-- - hybrid_search: match_count -2^31 gave 22003 (the candidate count was computed before the range
--   check); now 22023 like every other out-of-range count;
-- - ingest_document: a trust_score such as 1e300 gave 22003 from the cast to real; now 22023
--   "invalid document field" like the other unparsable fields.
-- - hybrid_search: dense_weight / lexical_weight of 1e308 overflowed (22003); now 0..100 (22023);
-- - remember: intensity outside 0..10 overflowed numeric(3, 1) (22003) and a confidence of 1e308
--   the cast to real; both are checked in the wrapper now (22023).
-- remember's null key / scope / source were done in 004100.

/*
remember(key, value, description, category, embedding, scope, confidence, source, source_ref,
  conversation_id, tags, emotion, intensity, life_domain, pinned, token_count, expires_at,
  user_id, tenant_id) -> jsonb

Purpose, parameters, returns: as in migration 001200 (the gate: _remember, 004100).
Errors: as in 001200 and 004100, and 22023 "confidence must be 0..1 (got x)", "intensity must be
  0..10 (got x)", "token_count must be >= 0 (got n)", raised before the gate.
*/
create or replace function hipocampo.remember(
    key text,
    value jsonb,
    description text,
    category text,
    embedding extensions.vector default null,
    scope text default 'personal',
    confidence double precision default 0.9,
    source text default 'explicit_user',
    source_ref text default null,
    conversation_id uuid default null,
    tags text[] default null,
    emotion text default null,
    intensity numeric default null,
    life_domain text default null,
    pinned boolean default false,
    token_count integer default null,
    expires_at timestamptz default null,
    user_id uuid default null,
    tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if remember.confidence is null or not (remember.confidence between 0 and 1) then
        raise exception 'confidence must be 0..1 (got %)', remember.confidence using errcode = '22023';
    end if;
    if remember.intensity is not null and not (remember.intensity between 0 and 10) then
        raise exception 'intensity must be 0..10 (got %)', remember.intensity using errcode = '22023';
    end if;
    if remember.token_count < 0 then
        raise exception 'token_count must be >= 0 (got %)', remember.token_count using errcode = '22023';
    end if;
    return hipocampo_private._remember(
        remember.key, remember.value, remember.description, remember.category, remember.embedding,
        remember.scope, remember.confidence, remember.source, remember.source_ref, remember.conversation_id,
        remember.tags, remember.emotion, remember.intensity, remember.life_domain, remember.pinned,
        remember.token_count, remember.expires_at, remember.user_id, remember.tenant_id, 'auto'
    );
end;
$$;

/*
hybrid_search(...) -> table

Purpose, parameters, returns, errors: as in migration 002900 (000900's contract). 004500 moves
  the candidate count after the match_count range check, and bounds dense_weight and
  lexical_weight to 0..100 (22023; 1e308 overflowed the fused score with 22003).
*/
create or replace function hipocampo.hybrid_search(
    query_text text,
    query_embedding extensions.vector,
    kb_ids uuid[] default null,
    source_types text[] default null,
    metadata_filter jsonb default null,
    match_count integer default null,
    min_similarity double precision default null,
    fusion text default null,
    dense_weight double precision default null,
    lexical_weight double precision default null,
    rerank text default null,
    mmr_lambda double precision default null,
    embedding_model text default null,
    tenant_id uuid default null
)
returns table (
    chunk_id bigint,
    document_id uuid,
    kb_id uuid,
    chunk_index integer,
    content text,
    metadata jsonb,
    title text,
    source_uri text,
    source_type text,
    author text,
    published_at timestamptz,
    trust_score real,
    dense_score double precision,
    lexical_score double precision,
    fused_score double precision,
    final_score double precision,
    rank integer
)
language plpgsql
security invoker
set search_path = ''
as $$
declare
    started timestamptz := clock_timestamp();
    t uuid := hipocampo_private._resolve_tenant(hybrid_search.tenant_id);
    cfg jsonb;
    r jsonb;
    model text;
    dims integer;
    scope uuid [];
    scope_rows bigint;
    k integer;
    n_cand integer;
    min_sim double precision;
    fuse text;
    w_dense double precision;
    w_lex double precision;
    rrf_k double precision;
    rr text;
    lambda double precision;
    dup double precision;
    k1 double precision;
    b double precision;
    half_life double precision;
    exact_max bigint;
    dense_sql text;
    d_ids bigint [];
    d_sims double precision [];
    t_kb uuid [];
    t_lex text [];
    t_idf double precision [];
    t_avg double precision [];
    s_ids bigint [];
    s_scores double precision [];
    l_ids bigint [];
    l_scores double precision [];
    lim integer;
    f_ids bigint [];
    f_sim double precision [];
    f_score double precision [];
    f_fused double precision [];
    f_final double precision [];
    f_emb extensions.vector [];
    c_rel double precision [];
    sel_pos integer [] := '{}';
    n integer;
    s double precision;
    i integer;
    pass integer;
    above bigint;
begin
    if query_text is null or btrim(query_text) = '' then
        raise exception 'query_text must be 1..2000 characters (got an empty query)'
            using errcode = '22023';
    end if;
    if query_embedding is null then
        raise exception 'query_embedding is required' using errcode = '22023';
    end if;

    -- The model and the scope.
    if hybrid_search.embedding_model is null then
        select e.name, e.dims into model, dims from hipocampo_private.embedding_models as e
        where e.active;
    else
        select e.name, e.dims into model, dims from hipocampo_private.embedding_models as e
        where e.name = hybrid_search.embedding_model;
    end if;
    if model is null then
        raise exception 'unknown embedding model: %',
            coalesce(hybrid_search.embedding_model, '(no active model)') using errcode = 'P0002';
    end if;
    if extensions.vector_dims(query_embedding) <> dims then
        raise exception 'query_embedding has % dimensions; model % expects %',
            extensions.vector_dims(query_embedding), model, dims using errcode = '22000';
    end if;

    select array_agg(kb.id) into scope from hipocampo_private.knowledge_bases as kb
    where kb.tenant_id = t and (hybrid_search.kb_ids is null or kb.id = any(hybrid_search.kb_ids));
    if hybrid_search.kb_ids is not null
        and coalesce(cardinality(scope), 0) < cardinality(array(select distinct unnest(hybrid_search.kb_ids))) then
        raise exception 'unknown knowledge base: %',
            (select string_agg(x::text, ', ') from unnest(hybrid_search.kb_ids) as x
             where x <> all(coalesce(scope, '{}'))) using errcode = 'P0002';
    end if;
    scope := coalesce(scope, '{}');

    -- Parameters: argument, else KB override (single KB), else tenant row, else global row
    -- (seeded from config.toml: no values of its own here).
    cfg := hipocampo.effective_config(
        t, case when cardinality(scope) = 1 then scope[1] end
    );
    r := coalesce(cfg -> 'retrieval', '{}'::jsonb);
    if exists (
        select 1 from unnest(array[
            'max_query_chars', 'match_count', 'min_similarity', 'fusion', 'dense_weight',
            'lexical_weight', 'rrf_k', 'rerank', 'mmr_lambda', 'dedupe_threshold', 'bm25_k1', 'bm25_b',
            'freshness_half_life_days', 'exact_scan_max_rows', 'candidate_multiplier', 'min_candidates',
            'hnsw_ef_search'
        ]) as key
        where r -> key is null or r -> key = 'null'::jsonb
    ) then
        raise exception 'retrieval config is incomplete: seed it from config.toml (hipocampo db migrate)'
            using errcode = '55000';
    end if;
    if char_length(query_text) > (r ->> 'max_query_chars')::integer then
        raise exception 'query_text must be 1..% characters (got %)',
            (r ->> 'max_query_chars')::integer, char_length(query_text)
            using errcode = '22023';
    end if;
    k := coalesce(hybrid_search.match_count, (r ->> 'match_count')::integer);
    min_sim := coalesce(hybrid_search.min_similarity, (r ->> 'min_similarity')::double precision);
    fuse := coalesce(hybrid_search.fusion, r ->> 'fusion');
    w_dense := coalesce(hybrid_search.dense_weight, (r ->> 'dense_weight')::double precision);
    w_lex := coalesce(hybrid_search.lexical_weight, (r ->> 'lexical_weight')::double precision);
    rrf_k := (r ->> 'rrf_k')::double precision;
    rr := coalesce(hybrid_search.rerank, r ->> 'rerank');
    lambda := coalesce(hybrid_search.mmr_lambda, (r ->> 'mmr_lambda')::double precision);
    dup := (r ->> 'dedupe_threshold')::double precision;
    k1 := (r ->> 'bm25_k1')::double precision;
    b := (r ->> 'bm25_b')::double precision;
    half_life := (r ->> 'freshness_half_life_days')::double precision;
    exact_max := (r ->> 'exact_scan_max_rows')::bigint;

    if k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    -- After the range check: k * candidate_multiplier overflowed integer for k = -2^31 (22003).
    n_cand := greatest(k * (r ->> 'candidate_multiplier')::integer, (r ->> 'min_candidates')::integer);
    if min_sim < -1 or min_sim > 1 then
        raise exception 'min_similarity must be -1..1 (got %)', min_sim using errcode = '22023';
    end if;
    if lambda < 0 or lambda > 1 then
        raise exception 'mmr_lambda must be 0..1 (got %)', lambda using errcode = '22023';
    end if;
    if w_dense < 0 or w_lex < 0 or w_dense + w_lex = 0 or w_dense > 100 or w_lex > 100 then
        raise exception 'dense_weight and lexical_weight must be 0..100, not both 0'
            using errcode = '22023';
    end if;
    if fuse not in ('score', 'rrf') then
        raise exception 'fusion must be score or rrf (got %)', fuse using errcode = '22023';
    end if;
    if rr not in ('none', 'trust_recency') then
        raise exception 'rerank must be none or trust_recency (got %)', rr using errcode = '22023';
    end if;

    -- Dense leg. Large scopes: the typed cast matches the model's partial HNSW index
    -- (vector_cosine_ops <-> <=>), with pgvector's iterative scan so filters still leave n_cand
    -- rows. Small scopes are scanned exactly, uncast ("+ 0" keeps the planner off the index).
    select coalesce(sum(st.chunk_count), 0) into scope_rows from hipocampo_private.kb_text_stats as st
    where st.kb_id = any(scope) and st.embedding_model = model;
    if scope_rows > exact_max then
        perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
        perform set_config('hnsw.ef_search',
            greatest((r ->> 'hnsw_ef_search')::integer, n_cand)::text, true);
    end if;
    -- Nearest chunks first (chunk-level filters only), then document filters on those: the
    -- best 4 * n_cand first, every chunk of the scope only when that leaves fewer than n_cand.
    dense_sql := format(
        'with nn as ('
        'select c.id, c.document_id, 1 - (c.embedding%1$s operator(extensions.<=>) $1) as sim '
        'from hipocampo_private.chunks as c '
        'where c.tenant_id = $2 and c.kb_id = any($3) and c.embedding_model = $4 '
        'and ($6::jsonb is null or c.metadata @> $6) '
        'and (c.expires_at is null or c.expires_at > now()) '
        'order by (c.embedding%1$s operator(extensions.<=>) $1)%2$s '
        'limit $9), '
        'ok as (select nn.id, nn.sim from nn '
        'join hipocampo_private.documents as d on d.id = nn.document_id '
        'where d.status = ''active'' and ($5::text[] is null or d.source_type = any($5)) '
        'and nn.sim >= $8 order by nn.sim desc, nn.id limit $7) '
        'select coalesce(array_agg(ok.id order by ok.sim desc, ok.id), ''{}''), '
        'coalesce(array_agg(ok.sim order by ok.sim desc, ok.id), ''{}''), '
        '(select count(*) from nn where nn.sim >= $8) from ok',
        case when scope_rows > exact_max then format('::extensions.vector(%s)', dims) else '' end,
        case when scope_rows > exact_max then '' else ' + 0' end
    );
    for pass in 1..2 loop
        lim := case when pass = 1 then n_cand * 4 else scope_rows + 1 end;
        execute dense_sql
        into d_ids, d_sims, above
        using query_embedding, t, scope, model, hybrid_search.source_types,
              hybrid_search.metadata_filter, n_cand, min_sim, lim;
        -- Again without the limit only when document filters dropped candidates we need.
        exit when cardinality(d_ids) >= n_cand or lim > scope_rows or above <= cardinality(d_ids);
    end loop;

    -- Lexical leg: Okapi BM25 with OR semantics over the query's stemmed, unaccented lexemes
    -- (the KB's language), read from the inverted index kb_postings: one primary-key range per
    -- term, then arithmetic. idf and the average length come from the per-KB statistics.
    select
        coalesce(array_agg(q.kb_id), '{}'),
        coalesce(array_agg(q.lexeme), '{}'),
        coalesce(array_agg(ln(1 + (st.chunk_count - ts.doc_freq + 0.5) / (ts.doc_freq + 0.5))), '{}'),
        coalesce(array_agg(st.token_total::double precision / greatest(st.chunk_count, 1)), '{}')
    into t_kb, t_lex, t_idf, t_avg
    from (
        select distinct kb.id as kb_id, u.lexeme
        from hipocampo_private.knowledge_bases as kb
        cross join lateral pg_catalog.unnest(
            pg_catalog.to_tsvector(hipocampo_private.text_search_config(kb.language), query_text)
        ) as u
        where kb.id = any(scope)
    ) as q
    inner join hipocampo_private.kb_term_stats as ts
        on ts.kb_id = q.kb_id and ts.embedding_model = model and ts.lexeme = q.lexeme
    inner join hipocampo_private.kb_text_stats as st
        on st.kb_id = q.kb_id and st.embedding_model = model
    where ts.doc_freq > 0;

    select
        coalesce(array_agg(x.chunk_id order by x.score desc, x.chunk_id), '{}'),
        coalesce(array_agg(x.score order by x.score desc, x.chunk_id), '{}')
    into s_ids, s_scores
    from (
        select p.chunk_id,
            sum(tm.idf * p.tf * (k1 + 1) / (p.tf + k1 * (1 - b + b * p.chunk_length / tm.avg_len))) as score
        from unnest(t_kb, t_lex, t_idf, t_avg) as tm (kb_id, lexeme, idf, avg_len)
        -- One primary-key range per term: "offset 0" keeps the planner from flattening the
        -- lateral subquery into a join it may run as a scan of all the tenant's postings.
        cross join lateral (
            select ps.chunk_id, ps.tf, ps.chunk_length
            from hipocampo_private.kb_postings as ps
            where ps.tenant_id = t and ps.kb_id = tm.kb_id and ps.lexeme = tm.lexeme
            offset 0
        ) as p
        group by p.chunk_id
    ) as x;

    -- Filters (model, status, expiry, source type, metadata) are checked on the best 4 * n_cand
    -- first; only when they leave fewer than n_cand is every scored chunk checked.
    for pass in 1..2 loop
        lim := case when pass = 1 then n_cand * 4 else cardinality(s_ids) end;
        select coalesce(array_agg(f.id order by f.ord), '{}'), coalesce(array_agg(f.score order by f.ord), '{}')
        into l_ids, l_scores
        from (
            select u.id, u.score, u.ord
            from unnest(s_ids[1:lim], s_scores[1:lim]) with ordinality as u (id, score, ord)
            inner join hipocampo_private.chunks as c on c.id = u.id
            inner join hipocampo_private.documents as d on d.id = c.document_id
            where c.embedding_model = model
              and (hybrid_search.source_types is null or d.source_type = any(hybrid_search.source_types))
              and (hybrid_search.metadata_filter is null or c.metadata @> hybrid_search.metadata_filter)
              and d.status = 'active'
              and (c.expires_at is null or c.expires_at > now())
            order by u.ord
            limit n_cand
        ) as f;
        exit when cardinality(l_ids) >= n_cand or cardinality(s_ids) <= n_cand * 4;
    end loop;

    -- Complete the scores: every candidate gets both signals (cosine for lexical-only hits,
    -- BM25 for dense-only hits), so the fusion compares like with like.
    select
        d_ids || coalesce(array_agg(c.id), '{}'),
        d_sims || coalesce(array_agg(1 - (c.embedding operator(extensions.<=>) query_embedding)), '{}')
    into d_ids, d_sims
    from hipocampo_private.chunks as c
    where c.id = any(l_ids) and not c.id = any(d_ids)
      and 1 - (c.embedding operator(extensions.<=>) query_embedding) >= min_sim;
    select l_ids || coalesce(array_agg(x.id), '{}'), l_scores || coalesce(array_agg(x.score), '{}')
    into l_ids, l_scores
    from (
        select c.id, coalesce(sum(
            tm.idf * p.tf * (k1 + 1) / (p.tf + k1 * (1 - b + b * p.chunk_length / tm.avg_len))
        ), 0) as score
        from hipocampo_private.chunks as c
        left join unnest(t_kb, t_lex, t_idf, t_avg) as tm (kb_id, lexeme, idf, avg_len)
            on tm.kb_id = c.kb_id
        -- One primary-key lookup per (chunk, term), as in the lexical leg.
        left join lateral (
            select ps.tf, ps.chunk_length
            from hipocampo_private.kb_postings as ps
            where ps.tenant_id = t and ps.kb_id = c.kb_id and ps.lexeme = tm.lexeme and ps.chunk_id = c.id
            offset 0
        ) as p on true
        where c.id = any(d_ids) and not c.id = any(l_ids)
        group by c.id
    ) as x;

    -- Fusion over the union of both legs, then rerank; ranked candidates into arrays.
    with dense as (
        select u.id, u.sim,
            row_number() over (order by u.sim desc, u.id) as rk,
            (u.sim - avg(u.sim) over ()) / nullif(stddev_pop(u.sim) over (), 0) as z
        from unnest(d_ids, d_sims) as u (id, sim)
    ),
    lex as (
        select u.id, u.score,
            row_number() over (order by u.score desc, u.id) as rk,
            (u.score - avg(u.score) over ()) / nullif(stddev_pop(u.score) over (), 0) as z
        from unnest(l_ids, l_scores) as u (id, score)
    ),
    joined as (
        select coalesce(dense.id, lex.id) as id, dense.sim, lex.score,
            case fuse
                when 'rrf' then
                    w_dense * coalesce(1.0 / (rrf_k + dense.rk), 0)
                    + w_lex * coalesce(1.0 / (rrf_k + lex.rk), 0)
                else
                    w_dense * coalesce(dense.z, (select min(dz.z) from dense as dz), 0)
                    + w_lex * coalesce(lex.z, (select min(lz.z) from lex as lz), 0)
            end as fused
        from dense full outer join lex on lex.id = dense.id
    ),
    scored as (
        select j.*, c.embedding, d.trust_score, d.published_at, c.created_at,
            (j.fused - min(j.fused) over ()) / nullif(max(j.fused) over () - min(j.fused) over (), 0)
                as fused_unit
        from joined as j
        inner join hipocampo_private.chunks as c on c.id = j.id
        inner join hipocampo_private.documents as d on d.id = c.document_id
    ),
    ranked as (
        select s2.*,
            case rr
                when 'trust_recency' then
                    coalesce(s2.fused_unit, 1) * 0.6 + s2.trust_score * 0.4
                    + 0.2 * exp(
                        -greatest(extract(epoch from now() - coalesce(s2.published_at, s2.created_at)), 0)
                        / 86400.0 / half_life
                    )
                else s2.fused
            end as final
        from scored as s2
    )
    select
        array_agg(x.id order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.sim order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.score order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.fused order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.final order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.embedding order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id)
    into f_ids, f_sim, f_score, f_fused, f_final, f_emb
    from ranked as x;

    -- MMR (lambda) with near-duplicate removal (cosine > dedupe_threshold), over positions;
    -- relevance on a 0..1 scale for the trade-off.
    if f_ids is not null then
        n := cardinality(f_ids);
        c_rel := f_final;
        s := f_final[1] - f_final[n];
        for i in 1..n loop
            c_rel[i] := case when s > 0 then (f_final[i] - f_final[n]) / s else 1 end;
        end loop;
        sel_pos := hipocampo_private._mmr(f_emb, c_rel, k, lambda, dup);
    end if;

    return query
    select c.id, c.document_id, c.kb_id, c.chunk_index, c.content, c.metadata,
        d.title, d.source_uri, d.source_type, d.author, d.published_at, d.trust_score,
        f_sim[o.pos], f_score[o.pos], f_fused[o.pos], f_final[o.pos], o.ord::integer
    from unnest(sel_pos) with ordinality as o (pos, ord)
    inner join hipocampo_private.chunks as c on c.id = f_ids[o.pos]
    inner join hipocampo_private.documents as d on d.id = c.document_id
    order by o.ord;

    perform hipocampo_private._touch_chunks(
        array(select f_ids[x] from unnest(sel_pos) as x), t
    );
    perform hipocampo_private._log_access(
        t, 'hybrid_search', cardinality(sel_pos),
        encode(sha256(convert_to(query_text, 'UTF8')), 'hex'),
        extract(epoch from clock_timestamp() - started) * 1000
    );
end;
$$;

/*
search_memories(...) -> table

Purpose, parameters, returns: as in migration 003100 (001200's contract). 004500: match_count is
  1..100 (22023 otherwise; null means memory.match_count).
Errors: as in 003100, and 22023 "match_count must be 1..100 (got n)".
*/
create or replace function hipocampo.search_memories(
    query_embedding extensions.vector,
    mode text default 'context',
    match_count integer default null,
    filter_tags text[] default null,
    filter_emotion text default null,
    filter_life_domain text default null,
    filter_category text default null,
    filter_scope text default null,
    min_score double precision default null,
    include_staging boolean default true
)
returns table (
    memory_id uuid, key text, value jsonb, description text, category text, scope text,
    tags text[], pinned boolean, confidence real, similarity double precision,
    score double precision, rank integer, fallback text, tier text
)
language plpgsql
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(null);
    me uuid := (select auth.uid());
    cfg jsonb := hipocampo_private._memory_config(hipocampo.effective_config(t) -> 'memory');
    threshold double precision;
    bonus double precision := (cfg ->> 'pinned_bonus')::double precision;
    lambda double precision := (cfg ->> 'mmr_lambda')::double precision;
    dup double precision := (cfg ->> 'duplicate_cosine')::double precision;
    k integer := coalesce(search_memories.match_count, (cfg ->> 'match_count')::integer);
    model text;
    use_tags text [] := search_memories.filter_tags;
    why text;
    ids uuid [];
    tiers text [];
    sims double precision [];
    scores double precision [];
    embs extensions.vector [];
    sel integer [] := '{}';
begin
    if k is null or k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    if mode is null or mode not in ('context', 'answer') then
        raise exception 'mode must be context or answer (got %)', mode using errcode = '22023';
    end if;
    threshold := coalesce(min_score, case mode
        when 'answer' then (cfg ->> 'answer_threshold')::double precision
        else (cfg ->> 'context_threshold')::double precision end);
    model := hipocampo_private._active_model(query_embedding, 'query_embedding');
    if use_tags is not null and cardinality(use_tags) = 0 then
        why := 'empty_tags';
        use_tags := null;
    elsif use_tags is not null and not exists (
        select 1 from hipocampo_private.memories as m
        where m.tenant_id = t and m.status = 'active' and m.tags && use_tags
          and (me is null or m.user_id = me or m.scope = 'tenant_shared')
        union all
        select 1 from hipocampo_private.memory_staging as s
        where include_staging and s.tenant_id = t and s.tags && use_tags
          and (me is null or s.user_id = me or s.scope = 'tenant_shared')
    ) then
        why := 'no_memory_with_tags';
        use_tags := null;
    end if;

    select array_agg(x.id order by x.score desc, x.id), array_agg(x.tier order by x.score desc, x.id),
        array_agg(x.sim order by x.score desc, x.id), array_agg(x.score order by x.score desc, x.id),
        array_agg(x.embedding order by x.score desc, x.id)
    into ids, tiers, sims, scores, embs
    from (
        select u.id, u.tier, u.embedding, 1 - (u.embedding operator(extensions.<=>) query_embedding) as sim,
            1 - (u.embedding operator(extensions.<=>) query_embedding)
            + case when u.pinned then bonus else 0 end as score
        from (
            select m.id, 'long_term' as tier, m.embedding, m.pinned, m.user_id, m.scope, m.tags, m.emotion,
                m.life_domain, m.category, m.embedding_model
            from hipocampo_private.memories as m
            where m.tenant_id = t and m.status = 'active'
            union all
            select s.id, 'staging', s.embedding, s.pinned, s.user_id, s.scope, s.tags, s.emotion,
                s.life_domain, s.category, s.embedding_model
            from hipocampo_private.memory_staging as s
            where include_staging and s.tenant_id = t
        ) as u
        where u.embedding_model = model
          and (me is null or u.user_id = me or u.scope = 'tenant_shared')
          and (use_tags is null or u.tags && use_tags)
          and (search_memories.filter_emotion is null or u.emotion = search_memories.filter_emotion)
          and (search_memories.filter_life_domain is null or u.life_domain = search_memories.filter_life_domain)
          and (search_memories.filter_category is null or u.category = search_memories.filter_category)
          and (search_memories.filter_scope is null or u.scope = search_memories.filter_scope)
        order by score desc, u.id
        limit k * 8
    ) as x
    where x.score >= threshold;

    if ids is not null then
        -- MMR on the scores, near-duplicates dropped (shared with hybrid_search).
        sel := hipocampo_private._mmr(embs, scores, k, lambda, dup);
    end if;

    return query
    select u.id, u.key, u.value, u.description, u.category, u.scope, u.tags, u.pinned, u.confidence,
        sims[o.pos], scores[o.pos], o.ord::integer, why, tiers[o.pos]
    from unnest(sel) with ordinality as o (pos, ord)
    inner join (
        select m.id, m.key, m.value, m.description, m.category, m.scope, m.tags, m.pinned, m.confidence
        from hipocampo_private.memories as m where m.tenant_id = t
        union all
        select s.id, s.key, s.value, s.description, s.category, s.scope, s.tags, s.pinned, s.confidence
        from hipocampo_private.memory_staging as s where s.tenant_id = t
    ) as u on u.id = ids[o.pos]
    order by o.ord;
    if cardinality(sel) = 0 and why is not null then
        -- Still say that the tag filter was dropped, with no rows to carry it.
        return query select null::uuid, null::text, null::jsonb, null::text, null::text, null::text,
            null::text [], null::boolean, null::real, null::double precision, null::double precision,
            0, why, null::text;
    end if;
    perform hipocampo_private._touch_memories(array(select ids[x] from unnest(sel) as x), t);
end;
$$;

/*
search_history(...) -> table

Purpose, parameters, returns: as in migration 003500. 004500: match_count is 1..100 (22023
  otherwise; null means conversations.match_count).
Errors: as in 003500, and 22023 "match_count must be 1..100 (got n)".
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
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(search_history.user_id, search_history.tenant_id);
    cfg jsonb := hipocampo.effective_config(a.actor_tenant) -> 'conversations';
    k integer := coalesce(search_history.match_count, (cfg ->> 'match_count')::integer);
    k1 double precision := (cfg ->> 'bm25_k1')::double precision;
    b double precision := (cfg ->> 'bm25_b')::double precision;
    wd double precision := (cfg ->> 'dense_weight')::double precision;
    wl double precision := (cfg ->> 'lexical_weight')::double precision;
    w_date double precision := (cfg ->> 'date_weight')::double precision;
    tz text := cfg ->> 'time_zone';
    w_before jsonb := cfg -> 'context_weights_before';
    w_after jsonb := cfg -> 'context_weights_after';
    w_token double precision := (cfg ->> 'token_rerank_weight')::double precision;
    n_candidates integer := (cfg ->> 'token_rerank_candidates')::integer;
    n_idf integer := (cfg ->> 'token_idf_sample')::integer;
    rerank boolean;
    ts regconfig;
    model text;
    lexemes text [];
    q tsquery;
    side record;
    -- Context weights by distance (1..5), 0 beyond the configured ones, and as vectors for the
    -- dense leg (pgvector multiplies element-wise).
    wb double precision [];
    wa double precision [];
    vb extensions.vector [];
    va extensions.vector [];
begin
    if k is null or k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    if query_text is null or btrim(query_text) = '' or char_length(query_text) > 2000 then
        raise exception 'query_text must have 1..2000 characters' using errcode = '22023';
    end if;
    if k is null or k1 is null or b is null or wd is null or wl is null or w_date is null
        or tz is null or w_before is null or w_after is null or w_token is null or n_candidates is null
        or n_idf is null then
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
    rerank := w_token > 0 and query_embedding is not null and cardinality(query_token_bits) > 0;
    wb := array(select coalesce((w_before ->> d)::double precision, 0) from generate_series(0, 4) as d);
    wa := array(select coalesce((w_after ->> d)::double precision, 0) from generate_series(0, 4) as d);
    if query_embedding is not null then
        vb := array(
            select array_fill(w::real, array[extensions.vector_dims(query_embedding)])::extensions.vector
            from unnest(wb) as w
        );
        va := array(
            select array_fill(w::real, array[extensions.vector_dims(query_embedding)])::extensions.vector
            from unnest(wa) as w
        );
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

    return query
    with offsets as (
        -- A message's context: itself (offset 0, weight 1) and its neighbours by position.
        select 0 as o, 1.0::double precision as w
        union all
        select -e.i::integer, (e.w #>> '{}')::double precision
        from jsonb_array_elements(w_before) with ordinality as e (w, i)
        union all
        select e.i::integer, (e.w #>> '{}')::double precision
        from jsonb_array_elements(w_after) with ordinality as e (w, i)
    ),
    day_terms as materialized (
        -- Date words, once per local day and language.
        select d.day, d.ts_config, u.lexeme
        from (
            select distinct (m.created_at at time zone tz)::date as day, m.ts_config
            from hipocampo_private.messages as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
              and (search_history.filter_conversation_id is null
                  or m.conversation_id = search_history.filter_conversation_id)
        ) as d
        cross join lateral unnest(to_tsvector(d.ts_config, hipocampo_private._date_words(d.day, d.ts_config))) as u
    ),
    day_len as materialized (
        -- Weighted date-word count per local day and language, as one object read by key (a
        -- lookup per message, whatever the row estimates).
        select coalesce(jsonb_object_agg(x.day::text || ' ' || x.ts_config::text, x.n), '{}'::jsonb) as by_day
        from (
            select dt.day, dt.ts_config, count(*) * w_date as n from day_terms as dt group by dt.day, dt.ts_config
        ) as x
    ),
    own as materialized (
        -- Each searched message without its embedding: text, length with date words.
        select m.id, m.conversation_id, m.created_at, m.modality, m.fts, m.ts_config, m.token_ids,
            (m.created_at at time zone tz)::date as day,
            m.fts_length + coalesce(
                (dl.by_day ->> (((m.created_at at time zone tz)::date)::text || ' ' || m.ts_config::text))::double precision, 0
            ) as len
        from hipocampo_private.messages as m
        cross join day_len as dl
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and (search_history.filter_conversation_id is null or m.conversation_id = search_history.filter_conversation_id)
    ),
    scoped as materialized (
        -- Position in the conversation and length of the context (weighted tokens, date words
        -- included), read with lag / lead in one ordered pass.
        select s.id, s.conversation_id, s.modality, s.fts, s.ts_config, s.day,
            row_number() over w as pos,
            s.len
            + wb[1] * coalesce(lag(s.len, 1) over w, 0) + wb[2] * coalesce(lag(s.len, 2) over w, 0)
            + wb[3] * coalesce(lag(s.len, 3) over w, 0) + wb[4] * coalesce(lag(s.len, 4) over w, 0)
            + wb[5] * coalesce(lag(s.len, 5) over w, 0)
            + wa[1] * coalesce(lead(s.len, 1) over w, 0) + wa[2] * coalesce(lead(s.len, 2) over w, 0)
            + wa[3] * coalesce(lead(s.len, 3) over w, 0) + wa[4] * coalesce(lead(s.len, 4) over w, 0)
            + wa[5] * coalesce(lead(s.len, 5) over w, 0) as len
        from own as s
        window w as (partition by s.conversation_id order by s.created_at, s.id)
    ),
    own_terms as (
        -- The query's lexemes in each message (term frequency) and in its date words (date_weight).
        select s.conversation_id, s.pos, u.lexeme, coalesce(array_length(u.positions, 1), 1)::double precision as tf
        from scoped as s
        cross join lateral unnest(s.fts) as u
        where q is not null and s.fts @@ q and u.lexeme = any(lexemes)
        union all
        select s.conversation_id, s.pos, dt.lexeme, w_date
        from scoped as s
        inner join day_terms as dt on dt.day = s.day and dt.ts_config = s.ts_config
        where w_date > 0 and dt.lexeme = any(lexemes)
    ),
    spread_terms as materialized (
        -- A term of the message at position p counts for the message at p - o with weight w(o).
        -- (materialized: the join below must be on both keys, whatever the row estimates)
        select ot.conversation_id, ot.pos - o.o as pos, ot.lexeme, o.w * ot.tf as tf
        from own_terms as ot cross join offsets as o
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
    ),
    neighbour_embeddings as (
        -- The embeddings of each message's neighbours (0-weight ones left out), by lag / lead.
        select m.id, m.modality, x.e,
            case when wb[1] > 0 then lag(x.e, 1) over w end as b1,
            case when wb[2] > 0 then lag(x.e, 2) over w end as b2,
            case when wb[3] > 0 then lag(x.e, 3) over w end as b3,
            case when wb[4] > 0 then lag(x.e, 4) over w end as b4,
            case when wb[5] > 0 then lag(x.e, 5) over w end as b5,
            case when wa[1] > 0 then lead(x.e, 1) over w end as a1,
            case when wa[2] > 0 then lead(x.e, 2) over w end as a2,
            case when wa[3] > 0 then lead(x.e, 3) over w end as a3,
            case when wa[4] > 0 then lead(x.e, 4) over w end as a4,
            case when wa[5] > 0 then lead(x.e, 5) over w end as a5
        from hipocampo_private.messages as m
        cross join lateral (select case when m.embedding_model = model then m.embedding end as e) as x
        where query_embedding is not null
          and m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and (search_history.filter_conversation_id is null or m.conversation_id = search_history.filter_conversation_id)
        window w as (partition by m.conversation_id order by m.created_at, m.id)
    ),
    dense as materialized (
        -- Cosine to the weighted sum of the context's embeddings (<=> normalises the sum; sum()
        -- skips the missing neighbours).
        select x.id, 1 - ((
            select extensions.sum(v.v) from (values
                (x.e),
                (x.b1 operator(extensions.*) vb[1]), (x.b2 operator(extensions.*) vb[2]),
                (x.b3 operator(extensions.*) vb[3]), (x.b4 operator(extensions.*) vb[4]),
                (x.b5 operator(extensions.*) vb[5]),
                (x.a1 operator(extensions.*) va[1]), (x.a2 operator(extensions.*) va[2]),
                (x.a3 operator(extensions.*) va[3]), (x.a4 operator(extensions.*) va[4]),
                (x.a5 operator(extensions.*) va[5])
            ) as v (v)
        ) operator(extensions.<=>) query_embedding) as s
        from neighbour_embeddings as x
        where x.e is not null
          and (search_history.filter_modality is null or x.modality = search_history.filter_modality)
    ),
    scores as materialized (
        -- One row per searched message with both legs' scores: a union grouped by message, not
        -- outer joins, so the plan stays linear whatever the row estimates (a conversation outside
        -- the statistics is estimated at a row or two; 002700's joins then ran once per message).
        select u.id, max(u.ds) as ds, max(u.ls) as ls
        from (
            select s.id, null::double precision as ds, null::double precision as ls, true as searched
            from scoped as s
            where search_history.filter_modality is null or s.modality = search_history.filter_modality
            union all
            select l.id, null, l.s, false from lexical as l
            union all
            select d.id, d.s, null, false from dense as d
        ) as u
        group by u.id
        having bool_or(u.searched)
    ),
    stats as materialized (
        -- z-scores over every searched message: BM25 0 without a query term, cosine at the leg's
        -- minimum without an embedding.
        select
            avg(coalesce(x.ls, 0)) as l_mean,
            coalesce(nullif(stddev_pop(coalesce(x.ls, 0)), 0), 1) as l_sd,
            avg(x.ds) as d_mean,
            coalesce(nullif(stddev_pop(x.ds), 0), 1) as d_sd,
            min(x.ds) as d_min
        from scores as x
    ),
    fused as materialized (
        -- The top k, or with the re-rank its top token_rerank_candidates (at least k).
        select x.id, x.ds, x.ls,
            wd * coalesce((coalesce(x.ds, st.d_min) - st.d_mean) / st.d_sd, 0)
            + wl * (coalesce(x.ls, 0) - st.l_mean) / st.l_sd as f
        from scores as x
        cross join stats as st
        where x.ds is not null or x.ls is not null
        order by f desc, x.id
        limit case when rerank then greatest(k, n_candidates) else k end
    ),
    query_ids as materialized (
        select qt.i, qt.id, qt.bits
        from unnest(query_token_ids, query_token_bits) with ordinality as qt (id, bits, i)
        where rerank
    ),
    idf_sample as materialized (
        -- The messages the query tokens' idf is counted over: the searched ones, at most the
        -- newest token_idf_sample of them (a whole history stays cheap; a conversation is exact).
        select o.id, o.token_ids from own as o where rerank order by o.id desc limit n_idf
    ),
    query_tokens as materialized (
        -- Each query token with its BM25-style idf among the sampled messages (token ids).
        select q.i, q.bits, ln(1 + (n.n - coalesce(d.n, 0) + 0.5) / (coalesce(d.n, 0) + 0.5)) as w
        from query_ids as q
        cross join (select count(*) as n from idf_sample) as n
        left join (
            -- Only the messages sharing a token with the query are unnested.
            select u.id, count(distinct o.id) as n
            from idf_sample as o
            cross join lateral unnest(o.token_ids) as u (id)
            where o.token_ids operator(pg_catalog.&&) query_token_ids and u.id = any(query_token_ids)
            group by u.id
        ) as d on d.id = q.id
    ),
    token_scores as materialized (
        -- Late interaction (MaxSim): for each query token the most similar token of the message
        -- (1 - 2 hamming / bits: the cosine of the sign vectors), idf-weighted mean. The message's
        -- bits are read once and paired with every query token.
        select f.id, sum(x.w * x.sim) / nullif(sum(x.w), 0) as ts
        from fused as f
        inner join hipocampo_private.messages as m on m.id = f.id
        cross join lateral (
            select max(t.w) as w, 1 - 2 * min(bit_count(d.b operator(pg_catalog.#) t.bits))::double precision
                / max(bit_length(t.bits)) as sim
            from unnest(m.token_bits) as d (b)
            cross join query_tokens as t
            group by t.i
        ) as x
        where rerank and m.token_bits is not null and m.embedding_model = model
        group by f.id
    ),
    candidate_stats as materialized (
        select avg(f.f) as f_mean, coalesce(nullif(stddev_pop(f.f), 0), 1) as f_sd,
            avg(t.ts) as t_mean, coalesce(nullif(stddev_pop(t.ts), 0), 1) as t_sd, min(t.ts) as t_min
        from fused as f
        left join token_scores as t on t.id = f.id
    ),
    ranked as (
        -- Without the re-rank the fused score stands; with it, both z-scored over the candidates
        -- (a candidate without tokens at the tokens' minimum).
        select f.id, f.ds, f.ls, t.ts,
            case when rerank then (f.f - cs.f_mean) / cs.f_sd
                + w_token * coalesce((coalesce(t.ts, cs.t_min) - cs.t_mean) / cs.t_sd, 0)
            else f.f end as s
        from fused as f
        cross join candidate_stats as cs
        left join token_scores as t on t.id = f.id
    )
    select m.id, m.conversation_id, m.role, m.content, m.modality, m.metadata, m.created_at,
        r.ds, r.ls, r.s, (row_number() over (order by r.s desc, m.id))::integer, r.ts
    from ranked as r
    inner join hipocampo_private.messages as m on m.id = r.id
    order by r.s desc, m.id
    limit k;
end;
$$;

/*
add_message(conversation_id uuid, role text, content text, modality text default 'chat',
  attachments jsonb default '[]', embedding vector default null, metadata jsonb default '{}',
  language text default null, created_at timestamptz default null, user_id uuid default null,
  tenant_id uuid default null) -> bigint

Purpose, parameters, returns: as in migration 001400. Stored scrubbed of PII unless the tenant
  turned conversations.scrub_pii off (trigger, 004200).
Errors: 22023 "conversation_id / role / content must not be null"; 22001 "content is n
  characters; the limit is 100,000"; 23514 invalid role / modality / attachments; 22023
  unsupported language; 22000 wrong dimensions; 42501 no tenant or user.
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
ingest_document(kb_id uuid, document jsonb, chunks jsonb, embedding_model text) -> jsonb

Purpose, parameters, returns: as in migration 003900 (000800's contract). 004500: document.title
  (at most 500 characters) and document.source_uri (at most 2,048 bytes) are scrubbed of PII
  before the document is looked up and stored.
Errors: 42501 as _caller (before any other work); P0002 unknown (or null) knowledge base;
  22023 "embedding_model must not be null"; 22001 "document.title is n characters; the limit is 500", "document.source_uri is n
  bytes; the limit is 2048"; P0002 unknown knowledge base / embedding model; 22023 bad document
  or chunks shape; 22000 "embedding of chunk i has n dimensions; model … expects d"; 42501 not an
  admin; 23514 invalid document field values.
*/
create or replace function hipocampo.ingest_document(
    kb_id uuid, document jsonb, chunks jsonb, embedding_model text
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(ingest_document.kb_id);
    model_dims integer;
    doc_id uuid;
    old_hash text;
    result_status text;
    written integer;
    total integer;
    bad record;
begin
    if ingest_document.embedding_model is null then
        raise exception 'embedding_model must not be null' using errcode = '22023';
    end if;
    if document is null or jsonb_typeof(document) <> 'object'
        or coalesce(document ->> 'title', '') = ''
        or coalesce(document ->> 'source_uri', '') = ''
        or coalesce(document ->> 'content_hash', '') = '' then
        raise exception 'document must be an object with title, source_uri and content_hash'
            using errcode = '22023';
    end if;
    -- What is stored is scrubbed (the documents trigger, 004000); look the document up by the same.
    document := document || jsonb_build_object(
        'title', (hipocampo_private._pii_scrub(document ->> 'title')).text,
        'source_uri', (hipocampo_private._pii_scrub(document ->> 'source_uri')).text);
    if char_length(document ->> 'title') > 500 then
        raise exception 'document.title is % characters; the limit is 500', char_length(document ->> 'title')
            using errcode = '22001';
    end if;
    if octet_length(document ->> 'source_uri') > 2048 then
        raise exception 'document.source_uri is % bytes; the limit is 2048', octet_length(document ->> 'source_uri')
            using errcode = '22001';
    end if;
    if chunks is null or jsonb_typeof(chunks) <> 'array' or jsonb_array_length(chunks) = 0 then
        raise exception 'chunks must be a non-empty json array' using errcode = '22023';
    end if;
    select e.dims into model_dims from hipocampo_private.embedding_models as e
    where e.name = ingest_document.embedding_model;
    if model_dims is null then
        raise exception 'unknown embedding model: %', ingest_document.embedding_model
            using errcode = 'P0002';
    end if;
    select c.ordinality - 1 as i, jsonb_array_length(c.value -> 'embedding') as n into bad
    from jsonb_array_elements(chunks) with ordinality as c
    where jsonb_typeof(c.value -> 'embedding') is distinct from 'array'
       or jsonb_array_length(c.value -> 'embedding') <> model_dims
       or coalesce(c.value ->> 'content', '') = ''
       or coalesce(c.value ->> 'content_hash', '') = ''
    limit 1;
    if found then
        if bad.n is distinct from model_dims then
            raise exception 'embedding of chunk % has % dimensions; model % expects %',
                bad.i, coalesce(bad.n, 0), ingest_document.embedding_model, model_dims
                using errcode = '22000';
        end if;
        raise exception 'chunk % needs content and content_hash', bad.i using errcode = '22023';
    end if;

    select d.id, d.content_hash into doc_id, old_hash from hipocampo_private.documents as d
    where d.kb_id = k.id and d.source_uri = document ->> 'source_uri';

    if doc_id is not null and old_hash = document ->> 'content_hash'
        and exists (
            select 1 from hipocampo_private.chunks as c
            where c.document_id = doc_id and c.embedding_model = ingest_document.embedding_model
        ) then
        return jsonb_build_object('document_id', doc_id, 'status', 'unchanged', 'chunks', 0, 'skipped', 0);
    end if;

    if doc_id is null then
        insert into hipocampo_private.documents (
            tenant_id, kb_id, source_type, doc_type, title, source_uri, author, published_at,
            version, trust_score, data_classification, content_hash, status, expires_at
        ) values (
            k.tenant_id, k.id, coalesce(document ->> 'source_type', 'other'),
            document ->> 'doc_type', document ->> 'title', document ->> 'source_uri',
            document ->> 'author', (document ->> 'published_at')::timestamptz,
            document ->> 'version', coalesce((document ->> 'trust_score')::real, 0.5),
            coalesce(document ->> 'data_classification', 'internal'), document ->> 'content_hash',
            coalesce(document ->> 'status', 'active'), (document ->> 'expires_at')::timestamptz
        ) returning id into doc_id;
        result_status := 'inserted';
    else
        delete from hipocampo_private.chunks as c
        where c.document_id = doc_id and c.embedding_model = ingest_document.embedding_model;
        update hipocampo_private.documents as d set
            source_type = coalesce(document ->> 'source_type', d.source_type),
            doc_type = coalesce(document ->> 'doc_type', d.doc_type),
            title = document ->> 'title',
            author = coalesce(document ->> 'author', d.author),
            published_at = coalesce((document ->> 'published_at')::timestamptz, d.published_at),
            version = coalesce(document ->> 'version', d.version),
            trust_score = coalesce((document ->> 'trust_score')::real, d.trust_score),
            data_classification = coalesce(document ->> 'data_classification', d.data_classification),
            content_hash = document ->> 'content_hash',
            status = coalesce(document ->> 'status', d.status),
            expires_at = (document ->> 'expires_at')::timestamptz,
            updated_at = now()
        where d.id = doc_id;
        result_status := 'replaced';
    end if;

    insert into hipocampo_private.chunks (
        tenant_id, kb_id, document_id, chunk_index, content, token_count, metadata,
        content_hash, ts_config, embedding, embedding_model, expires_at
    )
    select
        k.tenant_id, k.id, doc_id, (c ->> 'chunk_index')::integer, c ->> 'content',
        coalesce((c ->> 'token_count')::integer, 0), coalesce(c -> 'metadata', '{}'::jsonb),
        c ->> 'content_hash', hipocampo_private.text_search_config(k.language),
        (c ->> 'embedding')::extensions.vector, ingest_document.embedding_model,
        (document ->> 'expires_at')::timestamptz
    from jsonb_array_elements(chunks) as c
    on conflict on constraint chunks_tenant_hash_model_key do nothing;
    get diagnostics written = row_count;
    total := jsonb_array_length(chunks);

    update hipocampo_private.documents as d set chunk_count = written where d.id = doc_id;
    return jsonb_build_object(
        'document_id', doc_id, 'status', result_status, 'chunks', written, 'skipped', total - written
    );
exception
    when insufficient_privilege then
        raise exception 'only tenant admins can ingest documents' using errcode = '42501';
    when check_violation then
        raise exception 'invalid document: %', sqlerrm using errcode = '23514';
    when invalid_text_representation or invalid_datetime_format or datetime_field_overflow
        or numeric_value_out_of_range then
        raise exception 'invalid document field: %', sqlerrm using errcode = '22023';
end;
$$;

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
