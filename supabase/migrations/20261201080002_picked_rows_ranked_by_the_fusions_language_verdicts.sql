-- picked rows ranked by the fusions language verdicts.
-- issue 60 §1: hybrid_search ranks the picked rows by the language verdicts _fuse already made (languages) instead of judging each picked document again (ten _reads_as_language calls, ~80 us of a FaQuAD search)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo_private._fuse(query_embedding extensions.vector, settings jsonb, dense_ids bigint[], dense_sims double precision[], dense_scores double precision[], lexical_ids bigint[], lexical_scores double precision[], coverage double precision, out ids bigint[], out sims double precision[], out scores double precision[], out fused double precision[], out final double precision[]);

set check_function_bodies = off;

create or replace function hipocampo_private._fuse(query_embedding extensions.vector, settings jsonb, dense_ids bigint[], dense_sims double precision[], dense_scores double precision[], lexical_ids bigint[], lexical_scores double precision[], coverage double precision, out ids bigint[], out sims double precision[], out scores double precision[], out fused double precision[], out final double precision[], out languages boolean[])
returns record
language plpgsql
stable
set search_path to ''
as $function$
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
    s record;      -- what is searched (_search_scope): model, dims, scope
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
        t, s.scope, s.model, s.dims, query_embedding, hybrid_search.source_types, hybrid_search.metadata_filter, p
    );
    lex := hipocampo_private._lexical_leg(
        t, s.scope, s.model, query_text, hybrid_search.source_types, hybrid_search.metadata_filter, p, dense.ids
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

revoke execute on function hipocampo_private._fuse(query_embedding extensions.vector, settings jsonb, dense_ids bigint[], dense_sims double precision[], dense_scores double precision[], lexical_ids bigint[], lexical_scores double precision[], coverage double precision, out ids bigint[], out sims double precision[], out scores double precision[], out fused double precision[], out final double precision[], out languages boolean[]) from public;
