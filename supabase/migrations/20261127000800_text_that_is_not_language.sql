-- Text that is not language never answers (issue 48 §3): a 120 KB file of words drawn from a
-- regulation's own vocabulary turned a correctly answered question into an answer of gibberish
-- with confidence 1.00. A document's text is now measured when its chunks are written
-- (documents.text_measures: words, function-word share, odd transitions after articles and
-- prepositions; _text_measures, trigger chunks_measure_documents_text), and answer_evidence gives
-- the candidates of a document that does not read as language by the rag config's rules
-- (rag.language_*, seeded from config.toml; _reads_as_language) a support of 0: found by search,
-- never evidence. Documents stored before are measured here. A refusal's reason tells the truth
-- (issue 48 §2): no_evidence only when retrieval found nothing, low_confidence when it found
-- passages none of which supports the question, with the closest one (_closest_passage). With a
-- chat model (rag.provider openai | azure) the gate refuses only what has no evidence at all, and
-- the model says whether the evidence answers (issue 48 §4).
-- Functions restated from supabase/schemas/02_config.sql, 03_knowledge_bases.sql and
-- 10_answers.sql (their docblocks live there); re-runnable.

alter table hipocampo_private.documents add column if not exists text_measures jsonb;

create or replace function hipocampo_private._text_measures(content text)
returns jsonb
language sql
stable
parallel safe
security invoker
set search_path = ''
as $$
    with w as (
        -- Words as _plain_words reads them (lower case, unaccented, any script), numbers left out.
        select coalesce(array_agg(x.word order by x.n), '{}') as a
        from regexp_split_to_table(hipocampo_private._plain_words(content), ' ') with ordinality as x (word, n)
        where x.word !~ '^[0-9]*$'
    ),
    lists as (
        select
            array['o', 'a', 'os', 'as', 'um', 'uma', 'uns', 'umas', 'the', 'an'] as det,
            array['de', 'do', 'da', 'dos', 'das', 'em', 'no', 'na', 'nos', 'nas', 'num', 'numa', 'para', 'pra',
                'por', 'pelo', 'pela', 'pelos', 'pelas', 'com', 'sem', 'sob', 'sobre', 'entre', 'ao', 'aos',
                'of', 'in', 'to', 'for', 'on', 'with', 'by', 'from', 'at'] as prep,
            array['e', 'ou', 'mas', 'nem', 'and', 'or'] as conj,
            array['que', 'se', 'como', 'quando', 'onde', 'porque', 'pois', 'nao', 'ja', 'tambem', 'mais',
                'muito', 'sao', 'foi', 'ser', 'ter', 'tem', 'ha', 'seu', 'sua', 'seus', 'suas', 'este',
                'esta', 'esse', 'essa', 'isso', 'isto', 'ele', 'ela', 'eles', 'elas', 'lhe', 'me', 'te',
                'ate', 'is', 'are', 'be', 'that', 'this', 'it', 'was', 'were', 'not'] as other
    ),
    t as (
        select w.a[i] as word, w.a[i + 1] as next
        from w cross join generate_subscripts(w.a, 1) as i
    ),
    flags as (
        select
            t.word = any(l.det || l.prep || l.conj || l.other) as function_word,
            t.next is not null and (t.word = any(l.det) or t.word = any(l.prep)) as head,
            t.word = any(l.det) and t.next = any(l.det) or t.next = any(l.prep) or t.next = any(l.conj) as odd
        from t cross join lists as l
    )
    select jsonb_build_object(
        'words', count(*),
        'function_share', round(coalesce(avg(f.function_word::integer), 0), 3),
        'odd_transitions', case when count(*) filter (where f.head) >= 5 then round(
            (count(*) filter (where f.head and f.odd))::numeric / count(*) filter (where f.head), 3
        ) end
    )
    from flags as f
$$;

create or replace function hipocampo_private._reads_as_language(measures jsonb, rag jsonb)
returns boolean
language sql
immutable
security invoker
set search_path = ''
as $$
    select measures is null
        or coalesce((measures ->> 'words')::integer, 0) < (rag ->> 'language_min_words')::integer
        or (
            (measures ->> 'function_share')::double precision >= (rag ->> 'language_min_function_share')::double precision
            and coalesce((measures ->> 'odd_transitions')::double precision, 0)
            < (rag ->> 'language_max_odd_transitions')::double precision
        )
$$;

-- definer because an ingestion's writer may not update every column of documents, and the
-- measures are the database's, not the writer's.
create or replace function hipocampo_private._measure_documents_text()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
begin
    update hipocampo_private.documents as d
    set text_measures = m.measures
    from (
        select x.document_id, hipocampo_private._text_measures(string_agg(x.content, E'\n' order by x.chunk_index)) as measures
        from (
            select distinct on (c.document_id, c.chunk_index) c.document_id, c.chunk_index, c.content
            from hipocampo_private.chunks as c
            where c.document_id in (select distinct n.document_id from new_rows as n)
            order by c.document_id, c.chunk_index, c.id
        ) as x
        group by x.document_id
    ) as m
    where d.id = m.document_id and d.text_measures is distinct from m.measures;
    return null;
end;
$$;

create or replace function hipocampo.rag_config(kb_id uuid default null, agent text default null, tenant_id uuid default null)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
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
            'cache_ttl_seconds', 'cache_max_entry_bytes', 'language_min_words', 'language_min_function_share',
            'language_max_odd_transitions',
            'rate_limit_per_minute', 'question_min_chars', 'question_max_chars', 'context_prompt',
            'refusal_message', 'answer_format_prompt'
        ]
    ) || jsonb_build_object('kb_ids', to_jsonb(kbs), 'agent', agent, 'tenant_id', t);
end;
$$;

create or replace function hipocampo.answer_evidence(
    query_text text,
    query_embedding extensions.vector,
    kb_ids uuid[] default null,
    agent text default null,
    tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set plan_cache_mode = force_generic_plan
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(answer_evidence.tenant_id);
    cfg jsonb := hipocampo.rag_config(
        case when cardinality(answer_evidence.kb_ids) = 1 then answer_evidence.kb_ids[1] end,
        answer_evidence.agent, t
    );
    kbs uuid[] := coalesce(answer_evidence.kb_ids,
        (select array_agg(x::uuid) from jsonb_array_elements_text(
            case when jsonb_typeof(cfg -> 'kb_ids') = 'array' then cfg -> 'kb_ids' else '[]'::jsonb end
        ) as x));
    top_k integer := (cfg ->> 'top_k')::integer;
    min_score double precision := (cfg ->> 'min_score')::double precision;
    min_confidence double precision := (cfg ->> 'min_confidence')::double precision;
    budget integer := (cfg ->> 'evidence_token_budget')::integer;
    w_sentence double precision := (cfg ->> 'sentence_weight')::double precision;
    s_low double precision := (cfg ->> 'sentence_cosine_low')::double precision;
    -- (a step at s_low when the two cosines are equal)
    s_span double precision := greatest(
        (cfg ->> 'sentence_cosine_high')::double precision - (cfg ->> 'sentence_cosine_low')::double precision, 1e-6
    );
    dedupe double precision := (hipocampo.effective_config(t) -> 'retrieval' ->> 'dedupe_threshold')::double precision;
    candidates jsonb;
    evidence jsonb := '[]'::jsonb;
    conflicts jsonb := '[]'::jsonb;
    losers jsonb := '[]'::jsonb;
    item jsonb;
    used integer := 0;
    n_candidates integer;
    n_filtered integer;
    confidence double precision;
    agreeing integer;
    authoritative boolean;
    reason text;
    babble uuid[];
    judged_by_model boolean := cfg ->> 'provider' in ('openai', 'azure');
begin
    if coalesce(cardinality(kbs), 0) = 0 then
        raise exception 'no knowledge base: pass kb_ids or an agent bound to knowledge bases'
            using errcode = '22023';
    end if;
    if not coalesce((cfg ->> 'enabled')::boolean, true) then
        return jsonb_build_object('decision', 'refuse', 'reason', 'rag_disabled', 'confidence', 0,
            'candidates', 0, 'filtered', 0, 'conflicts', '[]'::jsonb, 'evidence', '[]'::jsonb, 'config', cfg);
    end if;

    select coalesce(jsonb_agg(to_jsonb(h) order by h.rank), '[]'::jsonb) into candidates
    from hipocampo.hybrid_search(
        query_text => answer_evidence.query_text,
        query_embedding => answer_evidence.query_embedding,
        kb_ids => kbs,
        match_count => top_k,
        tenant_id => t
    ) as h;
    -- Near-duplicates of the hits (cosine above retrieval.dedupe_threshold, other active
    -- documents) re-enter as candidates with their twin's scores: retrieval drops them as
    -- duplicates, but two versions of a policy that differ in one number are exactly the
    -- conflicts to see (and the newer version may be the twin that was dropped). The lookup runs
    -- once, materialized: as a function scan inside the join it ran again for every hit.
    with nd as materialized (
        select n.of_chunk_id, n.chunk_id, n.distance
        from hipocampo_private._near_duplicates(
            array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as e), kbs, t, dedupe, 3
        ) as n
    )
    select candidates || coalesce(jsonb_agg(h.e || jsonb_build_object(
               'chunk_id', x.id, 'document_id', x.document_id, 'kb_id', x.kb_id, 'content', x.content,
               'metadata', x.metadata, 'title', d.title, 'source_uri', d.source_uri,
               'source_type', d.source_type, 'trust_score', d.trust_score, 'published_at', d.published_at,
               'near_duplicate_of', h.id
           ) order by h.rank, nd.distance), '[]'::jsonb)
    into candidates
    from (
        select (e ->> 'chunk_id')::bigint as id, (e ->> 'rank')::integer as rank, e
        from jsonb_array_elements(candidates) as e
    ) as h
    inner join nd on nd.of_chunk_id = h.id
    inner join hipocampo_private.chunks as x on x.id = nd.chunk_id
    inner join hipocampo_private.documents as d on d.id = x.document_id and d.status = 'active';
    -- Documents whose text does not read as language (word salad, OCR garbage): found, never evidence.
    select coalesce(array_agg(d.id), '{}') into babble
    from hipocampo_private.documents as d
    where d.id in (select (e ->> 'document_id')::uuid from jsonb_array_elements(candidates) as e)
      and not hipocampo_private._reads_as_language(d.text_measures, cfg);
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
    into candidates
    from jsonb_array_elements(candidates) as e
    cross join lateral (
        select case when w_sentence > 0 then (
            -- (a zero vector's cosine is NaN, which would compare above every number: left out)
            select max(1 - d.d) filter (where d.d <> 'NaN'::double precision)
            from hipocampo_private.chunks as ch
            cross join lateral unnest(ch.sentence_embeddings) as v
            cross join lateral (select v operator(extensions.<=>) answer_evidence.query_embedding as d) as d
            where ch.id = (e ->> 'chunk_id')::bigint
        ) end as sim
    ) as x
    left join hipocampo.evidence_support(
        answer_evidence.query_text,
        array(select (y ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as y),
        cfg -> 'question_stopwords'
    ) as s on s.chunk_id = (e ->> 'chunk_id')::bigint;

    n_candidates := jsonb_array_length(candidates);
    select count(*) into n_filtered from jsonb_array_elements(candidates) as e
    where coalesce((e ->> 'support')::double precision, 0) < min_score;

    conflicts := hipocampo.detect_conflicts(
        answer_evidence.query_text,
        array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as e
              where coalesce((e ->> 'support')::double precision, 0) >= min_score),
        (cfg ->> 'conflict_trust_margin')::double precision,
        cfg -> 'question_stopwords',
        (cfg ->> 'conflict_subject_overlap')::double precision
    );
    -- Resolved conflicts: the losing documents' chunks leave the evidence.
    select coalesce(jsonb_agg(distinct d), '[]'::jsonb) into losers
    from jsonb_array_elements(conflicts) as k, jsonb_array_elements(k -> 'document_ids') as d
    where (k ->> 'resolved')::boolean and d <> k -> 'winner_document_id';

    for item in
        select e from jsonb_array_elements(candidates) as e
        where (
            coalesce((e ->> 'support')::double precision, 0) >= min_score
            -- A chat model judges the evidence itself: every candidate that reads as language.
            or judged_by_model and (e ->> 'document_id')::uuid <> all(babble)
        )
          and not losers @> jsonb_build_array(e -> 'document_id')
        order by (e ->> 'final_score')::double precision desc, (e ->> 'rank')::integer
    loop
        exit when used > 0 and used + (item ->> 'token_count')::integer > budget;
        used := used + (item ->> 'token_count')::integer;
        evidence := evidence || jsonb_build_array(jsonb_build_object(
            'n', jsonb_array_length(evidence) + 1,
            'chunk_id', item -> 'chunk_id', 'document_id', item -> 'document_id', 'kb_id', item -> 'kb_id',
            'title', item -> 'title', 'source_uri', item -> 'source_uri', 'source_type', item -> 'source_type',
            'trust_score', item -> 'trust_score', 'published_at', item -> 'published_at',
            'metadata', item -> 'metadata',
            -- A single chunk over the budget is cut to it (4 characters per token).
            'content', case when used > budget then left(item ->> 'content', budget * 4) else item ->> 'content' end,
            'best_window', item -> 'best_window', 'score', item -> 'final_score',
            'dense_score', item -> 'dense_score', 'lexical_score', item -> 'lexical_score',
            'support', item -> 'support', 'lexical_support', item -> 'lexical_support',
            'sentence_similarity', item -> 'sentence_similarity',
            'token_count', least((item ->> 'token_count')::integer, budget)
        ));
    end loop;

    select max((e ->> 'support')::double precision) into confidence from jsonb_array_elements(evidence) as e;
    select count(distinct e ->> 'document_id') filter (
               where (e ->> 'support')::double precision >= min_confidence
           ),
           coalesce(bool_or(
               (e ->> 'support')::double precision >= min_confidence
               and (cfg -> 'authoritative_source_types') ? (e ->> 'source_type')
               and (e ->> 'trust_score')::double precision >= (cfg ->> 'authoritative_trust')::double precision
           ), false)
    into agreeing, authoritative
    from jsonb_array_elements(evidence) as e;

    reason := case
        -- no_evidence only when retrieval found nothing (above the similarity floor, no matching word).
        when n_candidates = 0 then 'no_evidence'
        when jsonb_array_length(evidence) = 0 then 'low_confidence'
        when exists (select 1 from jsonb_array_elements(conflicts) as k where not (k ->> 'resolved')::boolean)
            then 'conflicting_sources'
        -- With a chat model, whether the evidence answers is the model's to say (not_in_sources).
        when judged_by_model then null
        when coalesce(confidence, 0) < min_confidence then 'low_confidence'
        when agreeing < (cfg ->> 'cross_check_min_documents')::integer and not authoritative
            then 'cross_check_failed'
    end;
    return jsonb_build_object(
        'decision', case when reason is null then 'answer' else 'refuse' end,
        'reason', reason,
        'confidence', coalesce(confidence, 0),
        'candidates', n_candidates,
        'filtered', n_filtered,
        'conflicts', conflicts,
        'evidence', evidence,
        'closest', hipocampo_private._closest_passage(candidates),
        'config', cfg
    );
end;
$$;

create or replace function hipocampo_private._closest_passage(candidates jsonb)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    select jsonb_build_object(
        'chunk_id', e -> 'chunk_id', 'document_id', e -> 'document_id', 'document', e -> 'title',
        'source_uri', e -> 'source_uri', 'article', e -> 'metadata' -> 'article',
        'section', e -> 'metadata' -> 'section',
        'excerpt', left(btrim(regexp_replace(hipocampo.plain_text(e ->> 'content'), '\s+', ' ', 'g')), 300),
        'score', e -> 'final_score', 'support', e -> 'support'
    )
    from jsonb_array_elements(case when jsonb_typeof(candidates) = 'array' then candidates else '[]' end) as e
    where e -> 'near_duplicate_of' is null
    order by (e ->> 'rank')::integer nulls last
    limit 1
$$;

drop trigger if exists chunks_measure_documents_text on hipocampo_private.chunks;

create trigger chunks_measure_documents_text
after insert on hipocampo_private.chunks
referencing new table as new_rows
for each statement execute function hipocampo_private._measure_documents_text();

create or replace function hipocampo.documents_not_language(kb_id uuid, source_uris text[] default null)
returns table (document_id uuid, source_uri text, title text, text_measures jsonb)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(documents_not_language.kb_id);
    rag jsonb := hipocampo.rag_config(k.id, null, k.tenant_id);
begin
    return query
    select d.id, d.source_uri, d.title, d.text_measures
    from hipocampo_private.documents as d
    where d.kb_id = k.id
      and (documents_not_language.source_uris is null or d.source_uri = any(documents_not_language.source_uris))
      and not hipocampo_private._reads_as_language(d.text_measures, rag)
    order by d.source_uri;
end;
$$;

comment on function hipocampo.documents_not_language(uuid, text[]) is
'A knowledge base''s documents whose text does not read as language: found by search, never evidence.';

revoke execute on function hipocampo.documents_not_language(uuid, text[]) from public;
grant execute on function hipocampo.documents_not_language(kb_id uuid, source_uris text[]) to authenticated, service_role;
revoke execute on function hipocampo_private._text_measures(text) from public;
revoke execute on function hipocampo_private._reads_as_language(jsonb, jsonb) from public;
revoke execute on function hipocampo_private._measure_documents_text() from public;
grant execute on function hipocampo_private._reads_as_language(measures jsonb, rag jsonb) to authenticated, service_role;
revoke execute on function hipocampo_private._closest_passage(jsonb) from public;
grant execute on function hipocampo_private._closest_passage(candidates jsonb) to authenticated, service_role;

update hipocampo_private.documents as d
set text_measures = m.measures
from (
    select x.document_id, hipocampo_private._text_measures(string_agg(x.content, E'\n' order by x.chunk_index)) as measures
    from (
        select distinct on (c.document_id, c.chunk_index) c.document_id, c.chunk_index, c.content
        from hipocampo_private.chunks as c
        order by c.document_id, c.chunk_index, c.id
    ) as x
    group by x.document_id
) as m
where d.id = m.document_id and d.text_measures is distinct from m.measures;
