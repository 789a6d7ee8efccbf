-- The answer cache's TTL follows the same rag config as the answer it caches: a knowledge base's
-- or an agent binding's cache_ttl_seconds override now applies (002200 read the tenant's only).

/*
cache_put(question text, kb_ids uuid[], answer jsonb, agent text default null, tenant_id uuid default null)
  -> boolean

Purpose: cache an answer for rag.cache_ttl_seconds of the effective rag config of the call
  (rag_config(kb, agent): the knowledge base's override when kb_ids names exactly one, the agent
  binding's when agent is given, else the tenant's; 0 = never cache). Only answers whose cited
  chunks all belong to these knowledge bases of the tenant are accepted (a client cannot plant
  answers citing anything else).
Parameters: answer - {"answer", "confidence", "sources": [{"chunk_id", …}], …}.
Returns: true when cached.
Errors: 22023 "answer must be a json object with sources"; 22023 "cited chunk … is not in these
  knowledge bases"; 42501 as _resolve_tenant; P0002 unknown agent binding.
Example: select hipocampo.cache_put('Qual o prazo?', array[kb], '{"answer": "…", "sources": []}');
*/
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
    ttl integer := (hipocampo.rag_config(
        case when cardinality(cache_put.kb_ids) = 1 then cache_put.kb_ids[1] end, cache_put.agent, t
    ) ->> 'cache_ttl_seconds')::integer;
    bad bigint;
begin
    if answer is null or jsonb_typeof(answer) <> 'object' or jsonb_typeof(answer -> 'sources') <> 'array' then
        raise exception 'answer must be a json object with sources' using errcode = '22023';
    end if;
    select (s ->> 'chunk_id')::bigint into bad
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
'Caches an answer for the effective rag.cache_ttl_seconds (KB / agent overrides apply); refuses answers citing other chunks.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants hold (002200's stand).
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
