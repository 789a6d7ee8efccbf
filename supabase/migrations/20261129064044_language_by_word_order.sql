-- language by word order.
-- Issue 61 §5: whether a text reads as language is judged by its word order (its adjacent word pairs repeat, and its short and long words alternate, more than the same words in a random order), the same in every language; chunks of a text that does not read as language rank after every chunk that does.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._chunk_own_text(content text, metadata jsonb)
returns text
language sql
immutable parallel safe
set search_path to ''
as $function$
    select case when jsonb_typeof(metadata -> 'overlap_chars') = 'number'
        then substr(content, least(greatest((metadata ->> 'overlap_chars')::numeric, 0), 1e9)::integer + 1)
        else content
    end
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
as $function$
declare
    started timestamptz := clock_timestamp();
    t uuid := hipocampo_private._resolve_tenant(hybrid_search.tenant_id);
    s record;      -- what is searched (_search_scope): model, dims, scope
    p jsonb;       -- the parameters (_search_settings): arguments over the config rows
    dense record;  -- the dense leg: ids, sims
    lex record;    -- the lexical leg: ids, scores, and every chunk it scored: scored_ids, scored_scores
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
        t, s.scope, s.model, s.dims, query_embedding, hybrid_search.source_types, hybrid_search.metadata_filter, p
    );
    lex := hipocampo_private._lexical_leg(
        t, s.scope, s.model, query_text, hybrid_search.source_types, hybrid_search.metadata_filter, p
    );
    f := hipocampo_private._fuse(
        query_embedding, p, dense.ids, dense.sims, lex.ids, lex.scores, lex.scored_ids, lex.scored_scores
    );
    picked := hipocampo_private._mmr_pick(f.ids, f.final, p);

    -- The picked candidates, in pick order, as rows (a plan that does not depend on the arrays'
    -- contents: subscripts in a join condition kept it from being cached); a pick of a document
    -- that does not read as language after every one that does, whatever MMR's diversity chose.
    return query
    select c.id, c.document_id, c.kb_id, c.chunk_index, c.content, c.metadata,
        d.title, d.source_uri, d.source_type, d.author, d.published_at, d.trust_score,
        o.sim, o.score, o.fused, o.final,
        (row_number() over (
            order by hipocampo_private._reads_as_language(d.text_measures, p) desc, o.ord
        ))::integer
    from unnest(
        array(select f.ids[x] from unnest(picked) as x), array(select f.sims[x] from unnest(picked) as x),
        array(select f.scores[x] from unnest(picked) as x), array(select f.fused[x] from unnest(picked) as x),
        array(select f.final[x] from unnest(picked) as x)
    ) with ordinality as o (id, sim, score, fused, final, ord)
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

create or replace function hipocampo.rag_config(kb_id uuid default null::uuid, agent text default null::text, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
stable
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(rag_config.tenant_id);
    b hipocampo_private.agent_bindings;
    kbs uuid[];
    cfg jsonb;
begin
    if agent is not null then
        select * into b from hipocampo_private.agent_bindings as x where x.tenant_id = t and x.name = agent;
        if b.id is null then
            raise exception 'unknown agent binding: %', agent using errcode = 'P0002';
        end if;
    end if;
    kbs := coalesce(b.kb_ids, case when kb_id is null then null else array[kb_id] end);
    -- Knowledge-base overrides apply when the call names one knowledge base.
    cfg := coalesce(hipocampo.effective_config(
        t, case when cardinality(kbs) = 1 then kbs[1] end
    ) -> 'rag', '{}'::jsonb);
    return hipocampo_private._require_config(
        cfg || coalesce(b.rag_overrides, '{}'::jsonb), 'rag', array[
            'enabled', 'provider', 'chat_model', 'azure_deployment', 'azure_api_version', 'api_key_secret',
            'endpoint_secret', 'base_url_secret', 'embedding_model', 'embedding_deployment',
            'embedding_api_version', 'embedding_dimensions', 'embedding_normalize', 'top_k', 'min_score',
            'evidence_token_budget', 'min_confidence', 'question_stopwords', 'cross_check_min_documents',
            'authoritative_trust', 'authoritative_source_types', 'conflict_trust_margin',
            'conflict_subject_overlap', 'sentence_weight', 'sentence_cosine_low', 'sentence_cosine_high',
            'cache_ttl_seconds', 'cache_max_entry_bytes', 'language_min_words', 'language_min_word_order',
            'rate_limit_per_minute', 'question_min_chars', 'question_max_chars', 'context_prompt',
            'refusal_message', 'answer_format_prompt'
        ]
    ) || jsonb_build_object('kb_ids', to_jsonb(kbs), 'agent', agent, 'tenant_id', t);
end;
$function$;

create or replace function hipocampo_private._fuse(query_embedding extensions.vector, settings jsonb, dense_ids bigint[], dense_sims double precision[], lexical_ids bigint[], lexical_scores double precision[], scored_ids bigint[], scored_scores double precision[], out ids bigint[], out sims double precision[], out scores double precision[], out fused double precision[], out final double precision[])
returns record
language plpgsql
stable
set search_path to ''
as $function$
declare
    min_sim double precision := (settings ->> 'min_similarity')::double precision;
    fuse text := settings ->> 'fusion';
    w_dense double precision := (settings ->> 'dense_weight')::double precision;
    w_lex double precision := (settings ->> 'lexical_weight')::double precision;
    rrf_k double precision := (settings ->> 'rrf_k')::double precision;
    rr text := settings ->> 'rerank';
    w_sim double precision := (settings ->> 'trust_recency_similarity_weight')::double precision;
    w_trust double precision := (settings ->> 'trust_recency_trust_weight')::double precision;
    w_fresh double precision := (settings ->> 'trust_recency_freshness_weight')::double precision;
    half_life double precision := (settings ->> 'freshness_half_life_days')::double precision;
begin
    with legs as (
        select coalesce(dl.id, ll.id) as id, dl.sim, ll.score
        from unnest(dense_ids, dense_sims) as dl (id, sim)
        full outer join unnest(lexical_ids, lexical_scores) as ll (id, score) on ll.id = dl.id
    ),
    cand as (
        select lg.id, d.trust_score, d.published_at, c.created_at,
            hipocampo_private._reads_as_language(d.text_measures, settings) as language,
            case
                when lg.sim is not null then lg.sim
                when 1 - (c.embedding operator(extensions.<=>) query_embedding) >= min_sim
                    then 1 - (c.embedding operator(extensions.<=>) query_embedding)
            end as sim,
            coalesce(lg.score, sc.score, 0) as score
        from legs as lg
        inner join hipocampo_private.chunks as c on c.id = lg.id
        inner join hipocampo_private.documents as d on d.id = c.document_id
        left join unnest(scored_ids, scored_scores) as sc (id, score) on lg.score is null and sc.id = lg.id
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
            case fuse
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
            case rr
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
        select rk.id, rk.sim, rk.score, rk.fused, rk.published_at, rk.created_at, case
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
        array_agg(x.final order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id)
    into ids, sims, scores, fused, final
    from placed as x;
end;
$function$;

-- definer because an ingestion's writer may not update every column of documents, and the
-- measures are the database's, not the writer's.
create or replace function hipocampo_private._measure_documents_text()
returns trigger
language plpgsql
security definer
set search_path to ''
as $function$
begin
    update hipocampo_private.documents as d
    set text_measures = m.measures
    from (
        select x.document_id, hipocampo_private._text_measures(string_agg(x.content, E'\n' order by x.chunk_index)) as measures
        from (
            select distinct on (c.document_id, c.chunk_index) c.document_id, c.chunk_index,
                hipocampo_private._chunk_own_text(c.content, c.metadata) as content
            from hipocampo_private.chunks as c
            where c.document_id in (select distinct n.document_id from new_rows as n)
            order by c.document_id, c.chunk_index, c.id
        ) as x
        group by x.document_id
    ) as m
    where d.id = m.document_id and d.text_measures is distinct from m.measures;
    return null;
end;
$function$;

create or replace function hipocampo_private._reads_as_language(measures jsonb, rag jsonb)
returns boolean
language sql
immutable
set search_path to ''
as $function$
    select measures is null
        or coalesce((measures ->> 'words')::integer, 0) < (rag ->> 'language_min_words')::integer
        or coalesce((measures ->> 'word_order')::double precision, 0)
        >= (rag ->> 'language_min_word_order')::double precision
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
            'exact_scan_max_rows', 'candidate_multiplier', 'min_candidates', 'hnsw_ef_search',
            'trust_recency_similarity_weight', 'trust_recency_trust_weight', 'trust_recency_freshness_weight'
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
        'candidates', greatest(k * (r ->> 'candidate_multiplier')::integer, (r ->> 'min_candidates')::integer)
    );
end;
$function$;

create or replace function hipocampo_private._text_measures(content text)
returns jsonb
language sql
stable parallel safe
set search_path to ''
as $function$
    with w as (
        -- Words as _plain_words reads them (lower case, unaccented, any script), numbers left out;
        -- rows, not an array: subscripting a long text array walks it (quadratic in the words).
        select x.word, x.n
        from regexp_split_to_table(hipocampo_private._plain_words(content), ' ') with ordinality as x (word, n)
        where x.word !~ '^[0-9]*$'
    ),
    counts as (
        -- n words; S2 and S3, the sums of each distinct word's count squared and cubed.
        select coalesce(sum(k.n), 0)::double precision as n, coalesce(sum(k.n ^ 2), 0)::double precision as s2,
            coalesce(sum(k.n ^ 3), 0)::double precision as s3
        from (select count(*)::double precision as n from w group by w.word) as k
    ),
    adjacent as (
        select a.word, a.next
        from (select w.word, lead(w.word) over (order by w.n) as next from w) as a
        where a.next is not null
    ),
    pairs as (
        -- o: the sum over the distinct adjacent pairs of k * (k - 1).
        select coalesce(sum(p.k * (p.k - 1)), 0)::double precision as o
        from (select count(*)::double precision as k from adjacent as j group by j.word, j.next) as p
    ),
    lengths as (
        select coalesce(corr(char_length(j.word), char_length(j.next)), 0) as rho from adjacent as j
    ),
    z as (
        select c.n,
            (p.o - (c.s2 / c.n) ^ 2 * ((c.n - 1) / c.n) ^ 2) / sqrt(
                4 * c.s3 ^ 2 / c.n ^ 3 * ((c.n - 1) / c.n) ^ 3 + 2 * (c.s2 / c.n) ^ 2 * ((c.n - 1) / c.n) ^ 2
            ) as pairs,
            -l.rho * sqrt(c.n) as alternation
        from counts as c cross join pairs as p cross join lengths as l
        where c.n >= 3
    )
    select jsonb_build_object(
        'words', c.n::bigint,
        'word_order', round((z.pairs + z.alternation)::numeric, 3),
        'repeated_pairs', round(z.pairs::numeric, 3),
        'length_alternation', round(z.alternation::numeric, 3)
    )
    from counts as c left join z on true
$function$;

revoke execute on function hipocampo_private._chunk_own_text(content text, metadata jsonb) from public;

-- Written by hand (data, which the schema files do not hold): the rules' keys change. The global
-- row gets language_min_word_order (hipocampo db migrate seeds it again from config.toml); the two
-- keys it replaces leave every row that set them; every document's text is measured again.
update hipocampo_private.settings
set
    config = jsonb_set(
        config, '{rag}',
        (config -> 'rag') - 'language_min_function_share' - 'language_max_odd_transitions'
        || case when tenant_id is null then '{"language_min_word_order": 2.5, "language_min_words": 500}'::jsonb else '{}'::jsonb end
    )
where jsonb_typeof(config -> 'rag') = 'object';

update hipocampo_private.knowledge_bases
set
    overrides = jsonb_set(
        overrides, '{rag}', (overrides -> 'rag') - 'language_min_function_share' - 'language_max_odd_transitions'
    )
where
    jsonb_typeof(overrides -> 'rag') = 'object'
    and (overrides -> 'rag') ?| array['language_min_function_share', 'language_max_odd_transitions'];

update hipocampo_private.agent_bindings
set rag_overrides = rag_overrides - 'language_min_function_share' - 'language_max_odd_transitions'
where rag_overrides ?| array['language_min_function_share', 'language_max_odd_transitions'];

update hipocampo_private.documents as d
set text_measures = m.measures
from (
    select x.document_id, hipocampo_private._text_measures(string_agg(x.content, E'\n' order by x.chunk_index)) as measures
    from (
        select distinct on (c.document_id, c.chunk_index)
            c.document_id, c.chunk_index,
            hipocampo_private._chunk_own_text(c.content, c.metadata) as content
        from hipocampo_private.chunks as c
        order by c.document_id, c.chunk_index, c.id
    ) as x
    group by x.document_id
) as m
where d.id = m.document_id and d.text_measures is distinct from m.measures;
