-- One tenant's part of the embedding backfill's queue (issue 45 §6: the hub's embedding-queue
-- page): what waits for a vector of the active model, what failed and is retrying, the dead
-- letters, and requeueing them. hipocampo.embedding_queue (11_observability.sql) is the
-- operator's view across tenants; embedding_failures is service-only and has no tenant column,
-- so these RPCs find the tenant's rows through each kind's table.

/*
_tenant_embedding_rows(tenant_id uuid) -> table (kind text, row_id text)

Purpose: the rows of one tenant the embedding backfill may still have to embed or has failed to:
  those without a vector of the active model (as hipocampo.embedding_queue counts them: a chunk
  once per content hash), and those with a failure record (embedding_failures), per kind chunks |
  memories | memory_staging | messages.
Parameters: tenant_id - the tenant.
Returns: one row per (kind, row_id), row_id as rows_to_embed and embedding_failures name it.
Errors: none of its own.
*/
create or replace function hipocampo_private._tenant_embedding_rows(tenant_id uuid)
returns table (kind text, row_id text)
language sql
stable
security invoker
set search_path = ''
as $$
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
$$;

/*
tenant_embedding_queue(tenant_id uuid default null) -> jsonb

Purpose: one tenant's embedding queue (the hub's page): per kind, the rows waiting for a vector
  of the active model, those retrying after a failure and the dead letters; and the newest 100
  dead letters with their attempts and last error (the provider's message).
Parameters: tenant_id - service_role only (others: their tenant).
Run as: a tenant admin, or service_role.
Returns: {"kinds": [{"kind", "waiting", "retrying", "dead"}] (the four kinds, in order),
  "dead_letters": [{"kind", "row_id", "attempts", "last_error", "updated_at"}] (newest first,
  at most 100)}.
Errors: 42501 as _resolve_tenant (before any other work); 42501 "only tenant admins can read the
  tenant's embedding queue".
Example: select hipocampo.tenant_embedding_queue();
*/
-- definer because embedding_failures is service-only (RLS, no policy): an admin reads the failure
-- records of their own tenant's rows only, found through _tenant_embedding_rows.
create or replace function hipocampo.tenant_embedding_queue(tenant_id uuid default null)
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
set jit = off
as $$
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
$$;

/*
requeue_tenant_embeddings(kind text default null, tenant_id uuid default null) -> integer

Purpose: give one tenant's dead letters (and its rows waiting for a retry) back to the embedding
  backfill at once, e.g. after the provider's key was fixed: their failure records are deleted,
  so rows_to_embed lists them again. Other tenants' records stay.
Parameters: kind - chunks | memories | memory_staging | messages, or null for all; tenant_id -
  service_role only (others: their tenant).
Run as: a tenant admin, or service_role.
Returns: the number of rows requeued.
Errors: 42501 as _resolve_tenant (before any other work); 42501 "only tenant admins can requeue
  the tenant's embeddings"; 22023 "kind must be chunks, memories, memory_staging or messages".
Example: select hipocampo.requeue_tenant_embeddings('chunks');
*/
-- definer because embedding_failures is service-only (RLS, no policy): an admin deletes the
-- failure records of their own tenant's rows only, found through _tenant_embedding_rows.
create or replace function hipocampo.requeue_tenant_embeddings(kind text default null, tenant_id uuid default null)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
set jit = off
as $$
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
$$;

comment on function hipocampo.tenant_embedding_queue(uuid) is
'One tenant''s embedding queue: waiting, retrying and dead rows per kind, and the newest dead letters (admins).';

comment on function hipocampo.requeue_tenant_embeddings(text, uuid) is
'Give one tenant''s dead-lettered and waiting rows back to the embedding backfill (admins).';
