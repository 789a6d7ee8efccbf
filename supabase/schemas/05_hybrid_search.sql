-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

/*
_mmr(embeddings vector[], relevance double precision[], k integer, lambda double precision,
  dup double precision) -> integer[]

Purpose: maximal marginal relevance over candidates already ranked best first: repeatedly pick
  argmax(lambda * relevance - (1 - lambda) * max cosine to the picked ones), skipping any
  candidate whose cosine to a picked one exceeds dup (near-duplicate). lambda = 1 keeps the
  ranking and only drops near-duplicates.
Returns: the positions (1-based) of at most k picked candidates, in pick order.
Errors: none (a pure function; null or empty inputs give an empty array).
Example: select hipocampo_private._mmr(array[…]::extensions.vector[], array[1, 0.5], 5, 0.5, 0.97);
*/
create or replace function hipocampo_private._mmr(
    embeddings extensions.vector[], relevance double precision[], k integer,
    lambda double precision, dup double precision
)
returns integer[]
language plpgsql
immutable
security invoker
set search_path = ''
as $$
declare
    n integer := coalesce(cardinality(embeddings), 0);
    taken boolean[] := array_fill(false, array[greatest(n, 1)]);
    picked integer[] := '{}';
    best integer;
    best_score double precision;
    s double precision;
    max_sim double precision;
    j integer;  -- (the for loop over i declares its own i)
begin
    while cardinality(picked) < k loop
        best := null;
        for i in 1..n loop
            continue when taken[i];
            max_sim := 0;
            foreach j in array picked loop
                max_sim := greatest(max_sim, 1 - (embeddings[i] operator(extensions.<=>) embeddings[j]));
            end loop;
            if max_sim > dup then
                taken[i] := true;
                continue;
            end if;
            s := lambda * relevance[i] - (1 - lambda) * max_sim;
            if best is null or s > best_score then
                best := i;
                best_score := s;
            end if;
            -- With lambda = 1 the first remaining candidate is the best.
            exit when lambda = 1;
        end loop;
        exit when best is null;
        taken[best] := true;
        picked := picked || best;
    end loop;
    return picked;
end;
$$;

/*
hybrid_search(query_text text, query_embedding vector, kb_ids uuid[] default null,
  source_types text[] default null, metadata_filter jsonb default null,
  match_count integer default null, min_similarity double precision default null,
  fusion text default null, dense_weight double precision default null,
  lexical_weight double precision default null, rerank text default null,
  mmr_lambda double precision default null, embedding_model text default null,
  tenant_id uuid default null) -> setof record

Purpose: the hybrid retrieval RPC (PostgREST: POST /rpc/hybrid_search with named arguments).
  Every null argument takes its value from the config rows (hipocampo.effective_config,
  section retrieval), with the calibration of the model searched (min_similarity, dense_weight,
  dedupe_threshold: model_calibrations).
  In named steps: _search_scope (the query checked, the model and the knowledge bases),
  _search_settings (arguments over config), _dense_leg and _lexical_leg (the candidates),
  _fuse (fusion and rerank), _mmr_pick (MMR and near-duplicates); then the picked rows.
Parameters:
  query_text       1..retrieval.max_query_chars (2,000) characters.
  query_embedding  the query vector, dims of the model (L2-normalised).
  kb_ids           knowledge bases to search (null = all of the tenant's).
  source_types     filter on documents.source_type (null = any).
  metadata_filter  jsonb containment filter on chunks.metadata, e.g. {"article": "Art. 5"}.
  match_count      rows returned, 1..100 (retrieval.match_count, 5).
  min_similarity   cosine similarity floor of the dense leg, -1..1 (retrieval.min_similarity,
                   0.25, calibrated per model).
  fusion           'score' (z-score weighted sum) | 'rrf' (reciprocal rank, k = rrf_k).
  dense_weight, lexical_weight  weights of the two legs, 0 or 1e-6..100, not both 0 (a smaller
                   positive weight underflowed the fused score: 22003); the dense weight is
                   raised per query the less of it the best lexical hit covers (_fuse:
                   retrieval.coverage_dense_boost, the model's, and coverage_exponent).
  rerank           'none' | 'trust_recency' (similarity * retrieval.trust_recency_similarity_weight
                   + trust * …_trust_weight + freshness * …_freshness_weight: 0.6 / 0.4 / 0.2, seed 004).
  mmr_lambda       0 or 1e-6..1; 1 = relevance only, 0.5 = seed MMR (a smaller positive value
                   underflowed the MMR score: 22003).
  embedding_model  null = search_model's (the active model; during a switch, the previously
                   active one until every chunk of the scope has a row of the active model).
  tenant_id        only for service_role; others use their JWT tenant.
Returns: chunk_id, document_id, kb_id, chunk_index, content, metadata, title, source_uri,
  source_type, author, published_at, trust_score, dense_score (cosine similarity or null),
  lexical_score (BM25 over the question's lexemes but rag.question_stopwords, or null),
  fused_score, final_score, rank (1-based). A chunk of a document that does not read as
  language (word salad, OCR garbage: _reads_as_language, the rag config's rules) is still found,
  ranked after every chunk that reads as language.
Errors:
  42501 as _resolve_tenant;
  22023 "query_text must be 1..2000 characters" (empty, blank or too long);
  22023 "query_embedding is required"; 22000 "query_embedding has n dimensions; model m expects d";
  22023 "query_embedding is a zero vector: its cosine similarity is undefined"; 22023 "match_count must be 1..100 (got n)", and on an out-of-range min_similarity, mmr_lambda,
  weight, fusion or rerank; P0002 "unknown knowledge base: …"; P0002 "unknown embedding model: …";
  55000 "embedding model m has no calibration: run hipocampo calibrate --model m --write";
  55000 "retrieval config is incomplete: …" (a config row without a key config.toml seeds).
Example:
  select rank, title, final_score from hipocampo.hybrid_search(
    query_text => 'prazo para trancamento de matrícula',
    query_embedding => '[0.01, …]'::extensions.vector,
    kb_ids => array['…']::uuid[], match_count => 5);
Side effects: one row appended to read_queue (_enqueue_read; in a read-only transaction, on the
  primary), which drain_read_queue turns into a data_access_log row and the chunks' access times.
*/
-- definer because under RLS every statement re-resolved the caller's membership (a definer call
-- per table read, about a fifth of a 250-chunk search; docs/BENCHMARKS.md §Hybrid search on a
-- small knowledge base): the tenant is resolved once above, by _resolve_tenant from the request,
-- and every statement of its steps reads only that tenant's rows (tenant_id = t, or ids those
-- returned). The steps are invoker functions, so they run with the definer's rights here.
-- plan_cache_mode force_generic_plan (for the steps too: a setting lasts through the calls it
-- makes): PL/pgSQL keeps a statement's generic plan only when its estimated cost is no higher
-- than that of the custom plans; with the array arguments (the scope, the candidate ids) it was
-- not, so the static statements were planned again on every call (~0.5 ms of a 1.8 ms search on a
-- 250-passage knowledge base; the plans are the same shape either way: docs/BENCHMARKS.md §Hybrid
-- search: plans kept, vectors read late). The dynamic statement of the HNSW path is planned per
-- call as before (EXECUTE).
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
security definer
set search_path = ''
set plan_cache_mode = force_generic_plan
set jit = off
as $$
declare
    started timestamptz := clock_timestamp();
    t uuid := hipocampo_private._resolve_tenant(hybrid_search.tenant_id);
    s record;      -- what is searched (_search_scope): model, dims, scope, scope_rows
    p jsonb;       -- the parameters (_search_settings): arguments over the config rows
    dense record;  -- the dense leg: ids, sims
    lex record;    -- the lexical leg: ids, scores, the dense candidates' BM25 scores (dense_scores), coverage
    f record;      -- the ranking (_fuse): ids, sims, scores, fused, final
    picked integer[];
begin
    s := hipocampo_private._search_scope(
        t, query_text, query_embedding, hybrid_search.kb_ids, hybrid_search.embedding_model
    );
    p := hipocampo_private._search_settings(
        t, s.scope, s.model, query_text, hybrid_search.match_count, hybrid_search.min_similarity,
        hybrid_search.fusion, hybrid_search.dense_weight, hybrid_search.lexical_weight,
        hybrid_search.rerank, hybrid_search.mmr_lambda
    );
    dense := hipocampo_private._dense_leg(
        t, s.scope, s.model, s.dims, s.scope_rows, query_embedding, hybrid_search.source_types,
        hybrid_search.metadata_filter, p
    );
    lex := hipocampo_private._lexical_leg(
        t, s.scope, s.model, s.scope_rows, query_text, hybrid_search.source_types, hybrid_search.metadata_filter, p,
        dense.ids
    );
    f := hipocampo_private._fuse(
        query_embedding, p, dense.ids, dense.sims, lex.dense_scores, lex.ids, lex.scores, lex.coverage
    );
    picked := hipocampo_private._mmr_pick(f.ids, f.final, p);

    -- The picked candidates, in pick order, as rows (a plan that does not depend on the arrays'
    -- contents: subscripts in a join condition kept it from being cached); a pick of a document
    -- that does not read as language (the fusion's verdict) after every one that does, whatever
    -- MMR's diversity chose.
    return query
    select c.id, c.document_id, c.kb_id, c.chunk_index, c.content, c.metadata,
        d.title, d.source_uri, d.source_type, d.author, d.published_at, d.trust_score,
        o.sim, o.score, o.fused, o.final,
        (row_number() over (order by o.language desc, o.ord))::integer
    from unnest(
        array(select f.ids[x] from unnest(picked) as x), array(select f.sims[x] from unnest(picked) as x),
        array(select f.scores[x] from unnest(picked) as x), array(select f.fused[x] from unnest(picked) as x),
        array(select f.final[x] from unnest(picked) as x), array(select f.languages[x] from unnest(picked) as x)
    ) with ordinality as o (id, sim, score, fused, final, language, ord)
    inner join hipocampo_private.chunks as c on c.id = o.id
    inner join hipocampo_private.documents as d on d.id = c.document_id
    order by 17;

    -- The read's record, appended to the read queue (in a read-only transaction: on the primary),
    -- which drain_read_queue turns into the access log and the chunks' access times.
    perform hipocampo_private._enqueue_read(
        t, 'hybrid_search', cardinality(picked), encode(sha256(convert_to(query_text, 'UTF8')), 'hex'),
        extract(epoch from clock_timestamp() - started) * 1000, array(select f.ids[x] from unnest(picked) as x),
        '{}'
    );
end;
$$;

/*
_search_scope(tenant uuid, query_text text, query_embedding vector, kb_ids uuid[],
  embedding_model text, out model text, out dims integer, out scope uuid[], out scope_rows bigint)

Purpose: hybrid_search's first step: check the query and resolve what it searches, the embedding
  model (the argument, else _search_model's: the active one, or during a switch the previous one
  until every chunk of the scope has a row of the active one) and the tenant's knowledge bases.
Parameters: tenant (hybrid_search's, from _resolve_tenant); the others as hybrid_search's of the
  same names (kb_ids null = all of the tenant's).
Returns: model (its name), dims (its dimensions), scope (knowledge base ids; '{}' when the tenant
  has none), scope_rows (the scope's chunks of the model, from kb_text_stats: how the dense leg
  chooses its scan and how much the lexical leg sorts).
Errors: 22023 "query_text must be 1..2000 characters (got an empty query)";
  22023 "query_embedding is required"; P0002 "unknown embedding model: …";
  22000 "query_embedding has n dimensions; model m expects d";
  22023 "query_embedding is a zero vector: its cosine similarity is undefined";
  P0002 "unknown knowledge base: …".
Example: select * from hipocampo_private._search_scope(tenant, 'prazo', '[…]', null, null);
*/
create or replace function hipocampo_private._search_scope(
    tenant uuid, query_text text, query_embedding extensions.vector, kb_ids uuid[], embedding_model text,
    out model text, out dims integer, out scope uuid[], out scope_rows bigint
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    if query_text is null or btrim(query_text) = '' then
        raise exception 'query_text must be 1..2000 characters (got an empty query)'
            using errcode = '22023';
    end if;
    if query_embedding is null then
        raise exception 'query_embedding is required' using errcode = '22023';
    end if;
    model := coalesce(_search_scope.embedding_model, hipocampo_private._search_model(tenant, _search_scope.kb_ids));
    select e.name, e.dims into model, dims from hipocampo_private.embedding_models as e where e.name = model;
    if model is null then
        raise exception 'unknown embedding model: %',
            coalesce(_search_scope.embedding_model, '(no active model)') using errcode = 'P0002';
    end if;
    if extensions.vector_dims(query_embedding) <> dims then
        raise exception 'query_embedding has % dimensions; model % expects %',
            extensions.vector_dims(query_embedding), model, dims using errcode = '22000';
    end if;
    -- A zero vector's cosine is NaN, which compares above every number: it passed the similarity
    -- floor for every chunk and put NaN in the fused scores.
    if (query_embedding operator(extensions.<#>) query_embedding) = 0 then
        raise exception 'query_embedding is a zero vector: its cosine similarity is undefined'
            using errcode = '22023';
    end if;

    select array_agg(kb.id) into scope from hipocampo_private.knowledge_bases as kb
    where kb.tenant_id = tenant and (_search_scope.kb_ids is null or kb.id = any(_search_scope.kb_ids));
    if _search_scope.kb_ids is not null
        and coalesce(cardinality(scope), 0) < cardinality(array(select distinct unnest(_search_scope.kb_ids))) then
        raise exception 'unknown knowledge base: %',
            (select string_agg(x::text, ', ') from unnest(_search_scope.kb_ids) as x
             where x <> all(coalesce(scope, '{}'))) using errcode = 'P0002';
    end if;
    scope := coalesce(scope, '{}');
    select coalesce(sum(st.chunk_count), 0) into scope_rows from hipocampo_private.kb_text_stats as st
    where st.kb_id = any(scope) and st.embedding_model = model;
end;
$$;

/*
_search_settings(tenant uuid, scope uuid[], model text, query_text text, match_count integer,
  min_similarity double precision, fusion text, dense_weight double precision,
  lexical_weight double precision, rerank text, mmr_lambda double precision) -> jsonb

Purpose: hybrid_search's parameters: each argument, else the retrieval section of the config
  (the knowledge base's row for a single-KB scope, else the tenant's, else the global row seeded
  from config.toml) under the calibration of the model searched (min_similarity, dense_weight,
  dedupe_threshold: model_calibrations); the query's length and each value's range checked.
Parameters: as hybrid_search's of the same names; scope and model from _search_scope.
Returns: the retrieval section with the arguments in place of its keys, and "candidates": the
  candidates kept per leg, greatest(match_count * candidate_multiplier, min_candidates).
Errors: 55000 as _calibration; 55000 "retrieval config is incomplete: …" (a config row without a
  key config.toml seeds); 22023 "query_text must be 1..n characters (got m)" (n:
  retrieval.max_query_chars); 22023 "match_count must be 1..100 (got n)", and on an out-of-range
  min_similarity, mmr_lambda, weight, fusion or rerank.
Example: select hipocampo_private._search_settings(tenant, array[kb], 'all-MiniLM-L6-v2', 'prazo',
  null, null, null, null, null, null, null);
*/
create or replace function hipocampo_private._search_settings(
    tenant uuid, scope uuid[], model text, query_text text, match_count integer,
    min_similarity double precision, fusion text, dense_weight double precision,
    lexical_weight double precision, rerank text, mmr_lambda double precision
)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    r jsonb;
    lang jsonb;
    k integer;
    min_sim double precision;
    w_dense double precision;
    w_lex double precision;
    lambda double precision;
    fuse text;
    rr text;
begin
    perform hipocampo_private._calibration(model, true);
    r := hipocampo_private._config_section(
        tenant, case when cardinality(scope) = 1 then scope[1] end, 'retrieval', model
    );
    if exists (
        select 1 from unnest(array[
            'max_query_chars', 'match_count', 'min_similarity', 'fusion', 'dense_weight', 'lexical_weight',
            'rrf_k', 'rerank', 'mmr_lambda', 'dedupe_threshold', 'bm25_k1', 'bm25_b', 'freshness_half_life_days',
            'exact_scan_max_rows', 'candidate_multiplier', 'min_candidates', 'hnsw_ef_search', 'hnsw_visit_cost',
            'trust_recency_similarity_weight', 'trust_recency_trust_weight', 'trust_recency_freshness_weight',
            'coverage_dense_boost', 'coverage_exponent', 'lexical_postings_budget'
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
    k := coalesce(_search_settings.match_count, (r ->> 'match_count')::integer);
    min_sim := coalesce(_search_settings.min_similarity, (r ->> 'min_similarity')::double precision);
    w_dense := coalesce(_search_settings.dense_weight, (r ->> 'dense_weight')::double precision);
    w_lex := coalesce(_search_settings.lexical_weight, (r ->> 'lexical_weight')::double precision);
    lambda := coalesce(_search_settings.mmr_lambda, (r ->> 'mmr_lambda')::double precision);
    fuse := coalesce(_search_settings.fusion, r ->> 'fusion');
    rr := coalesce(_search_settings.rerank, r ->> 'rerank');
    if k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    if min_sim < -1 or min_sim > 1 then
        raise exception 'min_similarity must be -1..1 (got %)', min_sim using errcode = '22023';
    end if;
    -- A positive weight or lambda below 1e-6 is refused: multiplied by a score it underflowed
    -- (5e-324 * 0.02 raised 22003, found by the RPC fuzzer).
    if lambda < 0 or lambda > 1 or (lambda > 0 and lambda < 1e-6) then
        raise exception 'mmr_lambda must be 0 or 1e-6..1 (got %)', lambda using errcode = '22023';
    end if;
    if w_dense < 0 or w_lex < 0 or w_dense + w_lex = 0 or w_dense > 100 or w_lex > 100
        or (w_dense > 0 and w_dense < 1e-6) or (w_lex > 0 and w_lex < 1e-6) then
        raise exception 'dense_weight and lexical_weight must be 0 or 1e-6..100, not both 0'
            using errcode = '22023';
    end if;
    if fuse not in ('score', 'rrf') then
        raise exception 'fusion must be score or rrf (got %)', fuse using errcode = '22023';
    end if;
    if rr not in ('none', 'trust_recency') then
        raise exception 'rerank must be none or trust_recency (got %)', rr using errcode = '22023';
    end if;
    -- After the range check: k * candidate_multiplier overflowed integer for k = -2^31 (22003).
    -- The rag section's rules of what reads as language (_reads_as_language), which _fuse ranks by.
    lang := hipocampo_private._config_section(
        tenant, case when cardinality(scope) = 1 then scope[1] end, 'rag', model
    );
    return r || jsonb_build_object(
        'match_count', k, 'min_similarity', min_sim, 'dense_weight', w_dense, 'lexical_weight', w_lex,
        'mmr_lambda', lambda, 'fusion', fuse, 'rerank', rr,
        'language_min_words', lang -> 'language_min_words', 'language_min_word_order', lang -> 'language_min_word_order',
        'question_stopwords', lang -> 'question_stopwords',
        'candidates', greatest(k * (r ->> 'candidate_multiplier')::integer, (r ->> 'min_candidates')::integer)
    );
end;
$$;

/*
_exact_scan_max(scope_rows bigint, model text, settings jsonb, tenant uuid) -> bigint

Purpose: the most chunks _dense_leg scans exactly for this scope: settings.exact_scan_max_rows,
  or the scope's own size when it is small beside the HNSW graph it would walk. A filtered walk
  passes the nodes of chunks outside the scope, visiting about candidates * (graph rows / scope
  rows) tuples, each costing settings.hnsw_visit_cost rows of the exact scan
  (benchmarks/tenants.py: 8,300 chunks of a million, 53 ms walked, 10 ms scanned), so the scope
  is scanned exactly when scope_rows^2 <= hnsw_visit_cost * candidates * graph rows. The graph is
  the tenant's own when build_tenant_graphs gave it one (_tenant_graph_name), else the model's
  (pg_class.reltuples of the partial index; -1 before its first analyze, and a cost of 0, never).
Parameters: scope_rows - the scope's chunks; model - whose graph; settings from
  _search_settings (exact_scan_max_rows, hnsw_visit_cost, candidates); tenant - the scope's.
Returns: the limit, in chunks.
Errors: none.
Example: select hipocampo_private._exact_scan_max(8300, 'multilingual-e5-small', settings, tenant);
*/
create or replace function hipocampo_private._exact_scan_max(
    scope_rows bigint, model text, settings jsonb, tenant uuid
)
returns bigint
language sql
stable
security invoker
set search_path = ''
as $$
    select case when coalesce(
        _exact_scan_max.scope_rows::double precision * _exact_scan_max.scope_rows
        <= (_exact_scan_max.settings ->> 'hnsw_visit_cost')::double precision
        * (_exact_scan_max.settings ->> 'candidates')::integer * coalesce(
            (
                select c.reltuples from pg_catalog.pg_class as c
                where c.oid = pg_catalog.to_regclass(
                    'hipocampo_private.'
                    || hipocampo_private._tenant_graph_name(_exact_scan_max.model, _exact_scan_max.tenant)
                ) and c.reltuples > 0
            ),
            (
                select c.reltuples from pg_catalog.pg_class as c
                where c.oid = pg_catalog.to_regclass(
                    'hipocampo_private.' || hipocampo_private._model_index_name('chunks', _exact_scan_max.model)
                )
            )
        ), false)
        then greatest(_exact_scan_max.scope_rows, (_exact_scan_max.settings ->> 'exact_scan_max_rows')::bigint)
        else (_exact_scan_max.settings ->> 'exact_scan_max_rows')::bigint
    end
$$;

/*
_dense_leg(tenant uuid, scope uuid[], model text, dims integer, scope_rows bigint,
  query_embedding vector, source_types text[], metadata_filter jsonb, settings jsonb,
  out ids bigint[], out sims double precision[])

Purpose: hybrid_search's dense leg: the chunks of the scope nearest to the query vector whose
  cosine similarity is at least settings.min_similarity, after the chunk and document filters.
  Scopes above settings.exact_scan_max_rows use the model's partial HNSW index (typed cast,
  vector_cosine_ops <-> <=>, hnsw.iterative_scan relaxed_order, hnsw.ef_search at least the
  candidates wanted), so filters still leave enough rows; the statement names the model's dims,
  so it is dynamic. Smaller scopes are scanned exactly, ordered by the similarity itself: for a
  model of at most 640 dimensions by a static statement (its plan is cached) that reads the
  vectors from the covering index chunks_scope_vectors_idx, for a wider one (no entry in that
  index) by the dynamic statement without the cast, which reads the heap. The nearest
  candidates (HNSW) or 4 * candidates (exact) are filtered first; then 4 * candidates, then every
  chunk of the scope, only while the filters leave too few. A scope above exact_scan_max_rows
  is still scanned exactly when it is small beside the model's graph (other tenants' chunks):
  when scope_rows^2 <= hnsw_visit_cost * candidates * the graph's rows (pg_class.reltuples of the
  model's index), the walk would visit more tuples than the scan reads rows.
Parameters: scope, model, dims, scope_rows from _search_scope; settings from _search_settings (candidates,
  min_similarity, exact_scan_max_rows, hnsw_ef_search, hnsw_visit_cost); the others as
  hybrid_search's.
Returns: ids and sims (cosine similarity), at most settings.candidates, most similar first.
Errors: none.
Example: select * from hipocampo_private._dense_leg(tenant, array[kb], model, 384, 5183, '[…]', null, null, settings);
*/
create or replace function hipocampo_private._dense_leg(
    tenant uuid, scope uuid[], model text, dims integer, scope_rows bigint, query_embedding extensions.vector,
    source_types text[], metadata_filter jsonb, settings jsonb,
    out ids bigint[], out sims double precision[]
)
language plpgsql
security invoker
set search_path = ''
as $$
declare
    n_cand integer := (settings ->> 'candidates')::integer;
    min_sim double precision := (settings ->> 'min_similarity')::double precision;
    exact_max bigint;
    dense_sql text;
    lim integer;
    above bigint;
begin
    exact_max := hipocampo_private._exact_scan_max(scope_rows, model, settings, tenant);
    if scope_rows > exact_max or dims > 640 then
        if scope_rows > exact_max then
            perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
            perform set_config('hnsw.ef_search',
                greatest((settings ->> 'hnsw_ef_search')::integer, n_cand)::text, true);
        end if;
        dense_sql := format(
            'with nn as ('
            'select c.id, c.document_id, 1 - (c.embedding%1$s operator(extensions.<=>) $1) as sim '
            'from hipocampo_private.chunks as c '
            'where c.tenant_id = $2 and c.kb_id = any($3) and c.embedding_model = $4 '
            'and ($6::jsonb is null or c.metadata @> $6) '
            'and (c.expires_at is null or c.expires_at > now()) '
            'order by (c.embedding%1$s operator(extensions.<=>) $1) '
            'limit $9), '
            'ok as (select nn.id, nn.sim from nn '
            'join hipocampo_private.documents as d on d.id = nn.document_id '
            'where d.status = ''active'' and ($5::text[] is null or d.source_type = any($5)) '
            'and nn.sim >= $8 order by nn.sim desc, nn.id limit $7) '
            'select coalesce(array_agg(ok.id order by ok.sim desc, ok.id), ''{}''), '
            'coalesce(array_agg(ok.sim order by ok.sim desc, ok.id), ''{}''), '
            '(select count(*) from nn where nn.sim >= $8) from ok',
            case when scope_rows > exact_max then format('::extensions.vector(%s)', dims) else '' end
        );
    end if;
    -- The index returns the nearest n_cand first (each further row of an HNSW scan costs a graph
    -- step: 4 * n_cand rows took 2.7 ms where n_cand took 1.1 at 5k chunks); the exact scan
    -- reads every chunk anyway and keeps the nearest 4 * n_cand.
    lim := case when scope_rows > exact_max then n_cand else n_cand * 4 end;
    loop
        if dense_sql is not null then
            execute dense_sql into ids, sims, above
            using query_embedding, tenant, scope, model, source_types, metadata_filter, n_cand, min_sim, lim;
        else
            -- From the covering index chunks_scope_vectors_idx (an index-only scan: its predicate
            -- is repeated so that a cached generic plan can use it), one index range per knowledge
            -- base: with "kb_id = any(scope)" the generic plan scanned the whole table whenever
            -- one tenant held most chunks ("offset 0" keeps the range a parameterised scan). The
            -- metadata filter, not in the index, is checked on the nearest with the document
            -- filters; the second pass covers what it drops, so the rows are those of filtering first.
            with nn as (
                select c.id, c.document_id, 1 - (c.embedding operator(extensions.<=>) query_embedding) as sim
                from unnest(scope) as sc (kb_id)
                cross join lateral (
                    select ch.id, ch.document_id, ch.embedding
                    from hipocampo_private.chunks as ch
                    where ch.tenant_id = tenant and ch.kb_id = sc.kb_id and ch.embedding_model = model
                      and extensions.vector_dims(ch.embedding) <= 640
                      and (ch.expires_at is null or ch.expires_at > now())
                    offset 0
                ) as c
                order by sim desc
                limit lim
            ),
            ok as (
                select nn.id, nn.sim from nn
                inner join hipocampo_private.documents as d on d.id = nn.document_id
                where d.status = 'active'
                  and (_dense_leg.source_types is null or d.source_type = any(_dense_leg.source_types))
                  and nn.sim >= min_sim
                  and (_dense_leg.metadata_filter is null or exists (
                      select 1 from hipocampo_private.chunks as m
                      where m.id = nn.id and m.metadata @> _dense_leg.metadata_filter
                  ))
                order by nn.sim desc, nn.id
                limit n_cand
            )
            select coalesce(array_agg(ok.id order by ok.sim desc, ok.id), '{}'),
                coalesce(array_agg(ok.sim order by ok.sim desc, ok.id), '{}'),
                (select count(*) from nn where nn.sim >= min_sim)
            into ids, sims, above
            from ok;
        end if;
        -- Again with more rows (4 * n_cand, then the whole scope) while the filters leave too few.
        exit when cardinality(ids) >= n_cand or lim > scope_rows or above <= cardinality(ids);
        lim := case when lim < n_cand * 4 then n_cand * 4 else scope_rows + 1 end;
    end loop;
end;
$$;

/*
_question_words(language text, document_languages text[], query_text text) -> setof (lexeme text)

Purpose: a question's lexemes as the lexical leg reads it in a knowledge base (issue 59 §2): in the
  knowledge base's language and in each other language its documents are written in
  (knowledge_bases.document_languages), each lexeme once. Every lexeme scores (BM25); the
  coverage the fusion leans on reads the question in the best chunk's language only (_coverage:
  read in several stemmers, a question's words that match nothing would dilute it: FaQuAD beside
  SciFact in one knowledge base lost 0.04 nDCG@10 in hybrid that way).
Parameters: language / document_languages - the knowledge base's; query_text - the question.
Returns: one row per distinct lexeme (none for an empty question).
Errors: none.
Example: select * from hipocampo_private._question_words('portuguese', '{spanish}', '¿puedo fumar?');
*/
create or replace function hipocampo_private._question_words(
    language text, document_languages text[], query_text text
)
returns table (lexeme text)
language sql
immutable
security invoker
-- A question's distinct words, a handful: the planner's default of 1,000 rows made it hash all of
-- kb_term_stats (every tenant's terms) instead of probing its key (benchmarks/tenants.py).
rows 8
set search_path = ''
as $$
    select distinct w.lexeme
    from pg_catalog.unnest(
        array[_question_words.language] || _question_words.document_languages
    ) as l (name)
    cross join lateral pg_catalog.unnest(
        pg_catalog.to_tsvector(hipocampo_private.text_search_config(l.name), _question_words.query_text)
    ) as w
$$;

/*
_coverage(tenant uuid, chunk_id bigint, query_text text, t_kb uuid[], t_lex text[],
  t_idf double precision[], settings jsonb) -> double precision

Purpose: the lexical leg's coverage (issue 61 §3), in the chunk's own language (issue 59 §2): the
  question read by the stemmer of the chunk's text-search configuration (chunks.ts_config, its
  document's language), settings.question_stopwords left out; the share of those lexemes' idf
  that the chunk holds. A question's words read in another language's stemmer match nothing in
  this chunk, so they do not count (SciFact's English abstracts in a Portuguese knowledge base
  were measured in Portuguese stems before).
Parameters: tenant; chunk_id - the best scored chunk (null: none); query_text - the question;
  t_kb, t_lex, t_idf - the lexical leg's term lists (knowledge base, lexeme, BM25 idf, a lexeme
  the knowledge base lacks at df 0); settings from _search_settings.
Returns: 0..1; null when chunk_id is null or the question has no counted lexeme.
Errors: none.
Example: select hipocampo_private._coverage(tenant, 42, 'prazo de recurso', t_kb, t_lex, t_idf, settings);
*/
create or replace function hipocampo_private._coverage(
    tenant uuid, chunk_id bigint, query_text text, t_kb uuid[], t_lex text[], t_idf double precision[],
    settings jsonb
)
returns double precision
language sql
stable
security invoker
set search_path = ''
as $$
    select sum(tm.idf) filter (where ps.chunk_id is not null) / nullif(sum(tm.idf), 0)
    from hipocampo_private.chunks as c
    cross join lateral (
        select distinct w.lexeme from pg_catalog.unnest(pg_catalog.to_tsvector(c.ts_config, _coverage.query_text)) as w
    ) as ql
    inner join unnest(_coverage.t_kb, _coverage.t_lex, _coverage.t_idf) as tm (kb_id, lexeme, idf)
        on tm.kb_id = c.kb_id and tm.lexeme = ql.lexeme
    left join hipocampo_private.kb_postings as ps
        on ps.tenant_id = _coverage.tenant and ps.kb_id = c.kb_id and ps.lexeme = ql.lexeme and ps.chunk_id = c.id
    where c.id = _coverage.chunk_id
      and not coalesce(_coverage.settings -> 'question_stopwords', '[]'::jsonb) ? ql.lexeme
$$;

/*
_lexical_terms(scope uuid[], model text, query_text text, budget bigint, stopwords jsonb,
  out t_kb uuid[], out t_lex text[], out t_idf double precision[], out t_avg double precision[],
  out t_read boolean[])

Purpose: the lexical leg's term list (issue 60 §2): every lexeme of the question in each
  knowledge base of the scope (_question_words) but the question stopwords (interrogatives and
  auxiliaries such as "pode", "fazer", "qual": in a small knowledge base their idf is high and a
  rule that happens to hold "fazer" outranked the one a resident asked about, issue 61 §3), the
  rarest first, with its BM25 idf (a lexeme the knowledge base lacks at df 0: no postings to
  score, but part of the question's whole) and the knowledge base's average chunk length; and
  which terms' postings are read in full: the rarest while their postings sum to at most the
  budget, and the first term holding any whatever its count (budget 0: every term).
Parameters: scope, model - as _lexical_leg's; query_text - the question; budget - postings
  (settings.lexical_postings_budget, 0..100,000,000); stopwords - a json array of stems
  (settings.question_stopwords, the rag section's; null: none).
Returns: five aligned arrays, one element per (knowledge base, lexeme), empty for a question
  without lexemes.
Errors: none.
Example: select * from hipocampo_private._lexical_terms(array[kb], 'multilingual-e5-small', 'prazo de recurso', 8000,
  '["qual"]');
*/
create or replace function hipocampo_private._lexical_terms(
    scope uuid[], model text, query_text text, budget bigint, stopwords jsonb, out t_kb uuid[], out t_lex text[],
    out t_idf double precision[], out t_avg double precision[], out t_read boolean[]
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    t_df bigint [];
begin
    select
        coalesce(array_agg(q.kb_id order by q.df, q.kb_id, q.lexeme), '{}'),
        coalesce(array_agg(q.lexeme order by q.df, q.kb_id, q.lexeme), '{}'),
        coalesce(array_agg(ln(1 + (st.chunk_count - q.df + 0.5) / (q.df + 0.5)) order by q.df, q.kb_id, q.lexeme), '{}'),
        coalesce(array_agg(
            st.token_total::double precision / greatest(st.chunk_count, 1) order by q.df, q.kb_id, q.lexeme
        ), '{}'),
        coalesce(array_agg(q.df order by q.df, q.kb_id, q.lexeme), '{}')
    into t_kb, t_lex, t_idf, t_avg, t_df
    from (
        select kb.id as kb_id, u.lexeme, coalesce(ts.doc_freq, 0) as df
        from hipocampo_private.knowledge_bases as kb
        cross join lateral hipocampo_private._question_words(kb.language, kb.document_languages, query_text) as u
        left join hipocampo_private.kb_term_stats as ts
            on ts.kb_id = kb.id and ts.embedding_model = model and ts.lexeme = u.lexeme
        where kb.id = any(scope) and not coalesce(stopwords, '[]'::jsonb) ? u.lexeme
    ) as q
    inner join hipocampo_private.kb_text_stats as st
        on st.kb_id = q.kb_id and st.embedding_model = model;

    select coalesce(array_agg(x.r order by x.o), '{}') into t_read
    from (
        select t.o, budget = 0
            or coalesce(sum(t.df) over (order by t.o rows between unbounded preceding and 1 preceding), 0) = 0
            or sum(t.df) over (order by t.o) <= budget as r
        from unnest(t_df) with ordinality as t (df, o)
    ) as x;
end;
$$;

/*
_bm25_read(tenant uuid, t_kb uuid[], t_lex text[], t_idf double precision[], t_avg double precision[],
  t_read boolean[], k1 double precision, b double precision, keep integer, dense_ids bigint[],
  out ids bigint[], out scores double precision[])

Purpose: the lexical leg's first read (issue 60 §2): the BM25 of every chunk holding a term read
  in full (t_read true), one primary-key range of kb_postings per term, then arithmetic; of those
  chunks only the best `keep` and the dense leg's candidates leave, so the thousands a common
  term holds in a large knowledge base are not sorted (at 50,000 chunks, sorting them twice and
  looking the dense candidates up among them was 3 of the leg's 8 ms, benchmarks/tenants.py).
  The best `keep` are chosen among the chunks that are not dense candidates once the candidates
  are set apart (their number bounds how many of the best they can be), so the result holds
  exactly the best `keep` of all and every dense candidate holding a term. keep null: every chunk
  scored, sorted (one sort: a small knowledge base's search took 0.1 ms longer through the
  window).
Parameters: tenant; the term lists of _lexical_leg (knowledge base, lexeme, idf, average chunk
  length in tokens, read in full or not); k1, b - BM25's; keep - how many of the best are kept
  (chunks; null: every one); dense_ids - the dense leg's candidates.
Returns: ids and scores (BM25 over the terms read), best first (ties: lower id): the best `keep`
  of all, then the dense candidates outside them that hold a term read.
Errors: none.
Example: select * from hipocampo_private._bm25_read(tenant, t_kb, t_lex, t_idf, t_avg, t_read, 1.2, 0.75, 320,
  dense.ids);
*/
create or replace function hipocampo_private._bm25_read(
    tenant uuid, t_kb uuid[], t_lex text[], t_idf double precision[], t_avg double precision[], t_read boolean[],
    k1 double precision, b double precision, keep integer, dense_ids bigint[], out ids bigint[],
    out scores double precision[]
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    if keep is null then
        select coalesce(array_agg(g.chunk_id order by g.score desc, g.chunk_id), '{}'),
            coalesce(array_agg(g.score order by g.score desc, g.chunk_id), '{}')
        into ids, scores
        from (
            select ps.chunk_id,
                sum(tm.idf * ps.tf * (k1 + 1) / (ps.tf + k1 * (1 - b + b * ps.chunk_length / tm.avg_len))) as score
            from unnest(t_kb, t_lex, t_idf, t_avg, t_read) as tm (kb_id, lexeme, idf, avg_len, r)
            cross join lateral (
                select q.chunk_id, q.tf, q.chunk_length
                from hipocampo_private.kb_postings as q
                where q.tenant_id = tenant and q.kb_id = tm.kb_id and q.lexeme = tm.lexeme
                offset 0
            ) as ps
            where tm.r
            group by ps.chunk_id
        ) as g;
        return;
    end if;
    select coalesce(array_agg(x.chunk_id order by x.score desc, x.chunk_id), '{}'),
        coalesce(array_agg(x.score order by x.score desc, x.chunk_id), '{}')
    into ids, scores
    from (
        select s.chunk_id, s.score, s.dense, row_number() over (order by s.score desc, s.chunk_id) as rn
        from (
            select g.chunk_id, g.score, g.dense
            from (
                -- The dense candidates join the postings as rows of their own (score 0), marked, so
                -- one hash aggregate scores and marks every chunk (a join to them was planned as a
                -- nested loop over every scored chunk).
                select p.chunk_id, sum(p.part) as score, bool_or(p.dense) as dense
                from (
                    select ps.chunk_id, false as dense,
                        tm.idf * ps.tf * (k1 + 1) / (ps.tf + k1 * (1 - b + b * ps.chunk_length / tm.avg_len)) as part
                    from unnest(t_kb, t_lex, t_idf, t_avg, t_read) as tm (kb_id, lexeme, idf, avg_len, r)
                    -- "offset 0" keeps the planner from flattening the lateral subquery into a join
                    -- it may run as a scan of all the tenant's postings.
                    cross join lateral (
                        select q.chunk_id, q.tf, q.chunk_length
                        from hipocampo_private.kb_postings as q
                        where q.tenant_id = tenant and q.kb_id = tm.kb_id and q.lexeme = tm.lexeme
                        offset 0
                    ) as ps
                    where tm.r
                    union all
                    select d.id, true, 0 from unnest(dense_ids) as d (id)
                ) as p
                group by p.chunk_id
                having not bool_and(p.dense)
            ) as g
            order by g.dense desc, g.score desc, g.chunk_id
            limit keep + cardinality(dense_ids)
        ) as s
    ) as x
    where x.dense or x.rn <= coalesce(keep, x.rn);
end;
$$;

/*
_bm25_complete(tenant uuid, t_kb uuid[], t_lex text[], t_idf double precision[],
  t_avg double precision[], t_read boolean[], k1 double precision, b double precision,
  partial_ids bigint[], partial_scores double precision[], depth integer, dense_ids bigint[],
  out ids bigint[], out scores double precision[])

Purpose: the bounded lexical leg's second step (issue 60 §2): the chunks that can rank (the best
  `depth` by the terms read in full, and the dense leg's candidates) get the BM25 of the terms
  not read (t_read false), looked up by key in kb_postings for those chunks only, added to their
  partial score. A chunk outside them that holds only unread terms is not scored: the leg is then
  approximate (docs/BENCHMARKS.md §The lexical leg's postings budget).
Parameters: tenant; the term lists of _lexical_leg (knowledge base, lexeme, idf, average chunk
  length in tokens, read in full or not); k1, b - BM25's; partial_ids / partial_scores - the
  chunks holding a term read that _bm25_read kept (the best, then the dense candidates among
  them), best first, with their scores over those terms; depth - how many of the best are
  completed (chunks); dense_ids - the dense leg's candidates (scored whatever their rank).
Returns: ids and scores (BM25 over every term), best first (ties: lower id); chunks scoring 0
  (a dense candidate holding no term) left out.
Errors: none.
Example: select * from hipocampo_private._bm25_complete(tenant, t_kb, t_lex, t_idf, t_avg, t_read, 1.2, 0.75,
  p_ids, p_scores, 320, dense.ids);
*/
create or replace function hipocampo_private._bm25_complete(
    tenant uuid, t_kb uuid[], t_lex text[], t_idf double precision[], t_avg double precision[], t_read boolean[],
    k1 double precision, b double precision, partial_ids bigint[], partial_scores double precision[],
    depth integer, dense_ids bigint[], out ids bigint[], out scores double precision[]
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    cand_ids bigint [];
    cand_partial double precision [];
begin
    select coalesce(array_agg(u.id order by u.id), '{}'), coalesce(array_agg(u.partial order by u.id), '{}')
    into cand_ids, cand_partial
    from (
        select x.id, coalesce(max(p.score), 0) as partial
        from (
            select unnest(partial_ids[1:depth]) as id
            union
            select unnest(dense_ids)
        ) as x
        left join unnest(partial_ids, partial_scores) as p (id, score) on p.id = x.id
        group by x.id
    ) as u;

    select coalesce(array_agg(s.id order by s.score desc, s.id), '{}'),
        coalesce(array_agg(s.score order by s.score desc, s.id), '{}')
    into ids, scores
    from (
        select c.id, c.partial + coalesce(sum(p.part), 0) as score
        from unnest(cand_ids, cand_partial) as c (id, partial)
        left join (
            -- Each unread term's postings of the candidates: one key probe per candidate (an
            -- array of sorted ids) in the term's primary-key range.
            select ps.chunk_id,
                tm.idf * ps.tf * (k1 + 1) / (ps.tf + k1 * (1 - b + b * ps.chunk_length / tm.avg_len)) as part
            from unnest(t_kb, t_lex, t_idf, t_avg, t_read) as tm (kb_id, lexeme, idf, avg_len, r)
            cross join lateral (
                select q.chunk_id, q.tf, q.chunk_length
                from hipocampo_private.kb_postings as q
                where q.tenant_id = tenant and q.kb_id = tm.kb_id and q.lexeme = tm.lexeme
                  and q.chunk_id = any(cand_ids)
                offset 0
            ) as ps
            where not tm.r
        ) as p on p.chunk_id = c.id
        group by c.id, c.partial
    ) as s
    where s.score > 0;
end;
$$;

/*
_lexical_leg(tenant uuid, scope uuid[], model text, scope_rows bigint, query_text text,
  source_types text[], metadata_filter jsonb, settings jsonb, dense_ids bigint[], out ids bigint[],
  out scores double precision[], out dense_scores double precision[], out coverage double precision)

Purpose: hybrid_search's lexical leg: Okapi BM25 (k1 = settings.bm25_k1, b = settings.bm25_b)
  with OR semantics over the query's stemmed, unaccented lexemes (each knowledge base's
  language) but the question stopwords (settings.question_stopwords), read from the inverted
  index kb_postings: one primary-key range per term, then arithmetic; idf and the average length
  from the per-KB statistics (kb_term_stats, kb_text_stats); of the chunks scored, the best
  4 * settings.candidates and the dense candidates are kept (_bm25_read). Bounded (issue 60 §2):
  the rarest terms' postings are read in full while they sum to at most
  settings.lexical_postings_budget (the rarest term holding any always; 0: every term;
  _lexical_terms), and the other terms are scored by key for the chunks kept only
  (_bm25_complete): exact whenever the question's terms hold at most the budget's postings,
  approximate above (a chunk holding only the common terms is not scored). The filters (model,
  status, expiry, source type, metadata) are checked on the best 4 * settings.candidates; when
  they leave too few, every chunk holding a term is scored, over every posting of every term, and
  checked in order (with a source or metadata filter, every scored chunk is kept from the start).
Parameters: scope, model and scope_rows from _search_scope; settings from _search_settings; dense_ids, the
  dense leg's candidates (_dense_leg); the others as hybrid_search's.
Returns: ids and scores (BM25), at most settings.candidates, best first, after the filters;
  dense_scores, the BM25 score of each of dense_ids in its order (0 for a chunk holding no query
  term; over every term, bounded or not), which the fusion gives a dense-only candidate (only
  these leave the leg: handing _fuse every scored chunk of a large knowledge base was a third of
  its time); coverage, the idf-weighted share of the query's lexemes in the best scored chunk's
  language (settings.question_stopwords left out; one the knowledge base lacks counts with the
  idf of df 0) that the chunk holds, 0..1 (null when no chunk holds a query term; _coverage),
  which _fuse weighs the dense leg by.
Errors: none.
Example: select * from hipocampo_private._lexical_leg(tenant, array[kb], model, 249, 'prazo', null, null, settings,
  dense.ids);
*/
create or replace function hipocampo_private._lexical_leg(
    tenant uuid, scope uuid[], model text, scope_rows bigint, query_text text, source_types text[],
    metadata_filter jsonb, settings jsonb, dense_ids bigint[], out ids bigint[], out scores double precision[],
    out dense_scores double precision[], out coverage double precision
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    n_cand integer := (settings ->> 'candidates')::integer;
    k1 double precision := (settings ->> 'bm25_k1')::double precision;
    b double precision := (settings ->> 'bm25_b')::double precision;
    t_kb uuid [];
    t_lex text [];
    t_idf double precision [];
    t_avg double precision [];
    t_read boolean [];  -- the term's postings are read in full
    scored_ids bigint [];  -- the chunks scored, best first (unfiltered)
    scored_scores double precision [];
    -- How many of the best scored chunks the filters see first (null: every one): every one when
    -- the scope holds no more (one sort), or with a source or metadata filter (likely to leave few
    -- of the best).
    keep integer := case
        when source_types is null and metadata_filter is null and scope_rows > n_cand * 4 then n_cand * 4
    end;
begin
    -- The question's terms, the rarest first, and which are read in full (_lexical_terms).
    select tl.t_kb, tl.t_lex, tl.t_idf, tl.t_avg, tl.t_read into t_kb, t_lex, t_idf, t_avg, t_read
    from hipocampo_private._lexical_terms(
        scope, model, query_text, (settings ->> 'lexical_postings_budget')::bigint, settings -> 'question_stopwords'
    ) as tl;

    loop
        select r.ids, r.scores into scored_ids, scored_scores
        from hipocampo_private._bm25_read(tenant, t_kb, t_lex, t_idf, t_avg, t_read, k1, b, keep, dense_ids) as r;
        if false = any(t_read) then
            select c.ids, c.scores into scored_ids, scored_scores
            from hipocampo_private._bm25_complete(
                tenant, t_kb, t_lex, t_idf, t_avg, t_read, k1, b, scored_ids, scored_scores, n_cand * 4, dense_ids
            ) as c;
        end if;

        select coalesce(array_agg(f.id order by f.ord), '{}'), coalesce(array_agg(f.score order by f.ord), '{}')
        into ids, scores
        from (
            select u.id, u.score, u.ord
            from unnest(
                scored_ids[1:coalesce(keep, cardinality(scored_ids))], scored_scores[1:coalesce(keep, cardinality(scored_ids))]
            ) with ordinality as u (id, score, ord)
            inner join hipocampo_private.chunks as c on c.id = u.id
            inner join hipocampo_private.documents as d on d.id = c.document_id
            where c.embedding_model = model
              and (_lexical_leg.source_types is null or d.source_type = any(_lexical_leg.source_types))
              and (_lexical_leg.metadata_filter is null or c.metadata @> _lexical_leg.metadata_filter)
              and d.status = 'active'
              and (c.expires_at is null or c.expires_at > now())
            order by u.ord
            limit n_cand
        ) as f;
        exit when cardinality(ids) >= n_cand
            or true = all(t_read) and (keep is null or cardinality(scored_ids) < keep);
        -- The filters left too few of the best: every chunk holding a term, every term read in full.
        keep := null;
        t_read := array_fill(true, array[cardinality(t_read)]);
    end loop;
    coverage := hipocampo_private._coverage(tenant, scored_ids[1], query_text, t_kb, t_lex, t_idf, settings);
    select coalesce(array_agg(coalesce(sc.score, 0) order by dl.ord), '{}') into dense_scores
    from unnest(dense_ids) with ordinality as dl (id, ord)
    left join unnest(scored_ids, scored_scores) as sc (id, score) on sc.id = dl.id;
end;
$$;

/*
_leaning_dense_weight(settings jsonb, coverage double precision) -> double precision

Purpose: the dense leg's weight for one question (issue 61 §3): settings.dense_weight * (1 +
  (settings.coverage_dense_boost - 1) * (1 - coverage) ^ settings.coverage_exponent). The less
  of the question the best lexical hit holds (coverage, from _lexical_leg), the more the dense
  leg counts; coverage null (no chunk holds a query term) is no lean.
Parameters: settings from _search_settings; coverage 0..1 (clamped) or null.
Returns: the weight, settings.dense_weight .. dense_weight * coverage_dense_boost.
Errors: none.
Example: select hipocampo_private._leaning_dense_weight('{"dense_weight": 1, "coverage_dense_boost": 12,
  "coverage_exponent": 0.25}', 0.1);  -- 11.4
*/
create or replace function hipocampo_private._leaning_dense_weight(settings jsonb, coverage double precision)
returns double precision
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    select (settings ->> 'dense_weight')::double precision * (
        1 + ((settings ->> 'coverage_dense_boost')::double precision - 1)
        * (1 - least(greatest(coalesce(coverage, 1), 0), 1)) ^ (settings ->> 'coverage_exponent')::double precision
    );
$$;

/*
_fuse(query_embedding vector, settings jsonb, dense_ids bigint[], dense_sims double precision[],
  dense_scores double precision[], lexical_ids bigint[], lexical_scores double precision[],
  coverage double precision, out ids bigint[], out sims double precision[],
  out scores double precision[], out fused double precision[], out final double precision[],
  out languages boolean[])

Purpose: hybrid_search's fusion and rerank over the union of both legs, each candidate chunk
  read once. Every candidate gets both signals, so the fusion compares like with like: the BM25
  score of a dense-only hit is the lexical leg's (dense_scores; 0 when it holds no query term),
  the cosine of a lexical-only hit is computed here and
  counts at or above settings.min_similarity, as in the dense leg. settings.fusion 'score': each
  leg's z-score over the candidates (a candidate without the signal takes the leg's lowest),
  weighted by dense_weight and lexical_weight; the means and deviations are summed in rank order,
  so they are the same to the bit whatever the plan. 'rrf': each leg's rank, 1 / (rrf_k + rank).
  settings.rerank 'trust_recency': the fused score scaled to 0..1 *
  trust_recency_similarity_weight + the document's trust * trust_recency_trust_weight +
  freshness (exp(-age in days / freshness_half_life_days)) * trust_recency_freshness_weight.
  A candidate of a document that does not read as language (_language_verdicts with the rag
  rules settings carries, one call for all) is moved below every candidate that does, its final
  score just under theirs (issue 61 §5). The dense weight is per query, _leaning_dense_weight of coverage
  (from _lexical_leg): the less of the question the best lexical hit holds, the more the dense
  leg counts (issue 61 §3). The vectors are not carried through these steps (copying ~70 of 1.5 kB through the sorts was
  half of a 250-passage search): _mmr_pick reads them.
Parameters: settings from _search_settings; the legs' arrays (dense_scores aligned with
  dense_ids) and coverage from _dense_leg and _lexical_leg.
Returns: the candidates ranked by final score (ties: newer published_at, newer chunk, lower id):
  ids, sims (cosine or null), scores (BM25), fused, final, languages (whether the candidate's
  document reads as language, which hybrid_search ranks its rows by); null arrays when there is
  none.
Errors: none.
Example: select * from hipocampo_private._fuse('[…]', settings, d.ids, d.sims, l.dense_scores, l.ids,
  l.scores, l.coverage);
*/
create or replace function hipocampo_private._fuse(
    query_embedding extensions.vector, settings jsonb, dense_ids bigint[], dense_sims double precision[],
    dense_scores double precision[], lexical_ids bigint[], lexical_scores double precision[], coverage double precision,
    out ids bigint[], out sims double precision[], out scores double precision[],
    out fused double precision[], out final double precision[], out languages boolean[]
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    min_sim double precision := (settings ->> 'min_similarity')::double precision;
    w_dense double precision := hipocampo_private._leaning_dense_weight(settings, coverage);  -- issue 61 §3
    w_lex double precision := (settings ->> 'lexical_weight')::double precision;
    rrf_k double precision := (settings ->> 'rrf_k')::double precision;
    w_sim double precision := (settings ->> 'trust_recency_similarity_weight')::double precision;
    w_trust double precision := (settings ->> 'trust_recency_trust_weight')::double precision;
    w_fresh double precision := (settings ->> 'trust_recency_freshness_weight')::double precision;
    half_life double precision := (settings ->> 'freshness_half_life_days')::double precision;
begin
    with legs as (
        select coalesce(dl.id, ll.id) as id, dl.sim, coalesce(ll.score, dl.score, 0) as score
        from unnest(dense_ids, dense_sims, dense_scores) as dl (id, sim, score)
        full outer join unnest(lexical_ids, lexical_scores) as ll (id, score) on ll.id = dl.id
    ),
    found as (
        select lg.id, d.trust_score, d.published_at, c.created_at, d.text_measures,
            case when lg.sim is not null then lg.sim
                when 1 - (c.embedding operator(extensions.<=>) query_embedding) >= min_sim
                    then 1 - (c.embedding operator(extensions.<=>) query_embedding)
            end as sim,
            lg.score
        from legs as lg inner join hipocampo_private.chunks as c on c.id = lg.id
        inner join hipocampo_private.documents as d on d.id = c.document_id
    ),
    cand as (  -- every candidate's language verdict in one call (_language_verdicts)
        select fo.id, fo.trust_score, fo.published_at, fo.created_at, v.language, fo.sim, fo.score
        from (select array_agg(f.id) as ids, array_agg(f.text_measures) as ms from found as f) as agg
        cross join lateral unnest(agg.ids, hipocampo_private._language_verdicts(agg.ms, settings)) as v (id, language)
        inner join found as fo on fo.id = v.id
    ),
    st as (
        select
            avg(cd.sim order by cd.sim desc, cd.id) as avg_d, stddev_pop(cd.sim order by cd.sim desc, cd.id) as sd_d,
            min(cd.sim) as min_d, avg(cd.score order by cd.score desc, cd.id) as avg_l,
            stddev_pop(cd.score order by cd.score desc, cd.id) as sd_l, min(cd.score) as min_l
        from cand as cd
    ),
    by_fusion as (
        select cd.*,
            case settings ->> 'fusion'
                when 'rrf' then
                    w_dense * coalesce(1.0 / (rrf_k + case when cd.sim is not null then
                        row_number() over (order by cd.sim desc nulls last, cd.id) end), 0)
                    + w_lex * coalesce(1.0 / (rrf_k + row_number() over (order by cd.score desc, cd.id)), 0)
                else
                    w_dense * coalesce(
                        (cd.sim - st.avg_d) / nullif(st.sd_d, 0), (st.min_d - st.avg_d) / nullif(st.sd_d, 0), 0
                    )
                    + w_lex * coalesce(
                        (cd.score - st.avg_l) / nullif(st.sd_l, 0), (st.min_l - st.avg_l) / nullif(st.sd_l, 0), 0
                    )
            end as fused
        from cand as cd cross join st
    ),
    ranked as (
        select fd.*,
            case settings ->> 'rerank'
                when 'trust_recency' then
                    coalesce(
                        (fd.fused - min(fd.fused) over ())
                        / nullif(max(fd.fused) over () - min(fd.fused) over (), 0), 1
                    ) * w_sim + fd.trust_score * w_trust
                    + w_fresh * exp(
                        -greatest(extract(epoch from now() - coalesce(fd.published_at, fd.created_at)), 0)
                        / 86400.0 / half_life
                    )
                else fd.fused
            end as final
        from by_fusion as fd
    ),
    placed as (  -- not language: moved just under every chunk that is, in its own order
        select rk.id, rk.sim, rk.score, rk.fused, rk.published_at, rk.created_at, rk.language, case
            when rk.language or min(rk.final) filter (where rk.language) over () is null then rk.final
            else min(rk.final) filter (where rk.language) over () - 1e-6
                - (max(rk.final) filter (where not rk.language) over () - rk.final) end as final
        from ranked as rk
    )
    select
        array_agg(x.id order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.sim order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.score order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.fused order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.final order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.language order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id)
    into ids, sims, scores, fused, final, languages
    from placed as x;
end;
$$;

/*
_mmr_pick(ids bigint[], final double precision[], settings jsonb) -> integer[]

Purpose: hybrid_search's last step: MMR (settings.mmr_lambda) with near-duplicate removal
  (cosine > settings.dedupe_threshold) over the ranked candidates, by _mmr; relevance is the final
  score on a 0..1 scale. With lambda = 1 the picks are the first candidates that are not
  near-duplicates of an earlier pick, so the vectors of the first 2 * match_count are read, and
  every candidate's only when those leave fewer than match_count picks.
Parameters: ids and final from _fuse (best first; null when there is no candidate); settings
  from _search_settings (match_count, mmr_lambda, dedupe_threshold).
Returns: the positions (1-based) in ids of at most match_count picks, in pick order ('{}' when
  ids is null).
Errors: none.
Example: select hipocampo_private._mmr_pick(f.ids, f.final, settings);
*/
create or replace function hipocampo_private._mmr_pick(ids bigint[], final double precision[], settings jsonb)
returns integer[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    k integer := (settings ->> 'match_count')::integer;
    lambda double precision := (settings ->> 'mmr_lambda')::double precision;
    n integer := coalesce(cardinality(ids), 0);
    s double precision := final[1] - final[n];
    relevance double precision [];
    vectors extensions.vector [];
    lim integer := case when lambda = 1 then least(n, 2 * k) else n end;
    picked integer [] := '{}';
begin
    if ids is null then
        return picked;
    end if;
    relevance := array(
        select case when s > 0 then (x.v - final[n]) / s else 1 end
        from unnest(final) with ordinality as x (v, ord) order by x.ord
    );
    loop
        select array_agg(c.embedding order by u.ord) into vectors
        from unnest(ids[1:lim]) with ordinality as u (id, ord)
        inner join hipocampo_private.chunks as c on c.id = u.id;
        picked := hipocampo_private._mmr(
            vectors, relevance[1:lim], k, lambda, (settings ->> 'dedupe_threshold')::double precision
        );
        exit when cardinality(picked) >= k or lim >= n;
        lim := n;
    end loop;
    return picked;
end;
$$;

-- answer_evidence's near-duplicate lookup scanned every chunk of the knowledge bases for each
-- hit (exact cosine): ~4 ms per hit at 5k chunks, linear in the scope. It now goes through
-- _near_duplicates, which uses the model's partial HNSW index (typed cast, iterative scan) when
-- the scope is larger than retrieval.exact_scan_max_rows, as hybrid_search does.
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
    exact_max bigint := (hipocampo_private._effective_section(_near_duplicates.tenant, null, 'retrieval')
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
                from (select distinct unnest(_near_duplicates.kb_ids)) as sc (kb_id)
                -- One index range per knowledge base, as _dense_leg's exact scan (with
                -- "kb_id = any(…)" the generic plan read the whole table when one tenant held it).
                cross join lateral (
                    select ch.id, ch.document_id, ch.embedding
                    from hipocampo_private.chunks as ch
                    where ch.tenant_id = _near_duplicates.tenant and ch.kb_id = sc.kb_id
                      and ch.embedding_model = c.embedding_model and extensions.vector_dims(ch.embedding) <= 640
                    offset 0
                ) as c2
                where c2.document_id <> c.document_id and c2.id <> all(_near_duplicates.chunk_ids)
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

comment on function hipocampo.hybrid_search(
    text, extensions.vector, uuid[], text[], jsonb, integer, double precision, text,
    double precision, double precision, text, double precision, text, uuid
) is
'Hybrid retrieval (dense + BM25, z-score or RRF fusion, rerank, MMR) over the caller''s tenant; logs the access.';
