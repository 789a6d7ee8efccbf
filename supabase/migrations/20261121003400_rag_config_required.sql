-- The effective rag config is complete or an error. 003100 made the memory and session functions
-- read their thresholds from the config rows only; the rag section was left: answer_evidence read
-- top_k, min_score, min_confidence and the token budget as they came, so a database whose config
-- was never seeded (e.g. `supabase db push` without `hipocampo db migrate`) retrieved with
-- hybrid_search's own count and compared supports with null, and answer_evidence and context_pack
-- took rag.enabled as true when it was missing. rag_config, which every reader of the section
-- calls (answer_evidence, context_pack, cache_get / cache_put, take_rate_limit, the Python
-- orchestrator and generators, the edge functions), now checks the merged section with
-- _require_config: a missing key is 55000. The coalesce(enabled, true) left in answer_evidence
-- (002600) and context_pack (002300) can no longer apply; those large functions are not restated
-- for it.

/*
rag_config(kb_id uuid default null, agent text default null, tenant_id uuid default null) -> jsonb

Purpose: the effective rag section: global row <- tenant row <- knowledge base overrides <- agent
  binding overrides, plus "kb_ids" (the agent's knowledge bases, or [kb_id]) and "agent"; checked
  to hold every key of config.toml's [rag] that a reader uses.
Parameters: kb_id - optional knowledge base; agent - optional binding name; tenant_id only for
  service_role.
Returns: jsonb object (keys of config.toml [rag]).
Errors: 42501 as _resolve_tenant; P0002 "unknown agent binding: …"; 55000 "rag config is
  incomplete: seed it from config.toml (hipocampo db migrate)".
Example: select hipocampo.rag_config(null, 'portaria') ->> 'top_k';
*/
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
            'authoritative_trust', 'authoritative_source_types', 'conflict_trust_margin', 'cache_ttl_seconds',
            'rate_limit_per_minute', 'question_min_chars', 'question_max_chars', 'context_prompt',
            'refusal_message'
        ]
    ) || jsonb_build_object('kb_ids', to_jsonb(kbs), 'agent', agent);
end;
$$;

comment on function hipocampo.rag_config(uuid, text, uuid) is
'The effective rag config: global <- tenant <- knowledge base <- agent binding; 55000 when a key is missing.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants hold (002000's stand).
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
