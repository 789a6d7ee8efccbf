-- read stats view.
-- recorded reads per tenant, RPC and day with their latency percentiles: the memory search's p95 beside the search's
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

-- noqa: disable=all
create or replace view "hipocampo"."read_stats" as  SELECT tenant_id,
    rpc,
    date_trunc('day'::text, at) AS day,
    count(*) AS calls,
    percentile_cont((0.5)::double precision) WITHIN GROUP (ORDER BY latency_ms) AS latency_p50_ms,
    percentile_cont((0.95)::double precision) WITHIN GROUP (ORDER BY latency_ms) AS latency_p95_ms,
    percentile_cont((0.99)::double precision) WITHIN GROUP (ORDER BY latency_ms) AS latency_p99_ms,
    round(avg(rows_returned), 2) AS rows_per_call
   FROM hipocampo_private.data_access_log l
  GROUP BY tenant_id, rpc, (date_trunc('day'::text, at));
-- noqa: enable=all

grant select on table hipocampo.read_stats to authenticated;
grant select on table hipocampo.read_stats to service_role;
comment on view hipocampo.read_stats is 'Recorded reads per tenant, RPC and day: calls, latency p50/p95/p99 (ms), rows per call (admins: their tenant).';
alter view hipocampo.read_stats set (security_invoker = true);
