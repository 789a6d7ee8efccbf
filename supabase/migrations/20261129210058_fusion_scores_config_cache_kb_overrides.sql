-- fusion scores, config cache, kb overrides.
-- issue 60 §1: the lexical leg hands the fusion the BM25 scores of the dense candidates only; the config cache forgets on the knowledge bases' config columns only and _merged_config resolves the tenant; list_knowledge_bases gives the overrides (the hub's reset)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop trigger if exists knowledge_bases_forget_config_cache on hipocampo_private.knowledge_bases;

drop function if exists hipocampo_private._fuse(query_embedding extensions.vector, settings jsonb, dense_ids bigint[], dense_sims double precision[], lexical_ids bigint[], lexical_scores double precision[], scored_ids bigint[], scored_scores double precision[], coverage double precision, out ids bigint[], out sims double precision[], out scores double precision[], out fused double precision[], out final double precision[]);

drop function if exists hipocampo_private._lexical_leg(tenant uuid, scope uuid[], model text, query_text text, source_types text[], metadata_filter jsonb, settings jsonb, out ids bigint[], out scores double precision[], out scored_ids bigint[], out scored_scores double precision[], out coverage double precision);

drop function if exists hipocampo.list_knowledge_bases(tenant_id uuid);

set check_function_bodies = off;

create or replace function hipocampo_private._fuse(query_embedding extensions.vector, settings jsonb, dense_ids bigint[], dense_sims double precision[], dense_scores double precision[], lexical_ids bigint[], lexical_scores double precision[], coverage double precision, out ids bigint[], out sims double precision[], out scores double precision[], out fused double precision[], out final double precision[])
returns record
language plpgsql
stable
set search_path to ''
as $function$
declare
    min_sim double precision := (settings ->> 'min_similarity')::double precision;
    fuse text := settings ->> 'fusion';
    w_dense double precision := hipocampo_private._leaning_dense_weight(settings, coverage);  -- issue 61 §3
    w_lex double precision := (settings ->> 'lexical_weight')::double precision;
    rrf_k double precision := (settings ->> 'rrf_k')::double precision;
    rr text := settings ->> 'rerank';
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
    cand as (
        select lg.id, d.trust_score, d.published_at, c.created_at,
            hipocampo_private._reads_as_language(d.text_measures, settings) as language,
            case
                when lg.sim is not null then lg.sim
                when 1 - (c.embedding operator(extensions.<=>) query_embedding) >= min_sim
                    then 1 - (c.embedding operator(extensions.<=>) query_embedding)
            end as sim,
            lg.score
        from legs as lg
        inner join hipocampo_private.chunks as c on c.id = lg.id
        inner join hipocampo_private.documents as d on d.id = c.document_id
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
    t_kb uuid [];
    t_lex text [];
    t_idf double precision [];
    t_avg double precision [];
    t_counted boolean [];  -- the lexeme counts toward coverage: not a rag.question_stopwords one
    scored_ids bigint [];  -- every chunk of the scope holding a query term, best first (unfiltered)
    scored_scores double precision [];
    lim integer;
begin
    -- One term list per knowledge base: every lexeme of the question with its BM25 idf (a lexeme
    -- the knowledge base lacks at df 0: no postings to score, but part of the question's whole).
    select
        coalesce(array_agg(q.kb_id), '{}'),
        coalesce(array_agg(q.lexeme), '{}'),
        coalesce(array_agg(ln(1 + (st.chunk_count - q.df + 0.5) / (q.df + 0.5))), '{}'),
        coalesce(array_agg(st.token_total::double precision / greatest(st.chunk_count, 1)), '{}'),
        coalesce(array_agg(q.counted), '{}')
    into t_kb, t_lex, t_idf, t_avg, t_counted
    from (
        select kb.id as kb_id, u.lexeme, coalesce(ts.doc_freq, 0) as df,
            not coalesce(settings -> 'question_stopwords', '[]'::jsonb) ? u.lexeme as counted
        from hipocampo_private.knowledge_bases as kb
        cross join lateral pg_catalog.unnest(
            pg_catalog.to_tsvector(hipocampo_private.text_search_config(kb.language), query_text)
        ) as u
        left join hipocampo_private.kb_term_stats as ts
            on ts.kb_id = kb.id and ts.embedding_model = model and ts.lexeme = u.lexeme
        where kb.id = any(scope)
    ) as q
    inner join hipocampo_private.kb_text_stats as st
        on st.kb_id = q.kb_id and st.embedding_model = model;

    select
        coalesce(array_agg(x.chunk_id order by x.score desc, x.chunk_id), '{}'),
        coalesce(array_agg(x.score order by x.score desc, x.chunk_id), '{}'),
        (array_agg(x.matched / nullif(x.total, 0) order by x.score desc, x.chunk_id))[1]
    into scored_ids, scored_scores, coverage
    from (
        select p.chunk_id,
            sum(tm.idf * p.tf * (k1 + 1) / (p.tf + k1 * (1 - b + b * p.chunk_length / tm.avg_len))) as score,
            coalesce(sum(tm.idf) filter (where tm.counted), 0) as matched,
            max(tt.total) as total
        from unnest(t_kb, t_lex, t_idf, t_avg, t_counted) as tm (kb_id, lexeme, idf, avg_len, counted)
        -- Coverage (issue 61 §3): the share of its knowledge base's question idf a chunk holds.
        inner join (
            select w.kb_id, sum(w.idf) filter (where w.counted) as total
            from unnest(t_kb, t_idf, t_counted) as w (kb_id, idf, counted)
            group by w.kb_id
        ) as tt on tt.kb_id = tm.kb_id
        -- One primary-key range per term: "offset 0" keeps the planner from flattening the
        -- lateral subquery into a join it may run as a scan of all the tenant's postings.
        cross join lateral (
            select ps.chunk_id, ps.tf, ps.chunk_length
            from hipocampo_private.kb_postings as ps
            where ps.tenant_id = tenant and ps.kb_id = tm.kb_id and ps.lexeme = tm.lexeme
            offset 0
        ) as p
        group by p.chunk_id
    ) as x;

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
    select coalesce(array_agg(coalesce(sc.score, 0) order by dl.ord), '{}') into dense_scores
    from unnest(dense_ids) with ordinality as dl (id, ord)
    left join unnest(scored_ids, scored_scores) as sc (id, score) on sc.id = dl.id;
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

create or replace function hipocampo.list_knowledge_bases(tenant_id uuid default null::uuid)
returns table (id uuid, name text, description text, tags text[], status text, language text, documents bigint, chunks bigint, updated_at timestamp with time zone, overrides jsonb)
language sql
stable
set search_path to ''
as $function$
    select
        k.id, k.name, k.description, k.tags, k.status, k.language,
        (select count(*) from hipocampo_private.documents as d where d.kb_id = k.id),
        (select count(*) from hipocampo_private.chunks as c where c.kb_id = k.id),
        k.updated_at, k.overrides
    from hipocampo_private.knowledge_bases as k
    where k.tenant_id = hipocampo_private._resolve_tenant(list_knowledge_bases.tenant_id)
    order by k.name
$function$;

create or replace function hipocampo_private._merged_config(tenant_id uuid, kb_id uuid)
returns jsonb
language plpgsql
stable
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(_merged_config.tenant_id);
    active text := (select e.name from hipocampo_private.embedding_models as e where e.active);
    cfg jsonb;
    layer jsonb;
    section text;
begin
    select s.config into cfg from hipocampo_private.settings as s where s.tenant_id is null;
    cfg := coalesce(cfg, '{}'::jsonb);
    for layer in
        select x.config from (
            select 1 as ord, hipocampo_private._calibration() as config
            union all
            -- The tenant's tuning for the active model, then its row: one row read.
            select l.ord, l.config
            from hipocampo_private.settings as s
            cross join lateral (values (2, coalesce(s.tuning -> active, '{}')), (3, s.config)) as l (ord, config)
            where s.tenant_id = t
            union all
            -- The knowledge base's tuning for the active model, then its overrides: one row read.
            select l.ord, l.config
            from hipocampo_private.knowledge_bases as k
            cross join lateral (values (4, coalesce(k.tuning -> active, '{}')), (5, k.overrides)) as l (ord, config)
            where k.id = _merged_config.kb_id and k.tenant_id = t
        ) as x
        order by x.ord
    loop
        for section in select jsonb_object_keys(layer) loop
            if jsonb_typeof(layer -> section) = 'object' then
                cfg := jsonb_set(
                    cfg, array[section],
                    coalesce(cfg -> section, '{}'::jsonb) || (layer -> section)
                );
            else
                cfg := jsonb_set(cfg, array[section], layer -> section);
            end if;
        end loop;
    end loop;
    -- What each calibrated key accepts, beside it as every other key's bound is (the global row
    -- has none for them; _check_config_patch reads the same _calibrated_bounds).
    for section in select jsonb_object_keys(hipocampo_private._calibrated_keys()) loop
        cfg := jsonb_set(cfg, array[section], coalesce(cfg -> section, '{}'::jsonb) || hipocampo_private._calibrated_bounds(section));
    end loop;
    return cfg;
end;
$function$;

create trigger knowledge_bases_forget_config_cache after insert or delete or update of overrides, tuning, tenant_id or truncate on hipocampo_private.knowledge_bases for each statement execute function hipocampo_private._forget_config_cache();

revoke execute on function hipocampo.list_knowledge_bases(tenant_id uuid) from public;
revoke execute on function hipocampo_private._fuse(query_embedding extensions.vector, settings jsonb, dense_ids bigint[], dense_sims double precision[], dense_scores double precision[], lexical_ids bigint[], lexical_scores double precision[], coverage double precision, out ids bigint[], out sims double precision[], out scores double precision[], out fused double precision[], out final double precision[]) from public;
revoke execute on function hipocampo_private._lexical_leg(tenant uuid, scope uuid[], model text, query_text text, source_types text[], metadata_filter jsonb, settings jsonb, dense_ids bigint[], out ids bigint[], out scores double precision[], out dense_scores double precision[], out coverage double precision) from public;
grant execute on function hipocampo.list_knowledge_bases(tenant_id uuid) to authenticated;
grant execute on function hipocampo.list_knowledge_bases(tenant_id uuid) to service_role;
comment on function hipocampo.list_knowledge_bases(pg_catalog.uuid) is 'Knowledge bases of the caller''s tenant with document and chunk counts.';
