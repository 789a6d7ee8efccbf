-- language verdicts once a search.
-- issue 60 §1: the candidates' language verdicts in one call of _language_verdicts instead of one call a candidate
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._language_verdicts(measures jsonb[], rag jsonb)
returns boolean[]
language sql
immutable
set search_path to ''
as $function$
    select case when measures is not null then array(
        select m.v is null
            or coalesce((m.v ->> 'words')::integer, 0) < (rag ->> 'language_min_words')::integer
            or coalesce((m.v ->> 'word_order')::double precision, 0)
            >= (rag ->> 'language_min_word_order')::double precision
        from unnest(measures) with ordinality as m (v, n)
        order by m.n
    ) end
$function$;

create or replace function hipocampo_private._fuse(query_embedding extensions.vector, settings jsonb, dense_ids bigint[], dense_sims double precision[], dense_scores double precision[], lexical_ids bigint[], lexical_scores double precision[], coverage double precision, out ids bigint[], out sims double precision[], out scores double precision[], out fused double precision[], out final double precision[])
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
            case
                when lg.sim is not null then lg.sim
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

create or replace function hipocampo_private._reads_as_language(measures jsonb, rag jsonb)
returns boolean
language sql
immutable
set search_path to ''
as $function$
    select (hipocampo_private._language_verdicts(array[measures], rag))[1]
$function$;

revoke execute on function hipocampo_private._language_verdicts(measures jsonb[], rag jsonb) from public;
grant execute on function hipocampo_private._language_verdicts(measures jsonb[], rag jsonb) to authenticated;
grant execute on function hipocampo_private._language_verdicts(measures jsonb[], rag jsonb) to service_role;
