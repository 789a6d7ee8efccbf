-- Observability of retrieval and answers: views in the exposed schema, security_invoker so RLS
-- applies (service_role sees every tenant; a tenant admin sees their tenant's audit rows).

-- rag.query.count, latency p50/p95/p99, results per query, % filtered by the threshold, refusals
-- and cache hit rate, per tenant and day, over the audit rows of answer calls (ask).
create view hipocampo.rag_answer_stats
with (security_invoker = true)
as
select
    a.tenant_id,
    date_trunc('day', a.created_at) as day,
    count(*) as query_count,
    percentile_cont(0.5) within group (order by a.latency_ms) as latency_p50_ms,
    percentile_cont(0.95) within group (order by a.latency_ms) as latency_p95_ms,
    percentile_cont(0.99) within group (order by a.latency_ms) as latency_p99_ms,
    round(avg(cardinality(a.evidence_chunk_ids)), 2) as results_per_query,
    round(sum(a.filtered)::numeric / nullif(sum(a.candidates), 0), 4) as filtered_rate,
    count(*) filter (where a.answer_source = 'REFUSAL') as refusals,
    round((count(*) filter (where a.answer_source = 'REFUSAL'))::numeric / count(*), 4) as refusal_rate,
    round((count(*) filter (where a.answer_source = 'CACHE'))::numeric / count(*), 4) as cache_hit_rate
from hipocampo_private.answer_audit as a
group by a.tenant_id, date_trunc('day', a.created_at);

-- Refusals by reason code, per tenant and day.
create view hipocampo.rag_refusals
with (security_invoker = true)
as
select
    a.tenant_id,
    date_trunc('day', a.created_at) as day,
    a.reason,
    count(*) as refusals
from hipocampo_private.answer_audit as a
where a.answer_source = 'REFUSAL'
group by a.tenant_id, date_trunc('day', a.created_at), a.reason;

-- Every hybrid_search call (ask, context_pack, search, agents), per tenant and day.
create view hipocampo.rag_search_stats
with (security_invoker = true)
as
select
    l.tenant_id,
    date_trunc('day', l.at) as day,
    count(*) as query_count,
    percentile_cont(0.5) within group (order by l.latency_ms) as latency_p50_ms,
    percentile_cont(0.95) within group (order by l.latency_ms) as latency_p95_ms,
    percentile_cont(0.99) within group (order by l.latency_ms) as latency_p99_ms,
    round(avg(l.rows_returned), 2) as results_per_query
from hipocampo_private.data_access_log as l
where l.rpc = 'hybrid_search'
group by l.tenant_id, date_trunc('day', l.at);

-- Embeddings per tenant, knowledge base and model; stale = not retrieved for 90 days (never
-- retrieved counts from the chunk's creation).
create view hipocampo.embedding_stats
with (security_invoker = true)
as
select
    c.tenant_id,
    c.kb_id,
    c.embedding_model,
    count(*) as embeddings_total,
    count(*) filter (
        where coalesce(c.last_accessed_at, c.created_at) < now() - interval '90 days'
    ) as embeddings_stale
from hipocampo_private.chunks as c
group by c.tenant_id, c.kb_id, c.embedding_model;

grant select on hipocampo.rag_answer_stats, hipocampo.rag_refusals, hipocampo.rag_search_stats,
hipocampo.embedding_stats to authenticated, service_role;

comment on view hipocampo.rag_answer_stats is
'Answer calls per tenant and day: count, latency p50/p95/p99 (ms), results per query, filtered, refusal and cache hit rates.';
comment on view hipocampo.rag_refusals is 'Refusals per tenant, day and reason code.';
comment on view hipocampo.rag_search_stats is 'hybrid_search calls per tenant and day: count, latency, results.';
comment on view hipocampo.embedding_stats is 'Embeddings per tenant, knowledge base and model; stale = not retrieved in 90 days.';
