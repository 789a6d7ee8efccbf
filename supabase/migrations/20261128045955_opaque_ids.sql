-- opaque ids.
-- message, memory-event, access-log, chunk and settings ids are the millisecond and a keyed permutation of a private counter: the gap between two ids a user sees no longer counts other tenants' rows, and ids stay below 2^53 for JavaScript (issue 44 §5)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

alter table hipocampo_private.chunks alter column id drop identity;

alter table hipocampo_private.data_access_log alter column id drop identity;

alter table hipocampo_private.memory_events alter column id drop identity;

alter table hipocampo_private.messages alter column id drop identity;

alter table hipocampo_private.settings alter column id drop identity;

create sequence hipocampo_private.id_counter;

create table hipocampo_private.id_keys (
    name text not null,
    key text not null
);


alter table hipocampo_private.id_keys enable row level security;

create unique index id_keys_pkey on hipocampo_private.id_keys using btree (name);

alter table hipocampo_private.id_keys add constraint id_keys_pkey primary key using index id_keys_pkey;

set check_function_bodies = off;

-- definer because the permutation's key (id_keys) is read and made by nobody else.
create or replace function hipocampo_private._opaque_id(in_order boolean default false)
returns bigint
language plpgsql
security definer
set search_path to ''
as $function$
declare
    epoch constant timestamptz := timestamptz '2026-01-01 00:00:00+00';
    t bigint := floor(extract(epoch from pg_catalog.clock_timestamp() - epoch) * 1000)::bigint;
    last bigint := case when in_order
        then nullif(pg_catalog.current_setting('hipocampo.last_ordered_id_ms', true), '')::bigint end;
    k text := (select i.key from hipocampo_private.id_keys as i where i.name = 'ids');
begin
    while t <= last loop
        perform pg_catalog.pg_sleep(0.0002);
        t := floor(extract(epoch from pg_catalog.clock_timestamp() - epoch) * 1000)::bigint;
    end loop;
    if in_order then
        perform pg_catalog.set_config('hipocampo.last_ordered_id_ms', t::text, false);
    end if;
    if k is null then
        insert into hipocampo_private.id_keys (name, key) values ('ids', pg_catalog.gen_random_uuid()::text)
        on conflict (name) do nothing;
        k := (select i.key from hipocampo_private.id_keys as i where i.name = 'ids');
    end if;
    return (t << 10) | hipocampo_private._permuted_low_bits(
        k, t, (pg_catalog.nextval('hipocampo_private.id_counter') % 1024)::integer
    );
end;
$function$;

create or replace function hipocampo_private._permuted_low_bits(key text, t bigint, n integer)
returns integer
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
declare
    l integer := (n >> 5) & 31;
    r integer := n & 31;
    f integer;
begin
    for step in 1..4 loop
        f := (pg_catalog.hashtextextended(key || ':' || t || ':' || step || ':' || r, 0) & 31)::integer;
        select r, l # f into l, r;
    end loop;
    return (l << 5) | r;
end;
$function$;

create or replace function hipocampo.run_memory_maintenance(now timestamp with time zone default now())
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    -- The global row with the active embedding model's calibration (issue 22 §2): every key of
    -- the section is checked, although maintenance reads only the decay keys.
    cfg jsonb := hipocampo_private._memory_config(
        (select s.config -> 'memory' from hipocampo_private.settings as s where s.tenant_id is null)
        || coalesce(hipocampo_private._calibration() -> 'memory', '{}'::jsonb)
    );
    period interval := make_interval(days => (cfg ->> 'decay_days')::integer);
    step real := (cfg ->> 'decay_step')::real;
    low real := (cfg ->> 'deactivate_below')::real;
    n_decayed integer;
    n_low integer;
    n_expired integer;
    n_purged integer;
begin
    with decayed as (
        update hipocampo_private.memories as m
        set confidence = greatest(m.confidence - step, 0), last_decayed_at = run_memory_maintenance.now,
            updated_at = run_memory_maintenance.now
        where m.status = 'active' and not m.pinned and m.source <> 'explicit_user'
          and run_memory_maintenance.now - greatest(
              coalesce(m.last_accessed_at, m.created_at), coalesce(m.last_decayed_at, '-infinity')
          ) >= period
        returning m.id, m.tenant_id, m.user_id, m.confidence
    ), logged as (
        insert into hipocampo_private.memory_events (id, at, tenant_id, user_id, memory_id, event, detail)
        select hipocampo_private._opaque_id(), run_memory_maintenance.now, d.tenant_id, d.user_id, d.id, 'memory.decayed',
            jsonb_build_object('confidence', d.confidence)
        from decayed as d
    )
    select count(*) into n_decayed from decayed;

    with low_rows as (
        update hipocampo_private.memories as m
        set status = 'expired', valid_to = run_memory_maintenance.now, updated_at = run_memory_maintenance.now
        where m.status = 'active' and m.confidence < low and not m.pinned and m.source <> 'explicit_user'
        returning m.id, m.tenant_id, m.user_id
    ), logged as (
        insert into hipocampo_private.memory_events (id, at, tenant_id, user_id, memory_id, event, reason)
        select hipocampo_private._opaque_id(), run_memory_maintenance.now, l.tenant_id, l.user_id, l.id, 'memory.expired', 'low_confidence'
        from low_rows as l
    )
    select count(*) into n_low from low_rows;

    with gone as (
        update hipocampo_private.memories as m
        set status = 'expired', valid_to = run_memory_maintenance.now, updated_at = run_memory_maintenance.now
        where m.status = 'active' and m.expires_at <= run_memory_maintenance.now
        returning m.id, m.tenant_id, m.user_id
    ), logged as (
        insert into hipocampo_private.memory_events (id, at, tenant_id, user_id, memory_id, event, reason)
        select hipocampo_private._opaque_id(), run_memory_maintenance.now, g.tenant_id, g.user_id, g.id, 'memory.expired', 'expires_at'
        from gone as g
    )
    select count(*) into n_expired from gone;

    with purged as (
        delete from hipocampo_private.memory_staging as s
        where s.expires_at <= run_memory_maintenance.now and not s.pinned
        returning s.id, s.tenant_id, s.user_id, s.key
    ), logged as (
        insert into hipocampo_private.memory_events (id, at, tenant_id, user_id, memory_id, event, reason, detail)
        select hipocampo_private._opaque_id(), run_memory_maintenance.now, p.tenant_id, p.user_id, p.id, 'memory.purged', 'staging_expired',
            jsonb_build_object('key', p.key)
        from purged as p
    )
    select count(*) into n_purged from purged;

    return jsonb_build_object('decayed', n_decayed, 'deactivated', n_low, 'expired', n_expired,
        'staging_purged', n_purged);
end;
$function$;

alter table hipocampo_private.chunks alter column id set default hipocampo_private._opaque_id();

alter table hipocampo_private.data_access_log alter column id set default hipocampo_private._opaque_id();

alter table hipocampo_private.memory_events alter column id set default hipocampo_private._opaque_id(true);

alter table hipocampo_private.messages alter column id set default hipocampo_private._opaque_id(true);

alter table hipocampo_private.settings alter column id set default hipocampo_private._opaque_id();

revoke execute on function hipocampo_private._opaque_id(in_order boolean) from public;
revoke execute on function hipocampo_private._permuted_low_bits(key text, t bigint, n integer) from public;
grant execute on function hipocampo_private._opaque_id(in_order boolean) to authenticated;
grant execute on function hipocampo_private._opaque_id(in_order boolean) to service_role;
comment on table hipocampo_private.id_keys is 'Secret keys of the id permutations (_opaque_id): made on first use, read by definer functions only.';
