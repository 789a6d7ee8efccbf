-- The answer cache is written by the answer paths only (issue 44 §1). A plain member called
-- cache_put through the API and planted an answer ("envie CPF e senha para …") that the tenant's
-- admin was then served as CACHE, or one that made `hipocampo serve`'s /ask fail with HTTP 500 for
-- everyone asking that question. cache_put is now service_role's (Orchestrator.ask and the ask
-- edge function write what they computed, for the tenant rag_config resolved, which it now
-- returns), and an entry must have the shape every reader parses and fit rag.cache_max_entry_bytes
-- (seeded from config.toml). Entries already stored are dropped: any may have been planted.
-- Functions restated from supabase/schemas/02_config.sql and 10_answers.sql (their docblocks live
-- there); re-runnable.

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
            'cache_ttl_seconds', 'cache_max_entry_bytes',
            'rate_limit_per_minute', 'question_min_chars', 'question_max_chars', 'context_prompt',
            'refusal_message'
        ]
    ) || jsonb_build_object('kb_ids', to_jsonb(kbs), 'agent', agent, 'tenant_id', t);
end;
$$;

create or replace function hipocampo_private._cache_entry_problem(answer jsonb, max_bytes integer)
returns text
language sql
immutable
security invoker
set search_path = ''
as $$
    select case
        when answer is null or jsonb_typeof(answer) <> 'object' then 'answer must be a json object with sources'
        when octet_length(answer::text) > max_bytes then format(
            'answer is %s bytes as json; rag.cache_max_entry_bytes is %s', octet_length(answer::text), max_bytes
        )
        when jsonb_typeof(answer -> 'sources') is distinct from 'array' then 'answer must be a json object with sources'
        when jsonb_typeof(answer -> 'answer') is distinct from 'string' or btrim(answer ->> 'answer') = ''
            then 'answer.answer must be a non-empty string'
        when coalesce(answer -> 'refused', 'false'::jsonb) <> 'false'::jsonb then 'a refusal is never cached'
        when coalesce(jsonb_typeof(answer -> 'confidence'), 'number') <> 'number'
            then 'answer.confidence must be a number >= 0'
        when coalesce((answer ->> 'confidence')::double precision, 0) < 0
            then 'answer.confidence must be a number >= 0'
        when coalesce(answer ->> 'answer_source', 'EXTRACTIVE') not in ('EXTRACTIVE', 'LLM')
            then 'answer.answer_source must be EXTRACTIVE or LLM'
        when coalesce(jsonb_typeof(answer -> 'conflicts'), 'array') <> 'array' then 'answer.conflicts must be an array'
        when jsonb_array_length(answer -> 'sources') > 50 then 'answer cites more than 50 sources'
        when exists (
            select 1 from jsonb_array_elements(answer -> 'sources') as s
            where not coalesce(
                jsonb_typeof(s) = 'object'
                and (s ->> 'n') ~ '^\d{1,9}$' and jsonb_typeof(s -> 'n') = 'number'
                and (s ->> 'chunk_id') ~ '^\d{1,18}$' and jsonb_typeof(s -> 'chunk_id') = 'number'
                and jsonb_typeof(s -> 'document') = 'string'
                and (s ->> 'document_id') ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                and jsonb_typeof(s -> 'source_uri') = 'string'
                and jsonb_typeof(s -> 'excerpt') = 'string'
                and jsonb_typeof(s -> 'score') = 'number',
                false
            )
        ) then 'each source needs n, document, document_id, source_uri, chunk_id, excerpt and score'
    end
$$;

-- definer because the cache is written for the whole tenant and no client role may write it directly.
create or replace function hipocampo.cache_put(
    question text, kb_ids uuid[], answer jsonb, agent text default null, tenant_id uuid default null
)
returns boolean
language plpgsql
security definer
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(cache_put.tenant_id);
    cfg jsonb := hipocampo.rag_config(
        case when cardinality(cache_put.kb_ids) = 1 then cache_put.kb_ids[1] end, cache_put.agent, t
    );
    ttl integer := (cfg ->> 'cache_ttl_seconds')::integer;
    bad text := hipocampo_private._cache_entry_problem(answer, (cfg ->> 'cache_max_entry_bytes')::integer);
begin
    if bad is not null then
        raise exception '%', bad using errcode = '22023';
    end if;
    if coalesce(cardinality(cache_put.kb_ids), 0) = 0 or array_position(cache_put.kb_ids, null) is not null then
        raise exception 'kb_ids must name at least one knowledge base (and no null)' using errcode = '22023';
    end if;
    if coalesce(hipocampo.normalize_question(cache_put.question), '') = '' then
        raise exception 'question has no words to cache it by' using errcode = '22023';
    end if;
    if not exists (select 1 from hipocampo_private.tenants as x where x.id = t) then
        raise exception 'unknown tenant: %', t using errcode = 'P0002';
    end if;
    select s ->> 'chunk_id' into bad
    from jsonb_array_elements(answer -> 'sources') as s
    where not exists (
        select 1 from hipocampo_private.chunks as c
        where c.id = (s ->> 'chunk_id')::bigint and c.tenant_id = t and c.kb_id = any(cache_put.kb_ids)
    )
    limit 1;
    if found then
        raise exception 'cited chunk % is not in these knowledge bases', bad using errcode = '22023';
    end if;
    if coalesce(ttl, 0) <= 0 then
        return false;
    end if;
    insert into hipocampo_private.answer_cache as c (
        tenant_id, kb_key, kb_ids, agent, question_key, answer, expires_at
    ) values (
        t, hipocampo_private._cache_scope(cache_put.kb_ids), cache_put.kb_ids, coalesce(cache_put.agent, ''),
        hipocampo.normalize_question(cache_put.question), answer, now() + make_interval(secs => ttl)
    )
    on conflict on constraint answer_cache_pkey do update
    set answer = excluded.answer, created_at = now(), expires_at = excluded.expires_at;
    return true;
end;
$$;

comment on function hipocampo.cache_put(text, uuid[], jsonb, text, uuid) is
'service_role: caches an answer an answer path computed for the effective rag.cache_ttl_seconds; refuses a malformed or oversized entry or one citing other chunks.';

revoke execute on function hipocampo.cache_put(text, uuid[], jsonb, text, uuid) from authenticated;
revoke execute on function hipocampo_private._cache_entry_problem(jsonb, integer) from public;

delete from hipocampo_private.answer_cache;
