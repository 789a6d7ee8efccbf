-- answers with passages.
-- Issue 61 §1: a question the gate cannot confirm but whose passages reach the model's on-topic floor is answered with cited passages (answer_source PASSAGES).
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

alter table hipocampo_private.answer_audit drop constraint "answer_audit_source_check";

alter table hipocampo_private.answer_audit add constraint answer_audit_source_check check ((answer_source = any(array['CACHE'::text, 'SESSION'::text, 'LLM'::text, 'EXTRACTIVE'::text, 'PASSAGES'::text, 'REFUSAL'::text]))) not valid;

alter table hipocampo_private.answer_audit validate constraint "answer_audit_source_check";

set check_function_bodies = off;

create or replace function hipocampo_private._evidence_passages(scored jsonb, babble uuid[], cfg jsonb)
returns jsonb
language sql
immutable
set search_path to ''
as $function$
    with
    readable as (
        select e, (e ->> 'rank')::integer as rank, (e ->> 'dense_score')::double precision as sim
        from jsonb_array_elements(case when jsonb_typeof(scored) = 'array' then scored else '[]' end) as e
        where e -> 'near_duplicate_of' is null and not coalesce((e ->> 'document_id')::uuid = any(babble), false)
    ),
    picked as (
        select r.e, row_number() over (order by r.rank, r.e ->> 'chunk_id') as n
        from readable as r
        where r.sim >= (cfg ->> 'passages_floor')::double precision
        order by r.rank, r.e ->> 'chunk_id'
        limit greatest(coalesce((cfg ->> 'passages_max')::integer, 3), 1)
    ),
    quoted as (
        select p.n, p.e, x.excerpt,
            concat_ws(', ', nullif(btrim(p.e ->> 'title'), ''),
                nullif(coalesce(p.e -> 'metadata' ->> 'question', p.e -> 'metadata' ->> 'section'), p.e ->> 'title'),
                case when position(coalesce(p.e -> 'metadata' ->> 'article', '') in
                        coalesce(p.e -> 'metadata' ->> 'section', '')) = 0
                    then p.e -> 'metadata' ->> 'article' end
            ) as unit
        from picked as p
        -- the window as the chunk writes it (evidence_support's is lowercased): found in the content
        cross join lateral (
            select nullif(btrim(p.e ->> 'best_window'), '') as window_text,
                strpos(lower(p.e ->> 'content'), lower(nullif(btrim(p.e ->> 'best_window'), ''))) as at
        ) as b
        cross join lateral (
            select btrim(regexp_replace(hipocampo.plain_text(coalesce(
                case when b.at > 0 then substr(p.e ->> 'content', b.at, char_length(b.window_text)) end,
                b.window_text, p.e ->> 'content'
            )), '\s+', ' ', 'g')) as whole
        ) as w
        cross join lateral (
            select case
                when char_length(w.whole) <= (cfg ->> 'passage_max_chars')::integer then w.whole
                else regexp_replace(left(w.whole, (cfg ->> 'passage_max_chars')::integer - 1), '\s+\S*$', '') || '…'
            end as excerpt
        ) as x
    )
    select jsonb_build_object(
        'top_similarity', (select max(r.sim) from readable as r),
        'passages', coalesce((
            select jsonb_agg(jsonb_build_object(
                'n', q.n, 'chunk_id', q.e -> 'chunk_id', 'document', q.e -> 'title',
                'document_id', q.e -> 'document_id', 'source_uri', q.e -> 'source_uri', 'excerpt', q.excerpt,
                'score', coalesce(q.e -> 'final_score', '0'::jsonb), 'support', coalesce(q.e -> 'support', '0'::jsonb),
                'article', q.e -> 'metadata' -> 'article', 'section', q.e -> 'metadata' -> 'section'
            ) order by q.n)
            from quoted as q
        ), '[]'::jsonb),
        'reply', (
            select cfg ->> 'passages_message' || string_agg(
                E'\n[' || q.n || '] ' || q.unit || ': “' || q.excerpt || '”', '' order by q.n
            )
            from quoted as q
        )
    )
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
        'closest', hipocampo_private._closest_passage(support.scored),
        'config', cfg
    );
end;
$function$;

-- noqa: disable=all
create or replace view "hipocampo"."rag_answer_stats" as  SELECT tenant_id,
    date_trunc('day'::text, created_at) AS day,
    count(*) AS query_count,
    percentile_cont((0.5)::double precision) WITHIN GROUP (ORDER BY ((latency_ms)::double precision)) AS latency_p50_ms,
    percentile_cont((0.95)::double precision) WITHIN GROUP (ORDER BY ((latency_ms)::double precision)) AS latency_p95_ms,
    percentile_cont((0.99)::double precision) WITHIN GROUP (ORDER BY ((latency_ms)::double precision)) AS latency_p99_ms,
    round(avg(cardinality(evidence_chunk_ids)), 2) AS results_per_query,
    round(((sum(filtered))::numeric / (NULLIF(sum(candidates), 0))::numeric), 4) AS filtered_rate,
    count(*) FILTER (WHERE (answer_source = 'REFUSAL'::text)) AS refusals,
    round(((count(*) FILTER (WHERE (answer_source = 'REFUSAL'::text)))::numeric / (count(*))::numeric), 4) AS refusal_rate,
    round(((count(*) FILTER (WHERE (answer_source = 'CACHE'::text)))::numeric / (count(*))::numeric), 4) AS cache_hit_rate,
    round(((count(*) FILTER (WHERE (answer_source = 'PASSAGES'::text)))::numeric / (count(*))::numeric), 4) AS passages_rate
   FROM hipocampo_private.answer_audit a
  GROUP BY tenant_id, (date_trunc('day'::text, created_at));
-- noqa: enable=all


create or replace function hipocampo_private._calibrated_keys()
returns jsonb
language sql
immutable
set search_path to ''
as $function$
    select '{
        "retrieval": ["min_similarity", "dense_weight", "dedupe_threshold"],
        "memory": ["context_threshold", "answer_threshold", "duplicate_cosine"],
        "conversations": ["dense_weight"],
        "rag": ["sentence_weight", "sentence_cosine_low", "sentence_cosine_high", "passages_floor"]
    }'::jsonb
$function$;

revoke execute on function hipocampo_private._evidence_passages(scored jsonb, babble uuid[], cfg jsonb) from public;
grant execute on function hipocampo_private._evidence_passages(scored jsonb, babble uuid[], cfg jsonb) to authenticated;
grant execute on function hipocampo_private._evidence_passages(scored jsonb, babble uuid[], cfg jsonb) to service_role;
alter view hipocampo.rag_answer_stats set (security_invoker = true);
