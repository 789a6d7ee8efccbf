-- chat model rule decided once.
-- Review: answer_evidence decides once whether a chat model judges the evidence and passes it to _evidence_within_budget and _evidence_verdict (the rule stood in both); same results.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo_private._evidence_verdict(n_candidates integer, evidence jsonb, conflicts jsonb, cfg jsonb, out reason text, out confidence double precision);

drop function if exists hipocampo_private._evidence_within_budget(scored jsonb, conflicts jsonb, babble uuid[], cfg jsonb);

set check_function_bodies = off;

create or replace function hipocampo_private._evidence_verdict(n_candidates integer, evidence jsonb, conflicts jsonb, cfg jsonb, judged_by_model boolean, out reason text, out confidence double precision)
returns record
language plpgsql
immutable
set search_path to ''
as $function$
declare
    min_confidence double precision := (cfg ->> 'min_confidence')::double precision;
    agreeing integer;
    authoritative boolean;
begin
    select max((e ->> 'support')::double precision),
           count(distinct e ->> 'document_id') filter (where (e ->> 'support')::double precision >= min_confidence),
           coalesce(bool_or(
               (e ->> 'support')::double precision >= min_confidence
               and (cfg -> 'authoritative_source_types') ? (e ->> 'source_type')
               and (e ->> 'trust_score')::double precision >= (cfg ->> 'authoritative_trust')::double precision
           ), false)
    into confidence, agreeing, authoritative
    from jsonb_array_elements(evidence) as e;
    reason := case
        when n_candidates = 0 then 'no_evidence'
        when jsonb_array_length(evidence) = 0 then 'low_confidence'
        when exists (select 1 from jsonb_array_elements(conflicts) as k where not (k ->> 'resolved')::boolean)
            then 'conflicting_sources'
        when judged_by_model then null
        when coalesce(confidence, 0) < min_confidence then 'low_confidence'
        when agreeing < (cfg ->> 'cross_check_min_documents')::integer and not authoritative
            then 'cross_check_failed'
    end;
end;
$function$;

create or replace function hipocampo_private._evidence_within_budget(scored jsonb, conflicts jsonb, babble uuid[], cfg jsonb, judged_by_model boolean)
returns jsonb
language plpgsql
immutable
set search_path to ''
as $function$
declare
    min_score double precision := (cfg ->> 'min_score')::double precision;
    budget integer := (cfg ->> 'evidence_token_budget')::integer;
    losers jsonb;
    evidence jsonb := '[]'::jsonb;
    item jsonb;
    used integer := 0;
begin
    -- Resolved conflicts: the losing documents' chunks leave the evidence.
    select coalesce(jsonb_agg(distinct d), '[]'::jsonb) into losers
    from jsonb_array_elements(conflicts) as k, jsonb_array_elements(k -> 'document_ids') as d
    where (k ->> 'resolved')::boolean and d <> k -> 'winner_document_id';
    for item in
        select e from jsonb_array_elements(scored) as e
        where (
            coalesce((e ->> 'support')::double precision, 0) >= min_score
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
            'content', case when used > budget then left(item ->> 'content', budget * 4) else item ->> 'content' end,
            'best_window', item -> 'best_window', 'score', item -> 'final_score',
            'dense_score', item -> 'dense_score', 'lexical_score', item -> 'lexical_score',
            'support', item -> 'support', 'lexical_support', item -> 'lexical_support',
            'sentence_similarity', item -> 'sentence_similarity',
            'token_count', least((item ->> 'token_count')::integer, budget)
        ));
    end loop;
    return evidence;
end;
$function$;

create or replace function hipocampo.answer_evidence(query_text text, query_embedding extensions.vector, kb_ids uuid[] default null::uuid[], agent text default null::text, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
set search_path to ''
set plan_cache_mode to 'force_generic_plan'
as $function$
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
    min_score double precision := (cfg ->> 'min_score')::double precision;
    -- With a chat model (rag.provider openai | azure) the model judges whether the evidence answers.
    judged_by_model boolean := cfg ->> 'provider' in ('openai', 'azure');
    candidates jsonb;
    support record;  -- _candidate_support: scored, babble
    conflicts jsonb;
    evidence jsonb;
    verdict record;  -- _evidence_verdict: reason, confidence
begin
    if coalesce(cardinality(kbs), 0) = 0 then
        raise exception 'no knowledge base: pass kb_ids or an agent bound to knowledge bases'
            using errcode = '22023';
    end if;
    if not coalesce((cfg ->> 'enabled')::boolean, true) then
        return jsonb_build_object('decision', 'refuse', 'reason', 'rag_disabled', 'confidence', 0,
            'candidates', 0, 'filtered', 0, 'conflicts', '[]'::jsonb, 'evidence', '[]'::jsonb, 'config', cfg);
    end if;

    candidates := hipocampo_private._evidence_candidates(
        answer_evidence.query_text, answer_evidence.query_embedding, kbs, (cfg ->> 'top_k')::integer, t,
        (hipocampo.effective_config(t) -> 'retrieval' ->> 'dedupe_threshold')::double precision
    );
    support := hipocampo_private._candidate_support(
        candidates, answer_evidence.query_text, answer_evidence.query_embedding, cfg
    );
    conflicts := hipocampo.detect_conflicts(
        answer_evidence.query_text,
        array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(support.scored) as e
              where coalesce((e ->> 'support')::double precision, 0) >= min_score),
        (cfg ->> 'conflict_trust_margin')::double precision,
        cfg -> 'question_stopwords',
        (cfg ->> 'conflict_subject_overlap')::double precision
    );
    evidence := hipocampo_private._evidence_within_budget(
        support.scored, conflicts, support.babble, cfg, judged_by_model
    );
    verdict := hipocampo_private._evidence_verdict(
        jsonb_array_length(support.scored), evidence, conflicts, cfg, judged_by_model
    );
    return jsonb_build_object(
        'decision', case when verdict.reason is null then 'answer' else 'refuse' end,
        'reason', verdict.reason,
        'confidence', coalesce(verdict.confidence, 0),
        'candidates', jsonb_array_length(support.scored),
        'filtered', (
            select count(*) from jsonb_array_elements(support.scored) as e
            where coalesce((e ->> 'support')::double precision, 0) < min_score
        ),
        'conflicts', conflicts,
        'evidence', evidence,
        'closest', hipocampo_private._closest_passage(support.scored),
        'config', cfg
    );
end;
$function$;

revoke execute on function hipocampo_private._evidence_verdict(n_candidates integer, evidence jsonb, conflicts jsonb, cfg jsonb, judged_by_model boolean, out reason text, out confidence double precision) from public;
revoke execute on function hipocampo_private._evidence_within_budget(scored jsonb, conflicts jsonb, babble uuid[], cfg jsonb, judged_by_model boolean) from public;
grant execute on function hipocampo_private._evidence_verdict(n_candidates integer, evidence jsonb, conflicts jsonb, cfg jsonb, judged_by_model boolean, out reason text, out confidence double precision) to authenticated;
grant execute on function hipocampo_private._evidence_verdict(n_candidates integer, evidence jsonb, conflicts jsonb, cfg jsonb, judged_by_model boolean, out reason text, out confidence double precision) to service_role;
grant execute on function hipocampo_private._evidence_within_budget(scored jsonb, conflicts jsonb, babble uuid[], cfg jsonb, judged_by_model boolean) to authenticated;
grant execute on function hipocampo_private._evidence_within_budget(scored jsonb, conflicts jsonb, babble uuid[], cfg jsonb, judged_by_model boolean) to service_role;
