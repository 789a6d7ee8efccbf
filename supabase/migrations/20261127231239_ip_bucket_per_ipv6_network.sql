-- ip bucket per ipv6 network.
-- Issue 44 §5: the per-address bucket counts an IPv6 client by its /64 and an IPv4-mapped address as its IPv4 form.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._client_network(ip inet)
returns text
language sql
immutable parallel safe
set search_path to ''
as $function$
    select case
        when family(ip) = 4 then host(ip)
        when ip <<= '::ffff:0:0/96'::inet then host(substr(host(ip), 8)::inet)
        else pg_catalog.text(network(set_masklen(ip, 64)))
    end
$function$;

create or replace function hipocampo.take_ip_rate_limit(ip inet)
returns jsonb
language plpgsql
set search_path to ''
as $function$
begin
    if ip is null then
        raise exception 'ip is required' using errcode = '22023';
    end if;
    return hipocampo_private._take_token(
        'ip:' || hipocampo_private._pseudonym(hipocampo_private._client_network(ip)),
        (select (s.config -> 'rag' ->> 'ip_rate_limit_per_minute')::double precision
         from hipocampo_private.settings as s where s.tenant_id is null),
        1
    );
end;
$function$;

revoke execute on function hipocampo_private._client_network(ip inet) from public;
grant execute on function hipocampo_private._client_network(ip inet) to service_role;
