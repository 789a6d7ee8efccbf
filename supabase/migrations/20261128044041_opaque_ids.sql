-- opaque ids.
-- message, memory-event, access-log, chunk and settings ids are time and a keyed permutation of a private counter: the gap between two ids a user sees no longer counts other tenants' rows (issue 44 §5)
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
create or replace function hipocampo_private._opaque_id()
returns bigint
language plpgsql
security definer
set search_path to ''
as $function$
declare
    t bigint := floor(extract(epoch from pg_catalog.clock_timestamp() - timestamptz '2026-01-01 00:00:00+00')
        * 1000000)::bigint;
    last bigint := nullif(pg_catalog.current_setting('hipocampo.last_opaque_id_us', true), '')::bigint;
    k text := (select i.key from hipocampo_private.id_keys as i where i.name = 'ids');
begin
    if last is not null and t <= last then
        t := last + 1;
    end if;
    perform pg_catalog.set_config('hipocampo.last_opaque_id_us', t::text, false);
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

alter table hipocampo_private.chunks alter column id set default hipocampo_private._opaque_id();

alter table hipocampo_private.data_access_log alter column id set default hipocampo_private._opaque_id();

alter table hipocampo_private.memory_events alter column id set default hipocampo_private._opaque_id();

alter table hipocampo_private.messages alter column id set default hipocampo_private._opaque_id();

alter table hipocampo_private.settings alter column id set default hipocampo_private._opaque_id();

revoke execute on function hipocampo_private._opaque_id() from public;
revoke execute on function hipocampo_private._permuted_low_bits(key text, t bigint, n integer) from public;
grant execute on function hipocampo_private._opaque_id() to authenticated;
grant execute on function hipocampo_private._opaque_id() to service_role;
comment on table hipocampo_private.id_keys is 'Secret keys of the id permutations (_opaque_id): made on first use, read by definer functions only.';
