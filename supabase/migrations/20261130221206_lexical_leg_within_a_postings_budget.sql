-- lexical leg within a postings budget.
-- issue 60 §2: the lexical leg reads the rarest terms' postings in full within retrieval.lexical_postings_budget and the others by key for the chunks that can rank
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._bm25_complete(tenant uuid, t_kb uuid[], t_lex text[], t_idf double precision[], t_avg double precision[], t_read boolean[], k1 double precision, b double precision, partial_ids bigint[], partial_scores double precision[], depth integer, dense_ids bigint[], out ids bigint[], out scores double precision[])
returns record
language plpgsql
stable
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._lexical_leg(tenant uuid, scope uuid[], model text, query_text text, source_types text[], metadata_filter jsonb, settings jsonb, dense_ids bigint[], out ids bigint[], out scores double precision[], out dense_scores double precision[], out coverage double precision)
returns record
language plpgsql
stable
set search_path to ''
as $function$
declare
    n_cand integer := (settings ->> 'candidates')::integer;
    k1 double precision := (settings ->> 'bm25_k1')::double precision;
    b double precision := (settings ->> 'bm25_b')::double precision;
    budget bigint := (settings ->> 'lexical_postings_budget')::bigint;
    t_kb uuid [];
    t_lex text [];
    t_idf double precision [];
    t_avg double precision [];
    t_df bigint [];
    t_read boolean [];  -- the term's postings are read in full
    scored_ids bigint [];  -- the chunks scored, best first (unfiltered)
    scored_scores double precision [];
    lim integer;
begin
    -- One term list per knowledge base, the rarest first: every lexeme of the question with its
    -- BM25 idf (a lexeme the knowledge base lacks at df 0: no postings to score, but part of the
    -- question's whole).
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
        where kb.id = any(scope)
    ) as q
    inner join hipocampo_private.kb_text_stats as st
        on st.kb_id = q.kb_id and st.embedding_model = model;

    -- The terms read in full: the rarest while their postings sum to at most the budget, and the
    -- first term holding any whatever its count.
    select coalesce(array_agg(x.r order by x.o), '{}') into t_read
    from (
        select t.o, budget = 0
            or coalesce(sum(t.df) over (order by t.o rows between unbounded preceding and 1 preceding), 0) = 0
            or sum(t.df) over (order by t.o) <= budget as r
        from unnest(t_df) with ordinality as t (df, o)
    ) as x;

    loop
        select
            coalesce(array_agg(x.chunk_id order by x.score desc, x.chunk_id), '{}'),
            coalesce(array_agg(x.score order by x.score desc, x.chunk_id), '{}')
        into scored_ids, scored_scores
        from (
            select p.chunk_id,
                sum(tm.idf * p.tf * (k1 + 1) / (p.tf + k1 * (1 - b + b * p.chunk_length / tm.avg_len))) as score
            from unnest(t_kb, t_lex, t_idf, t_avg, t_read) as tm (kb_id, lexeme, idf, avg_len, r)
            -- One primary-key range per term: "offset 0" keeps the planner from flattening the
            -- lateral subquery into a join it may run as a scan of all the tenant's postings.
            cross join lateral (
                select ps.chunk_id, ps.tf, ps.chunk_length
                from hipocampo_private.kb_postings as ps
                where ps.tenant_id = tenant and ps.kb_id = tm.kb_id and ps.lexeme = tm.lexeme
                offset 0
            ) as p
            where tm.r
            group by p.chunk_id
        ) as x;
        if false = any(t_read) then
            select c.ids, c.scores into scored_ids, scored_scores
            from hipocampo_private._bm25_complete(
                tenant, t_kb, t_lex, t_idf, t_avg, t_read, k1, b, scored_ids, scored_scores, n_cand * 4, dense_ids
            ) as c;
        end if;
        coverage := hipocampo_private._coverage(tenant, scored_ids[1], query_text, t_kb, t_lex, t_idf, settings);

        for pass in 1..2 loop
            lim := case when pass = 1 then n_cand * 4 else cardinality(scored_ids) end;
            select coalesce(array_agg(f.id order by f.ord), '{}'), coalesce(array_agg(f.score order by f.ord), '{}')
            into ids, scores
            from (
                select u.id, u.score, u.ord
                from unnest(scored_ids[1:lim], scored_scores[1:lim]) with ordinality as u (id, score, ord)
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
            exit when cardinality(ids) >= n_cand or cardinality(scored_ids) <= n_cand * 4;
        end loop;
        exit when cardinality(ids) >= n_cand or true = all(t_read);
        -- The filters left too few of a bounded read's chunks: every posting of every term.
        t_read := array_fill(true, array[cardinality(t_read)]);
    end loop;
    select coalesce(array_agg(coalesce(sc.score, 0) order by dl.ord), '{}') into dense_scores
    from unnest(dense_ids) with ordinality as dl (id, ord)
    left join unnest(scored_ids, scored_scores) as sc (id, score) on sc.id = dl.id;
end;
$function$;

create or replace function hipocampo_private._search_settings(tenant uuid, scope uuid[], model text, query_text text, match_count integer, min_similarity double precision, fusion text, dense_weight double precision, lexical_weight double precision, rerank text, mmr_lambda double precision)
returns jsonb
language plpgsql
stable
set search_path to ''
as $function$
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
$function$;

revoke execute on function hipocampo_private._bm25_complete(tenant uuid, t_kb uuid[], t_lex text[], t_idf double precision[], t_avg double precision[], t_read boolean[], k1 double precision, b double precision, partial_ids bigint[], partial_scores double precision[], depth integer, dense_ids bigint[], out ids bigint[], out scores double precision[]) from public;

-- Written by hand (data, which the schema files do not hold): the global row gains
-- retrieval.lexical_postings_budget (hipocampo db migrate seeds it again from config.toml), so a
-- database upgraded by `supabase db push` alone keeps searching (_search_settings requires the key).
update hipocampo_private.settings
set config = jsonb_set(config, '{retrieval}', (config -> 'retrieval') || '{"lexical_postings_budget": 8000}'::jsonb)
where
    tenant_id is null and jsonb_typeof(config -> 'retrieval') = 'object'
    and config #> '{retrieval,lexical_postings_budget}' is null;
