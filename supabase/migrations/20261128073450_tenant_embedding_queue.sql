-- tenant embedding queue.
-- issue 45 §6: one tenant's embedding queue and requeue for its admins (the hub's page); one admin gate helper (_require_tenant_admin)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

-- definer because embedding_failures is service-only (RLS, no policy): an admin deletes the
-- failure records of their own tenant's rows only, found through _tenant_embedding_rows.
create or replace function hipocampo.requeue_tenant_embeddings(kind text default null::text, tenant_id uuid default null::uuid)
returns integer
language plpgsql
security definer
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(requeue_tenant_embeddings.tenant_id);  -- 42501 before any other work
    n integer;
begin
    perform hipocampo_private._require_tenant_admin('requeue the tenant''s embeddings');
    if requeue_tenant_embeddings.kind is not null then
        perform hipocampo_private._embedding_kind(requeue_tenant_embeddings.kind);
    end if;
    delete from hipocampo_private.embedding_failures as f
    using hipocampo_private._tenant_embedding_rows(t) as r
    where f.kind = r.kind and f.row_id = r.row_id
      and (requeue_tenant_embeddings.kind is null or f.kind = requeue_tenant_embeddings.kind);
    get diagnostics n = row_count;
    return n;
end;
$function$;

-- definer because embedding_failures is service-only (RLS, no policy): an admin reads the failure
-- records of their own tenant's rows only, found through _tenant_embedding_rows.
create or replace function hipocampo.tenant_embedding_queue(tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
stable
security definer
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(tenant_embedding_queue.tenant_id);  -- 42501 before any other work
begin
    perform hipocampo_private._require_tenant_admin('read the tenant''s embedding queue');
    return (
        with mine as (
            select r.kind, r.row_id, f.attempts, f.last_error, f.dead, f.updated_at
            from hipocampo_private._tenant_embedding_rows(t) as r
            left join hipocampo_private.embedding_failures as f on f.kind = r.kind and f.row_id = r.row_id
        )
        select jsonb_build_object(
            'kinds', (
                select jsonb_agg(jsonb_build_object(
                    'kind', k.kind,
                    'waiting', (select count(*) from mine as m where m.kind = k.kind),
                    'retrying', (select count(*) from mine as m where m.kind = k.kind and not m.dead),
                    'dead', (select count(*) from mine as m where m.kind = k.kind and m.dead)
                ) order by k.n)
                from unnest(array['chunks', 'memories', 'memory_staging', 'messages']) with ordinality as k (kind, n)
            ),
            'dead_letters', coalesce((
                select jsonb_agg(jsonb_build_object(
                    'kind', d.kind, 'row_id', d.row_id, 'attempts', d.attempts, 'last_error', d.last_error,
                    'updated_at', d.updated_at
                ) order by d.updated_at desc, d.kind, d.row_id)
                from (
                    select * from mine as m where m.dead order by m.updated_at desc, m.kind, m.row_id limit 100
                ) as d
            ), '[]'::jsonb)
        )
    );
end;
$function$;

create or replace function hipocampo_private._require_tenant_admin(action text)
returns void
language plpgsql
stable
set search_path to ''
as $function$
declare
    c record := hipocampo_private._caller();
begin
    if c.kind <> 'service' and c.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can %', action using errcode = '42501';
    end if;
end;
$function$;

create or replace function hipocampo_private._tenant_embedding_rows(tenant_id uuid)
returns table (kind text, row_id text)
language sql
stable
set search_path to ''
as $function$
    with active_model as (
        select e.name from hipocampo_private.embedding_models as e where e.active
    )
    select 'chunks', c.id::text
    from hipocampo_private.chunks as c
    where c.tenant_id = _tenant_embedding_rows.tenant_id
      and c.embedding_model is distinct from (select a.name from active_model as a)
      and c.id = (
          select min(o.id) from hipocampo_private.chunks as o
          where o.tenant_id = c.tenant_id and o.content_hash = c.content_hash
      )
      and not exists (
          select 1 from hipocampo_private.chunks as n
          where n.tenant_id = c.tenant_id and n.content_hash = c.content_hash
            and n.embedding_model = (select a.name from active_model as a)
      )
    union
    select 'memories', m.id::text
    from hipocampo_private.memories as m
    where m.tenant_id = _tenant_embedding_rows.tenant_id and m.status = 'active'
      and m.embedding_model is distinct from (select a.name from active_model as a)
    union
    select 'memory_staging', s.id::text
    from hipocampo_private.memory_staging as s
    where s.tenant_id = _tenant_embedding_rows.tenant_id
      and s.embedding_model is distinct from (select a.name from active_model as a)
    union
    select 'messages', g.id::text
    from hipocampo_private.messages as g
    where g.tenant_id = _tenant_embedding_rows.tenant_id
      and g.embedding_model is distinct from (select a.name from active_model as a)
$function$;

-- definer because a tenant admin counts every member's memories, which RLS hides from them (the
-- counts only, never a memory or a user id).
create or replace function hipocampo.memory_quota_use(tenant_id uuid default null::uuid)
returns table (max_active_per_user integer, users bigint, active_p50 double precision, active_p95 double precision, active_max bigint, users_near_quota bigint, users_at_quota bigint)
language plpgsql
stable
security definer
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo.tenant_metrics(days integer default 30, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
stable
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._require_admin()
returns void
language sql
stable
set search_path to ''
as $function$
    select hipocampo_private._require_tenant_admin('change the tenant''s configuration')
$function$;

revoke execute on function hipocampo.requeue_tenant_embeddings(kind text, tenant_id uuid) from public;
revoke execute on function hipocampo.tenant_embedding_queue(tenant_id uuid) from public;
revoke execute on function hipocampo_private._require_tenant_admin(action text) from public;
revoke execute on function hipocampo_private._tenant_embedding_rows(tenant_id uuid) from public;
grant execute on function hipocampo.requeue_tenant_embeddings(kind text, tenant_id uuid) to authenticated;
grant execute on function hipocampo.requeue_tenant_embeddings(kind text, tenant_id uuid) to service_role;
grant execute on function hipocampo.tenant_embedding_queue(tenant_id uuid) to authenticated;
grant execute on function hipocampo.tenant_embedding_queue(tenant_id uuid) to service_role;
grant execute on function hipocampo_private._require_tenant_admin(action text) to authenticated;
grant execute on function hipocampo_private._require_tenant_admin(action text) to service_role;
comment on function hipocampo.requeue_tenant_embeddings(pg_catalog.text, pg_catalog.uuid) is 'Give one tenant''s dead-lettered and waiting rows back to the embedding backfill (admins).';
comment on function hipocampo.tenant_embedding_queue(pg_catalog.uuid) is 'One tenant''s embedding queue: waiting, retrying and dead rows per kind, and the newest dead letters (admins).';
