-- drop emotional embedding.
-- memories.emotional_embedding was never written or read (issue 47 §4): dropped, and the exports no longer remove it
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop view if exists hipocampo.embedding_queue;

drop view if exists hipocampo.memory_metrics;

drop view if exists hipocampo.memory_top_categories;

alter table hipocampo_private.memories drop column emotional_embedding;

alter table hipocampo_private.memory_staging drop column emotional_embedding;

set check_function_bodies = off;

-- noqa: disable=all
create or replace view "hipocampo"."embedding_queue" as  WITH active_model AS (
         SELECT e.name
           FROM hipocampo_private.embedding_models e
          WHERE e.active
        ), pending AS (
         SELECT 'chunks'::text AS kind,
            (c.id)::text AS row_id
           FROM hipocampo_private.chunks c
          WHERE ((c.embedding_model IS DISTINCT FROM ( SELECT a.name
                   FROM active_model a)) AND (c.id = ( SELECT min(o.id) AS min
                   FROM hipocampo_private.chunks o
                  WHERE ((o.tenant_id = c.tenant_id) AND (o.content_hash = c.content_hash)))) AND (NOT (EXISTS ( SELECT 1
                   FROM hipocampo_private.chunks n
                  WHERE ((n.tenant_id = c.tenant_id) AND (n.content_hash = c.content_hash) AND (n.embedding_model = ( SELECT a.name
                           FROM active_model a)))))))
        UNION ALL
         SELECT 'memories'::text AS kind,
            (m.id)::text AS row_id
           FROM hipocampo_private.memories m
          WHERE ((m.status = 'active'::text) AND (m.embedding_model IS DISTINCT FROM ( SELECT a.name
                   FROM active_model a)))
        UNION ALL
         SELECT 'memory_staging'::text AS kind,
            (s.id)::text AS row_id
           FROM hipocampo_private.memory_staging s
          WHERE (s.embedding_model IS DISTINCT FROM ( SELECT a.name
                   FROM active_model a))
        UNION ALL
         SELECT 'messages'::text AS kind,
            (g.id)::text AS row_id
           FROM hipocampo_private.messages g
          WHERE (g.embedding_model IS DISTINCT FROM ( SELECT a.name
                   FROM active_model a))
        ), waiting AS (
         SELECT p.kind,
            count(*) AS waiting
           FROM pending p
          GROUP BY p.kind
        ), failures AS (
         SELECT f.kind,
            count(*) FILTER (WHERE (NOT f.dead)) AS retrying,
            count(*) FILTER (WHERE f.dead) AS dead
           FROM hipocampo_private.embedding_failures f
          GROUP BY f.kind
        ), last_dead AS (
         SELECT DISTINCT ON (f.kind) f.kind,
            f.last_error
           FROM hipocampo_private.embedding_failures f
          WHERE f.dead
          ORDER BY f.kind, f.updated_at DESC
        )
 SELECT k.kind,
    COALESCE(w.waiting, (0)::bigint) AS waiting,
    COALESCE(x.retrying, (0)::bigint) AS retrying,
    COALESCE(x.dead, (0)::bigint) AS dead,
    d.last_error AS last_dead_letter_error
   FROM (((( VALUES ('chunks'::text), ('memories'::text), ('memory_staging'::text), ('messages'::text)) k(kind)
     LEFT JOIN waiting w ON ((k.kind = w.kind)))
     LEFT JOIN failures x ON ((k.kind = x.kind)))
     LEFT JOIN last_dead d ON ((k.kind = d.kind)));
-- noqa: enable=all


-- definer because a user's export includes their own audit events and sessions in every state, beyond what RLS shows.
create or replace function hipocampo.export_user_data(user_id uuid default null::uuid, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
security definer
set search_path to ''
as $function$
declare
    a record := hipocampo_private._data_subject(export_user_data.user_id, export_user_data.tenant_id);
    who record := hipocampo_private._acting_for(a.actor_tenant, a.actor_user);
    result jsonb;
begin
    result := jsonb_build_object(
        'format', 'hipocampo.user_export.v1',
        'exported_at', now(),
        'tenant_id', a.actor_tenant,
        'user_id', a.actor_user,
        'consent', (
            select to_jsonb(c) from hipocampo_private.memory_consents as c
            where c.tenant_id = a.actor_tenant and c.user_id = a.actor_user
        ),
        'memories', coalesce((
            select jsonb_agg(to_jsonb(m) - 'embedding' order by m.key, m.valid_from, m.valid_to nulls last)
            from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
        ), '[]'::jsonb),
        'staged_memories', coalesce((
            select jsonb_agg(to_jsonb(s) - 'embedding' order by s.key)
            from hipocampo_private.memory_staging as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'messages', coalesce((
            select jsonb_agg(
                to_jsonb(m) - 'embedding' - 'fts' - 'fts_length' - 'ts_config' - 'token_ids' - 'token_bits'
                order by m.id
            )
            from hipocampo_private.messages as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
        ), '[]'::jsonb),
        'conversation_summaries', coalesce((
            select jsonb_agg(to_jsonb(s) order by s.conversation_id)
            from hipocampo_private.conversation_summaries as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'sessions', coalesce((
            select jsonb_agg(to_jsonb(s) order by s.created_at)
            from hipocampo_private.sessions as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'events', coalesce((
            select jsonb_agg(to_jsonb(e) order by e.id)
            from hipocampo_private.memory_events as e
            where e.tenant_id = a.actor_tenant and e.user_id = a.actor_user
        ), '[]'::jsonb)
    );
    perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, null, 'user.exported', who.reason,
        who.detail || jsonb_build_object('memories', jsonb_array_length(result -> 'memories'),
            'messages', jsonb_array_length(result -> 'messages')));
    return result;
end;
$function$;

-- definer because a member's personal memories are visible to their owner only (RLS); a tenant
-- admin reads them through this audited call only.
create or replace function hipocampo.inspect_user_memory(user_id uuid default null::uuid, key text default null::text, history_limit integer default 100, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
security definer
set search_path to ''
as $function$
declare
    a record := hipocampo_private._data_subject(inspect_user_memory.user_id, inspect_user_memory.tenant_id);
    who record := hipocampo_private._acting_for(a.actor_tenant, a.actor_user);
    result jsonb;
begin
    if inspect_user_memory.history_limit is null or inspect_user_memory.history_limit not between 1 and 1000 then
        raise exception 'history_limit must lie in [1, 1000] (got %)',
            coalesce(inspect_user_memory.history_limit::text, 'null') using errcode = '22023';
    end if;
    result := jsonb_build_object(
        'tenant_id', a.actor_tenant,
        'user_id', a.actor_user,
        'consent', coalesce((
            select mc.granted from hipocampo_private.memory_consents as mc
            where mc.tenant_id = a.actor_tenant and mc.user_id = a.actor_user
        ), false),
        'memories', coalesce((
            select jsonb_agg(to_jsonb(m) - 'embedding' order by m.updated_at desc, m.key)
            from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.status = 'active'
        ), '[]'::jsonb),
        'staged', coalesce((
            select jsonb_agg(to_jsonb(s) - 'embedding' order by s.expires_at, s.key)
            from hipocampo_private.memory_staging as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'history', coalesce((
            select jsonb_agg(to_jsonb(m) - 'embedding' order by m.valid_from desc)
            from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.key = inspect_user_memory.key
        ), '[]'::jsonb),
        'events', coalesce((
            select jsonb_agg(to_jsonb(e) order by e.id desc)
            from (
                select x.* from hipocampo_private.memory_events as x
                where x.tenant_id = a.actor_tenant and x.user_id = a.actor_user
                order by x.id desc
                limit inspect_user_memory.history_limit
            ) as e
        ), '[]'::jsonb)
    );
    insert into hipocampo_private.memory_events (tenant_id, user_id, event, reason, detail)
    values (a.actor_tenant, a.actor_user, 'memory.inspected', who.reason,
        who.detail || jsonb_build_object(
            'key', inspect_user_memory.key, 'memories', jsonb_array_length(result -> 'memories')
        ));
    return result;
end;
$function$;

-- noqa: disable=all
create or replace view "hipocampo"."memory_metrics" as  SELECT t.id AS tenant_id,
    COALESCE(m.active, (0)::bigint) AS memories_total,
    COALESCE(s.staged, (0)::bigint) AS staged_total,
    COALESCE(e.writes, (0)::bigint) AS writes,
    COALESCE(e.decayed, (0)::bigint) AS decayed,
    COALESCE(e.expired, (0)::bigint) AS expired,
    COALESCE(e.user_deleted, (0)::bigint) AS user_deleted,
    COALESCE(e.corrected, (0)::bigint) AS corrected,
    COALESCE(e.rejected, (0)::bigint) AS rejected,
    round(((COALESCE(e.rejected, (0)::bigint))::numeric / (NULLIF((COALESCE(e.writes, (0)::bigint) + COALESCE(e.rejected, (0)::bigint)), 0))::numeric), 4) AS rejected_rate,
    round(((COALESCE(e.corrected, (0)::bigint))::numeric / (NULLIF(COALESCE(e.writes, (0)::bigint), 0))::numeric), 4) AS correction_rate
   FROM (((hipocampo_private.tenants t
     LEFT JOIN ( SELECT x.tenant_id,
            count(*) AS active
           FROM hipocampo_private.memories x
          WHERE (x.status = 'active'::text)
          GROUP BY x.tenant_id) m ON ((t.id = m.tenant_id)))
     LEFT JOIN ( SELECT x.tenant_id,
            count(*) AS staged
           FROM hipocampo_private.memory_staging x
          GROUP BY x.tenant_id) s ON ((t.id = s.tenant_id)))
     LEFT JOIN ( SELECT x.tenant_id,
            count(*) FILTER (WHERE (x.event = ANY (ARRAY['memory.created'::text, 'memory.updated'::text, 'memory.staged'::text]))) AS writes,
            count(*) FILTER (WHERE (x.event = 'memory.decayed'::text)) AS decayed,
            count(*) FILTER (WHERE (x.event = ANY (ARRAY['memory.expired'::text, 'memory.purged'::text]))) AS expired,
            count(*) FILTER (WHERE (x.event = 'memory.forgotten'::text)) AS user_deleted,
            count(*) FILTER (WHERE (x.event = 'memory.corrected'::text)) AS corrected,
            count(*) FILTER (WHERE (x.event = 'memory.write_rejected'::text)) AS rejected
           FROM hipocampo_private.memory_events x
          GROUP BY x.tenant_id) e ON ((t.id = e.tenant_id)));
-- noqa: enable=all


-- noqa: disable=all
create or replace view "hipocampo"."memory_top_categories" as  SELECT tenant_id,
    category,
    count(*) AS memories,
    (rank() OVER (PARTITION BY tenant_id ORDER BY (count(*)) DESC))::integer AS rank
   FROM hipocampo_private.memories m
  WHERE (status = 'active'::text)
  GROUP BY tenant_id, category;
-- noqa: enable=all

grant select on table hipocampo.embedding_queue to service_role;
grant select on table hipocampo.memory_metrics to authenticated;
grant select on table hipocampo.memory_metrics to service_role;
grant select on table hipocampo.memory_top_categories to authenticated;
grant select on table hipocampo.memory_top_categories to service_role;
comment on view hipocampo.embedding_queue is 'Rows waiting for a vector of the active model per kind: waiting (all), retrying (failed, backing off), dead (dead letters) and the newest dead letter''s error.';
comment on view hipocampo.memory_metrics is 'Per tenant: memories, staged, writes, decayed, expired, user_deleted, corrected, rejected, rejected_rate (refused / attempts), correction_rate (corrections / writes).';
comment on view hipocampo.memory_top_categories is 'Per tenant: active memories per category, ranked.';
alter view hipocampo.embedding_queue set (security_invoker = true);
alter view hipocampo.memory_metrics set (security_invoker = true);
alter view hipocampo.memory_top_categories set (security_invoker = true);
