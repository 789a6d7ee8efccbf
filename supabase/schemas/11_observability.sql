-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- Observability of the memory engine: views in the exposed schema over the memory tables and the
-- event log. security_invoker, so RLS applies: service_role sees every tenant; a tenant admin
-- sees their tenant's events and the memories RLS shows them (shared + their own).
create view hipocampo.memory_metrics
with (security_invoker = true)
as
select
    t.id as tenant_id,
    coalesce(m.active, 0) as memories_total,
    coalesce(s.staged, 0) as staged_total,
    coalesce(e.writes, 0) as writes,
    coalesce(e.decayed, 0) as decayed,
    coalesce(e.expired, 0) as expired,
    coalesce(e.user_deleted, 0) as user_deleted,
    coalesce(e.corrected, 0) as corrected,
    coalesce(e.rejected, 0) as rejected,
    -- Share of save attempts the gate refused.
    round(coalesce(e.rejected, 0)::numeric / nullif(coalesce(e.writes, 0) + coalesce(e.rejected, 0), 0), 4)
        as rejected_rate,
    -- Corrections per stored write.
    round(coalesce(e.corrected, 0)::numeric / nullif(coalesce(e.writes, 0), 0), 4) as correction_rate
from hipocampo_private.tenants as t
left join (
    select x.tenant_id, count(*) as active from hipocampo_private.memories as x
    where x.status = 'active'
    group by x.tenant_id
) as m on t.id = m.tenant_id
left join (
    select x.tenant_id, count(*) as staged from hipocampo_private.memory_staging as x
    group by x.tenant_id
) as s on t.id = s.tenant_id
left join (
    select
        x.tenant_id,
        count(*) filter (where x.event in ('memory.created', 'memory.updated', 'memory.staged')) as writes,
        count(*) filter (where x.event = 'memory.decayed') as decayed,
        count(*) filter (where x.event in ('memory.expired', 'memory.purged')) as expired,
        count(*) filter (where x.event = 'memory.forgotten') as user_deleted,
        count(*) filter (where x.event = 'memory.corrected') as corrected,
        count(*) filter (where x.event = 'memory.write_rejected') as rejected
    from hipocampo_private.memory_events as x
    group by x.tenant_id
) as e on t.id = e.tenant_id;

create view hipocampo.memory_rejections
with (security_invoker = true)
as
select
    e.tenant_id,
    e.reason,
    count(*) as rejected,
    round(count(*)::numeric / sum(count(*)) over (partition by e.tenant_id), 4) as share
from hipocampo_private.memory_events as e
where e.event = 'memory.write_rejected'
group by e.tenant_id, e.reason;

create view hipocampo.memory_top_categories
with (security_invoker = true)
as
select
    m.tenant_id,
    m.category,
    count(*) as memories,
    (rank() over (partition by m.tenant_id order by count(*) desc))::integer as rank
from hipocampo_private.memories as m
where m.status = 'active'
group by m.tenant_id, m.category;

create view hipocampo.memory_events_daily
with (security_invoker = true)
as
select
    e.tenant_id,
    (date_trunc('day', e.at))::date as day,
    e.event,
    count(*) as events
from hipocampo_private.memory_events as e
group by e.tenant_id, (date_trunc('day', e.at))::date, e.event;

comment on view hipocampo.memory_metrics is
'Per tenant: memories, staged, writes, decayed, expired, user_deleted, corrected, rejected, rejected_rate (refused / attempts), correction_rate (corrections / writes).';

comment on view hipocampo.memory_rejections is 'Per tenant: refused memory writes by reason, with their share.';

comment on view hipocampo.memory_top_categories is 'Per tenant: active memories per category, ranked.';

comment on view hipocampo.memory_events_daily is 'Per tenant and day: memory events by kind.';

-- Observability of retrieval and answers: views in the exposed schema, security_invoker so RLS
-- applies (service_role sees every tenant; a tenant admin sees their tenant's audit rows).
-- rag.query.count, latency p50/p95/p99, results per query, % filtered by the threshold, refusals,
-- cache hit rate and the share answered with passages, per tenant and day, over the audit rows of
-- answer calls (ask).
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
    round((count(*) filter (where a.answer_source = 'CACHE'))::numeric / count(*), 4) as cache_hit_rate,
    -- no exact answer, the passages on the question's topic instead (issue 61 §1)
    round((count(*) filter (where a.answer_source = 'PASSAGES'))::numeric / count(*), 4) as passages_rate
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

-- Every recorded read (search, recall, lookup, context pack: the read queue's rows, once drained
-- into the access log), per tenant, RPC and day: the p95 latency of the memory search the memory
-- design asks to watch, beside the search's.
create view hipocampo.read_stats
with (security_invoker = true)
as
select
    l.tenant_id,
    l.rpc,
    date_trunc('day', l.at) as day,
    count(*) as calls,
    percentile_cont(0.5) within group (order by l.latency_ms) as latency_p50_ms,
    percentile_cont(0.95) within group (order by l.latency_ms) as latency_p95_ms,
    percentile_cont(0.99) within group (order by l.latency_ms) as latency_p99_ms,
    round(avg(l.rows_returned), 2) as rows_per_call
from hipocampo_private.data_access_log as l
group by l.tenant_id, l.rpc, date_trunc('day', l.at);

-- Every hybrid_search call (ask, context_pack, search, agents), per tenant and day: read_stats'
-- rows of the search.
create view hipocampo.rag_search_stats
with (security_invoker = true)
as
select
    r.tenant_id,
    r.day,
    r.calls as query_count,
    r.latency_p50_ms,
    r.latency_p95_ms,
    r.latency_p99_ms,
    r.rows_per_call as results_per_query
from hipocampo.read_stats as r
where r.rpc = 'hybrid_search';

-- The similarity of what memory reads returned (search_memories, context_pack), per tenant,
-- conversation (null: a search that named none) and day, averaged over the 7 days that end on that
-- day, one read weighing as much as another: the memory design's "moving average of similarity per
-- session over a 7-day window". A falling average says memories match the questions less.
create view hipocampo.memory_search_similarity
with (security_invoker = true)
as
with daily as (
    select
        l.tenant_id,
        l.conversation_id,
        date_trunc('day', l.at) as day,
        count(*) as reads,
        sum(l.similarity) as similarity_sum
    from hipocampo_private.data_access_log as l
    where l.rpc in ('search_memories', 'context_pack') and l.similarity is not null
    group by l.tenant_id, l.conversation_id, date_trunc('day', l.at)
)

select
    d.tenant_id,
    d.conversation_id,
    d.day,
    d.reads,
    round((sum(w.similarity_sum) / sum(w.reads))::numeric, 4) as similarity_7d,
    sum(w.reads) as reads_7d
from daily as d
inner join daily as w
    on
        d.tenant_id = w.tenant_id
        and d.conversation_id is not distinct from w.conversation_id
        and w.day between d.day - interval '6 days' and d.day
group by d.tenant_id, d.conversation_id, d.day, d.reads;

/*
memory_quota_use(tenant_id uuid default null) -> table (max_active_per_user integer, users bigint,
  active_p50 double precision, active_p95 double precision, active_max bigint, users_near_quota
  bigint, users_at_quota bigint)

Purpose: active personal memories per user against the quota (memory.max_active_per_user, the
  tenant's or the global row's), for one tenant: how many users hold memories, the distribution,
  and the users at 90 % of the quota or at it (remember refuses them with 53400). Counts only:
  no user id, no memory.
Parameters: tenant_id - service_role only (others: their tenant).
Run as: a tenant admin, or service_role.
Returns: one row (users 0 and nulls when nobody holds a memory).
Errors: 42501 as _resolve_tenant (before any other work); 42501 "only tenant admins can read the
  tenant's metrics".
Example: select * from hipocampo.memory_quota_use();
*/
-- definer because a tenant admin counts every member's memories, which RLS hides from them (the
-- counts only, never a memory or a user id).
create or replace function hipocampo.memory_quota_use(tenant_id uuid default null)
returns table (
    max_active_per_user integer, users bigint, active_p50 double precision,
    active_p95 double precision, active_max bigint, users_near_quota bigint, users_at_quota bigint
)
language plpgsql
stable
security definer
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(memory_quota_use.tenant_id);  -- 42501 before any other work
    quota integer := coalesce(
        (select (s.config #>> '{memory,max_active_per_user}')::integer
         from hipocampo_private.settings as s where s.tenant_id = t),
        (select (g.config #>> '{memory,max_active_per_user}')::integer
         from hipocampo_private.settings as g where g.tenant_id is null)
    );
begin
    perform hipocampo_private._require_tenant_admin('read the tenant''s metrics');
    return query
    select
        quota, count(*), percentile_cont(0.5) within group (order by u.active),
        percentile_cont(0.95) within group (order by u.active), max(u.active),
        count(*) filter (where u.active >= 0.9 * quota), count(*) filter (where u.active >= quota)
    from (
        select count(*) as active
        from hipocampo_private.memories as m
        where m.tenant_id = t and m.status = 'active' and m.scope = 'personal'
        group by m.user_id
    ) as u;
end;
$$;

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
        where coalesce(a.last_accessed_at, c.created_at) < now() - interval '90 days'
    ) as embeddings_stale
from hipocampo_private.chunks as c
left join hipocampo_private.chunk_access as a on c.id = a.chunk_id
group by c.tenant_id, c.kb_id, c.embedding_model;

-- The embedding backfill's queue (issue 20 §4): rows waiting for a vector of the active model
-- per kind, and of those the ones waiting for a retry and the dead letters. Service only (it
-- spans tenants).
create view hipocampo.embedding_queue
with (security_invoker = true)
as
with active_model as (
    select e.name
    from hipocampo_private.embedding_models as e
    where e.active
),

pending as (
    select
        'chunks' as kind,
        c.id::text as row_id
    from hipocampo_private.chunks as c
    where
        c.embedding_model is distinct from (select a.name from active_model as a)
        and c.id = (
            select min(o.id) from hipocampo_private.chunks as o
            where o.tenant_id = c.tenant_id and o.content_hash = c.content_hash
        )
        and not exists (
            select 1 from hipocampo_private.chunks as n
            where
                n.tenant_id = c.tenant_id
                and n.content_hash = c.content_hash
                and n.embedding_model = (select a.name from active_model as a)
        )
    union all
    select
        'memories' as kind,
        m.id::text as row_id
    from hipocampo_private.memories as m
    where
        m.status = 'active'
        and m.embedding_model is distinct from (select a.name from active_model as a)
    union all
    select
        'memory_staging' as kind,
        s.id::text as row_id
    from hipocampo_private.memory_staging as s
    where s.embedding_model is distinct from (select a.name from active_model as a)
    union all
    select
        'messages' as kind,
        g.id::text as row_id
    from hipocampo_private.messages as g
    where g.embedding_model is distinct from (select a.name from active_model as a)
),

waiting as (
    select
        p.kind,
        count(*) as waiting
    from pending as p
    group by p.kind
),

failures as (
    select
        f.kind,
        count(*) filter (where not f.dead) as retrying,
        count(*) filter (where f.dead) as dead
    from hipocampo_private.embedding_failures as f
    group by f.kind
),

last_dead as (
    select distinct on (f.kind)
        f.kind,
        f.last_error
    from hipocampo_private.embedding_failures as f
    where f.dead
    order by f.kind asc, f.updated_at desc
)

select
    k.kind,
    coalesce(w.waiting, 0) as waiting,
    coalesce(x.retrying, 0) as retrying,
    coalesce(x.dead, 0) as dead,
    d.last_error as last_dead_letter_error
from (values ('chunks'), ('memories'), ('memory_staging'), ('messages')) as k (kind)
left join waiting as w on k.kind = w.kind
left join failures as x on k.kind = x.kind
left join last_dead as d on k.kind = d.kind;

comment on view hipocampo.embedding_queue is
'Rows waiting for a vector of the active model per kind: waiting (all), retrying (failed, backing off), dead (dead letters) and the newest dead letter''s error.';

comment on view hipocampo.rag_answer_stats is
'Answer calls per tenant and day: count, latency p50/p95/p99 (ms), results per query, filtered, refusal and cache hit rates.';

comment on view hipocampo.rag_refusals is 'Refusals per tenant, day and reason code.';

comment on view hipocampo.rag_search_stats is 'hybrid_search calls per tenant and day: count, latency, results.';

comment on view hipocampo.embedding_stats is 'Embeddings per tenant, knowledge base and model; stale = not retrieved in 90 days.';

/*
_memory_read_metrics(tenant_id uuid, since timestamptz, as_service boolean) -> jsonb

Purpose: tenant_metrics' part for the memory design's three metrics, since a day: each recorded
  read RPC's calls and p95 latency per day (read_stats), the tenant's 7-day moving average of the
  similarity memory reads returned per day (every conversation together, one read weighing as
  much as another; memory_search_similarity has it per conversation), and memory_quota_use.
Parameters: tenant_id - resolved by the caller; since - the first day; as_service - the caller is
  service_role (memory_quota_use then takes the tenant as an argument).
Returns: {"reads": [{"day", "rpc", "calls", "latency_p95_ms"}], "memory_similarity": [{"day",
  "similarity_7d", "reads_7d"}], "memory_quota": {memory_quota_use's columns}}, days ascending.
Errors: as memory_quota_use.
Example: select hipocampo_private._memory_read_metrics(t, now() - interval '7 days', false);
*/
create or replace function hipocampo_private._memory_read_metrics(tenant_id uuid, since timestamptz, as_service boolean)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    with daily as (
        select date_trunc('day', l.at) as day, count(*) as n, sum(l.similarity) as s
        from hipocampo_private.data_access_log as l
        where l.tenant_id = _memory_read_metrics.tenant_id and l.similarity is not null
          and l.rpc in ('search_memories', 'context_pack') and l.at >= since - interval '6 days'
        group by date_trunc('day', l.at)
    )

    select jsonb_build_object(
        'reads', coalesce((
            select jsonb_agg(jsonb_build_object(
                'day', r.day::date, 'rpc', r.rpc, 'calls', r.calls, 'latency_p95_ms', r.latency_p95_ms
            ) order by r.day, r.rpc)
            from hipocampo.read_stats as r
            where r.tenant_id = _memory_read_metrics.tenant_id and r.day >= since
        ), '[]'::jsonb),
        'memory_similarity', coalesce((
            select jsonb_agg(jsonb_build_object(
                'day', d.day::date, 'similarity_7d', round((w.s / w.n)::numeric, 4), 'reads_7d', w.n
            ) order by d.day)
            from daily as d
            cross join lateral (
                select sum(x.s) as s, sum(x.n) as n from daily as x
                where x.day between d.day - interval '6 days' and d.day
            ) as w
            where d.day >= since
        ), '[]'::jsonb),
        'memory_quota', (
            select to_jsonb(q) from hipocampo.memory_quota_use(
                case when as_service then _memory_read_metrics.tenant_id end
            ) as q
        )
    )
$$;

/*
tenant_metrics(days integer default 30, tenant_id uuid default null) -> jsonb

Purpose: the observability views of one tenant over its last days, in one call, for dashboards
  (the hub's metrics page): answers and searches per day, refusals by reason, memory events per
  day and refused memory writes by reason, and the memory design's metrics (reads' p95 latency,
  memory similarity, quota use). Reads the views as the caller (RLS applies).
Parameters: days - 1..366, the window ending now (UTC days); tenant_id - service_role only.
Returns: {"tenant_id", "days",
  "answers": [{"day", "query_count", "latency_p50_ms", "latency_p95_ms", "refusals",
    "refusal_rate", "cache_hit_rate"}],
  "searches": [{"day", "query_count", "latency_p50_ms", "latency_p95_ms"}],
  "refusals": [{"reason", "refusals"}],
  "memory_events": [{"day", "event", "events"}],
  "memory_rejections": [{"reason", "rejected"}],
  and _memory_read_metrics' "reads", "memory_similarity", "memory_quota"}, days ascending, counts
  descending.
Errors: 42501 as _resolve_tenant (before any other work); 42501 "only tenant admins can read
  the tenant's metrics"; 22023 "days must lie in [1, 366] (got …)".
Example: select hipocampo.tenant_metrics(7);
*/
create or replace function hipocampo.tenant_metrics(days integer default 30, tenant_id uuid default null)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(tenant_metrics.tenant_id);  -- 42501 before any other work
    gate record := hipocampo_private._caller();
    since timestamptz;
begin
    perform hipocampo_private._require_tenant_admin('read the tenant''s metrics');
    if tenant_metrics.days is null or tenant_metrics.days not between 1 and 366 then
        raise exception 'days must lie in [1, 366] (got %)', coalesce(tenant_metrics.days::text, 'null')
            using errcode = '22023';
    end if;
    since := date_trunc('day', now()) - make_interval(days => tenant_metrics.days - 1);
    return jsonb_build_object(
        'tenant_id', t,
        'days', tenant_metrics.days,
        'answers', coalesce((
            select jsonb_agg(jsonb_build_object(
                'day', a.day::date, 'query_count', a.query_count,
                'latency_p50_ms', a.latency_p50_ms, 'latency_p95_ms', a.latency_p95_ms,
                'refusals', a.refusals, 'refusal_rate', a.refusal_rate, 'cache_hit_rate', a.cache_hit_rate
            ) order by a.day)
            from hipocampo.rag_answer_stats as a
            where a.tenant_id = t and a.day >= since
        ), '[]'::jsonb),
        'searches', coalesce((
            select jsonb_agg(jsonb_build_object(
                'day', s.day::date, 'query_count', s.query_count,
                'latency_p50_ms', s.latency_p50_ms, 'latency_p95_ms', s.latency_p95_ms
            ) order by s.day)
            from hipocampo.rag_search_stats as s
            where s.tenant_id = t and s.day >= since
        ), '[]'::jsonb),
        'refusals', coalesce((
            select jsonb_agg(jsonb_build_object('reason', r.reason, 'refusals', r.n) order by r.n desc, r.reason)
            from (
                select x.reason, sum(x.refusals) as n
                from hipocampo.rag_refusals as x
                where x.tenant_id = t and x.day >= since
                group by x.reason
            ) as r
        ), '[]'::jsonb),
        'memory_events', coalesce((
            select jsonb_agg(jsonb_build_object('day', e.day, 'event', e.event, 'events', e.events)
                order by e.day, e.event)
            from hipocampo.memory_events_daily as e
            where e.tenant_id = t and e.day >= since::date
        ), '[]'::jsonb),
        'memory_rejections', coalesce((
            select jsonb_agg(jsonb_build_object('reason', r.reason, 'rejected', r.n) order by r.n desc, r.reason)
            from (
                select coalesce(e.reason, 'unknown') as reason, count(*) as n
                from hipocampo_private.memory_events as e
                where e.tenant_id = t and e.event = 'memory.write_rejected' and e.at >= since
                group by coalesce(e.reason, 'unknown')
            ) as r
        ), '[]'::jsonb)
    ) || hipocampo_private._memory_read_metrics(t, since, gate.kind = 'service');
end;
$$;

comment on function hipocampo.tenant_metrics(integer, uuid) is
'One tenant''s observability over its last days: answers, searches, refusals by reason, memory events, refused memory writes by reason (tenant admins).';

comment on view hipocampo.memory_search_similarity is
'Per tenant, conversation and day: the 7-day moving average of the similarity memory reads returned.';

comment on function hipocampo.memory_quota_use(uuid) is
'One tenant: users with active personal memories, their distribution and the users near or at memory.max_active_per_user (admins).';

comment on view hipocampo.read_stats is
'Recorded reads per tenant, RPC and day: calls, latency p50/p95/p99 (ms), rows per call (admins: their tenant).';
