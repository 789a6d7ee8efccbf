-- Ingestion jobs and the data-access log written by every retrieval RPC.

create table hipocampo_private.ingestion_jobs (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    kb_id uuid not null,
    status text not null default 'running',
    documents_total integer not null default 0,
    documents_ingested integer not null default 0,
    documents_unchanged integer not null default 0,
    documents_failed integer not null default 0,
    chunks_written integer not null default 0,
    errors jsonb not null default '[]'::jsonb,
    created_by uuid,
    started_at timestamptz not null default now(),
    finished_at timestamptz,
    constraint ingestion_jobs_status_check check (
        status in ('running', 'succeeded', 'partial', 'failed')
    ),
    constraint ingestion_jobs_errors_is_array check (jsonb_typeof(errors) = 'array'),
    constraint ingestion_jobs_kb_fkey foreign key (kb_id, tenant_id)
    references hipocampo_private.knowledge_bases (id, tenant_id) on delete cascade
);

create table hipocampo_private.data_access_log (
    id bigint generated always as identity primary key,
    at timestamptz not null default now(),
    caller uuid,
    caller_role text not null,
    tenant_id uuid,
    rpc text not null,
    rows_returned integer not null,
    query_hash text,
    latency_ms double precision not null
);

create index ingestion_jobs_tenant_kb_idx on hipocampo_private.ingestion_jobs (tenant_id, kb_id);
create index data_access_log_tenant_at_idx on hipocampo_private.data_access_log (tenant_id, at);

alter table hipocampo_private.ingestion_jobs enable row level security;
alter table hipocampo_private.data_access_log enable row level security;

grant select, insert, update on hipocampo_private.ingestion_jobs to authenticated;
grant select on hipocampo_private.data_access_log to authenticated;
grant all on hipocampo_private.ingestion_jobs to service_role;
grant all on hipocampo_private.data_access_log to service_role;

create policy "members can read ingestion jobs of their tenant"
on hipocampo_private.ingestion_jobs
for select
to authenticated
using (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can start ingestion jobs in their tenant"
on hipocampo_private.ingestion_jobs
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "admins can update ingestion jobs of their tenant"
on hipocampo_private.ingestion_jobs
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
)
with check (tenant_id = (select hipocampo_private.current_tenant_id()));

create policy "admins can read the access log of their tenant"
on hipocampo_private.data_access_log
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

/*
_log_access(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision) -> void

Purpose: append one row to the data-access log (caller and role taken from the session).
Returns: nothing.
Errors: none.
Example: perform hipocampo_private._log_access(t, 'hybrid_search', 5, 'ab12…', 3.2);
*/
-- definer because callers may append to the access log but never read or change it.
create function hipocampo_private._log_access(
    tenant_id uuid,
    rpc text,
    rows_returned integer,
    query_hash text,
    latency_ms double precision
)
returns void
language sql
security definer
set search_path = ''
as $$
    insert into hipocampo_private.data_access_log
        (caller, caller_role, tenant_id, rpc, rows_returned, query_hash, latency_ms)
    values (
        (select auth.uid()),
        coalesce((select auth.role()), nullif(current_setting('role'), 'none'), session_user::text),
        _log_access.tenant_id,
        _log_access.rpc,
        _log_access.rows_returned,
        _log_access.query_hash,
        _log_access.latency_ms
    )
$$;

grant execute on function hipocampo_private._log_access(uuid, text, integer, text, double precision)
to authenticated, service_role;

comment on table hipocampo_private.ingestion_jobs is 'One row per ingestion run: status, counts, errors.';
comment on table hipocampo_private.data_access_log is
'Who read what: caller, tenant, RPC, rows returned, query hash (sha256), latency in ms.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
