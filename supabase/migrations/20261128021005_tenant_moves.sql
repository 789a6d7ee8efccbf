-- tenant moves.
-- the online move's record of moved tenants and the trigger that freezes a tenant's writes for the cut-over
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

create table hipocampo_private.tenant_moves (
    tenant_id uuid not null,
    target text not null,
    started_at timestamp with time zone not null default now(),
    frozen_at timestamp with time zone,
    moved_at timestamp with time zone
);


alter table hipocampo_private.tenant_moves enable row level security;

create unique index tenant_moves_pkey on hipocampo_private.tenant_moves using btree (tenant_id);

alter table hipocampo_private.tenant_moves add constraint tenant_moves_pkey primary key using index tenant_moves_pkey;

set check_function_bodies = off;

-- definer because a member's write must read the move table, which no client role reads.
create or replace function hipocampo_private._refuse_moving_tenant()
returns trigger
language plpgsql
security definer
set search_path to ''
as $function$
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
$function$;

revoke execute on function hipocampo_private._refuse_moving_tenant() from public;
grant all on table hipocampo_private.tenant_moves to service_role;
comment on table hipocampo_private.tenant_moves is 'Tenants moved (or being moved) to another database: target (host and database, no secret), freeze and cut-over times.';
