-- coverage in the chunks language.
-- the fusion's coverage reads the question in the best chunk's own language (_coverage), not the knowledge base's; _question_words returns lexemes only
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo_private._question_words(language text, document_languages text[], query_text text);

set check_function_bodies = off;

create or replace function hipocampo_private._coverage(tenant uuid, chunk_id bigint, query_text text, t_kb uuid[], t_lex text[], t_idf double precision[], settings jsonb)
returns double precision
language sql
stable
set search_path to ''
as $function$
    select sum(tm.idf) filter (where ps.chunk_id is not null) / nullif(sum(tm.idf), 0)
    from hipocampo_private.chunks as c
    cross join lateral (
        select distinct w.lexeme from pg_catalog.unnest(pg_catalog.to_tsvector(c.ts_config, _coverage.query_text)) as w
    ) as ql
    inner join unnest(_coverage.t_kb, _coverage.t_lex, _coverage.t_idf) as tm (kb_id, lexeme, idf)
        on tm.kb_id = c.kb_id and tm.lexeme = ql.lexeme
    left join hipocampo_private.kb_postings as ps
        on ps.tenant_id = _coverage.tenant and ps.kb_id = c.kb_id and ps.lexeme = ql.lexeme and ps.chunk_id = c.id
    where c.id = _coverage.chunk_id
      and not coalesce(_coverage.settings -> 'question_stopwords', '[]'::jsonb) ? ql.lexeme
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
        coalesce(array_agg(st.token_total::double precision / greatest(st.chunk_count, 1)), '{}')
    into t_kb, t_lex, t_idf, t_avg
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

    select
        coalesce(array_agg(x.chunk_id order by x.score desc, x.chunk_id), '{}'),
        coalesce(array_agg(x.score order by x.score desc, x.chunk_id), '{}')
    into scored_ids, scored_scores
    from (
        select p.chunk_id,
            sum(tm.idf * p.tf * (k1 + 1) / (p.tf + k1 * (1 - b + b * p.chunk_length / tm.avg_len))) as score
        from unnest(t_kb, t_lex, t_idf, t_avg) as tm (kb_id, lexeme, idf, avg_len)
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
    select coalesce(array_agg(coalesce(sc.score, 0) order by dl.ord), '{}') into dense_scores
    from unnest(dense_ids) with ordinality as dl (id, ord)
    left join unnest(scored_ids, scored_scores) as sc (id, score) on sc.id = dl.id;
end;
$function$;

create or replace function hipocampo_private._question_words(language text, document_languages text[], query_text text)
returns table (lexeme text)
language sql
immutable
set search_path to ''
as $function$
    select distinct w.lexeme
    from pg_catalog.unnest(
        array[_question_words.language] || _question_words.document_languages
    ) as l (name)
    cross join lateral pg_catalog.unnest(
        pg_catalog.to_tsvector(hipocampo_private.text_search_config(l.name), _question_words.query_text)
    ) as w
$function$;

revoke execute on function hipocampo_private._coverage(tenant uuid, chunk_id bigint, query_text text, t_kb uuid[], t_lex text[], t_idf double precision[], settings jsonb) from public;
revoke execute on function hipocampo_private._question_words(language text, document_languages text[], query_text text) from public;
grant execute on function hipocampo_private._coverage(tenant uuid, chunk_id bigint, query_text text, t_kb uuid[], t_lex text[], t_idf double precision[], settings jsonb) to authenticated;
grant execute on function hipocampo_private._coverage(tenant uuid, chunk_id bigint, query_text text, t_kb uuid[], t_lex text[], t_idf double precision[], settings jsonb) to service_role;
grant execute on function hipocampo_private._question_words(language text, document_languages text[], query_text text) to authenticated;
grant execute on function hipocampo_private._question_words(language text, document_languages text[], query_text text) to service_role;
