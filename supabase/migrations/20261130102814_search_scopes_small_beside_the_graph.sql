-- search scopes small beside the graph.
-- a scope small beside the model's HNSW graph is scanned exactly (retrieval.hnsw_visit_cost, _exact_scan_max), and the planner knows a knowledge base belongs to one tenant (extended statistics on chunks), from the million chunks in 1,000 tenants of benchmarks/tenants.py
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._exact_scan_max(scope_rows bigint, model text, settings jsonb)
returns bigint
language sql
stable
set search_path to ''
as $function$
    select case when coalesce(
        _exact_scan_max.scope_rows::double precision * _exact_scan_max.scope_rows
        <= (_exact_scan_max.settings ->> 'hnsw_visit_cost')::double precision
        * (_exact_scan_max.settings ->> 'candidates')::integer * (
            select c.reltuples from pg_catalog.pg_class as c
            where c.oid = pg_catalog.to_regclass(
                'hipocampo_private.' || hipocampo_private._model_index_name('chunks', _exact_scan_max.model)
            )
        ), false)
        then greatest(_exact_scan_max.scope_rows, (_exact_scan_max.settings ->> 'exact_scan_max_rows')::bigint)
        else (_exact_scan_max.settings ->> 'exact_scan_max_rows')::bigint
    end
$function$;

create or replace function hipocampo_private._dense_leg(tenant uuid, scope uuid[], model text, dims integer, query_embedding extensions.vector, source_types text[], metadata_filter jsonb, settings jsonb, out ids bigint[], out sims double precision[])
returns record
language plpgsql
set search_path to ''
as $function$
declare
    n_cand integer := (settings ->> 'candidates')::integer;
    min_sim double precision := (settings ->> 'min_similarity')::double precision;
    exact_max bigint;
    scope_rows bigint;
    dense_sql text;
    lim integer;
    above bigint;
begin
    select coalesce(sum(st.chunk_count), 0) into scope_rows from hipocampo_private.kb_text_stats as st
    where st.kb_id = any(scope) and st.embedding_model = model;
    exact_max := hipocampo_private._exact_scan_max(scope_rows, model, settings);
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
            'coverage_dense_boost', 'coverage_exponent'
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

revoke execute on function hipocampo_private._exact_scan_max(scope_rows bigint, model text, settings jsonb) from public;
grant execute on function hipocampo_private._exact_scan_max(scope_rows bigint, model text, settings jsonb) to authenticated;
grant execute on function hipocampo_private._exact_scan_max(scope_rows bigint, model text, settings jsonb) to service_role;
create statistics hipocampo_private.chunks_scope_stats (dependencies) on tenant_id, kb_id from hipocampo_private.chunks;

-- Written by hand (data, which the schema files do not hold): the global row gains
-- retrieval.hnsw_visit_cost (hipocampo db migrate seeds it again from config.toml), so a database
-- upgraded by `supabase db push` alone keeps searching (_search_settings requires the key).
update hipocampo_private.settings
set config = jsonb_set(config, '{retrieval}', (config -> 'retrieval') || '{"hnsw_visit_cost": 4.5}'::jsonb)
where tenant_id is null and jsonb_typeof(config -> 'retrieval') = 'object' and config #> '{retrieval,hnsw_visit_cost}' is null;
