-- tenant tables and digest.
-- the tables that hold a tenant and a digest of its rows, shared by tenant export and import
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo.tenant_digest(tenant_id uuid)
returns jsonb
language plpgsql
stable
set search_path to ''
set "TimeZone" to 'UTC'
as $function$
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
$function$;

create or replace function hipocampo_private._tenant_tables()
returns table (ord integer, name text, tenant_column text, reassigned text[], derived boolean)
language sql
immutable
set search_path to ''
as $function$
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
$function$;

revoke execute on function hipocampo.tenant_digest(tenant_id uuid) from public;
revoke execute on function hipocampo_private._tenant_tables() from public;
grant execute on function hipocampo.tenant_digest(tenant_id uuid) to service_role;
grant execute on function hipocampo_private._tenant_tables() to service_role;
comment on function hipocampo.tenant_digest(pg_catalog.uuid) is 'Row counts and md5 of a tenant''s rows per table: the check of a tenant copied to another database.';
