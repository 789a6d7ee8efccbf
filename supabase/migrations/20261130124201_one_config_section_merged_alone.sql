-- one config section merged alone.
-- rag_config, answer_evidence's dedupe threshold and _near_duplicates read one section merged alone (_effective_section: _config_section with the active model, and the calibrated bounds): effective_config merged every section, about 1 ms in each transaction of an ask
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._effective_section(tenant_id uuid, kb_id uuid, section text)
returns jsonb
language sql
stable
set search_path to ''
as $function$
    select hipocampo_private._config_section(
        _effective_section.tenant_id, _effective_section.kb_id, _effective_section.section,
        (select e.name from hipocampo_private.embedding_models as e where e.active)
    ) || hipocampo_private._calibrated_bounds(_effective_section.section)
$function$;

create or replace function hipocampo.answer_evidence(query_text text, query_embedding extensions.vector, kb_ids uuid[] default null::uuid[], agent text default null::text, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
set search_path to ''
set plan_cache_mode to 'force_generic_plan'
set jit to 'off'
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
        (hipocampo_private._effective_section(t, null, 'retrieval') ->> 'dedupe_threshold')::double precision
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

create or replace function hipocampo.rag_config(kb_id uuid default null::uuid, agent text default null::text, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
stable
set search_path to ''
set jit to 'off'
as $function$
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
    cfg := hipocampo_private._effective_section(t, case when cardinality(kbs) = 1 then kbs[1] end, 'rag');
    return hipocampo_private._require_config(
        cfg || coalesce(b.rag_overrides, '{}'::jsonb), 'rag', array[
            'enabled', 'provider', 'chat_model', 'azure_deployment', 'azure_api_version', 'api_key_secret',
            'endpoint_secret', 'base_url_secret', 'embedding_model', 'embedding_deployment',
            'embedding_api_version', 'embedding_dimensions', 'embedding_normalize', 'top_k', 'min_score',
            'evidence_token_budget', 'min_confidence', 'question_stopwords', 'cross_check_min_documents',
            'authoritative_trust', 'authoritative_source_types', 'conflict_trust_margin',
            'conflict_subject_overlap', 'sentence_weight', 'sentence_cosine_low', 'sentence_cosine_high',
            'cache_ttl_seconds', 'cache_max_entry_bytes', 'language_min_words', 'language_min_word_order',
            'rate_limit_per_minute', 'question_min_chars', 'question_max_chars', 'context_prompt',
            'refusal_message', 'answer_format_prompt'
        ]
    ) || jsonb_build_object('kb_ids', to_jsonb(kbs), 'agent', agent, 'tenant_id', t);
end;
$function$;

create or replace function hipocampo_private._near_duplicates(chunk_ids bigint[], kb_ids uuid[], tenant uuid, min_cosine double precision, per_chunk integer default 3)
returns table (of_chunk_id bigint, chunk_id bigint, distance double precision)
language plpgsql
stable
set search_path to ''
as $function$
declare
    c record;
    dims integer;
    scope_rows bigint;
    exact_max bigint := (hipocampo_private._effective_section(_near_duplicates.tenant, null, 'retrieval')
                         ->> 'exact_scan_max_rows')::bigint;
    cast_to text;
begin
    for c in
        select ch.id, ch.document_id, ch.embedding, ch.embedding_model
        from hipocampo_private.chunks as ch
        where ch.id = any(_near_duplicates.chunk_ids)
    loop
        select e.dims into dims from hipocampo_private.embedding_models as e where e.name = c.embedding_model;
        select coalesce(sum(st.chunk_count), 0) into scope_rows from hipocampo_private.kb_text_stats as st
        where st.kb_id = any(_near_duplicates.kb_ids) and st.embedding_model = c.embedding_model;
        if scope_rows <= exact_max and dims <= 640 then
            -- A small scope, a model of at most 640 dimensions: the exact scan from the covering
            -- index chunks_scope_vectors_idx (index-only; its predicate repeated), as a static
            -- statement, so its plan is cached (a dynamic one was planned for every hit).
            return query
            select c.id, y.id, y.distance from (
                select c2.id, c2.embedding operator(extensions.<=>) c.embedding as distance
                from (select distinct unnest(_near_duplicates.kb_ids)) as sc (kb_id)
                -- One index range per knowledge base, as _dense_leg's exact scan (with
                -- "kb_id = any(…)" the generic plan read the whole table when one tenant held it).
                cross join lateral (
                    select ch.id, ch.document_id, ch.embedding
                    from hipocampo_private.chunks as ch
                    where ch.tenant_id = _near_duplicates.tenant and ch.kb_id = sc.kb_id
                      and ch.embedding_model = c.embedding_model and extensions.vector_dims(ch.embedding) <= 640
                    offset 0
                ) as c2
                where c2.document_id <> c.document_id and c2.id <> all(_near_duplicates.chunk_ids)
                order by c2.embedding operator(extensions.<=>) c.embedding
                limit _near_duplicates.per_chunk
            ) as y
            where y.distance < 1 - _near_duplicates.min_cosine
            order by y.distance;
            continue;
        end if;
        -- A large scope: the model's HNSW index through the typed cast (dynamic: the cast names
        -- the dims). A wider model's small scope: the same statement without the cast, an exact
        -- scan of the heap.
        cast_to := '';
        if scope_rows > exact_max then
            cast_to := format('::extensions.vector(%s)', dims);
            perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
        end if;
        return query execute format(
            'select $1, y.id, y.distance from ('
            'select c2.id, c2.embedding%1$s operator(extensions.<=>) $2 as distance '
            'from hipocampo_private.chunks as c2 '
            'where c2.tenant_id = $3 and c2.kb_id = any($4) and c2.embedding_model = $5 '
            'and c2.document_id <> $6 and c2.id <> all($7) '
            'order by c2.embedding%1$s operator(extensions.<=>) $2 limit $8'
            ') as y where y.distance < 1 - $9 order by y.distance',
            cast_to
        )
        using c.id, c.embedding, _near_duplicates.tenant, _near_duplicates.kb_ids, c.embedding_model,
              c.document_id, _near_duplicates.chunk_ids, _near_duplicates.per_chunk, _near_duplicates.min_cosine;
    end loop;
end;
$function$;

revoke execute on function hipocampo_private._effective_section(tenant_id uuid, kb_id uuid, section text) from public;
grant execute on function hipocampo_private._config_section(tenant_id uuid, kb_id uuid, section text, model text) to authenticated;
grant execute on function hipocampo_private._config_section(tenant_id uuid, kb_id uuid, section text, model text) to service_role;
grant execute on function hipocampo_private._effective_section(tenant_id uuid, kb_id uuid, section text) to authenticated;
grant execute on function hipocampo_private._effective_section(tenant_id uuid, kb_id uuid, section text) to service_role;
