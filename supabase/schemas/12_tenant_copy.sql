-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- A tenant copied to another database (issue 46 §3): the tables that hold a tenant, in the order
-- they can be written, and a digest of the tenant's rows that two databases can compare. `hipocampo
-- tenant export` / `import` (py_client/hipocampo/db/tenant_copy.py) share this list and this check.

/*
_tenant_tables() -> table (ord integer, name text, tenant_column text, reassigned text[], derived boolean)

Purpose: every table of hipocampo_private that holds a tenant's rows, in an order in which they can
  be written (a table after the ones it references), with the column naming the tenant
  (tenants: id), the columns a copy leaves to the target (reassigned: identities nothing
  references, numbered again by the target) and whether the table is derived (kb_postings,
  kb_term_stats, kb_text_stats: rebuilt by the chunks' triggers when the chunks are written, so
  copied by rebuilding and checked by the digest). Left out: answer_cache (a copy starts with an
  empty cache), rate_limit_buckets and embedding_failures (transient), tenant_moves (the source's
  record of its moves), and the global tables (embedding_models, model_calibrations,
  project_secrets, the global settings row).
Returns: one row per table, ord ascending.
Errors: none.
Example: select name from hipocampo_private._tenant_tables() order by ord;
*/
create or replace function hipocampo_private._tenant_tables()
returns table (ord integer, name text, tenant_column text, reassigned text[], derived boolean)
language sql
immutable
security invoker
set search_path = ''
as $$
    select * from (values
        (1, 'tenants', 'id', '{}'::text[], false),
        (2, 'settings', 'tenant_id', '{id}', false),
        (3, 'memberships', 'tenant_id', '{}', false),
        (4, 'memory_consents', 'tenant_id', '{}', false),
        (5, 'knowledge_bases', 'tenant_id', '{}', false),
        (6, 'agent_bindings', 'tenant_id', '{}', false),
        (7, 'documents', 'tenant_id', '{}', false),
        (8, 'chunks', 'tenant_id', '{}', false),
        (9, 'kb_postings', 'tenant_id', '{}', true),
        (10, 'kb_term_stats', 'tenant_id', '{}', true),
        (11, 'kb_text_stats', 'tenant_id', '{}', true),
        (12, 'chunk_access', 'tenant_id', '{}', false),
        (13, 'ingestion_jobs', 'tenant_id', '{}', false),
        (14, 'memories', 'tenant_id', '{}', false),
        (15, 'memory_staging', 'tenant_id', '{}', false),
        (16, 'memory_events', 'tenant_id', '{id}', false),
        (17, 'messages', 'tenant_id', '{}', false),
        (18, 'conversation_summaries', 'tenant_id', '{}', false),
        (19, 'sessions', 'tenant_id', '{}', false),
        (20, 'answer_audit', 'tenant_id', '{}', false),
        (21, 'data_access_log', 'tenant_id', '{id}', false),
        (22, 'read_queue', 'tenant_id', '{id}', false)
    ) as t (ord, name, tenant_column, reassigned, derived);
$$;

/*
tenant_digest(tenant_id uuid) -> jsonb

Purpose: what a tenant holds, table by table, in a form two databases can compare after a copy:
  the row count and the md5 of the tenant's rows (each row as jsonb without its reassigned
  columns, the rows sorted), for every table of _tenant_tables(). Timestamps are rendered in UTC,
  so two servers in other time zones agree.
Parameters: tenant_id - the tenant (it need not exist: every count is then 0).
Run as: service_role (it reads every table).
Returns: {"<table>": {"rows": n, "md5": "<32 hex>"}, …}.
Errors: 42501 "only service_role may digest a tenant".
Example: select hipocampo.tenant_digest('…') -> 'chunks';
*/
create or replace function hipocampo.tenant_digest(tenant_id uuid)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
set timezone to 'UTC'
as $$
declare
    t record;
    n bigint;
    digest text;
    out jsonb := '{}';
begin
    if (hipocampo_private._caller()).kind <> 'service' then
        raise exception 'only service_role may digest a tenant' using errcode = '42501';
    end if;
    for t in select * from hipocampo_private._tenant_tables() order by ord loop
        execute format(
            'select count(*), md5(coalesce(string_agg(r, '','' order by r), '''')) from ('
            'select (to_jsonb(x) - %L::text[])::text as r from hipocampo_private.%I as x where x.%I = $1) as rows',
            t.reassigned, t.name, t.tenant_column
        ) into n, digest using tenant_digest.tenant_id;
        out := out || jsonb_build_object(t.name, jsonb_build_object('rows', n, 'md5', digest));
    end loop;
    return out;
end;
$$;

comment on function hipocampo.tenant_digest(uuid) is
'Row counts and md5 of a tenant''s rows per table: the check of a tenant copied to another database.';

-- The online move (`hipocampo tenant move`): on the source, the tenants being moved. While a
-- row's frozen_at is set, the move's triggers (_refuse_moving_tenant, created on the tenant tables
-- for the move and dropped after it) refuse the tenant's writes; moved_at is the cut-over.
create table hipocampo_private.tenant_moves (
    tenant_id uuid primary key,
    target text not null,
    started_at timestamptz not null default now(),
    frozen_at timestamptz,
    moved_at timestamptz
);

-- No policy: the operator's table (the move runs as the database owner).
alter table hipocampo_private.tenant_moves enable row level security;

comment on table hipocampo_private.tenant_moves is
'Tenants moved (or being moved) to another database: target (host and database, no secret), freeze and cut-over times.';

/*
_refuse_moving_tenant() -> trigger

Purpose: the freeze of a tenant move: a row trigger (before insert, update or delete) that the
  move creates on each tenant table with the tenant column as its argument, refusing any write of
  a row of a tenant whose tenant_moves row is frozen. Other tenants' writes pass. Each write holds
  the tenant's advisory lock shared until it commits; the freeze takes it exclusively, so no write
  that passed the check commits after the freeze (the move's position after the freeze covers it).
Errors: 55000 "tenant … is moving to another database: retry in a moment".
Returns: the row, unchanged.
Example: create trigger hipocampo_moving before insert or update or delete on hipocampo_private.chunks
  for each row execute function hipocampo_private._refuse_moving_tenant('tenant_id');
*/
-- definer because a member's write must read the move table, which no client role reads.
create or replace function hipocampo_private._refuse_moving_tenant()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
    t uuid;
begin
    execute format('select ($1).%I', tg_argv[0]) into t using coalesce(new, old);
    -- Held until this write commits: the freeze takes it exclusively, so it waits for this write.
    perform pg_catalog.pg_advisory_xact_lock_shared(pg_catalog.hashtextextended(t::text, 0));
    if exists (
        select 1 from hipocampo_private.tenant_moves as m where m.tenant_id = t and m.frozen_at is not null
    ) then
        raise exception 'tenant % is moving to another database: retry in a moment', t using errcode = '55000';
    end if;
    return coalesce(new, old);
end;
$$;
