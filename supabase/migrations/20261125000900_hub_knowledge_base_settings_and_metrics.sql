-- The hub's knowledge-base settings and metrics page (issue 21): update_knowledge_base renames a
-- knowledge base or changes its description; tenant_metrics reads one tenant's observability views
-- over its last days in one call. Restated from supabase/schemas/03_knowledge_bases.sql,
-- 11_observability.sql and 13_grants.sql; re-runnable.
set local check_function_bodies = off;

/*
update_knowledge_base(kb_id uuid, name text default null, description text default null) -> jsonb

Purpose: rename a knowledge base or change its description (the hub's knowledge-base settings).
Parameters: kb_id - a knowledge base of the caller's tenant; name - 1..200 characters, unique in
  the tenant (null = unchanged); description - null = unchanged, '' = none.
Returns: {"kb_id", "name", "description"} after the change.
Errors: 42501 as _caller (before any other work); 42501 "only tenant admins can change knowledge
  bases"; P0002 "unknown knowledge base: …" (also another tenant's); 23505 "a knowledge base
  named … exists already"; 23514 on a name of 0 or more than 200 characters.
Example: select hipocampo.update_knowledge_base(kb, name => 'regulamentos 2026');
*/
create or replace function hipocampo.update_knowledge_base(
    kb_id uuid, name text default null, description text default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases;
    r jsonb;
begin
    if gate.kind <> 'service' and gate.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can change knowledge bases' using errcode = '42501';
    end if;
    k := hipocampo_private._kb(update_knowledge_base.kb_id);
    update hipocampo_private.knowledge_bases as x
    set
        name = coalesce(update_knowledge_base.name, x.name),
        description = case
            when update_knowledge_base.description is null then x.description
            else nullif(btrim(update_knowledge_base.description), '')
        end,
        updated_at = now()
    where x.id = k.id
    returning jsonb_build_object('kb_id', x.id, 'name', x.name, 'description', x.description) into r;
    return r;
exception when unique_violation then
    raise exception 'a knowledge base named % exists already', update_knowledge_base.name
        using errcode = '23505';
end;
$$;

comment on function hipocampo.update_knowledge_base(uuid, text, text) is
'Rename a knowledge base or change its description (tenant admins).';

/*
tenant_metrics(days integer default 30, tenant_id uuid default null) -> jsonb

Purpose: the observability views of one tenant over its last days, in one call, for dashboards
  (the hub's metrics page): answers and searches per day, refusals by reason, memory events per
  day and refused memory writes by reason. Reads the views as the caller (RLS applies).
Parameters: days - 1..366, the window ending now (UTC days); tenant_id - service_role only.
Returns: {"tenant_id", "days",
  "answers": [{"day", "query_count", "latency_p50_ms", "latency_p95_ms", "refusals",
    "refusal_rate", "cache_hit_rate"}],
  "searches": [{"day", "query_count", "latency_p50_ms", "latency_p95_ms"}],
  "refusals": [{"reason", "refusals"}],
  "memory_events": [{"day", "event", "events"}],
  "memory_rejections": [{"reason", "rejected"}]}, days ascending, counts descending.
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
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(tenant_metrics.tenant_id);  -- 42501 before any other work
    gate record := hipocampo_private._caller();
    since timestamptz;
begin
    if gate.kind <> 'service' and gate.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can read the tenant''s metrics' using errcode = '42501';
    end if;
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
    );
end;
$$;

comment on function hipocampo.tenant_metrics(integer, uuid) is
'One tenant''s observability over its last days: answers, searches, refusals by reason, memory events, refused memory writes by reason (tenant admins).';

revoke execute on function hipocampo.update_knowledge_base(uuid, text, text) from public;
revoke execute on function hipocampo.tenant_metrics(integer, uuid) from public;
grant execute on function hipocampo.update_knowledge_base(kb_id uuid, name text, description text) to authenticated, service_role;
grant execute on function hipocampo.tenant_metrics(days integer, tenant_id uuid) to authenticated, service_role;
