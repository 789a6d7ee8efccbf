-- scope rows read once a search.
-- review: the scope's chunk count is read once, by _search_scope, for both legs (the lexical leg read it again from kb_text_stats)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo_private._dense_leg(tenant uuid, scope uuid[], model text, dims integer, query_embedding extensions.vector, source_types text[], metadata_filter jsonb, settings jsonb, out ids bigint[], out sims double precision[]);

drop function if exists hipocampo_private._lexical_leg(tenant uuid, scope uuid[], model text, query_text text, source_types text[], metadata_filter jsonb, settings jsonb, dense_ids bigint[], out ids bigint[], out scores double precision[], out dense_scores double precision[], out coverage double precision);

drop function if exists hipocampo_private._lexical_terms(scope uuid[], model text, query_text text, budget bigint, stopwords jsonb, out t_kb uuid[], out t_lex text[], out t_idf double precision[], out t_avg double precision[], out t_read boolean[], out chunks bigint);

drop function if exists hipocampo_private._search_scope(tenant uuid, query_text text, query_embedding extensions.vector, kb_ids uuid[], embedding_model text, out model text, out dims integer, out scope uuid[]);

set check_function_bodies = off;

create or replace function hipocampo_private._dense_leg(tenant uuid, scope uuid[], model text, dims integer, scope_rows bigint, query_embedding extensions.vector, source_types text[], metadata_filter jsonb, settings jsonb, out ids bigint[], out sims double precision[])
returns record
language plpgsql
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._lexical_leg(tenant uuid, scope uuid[], model text, scope_rows bigint, query_text text, source_types text[], metadata_filter jsonb, settings jsonb, dense_ids bigint[], out ids bigint[], out scores double precision[], out dense_scores double precision[], out coverage double precision)
returns record
language plpgsql
stable
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._lexical_terms(scope uuid[], model text, query_text text, budget bigint, stopwords jsonb, out t_kb uuid[], out t_lex text[], out t_idf double precision[], out t_avg double precision[], out t_read boolean[])
returns record
language plpgsql
stable
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._search_scope(tenant uuid, query_text text, query_embedding extensions.vector, kb_ids uuid[], embedding_model text, out model text, out dims integer, out scope uuid[], out scope_rows bigint)
returns record
language plpgsql
stable
set search_path to ''
as $function$
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
$function$;

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
create or replace function hipocampo.hybrid_search(query_text text, query_embedding extensions.vector, kb_ids uuid[] default null::uuid[], source_types text[] default null::text[], metadata_filter jsonb default null::jsonb, match_count integer default null::integer, min_similarity double precision default null::double precision, fusion text default null::text, dense_weight double precision default null::double precision, lexical_weight double precision default null::double precision, rerank text default null::text, mmr_lambda double precision default null::double precision, embedding_model text default null::text, tenant_id uuid default null::uuid)
returns table (chunk_id bigint, document_id uuid, kb_id uuid, chunk_index integer, content text, metadata jsonb, title text, source_uri text, source_type text, author text, published_at timestamp with time zone, trust_score real, dense_score double precision, lexical_score double precision, fused_score double precision, final_score double precision, rank integer)
language plpgsql
security definer
set search_path to ''
set plan_cache_mode to 'force_generic_plan'
set jit to 'off'
as $function$
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
$function$;

revoke execute on function hipocampo_private._dense_leg(tenant uuid, scope uuid[], model text, dims integer, scope_rows bigint, query_embedding extensions.vector, source_types text[], metadata_filter jsonb, settings jsonb, out ids bigint[], out sims double precision[]) from public;
revoke execute on function hipocampo_private._lexical_leg(tenant uuid, scope uuid[], model text, scope_rows bigint, query_text text, source_types text[], metadata_filter jsonb, settings jsonb, dense_ids bigint[], out ids bigint[], out scores double precision[], out dense_scores double precision[], out coverage double precision) from public;
revoke execute on function hipocampo_private._lexical_terms(scope uuid[], model text, query_text text, budget bigint, stopwords jsonb, out t_kb uuid[], out t_lex text[], out t_idf double precision[], out t_avg double precision[], out t_read boolean[]) from public;
revoke execute on function hipocampo_private._search_scope(tenant uuid, query_text text, query_embedding extensions.vector, kb_ids uuid[], embedding_model text, out model text, out dims integer, out scope uuid[], out scope_rows bigint) from public;
