-- coverage fusion.
-- Issue 61 §3: the dense leg leans harder the less of the question the best lexical hit covers (coverage: the idf-weighted share of the question's lexemes it holds), by the model's calibrated coverage_dense_boost, and the dense floors are fitted with the paraphrase sets too. A UUID is never read as personal data: the scrubber sets UUIDs aside while it looks for shapes (their digits read as a phone number or a card with a valid check digit).
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo_private._fuse(query_embedding extensions.vector, settings jsonb, dense_ids bigint[], dense_sims double precision[], lexical_ids bigint[], lexical_scores double precision[], scored_ids bigint[], scored_scores double precision[], out ids bigint[], out sims double precision[], out scores double precision[], out fused double precision[], out final double precision[]);

drop function if exists hipocampo_private._lexical_leg(tenant uuid, scope uuid[], model text, query_text text, source_types text[], metadata_filter jsonb, settings jsonb, out ids bigint[], out scores double precision[], out scored_ids bigint[], out scored_scores double precision[]);

set check_function_bodies = off;

create or replace function hipocampo_private._fuse(query_embedding extensions.vector, settings jsonb, dense_ids bigint[], dense_sims double precision[], lexical_ids bigint[], lexical_scores double precision[], scored_ids bigint[], scored_scores double precision[], coverage double precision, out ids bigint[], out sims double precision[], out scores double precision[], out fused double precision[], out final double precision[])
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

create or replace function hipocampo_private._leaning_dense_weight(settings jsonb, coverage double precision)
returns double precision
language sql
immutable parallel safe
set search_path to ''
as $function$
    select (settings ->> 'dense_weight')::double precision * (
        1 + ((settings ->> 'coverage_dense_boost')::double precision - 1)
        * (1 - least(greatest(coalesce(coverage, 1), 0), 1)) ^ (settings ->> 'coverage_exponent')::double precision
    );
$function$;

create or replace function hipocampo_private._lexical_leg(tenant uuid, scope uuid[], model text, query_text text, source_types text[], metadata_filter jsonb, settings jsonb, out ids bigint[], out scores double precision[], out scored_ids bigint[], out scored_scores double precision[], out coverage double precision)
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
    t_total_kb uuid [];
    t_total double precision [];  -- per knowledge base of t_total_kb: the idf of every query lexeme
    lim integer;
begin
    -- Coverage (issue 61 §3): the share of the question's idf the best BM25 hit holds.
    select w.kb_ids, w.totals into t_total_kb, t_total
    from hipocampo_private._question_idf(scope, model, query_text, settings -> 'question_stopwords') as w;

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
        coalesce(array_agg(x.score order by x.score desc, x.chunk_id), '{}'),
        (array_agg(x.matched / nullif(x.total, 0) order by x.score desc, x.chunk_id))[1]
    into scored_ids, scored_scores, coverage
    from (
        select p.chunk_id,
            sum(tm.idf * p.tf * (k1 + 1) / (p.tf + k1 * (1 - b + b * p.chunk_length / tm.avg_len))) as score,
            coalesce(sum(tm.idf) filter (
                where tm.lexeme <> all(coalesce(array(select jsonb_array_elements_text(settings -> 'question_stopwords')), '{}'))
            ), 0) as matched,
            max(tt.total) as total
        from unnest(t_kb, t_lex, t_idf, t_avg) as tm (kb_id, lexeme, idf, avg_len)
        left join unnest(t_total_kb, t_total) as tt (kb_id, total) on tt.kb_id = tm.kb_id
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
end;
$function$;

create or replace function hipocampo_private._question_idf(scope uuid[], model text, query_text text, stopwords jsonb, out kb_ids uuid[], out totals double precision[])
returns record
language sql
stable
set search_path to ''
as $function$
    select coalesce(array_agg(w.kb_id), '{}'), coalesce(array_agg(w.total), '{}')
    from (
        select
            q.kb_id,
            sum(ln(1 + (st.chunk_count - coalesce(ts.doc_freq, 0) + 0.5) / (coalesce(ts.doc_freq, 0) + 0.5))) as total
        from (
            select distinct kb.id as kb_id, u.lexeme
            from hipocampo_private.knowledge_bases as kb
            cross join lateral pg_catalog.unnest(
                pg_catalog.to_tsvector(hipocampo_private.text_search_config(kb.language), query_text)
            ) as u
            where kb.id = any(scope)
              and u.lexeme <> all(coalesce(array(select jsonb_array_elements_text(stopwords)), '{}'))
        ) as q
        inner join hipocampo_private.kb_text_stats as st
            on st.kb_id = q.kb_id and st.embedding_model = model
        left join hipocampo_private.kb_term_stats as ts
            on ts.kb_id = q.kb_id and ts.embedding_model = model and ts.lexeme = q.lexeme
        group by q.kb_id
    ) as w;
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
        query_embedding, p, dense.ids, dense.sims, lex.ids, lex.scores, lex.scored_ids, lex.scored_scores, lex.coverage
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

create or replace function hipocampo_private._calibrated_keys()
returns jsonb
language sql
immutable
set search_path to ''
as $function$
    select '{
        "retrieval": ["min_similarity", "dense_weight", "dedupe_threshold", "coverage_dense_boost"],
        "memory": ["context_threshold", "answer_threshold", "duplicate_cosine"],
        "conversations": ["dense_weight"],
        "rag": ["sentence_weight", "sentence_cosine_low", "sentence_cosine_high", "passages_floor"]
    }'::jsonb
$function$;

create or replace function hipocampo_private._calibrated_range(key text)
returns jsonb
language sql
immutable
set search_path to ''
as $function$
    select case
        when _calibrated_range.key like '%\_weight' then '[0, 100]'::jsonb
        when _calibrated_range.key = 'coverage_dense_boost' then '[1, 100]'::jsonb
        else '[-1, 1]'::jsonb
    end
$function$;

create or replace function hipocampo_private._pii_scrub(input text, out text text, out counts jsonb)
returns record
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
declare
    uuid_shape constant text := '(?<![0-9A-Za-z])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}(?![0-9A-Za-z])';
    aside constant text := 'uuidzqzuuid';  -- letters no step reads (no digit, no O o l I)
    normal text := hipocampo_private._pii_normalize(input);
    ids text [] := '{}';
    pieces text [];
    step record;
    other record;
begin
    if input is null then
        counts := '{}'::jsonb;
        return;
    end if;
    if strpos(normal, aside) = 0 then
        ids := array(select m[1] from regexp_matches(normal, '(' || uuid_shape || ')', 'g') as m);
        normal := regexp_replace(normal, uuid_shape, aside, 'g');
    end if;
    step := hipocampo_private._pii_scrub_spelled(normal);
    text := step.text;
    counts := step.counts;
    step := hipocampo_private._pii_scrub_encoded(text);
    text := step.text;
    counts := hipocampo_private._pii_add(counts, step.counts);
    step := hipocampo_private._pii_find(text);
    -- (only where nine digits or such letters run together, one of them a digit and one a letter)
    if exists (select from regexp_matches(text, '((?<![A-Za-z])[0-9OolI](?:[^0-9A-Za-z\n]{0,3}[0-9OolI]){8,}(?![A-Za-z]))', 'g') as m
        where m[1] ~ '[OolI]' and m[1] ~ '[0-9]') then
        other := hipocampo_private._pii_find(hipocampo_private._pii_letters_as_digits(text));
        if (select coalesce(sum(v::integer), 0) from jsonb_each_text(other.counts) as e (k, v))
            > (select coalesce(sum(v::integer), 0) from jsonb_each_text(step.counts) as e (k, v)) then
            step := other;
        end if;
    end if;
    text := step.text;
    counts := hipocampo_private._pii_add(counts, step.counts);
    if counts = '{}'::jsonb then
        text := input;
        return;
    end if;
    pieces := string_to_array(text, aside);
    if cardinality(ids) > 0 and cardinality(pieces) = cardinality(ids) + 1 then
        text := pieces[1] || (select coalesce(string_agg(u.id || pieces[u.n + 1], '' order by u.n), '')
            from unnest(ids) with ordinality as u (id, n));
    end if;
end;
$function$;

create or replace function hipocampo_private._pii_scrub_jsonb(value jsonb)
returns jsonb
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
begin
    return case jsonb_typeof(value)
        when 'string' then to_jsonb((hipocampo_private._pii_scrub(value #>> '{}')).text)
        when 'object' then coalesce((select jsonb_object_agg(e.key, hipocampo_private._pii_scrub_jsonb(e.value))
            from jsonb_each(value) as e), '{}'::jsonb)
        when 'array' then coalesce((select jsonb_agg(hipocampo_private._pii_scrub_jsonb(e.value) order by e.n)
            from jsonb_array_elements(value) with ordinality as e (value, n)), '[]'::jsonb)
        else value
    end;
end;
$function$;

create or replace function hipocampo_private._pii_scrub_numbers(input text, out text text, out counts jsonb)
returns record
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
declare
    sep constant text := '(?:[^0-9A-Za-z\u00c0-\u024f,\r\n]|</?[A-Za-z][A-Za-z0-9]*>|[ \t]*\r?\n[ \t]*)';
    number_run constant text := '[0-9](?:' || sep || '{1,5}[0-9]|,[0-9]|[0-9])*';
    runs text [] := array(select m[1] from regexp_matches(input, '(' || number_run || ')', 'g') as m);
    gaps text [];
    parts text [];
    run text;
    groups text [];
    seps text [];
    g integer;
    i integer;
    j integer;
    best integer;
    kind text;
    piece text;
    singles boolean;
    c jsonb := '{}'::jsonb;
begin
    text := input;
    counts := c;
    if cardinality(runs) = 0 then
        return;
    end if;
    gaps := regexp_split_to_array(input, number_run);
    parts := array[gaps[1]];
    for r in 1 .. cardinality(runs) loop
        run := runs[r];
        if char_length(regexp_replace(run, '[^0-9]', '', 'g')) < 9 then
            parts[r + 1] := run || gaps[r + 1];
            continue;
        end if;
        -- the "+" / "(" written before the number goes with it
        if right(gaps[r], 1) in ('+', '(') then
            run := right(gaps[r], 1) || run;
            parts[r] := left(parts[r], -1);
        end if;
        groups := array(select m[1] from regexp_matches(run, '([0-9]+)', 'g') as m);
        seps := regexp_split_to_array(run, '[0-9]+');  -- seps[1] prefix, seps[i + 1] after group i
        g := cardinality(groups);
        singles := g between 9 and 19 and (select bool_and(char_length(x) = 1) from unnest(groups) as x);
        piece := seps[1];
        i := 1;
        while i <= g loop
            best := null;
            kind := null;
            -- at most seven groups, or nineteen written one digit per line or as single digits
            j := least(g, i + case when char_length(groups[i]) = 1 and (singles or seps[i + 1] ~ '\n') then 18 else 6 end);
            while j >= i and best is null loop
                if char_length(array_to_string(groups[i:j], '')) between 9 and 19 then
                    kind := hipocampo_private._pii_stretch_kind(groups, seps, i, j);
                    -- A phone number (no check digit) in a run glued to a letter is part of an
                    -- identifier (a code like "AB11-2345-6789"), not a number a person wrote.
                    if kind = 'TELEFONE' and (right(gaps[r], 1) ~ '[A-Za-z]' or left(gaps[r + 1], 1) ~ '[A-Za-z]') then
                        kind := null;
                    end if;
                    if kind is not null then
                        best := j;
                    end if;
                end if;
                j := j - 1;
            end loop;
            if best is null then
                piece := piece || groups[i] || seps[i + 1];
                i := i + 1;
            else
                if i = 1 then
                    piece := '';
                end if;
                piece := piece || '[' || kind || ']' || seps[best + 1];
                c := c || jsonb_build_object(kind, coalesce((c ->> kind)::integer, 0) + 1);
                i := best + 1;
            end if;
        end loop;
        parts[r + 1] := piece || gaps[r + 1];
    end loop;
    text := array_to_string(parts, '');
    counts := c;
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
            'exact_scan_max_rows', 'candidate_multiplier', 'min_candidates', 'hnsw_ef_search',
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

revoke execute on function hipocampo_private._fuse(query_embedding extensions.vector, settings jsonb, dense_ids bigint[], dense_sims double precision[], lexical_ids bigint[], lexical_scores double precision[], scored_ids bigint[], scored_scores double precision[], coverage double precision, out ids bigint[], out sims double precision[], out scores double precision[], out fused double precision[], out final double precision[]) from public;
revoke execute on function hipocampo_private._leaning_dense_weight(settings jsonb, coverage double precision) from public;
revoke execute on function hipocampo_private._lexical_leg(tenant uuid, scope uuid[], model text, query_text text, source_types text[], metadata_filter jsonb, settings jsonb, out ids bigint[], out scores double precision[], out scored_ids bigint[], out scored_scores double precision[], out coverage double precision) from public;
revoke execute on function hipocampo_private._question_idf(scope uuid[], model text, query_text text, stopwords jsonb, out kb_ids uuid[], out totals double precision[]) from public;

-- Written by hand (data, which the schema files do not hold): the calibration gains
-- retrieval.coverage_dense_boost and the global row retrieval.coverage_exponent (hipocampo db
-- migrate seeds both again from config.toml); the calibrations config.toml seeded take its new
-- values (the dense floors fitted with the paraphrase sets too, MiniLM's on-topic floor with the
-- contract too); a model calibrated by
-- set_model_calibration gets boost 1, no lean, until `hipocampo calibrate` measures it.
update hipocampo_private.settings
set config = jsonb_set(config, '{retrieval}', (config -> 'retrieval') || '{"coverage_exponent": 0.25}'::jsonb)
where tenant_id is null and jsonb_typeof(config -> 'retrieval') = 'object';

-- The passages reply's length (issue 61 §6: median within 500 characters): 2 passages of at most
-- 160 characters where the global row still has the defaults before (3 and 200).
update hipocampo_private.settings
set config = jsonb_set(config, '{rag}', (config -> 'rag') || '{"passages_max": 2, "passage_max_chars": 160}'::jsonb)
where
    tenant_id is null
    and config #>> '{rag,passages_max}' = '3'
    and config #>> '{rag,passage_max_chars}' = '200';

update hipocampo_private.model_calibrations
set
    config = jsonb_set(
        config, '{retrieval}',
        (config -> 'retrieval') || case embedding_model
            when 'multilingual-e5-small' then '{"min_similarity": 0.78, "coverage_dense_boost": 12.0}'::jsonb
            else '{"min_similarity": 0.2, "coverage_dense_boost": 1.0}'::jsonb
        end
    ),
    updated_at = now()
where source = 'config.toml' and embedding_model in ('multilingual-e5-small', 'all-MiniLM-L6-v2');

update hipocampo_private.model_calibrations
set config = jsonb_set(config, '{rag,passages_floor}', '0.58'::jsonb), updated_at = now()
where source = 'config.toml' and embedding_model = 'all-MiniLM-L6-v2' and jsonb_typeof(config -> 'rag') = 'object';

update hipocampo_private.model_calibrations
set config = jsonb_set(config, '{retrieval}', (config -> 'retrieval') || '{"coverage_dense_boost": 1.0}'::jsonb)
where jsonb_typeof(config -> 'retrieval') = 'object' and not (config -> 'retrieval') ? 'coverage_dense_boost';
