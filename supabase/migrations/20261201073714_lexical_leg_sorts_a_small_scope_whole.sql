-- lexical leg sorts a small scope whole.
-- issue 60 §1: a scope of at most 4 x candidates chunks is scored and sorted whole (the window of _bm25_read cost a small knowledge base's search 0.1 ms)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo_private._lexical_terms(scope uuid[], model text, query_text text, budget bigint, stopwords jsonb, out t_kb uuid[], out t_lex text[], out t_idf double precision[], out t_avg double precision[], out t_read boolean[]);

set check_function_bodies = off;

create or replace function hipocampo_private._lexical_terms(scope uuid[], model text, query_text text, budget bigint, stopwords jsonb, out t_kb uuid[], out t_lex text[], out t_idf double precision[], out t_avg double precision[], out t_read boolean[], out chunks bigint)
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

    select coalesce(sum(st.chunk_count), 0) into chunks
    from hipocampo_private.kb_text_stats as st
    where st.kb_id = any(scope) and st.embedding_model = model;

    select coalesce(array_agg(x.r order by x.o), '{}') into t_read
    from (
        select t.o, budget = 0
            or coalesce(sum(t.df) over (order by t.o rows between unbounded preceding and 1 preceding), 0) = 0
            or sum(t.df) over (order by t.o) <= budget as r
        from unnest(t_df) with ordinality as t (df, o)
    ) as x;
end;
$function$;

create or replace function hipocampo_private._bm25_read(tenant uuid, t_kb uuid[], t_lex text[], t_idf double precision[], t_avg double precision[], t_read boolean[], k1 double precision, b double precision, keep integer, dense_ids bigint[], out ids bigint[], out scores double precision[])
returns record
language plpgsql
stable
set search_path to ''
as $function$
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
    t_read boolean [];  -- the term's postings are read in full
    scored_ids bigint [];  -- the chunks scored, best first (unfiltered)
    scored_scores double precision [];
    keep integer;  -- how many of the best scored chunks the filters see first (null: every one)
    chunks bigint;  -- the scope's
begin
    -- The question's terms, the rarest first, and which are read in full (_lexical_terms).
    select tl.t_kb, tl.t_lex, tl.t_idf, tl.t_avg, tl.t_read, tl.chunks into t_kb, t_lex, t_idf, t_avg, t_read, chunks
    from hipocampo_private._lexical_terms(
        scope, model, query_text, (settings ->> 'lexical_postings_budget')::bigint, settings -> 'question_stopwords'
    ) as tl;
    -- Every one when the scope holds no more (one sort), or with a source or metadata filter
    -- (likely to leave few of the best).
    keep := case when source_types is null and metadata_filter is null and chunks > n_cand * 4 then n_cand * 4 end;

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

revoke execute on function hipocampo_private._lexical_terms(scope uuid[], model text, query_text text, budget bigint, stopwords jsonb, out t_kb uuid[], out t_lex text[], out t_idf double precision[], out t_avg double precision[], out t_read boolean[], out chunks bigint) from public;
