-- rag search stats over read stats.
-- rag_search_stats is read_stats' rows of hybrid_search: one definition of the percentiles over the access log
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

-- noqa: disable=all
create or replace view "hipocampo"."rag_search_stats" as  SELECT tenant_id,
    day,
    calls AS query_count,
    latency_p50_ms,
    latency_p95_ms,
    latency_p99_ms,
    rows_per_call AS results_per_query
   FROM hipocampo.read_stats r
  WHERE (rpc = 'hybrid_search'::text);
-- noqa: enable=all

alter view hipocampo.rag_search_stats set (security_invoker = true);
