-- lexical leg one term list.
-- review: the lexical leg reads the question's lexemes and their idf once; _question_idf goes
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo_private._question_idf(scope uuid[], model text, query_text text, stopwords jsonb, out kb_ids uuid[], out totals double precision[]);

set check_function_bodies = off;

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
    t_counted boolean [];  -- the lexeme counts toward coverage: not a rag.question_stopwords one
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
        select
            kb.id as kb_id,
            u.lexeme,
            coalesce(ts.doc_freq, 0) as df,
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
end;
$function$;
