-- closest passage reads as language.
-- Issue 61 §5: a refusal's closest passage is never of a document that does not read as language.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo_private._closest_passage(candidates jsonb);

set check_function_bodies = off;

create or replace function hipocampo_private._closest_passage(candidates jsonb, babble uuid[])
returns jsonb
language sql
stable
set search_path to ''
as $function$
    select jsonb_build_object(
        'chunk_id', e -> 'chunk_id', 'document_id', e -> 'document_id', 'document', e -> 'title',
        'source_uri', e -> 'source_uri', 'article', e -> 'metadata' -> 'article',
        'section', e -> 'metadata' -> 'section',
        'excerpt', left(btrim(regexp_replace(hipocampo.plain_text(e ->> 'content'), '\s+', ' ', 'g')), 300),
        'score', e -> 'final_score', 'support', e -> 'support'
    )
    from jsonb_array_elements(case when jsonb_typeof(candidates) = 'array' then candidates else '[]' end) as e
    where e -> 'near_duplicate_of' is null and not coalesce((e ->> 'document_id')::uuid = any(babble), false)
    order by (e ->> 'rank')::integer nulls last
    limit 1
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
    passages jsonb;  -- _evidence_passages: top_similarity, passages, reply
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
    passages := hipocampo_private._evidence_passages(support.scored, support.babble, cfg);
    if judged_by_model or verdict.reason is null or verdict.reason not in ('low_confidence', 'cross_check_failed') then
        passages := passages || jsonb_build_object('passages', '[]'::jsonb, 'reply', null);
    end if;
    return jsonb_build_object(
        'decision', case
            when verdict.reason is null then 'answer'
            when jsonb_array_length(passages -> 'passages') > 0 then 'passages'
            else 'refuse'
        end,
        'top_similarity', passages -> 'top_similarity',
        'passages', passages -> 'passages',
        'reply', passages -> 'reply',
        'reason', verdict.reason,
        'confidence', coalesce(verdict.confidence, 0),
        'candidates', jsonb_array_length(support.scored),
        'filtered', (
            select count(*) from jsonb_array_elements(support.scored) as e
            where coalesce((e ->> 'support')::double precision, 0) < min_score
        ),
        'conflicts', conflicts,
        'evidence', evidence,
        'closest', hipocampo_private._closest_passage(support.scored, support.babble),
        'config', cfg
    );
end;
$function$;

revoke execute on function hipocampo_private._closest_passage(candidates jsonb, babble uuid[]) from public;
grant execute on function hipocampo_private._closest_passage(candidates jsonb, babble uuid[]) to authenticated;
grant execute on function hipocampo_private._closest_passage(candidates jsonb, babble uuid[]) to service_role;
