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

grant select on hipocampo.memory_metrics to authenticated, service_role;
grant select on hipocampo.memory_rejections to authenticated, service_role;
grant select on hipocampo.memory_top_categories to authenticated, service_role;
grant select on hipocampo.memory_events_daily to authenticated, service_role;

comment on view hipocampo.memory_metrics is
'Per tenant: memories, staged, writes, decayed, expired, user_deleted, corrected, rejected, rejected_rate (refused / attempts), correction_rate (corrections / writes).';
comment on view hipocampo.memory_rejections is 'Per tenant: refused memory writes by reason, with their share.';
comment on view hipocampo.memory_top_categories is 'Per tenant: active memories per category, ranked.';
comment on view hipocampo.memory_events_daily is 'Per tenant and day: memory events by kind.';
