-- candidate documents by key.
-- answer_evidence's _candidate_support reads each candidate's document by primary key: the generic plan of d.id in (…) read and measured every document of the tenant (FaQuAD ~20 ms of a ~30 ms call)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._candidate_support(candidates jsonb, query_text text, query_embedding extensions.vector, cfg jsonb, out scored jsonb, out babble uuid[])
returns record
language plpgsql
stable
set search_path to ''
as $function$
declare
    w_sentence double precision := (cfg ->> 'sentence_weight')::double precision;
    s_low double precision := (cfg ->> 'sentence_cosine_low')::double precision;
    -- (a step at s_low when the two cosines are equal)
    s_span double precision := greatest(
        (cfg ->> 'sentence_cosine_high')::double precision - (cfg ->> 'sentence_cosine_low')::double precision, 1e-6
    );
begin
    -- Each candidate's document by primary key (a lateral lookup the planner cannot flatten): as
    -- `d.id in (…)` the generic plan read every document of the tenant and measured each.
    select coalesce(array_agg(distinct d.id), '{}') into babble
    from jsonb_array_elements(candidates) as e
    cross join lateral (
        select x.id, x.text_measures from hipocampo_private.documents as x
        where x.id = (e ->> 'document_id')::uuid
        offset 0
    ) as d
    where not hipocampo_private._reads_as_language(d.text_measures, cfg);
    -- token_count and the sentence cosine by primary key per candidate (scalar subqueries): as a
    -- join the planner read every chunk of the tenant (RLS's tenant index) and hashed them.
    select coalesce(jsonb_agg(e || jsonb_build_object(
               'support', case when (e ->> 'document_id')::uuid = any(babble) then 0 else coalesce(s.support, 0) + coalesce(
                   w_sentence * least(1, greatest(0, (x.sim - s_low) / s_span)), 0
               ) end,
               'lexical_support', coalesce(s.support, 0), 'sentence_similarity', x.sim,
               'best_window', s.best_window,
               'token_count', (
                   select ch.token_count from hipocampo_private.chunks as ch
                   where ch.id = (e ->> 'chunk_id')::bigint
               )
           ) order by (e ->> 'rank')::integer, e ->> 'near_duplicate_of' nulls first), '[]'::jsonb)
    into scored
    from jsonb_array_elements(candidates) as e
    cross join lateral (
        select case when w_sentence > 0 then (
            -- (a zero vector's cosine is NaN, which would compare above every number: left out)
            select max(1 - d.d) filter (where d.d <> 'NaN'::double precision)
            from hipocampo_private.chunks as ch
            cross join lateral unnest(ch.sentence_embeddings) as v
            cross join lateral (select v operator(extensions.<=>) _candidate_support.query_embedding as d) as d
            where ch.id = (e ->> 'chunk_id')::bigint
        ) end as sim
    ) as x
    left join hipocampo.evidence_support(
        _candidate_support.query_text,
        array(select (y ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as y),
        cfg -> 'question_stopwords'
    ) as s on s.chunk_id = (e ->> 'chunk_id')::bigint;
end;
$function$;
