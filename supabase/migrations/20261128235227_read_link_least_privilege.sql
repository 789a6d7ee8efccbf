-- read link least privilege.
-- Issue 57 §1: no API role executes dblink; the read link logs in as hipocampo_read_recorder for one call.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.
-- By hand: the link's role (grants below name it) and the dblink revocations as in
-- supabase/schemas/00 (one loop over the extension's functions, whatever its version).

-- The link's login role: created here without login; `hipocampo db link-primary` gives it a
-- password and login, `unlink-primary` takes them away. Roles are the cluster's: created once.
do $$
begin
    if not exists (select 1 from pg_catalog.pg_roles where rolname = 'hipocampo_read_recorder') then
        create role hipocampo_read_recorder nologin noinherit;
    end if;
end;
$$;

-- No API role executes a dblink function (issue 57 §1): with one, a member could open a
-- connection as whatever the database's foreign servers map to, or reuse one a definer left open.
-- PostgreSQL grants new functions to PUBLIC and Supabase's default privileges grant the extensions
-- schema's to anon, authenticated and service_role: every grant of dblink's functions but the
-- owner's is taken back here. A role that cannot revoke them (a non-owner) is told so.
do $$
declare
    f regprocedure;
begin
    for f in
        select p.oid::regprocedure from pg_catalog.pg_proc as p
        inner join pg_catalog.pg_depend as d on d.classid = 'pg_catalog.pg_proc'::regclass and d.objid = p.oid
        inner join pg_catalog.pg_extension as e on e.oid = d.refobjid and d.deptype = 'e'
        where e.extname = 'dblink'
    loop
        execute format('revoke all on function %s from public', f);
        continue when not exists (select 1 from pg_catalog.pg_roles where rolname = 'anon');
        execute format('revoke all on function %s from anon, authenticated, service_role', f);
        if pg_catalog.has_function_privilege('anon', f, 'execute')
            or pg_catalog.has_function_privilege('authenticated', f, 'execute') then
            raise warning 'dblink function % is still executable by an API role: revoke it as its owner', f;
        end if;
    end loop;
end;
$$;

drop function if exists hipocampo_private._enqueue_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], at timestamp with time zone, caller uuid, caller_role text, similarity real, conversation_id uuid);

set check_function_bodies = off;

create or replace function hipocampo_private._enqueue_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], similarity real default null::real, conversation_id uuid default null::uuid)
returns void
language plpgsql
set search_path to ''
as $function$
declare
    caller uuid := (select auth.uid());
    caller_role text := coalesce((select auth.role()), nullif(current_setting('role'), 'none'), session_user::text);
begin
    if current_setting('transaction_read_only')::boolean then
        perform hipocampo_private._enqueue_read_on_primary(format(
            'select 1 from hipocampo_private._enqueue_standby_read(%L::uuid, %L, %L::integer, %L, %L::double precision, '
            '%L::bigint[], %L::uuid[], pg_catalog.to_timestamp(%L::numeric), %L::uuid, %L, %L::real, %L::uuid)',
            _enqueue_read.tenant_id, _enqueue_read.rpc, _enqueue_read.rows_returned, _enqueue_read.query_hash,
            _enqueue_read.latency_ms, coalesce(_enqueue_read.chunk_ids, '{}'), coalesce(_enqueue_read.memory_ids, '{}'),
            extract(epoch from now()), caller, caller_role, _enqueue_read.similarity, _enqueue_read.conversation_id
        ));
        return;
    end if;
    insert into hipocampo_private.read_queue
        (caller, caller_role, tenant_id, rpc, rows_returned, query_hash, latency_ms, chunk_ids, memory_ids,
         similarity, conversation_id)
    values (
        caller, caller_role, _enqueue_read.tenant_id, _enqueue_read.rpc, _enqueue_read.rows_returned,
        _enqueue_read.query_hash, _enqueue_read.latency_ms, coalesce(_enqueue_read.chunk_ids, '{}'),
        coalesce(_enqueue_read.memory_ids, '{}'), _enqueue_read.similarity, _enqueue_read.conversation_id
    );
end;
$function$;

-- definer because the link's login role appends this one row to a table it may not otherwise touch.
create or replace function hipocampo_private._enqueue_standby_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], at timestamp with time zone, caller uuid, caller_role text, similarity real, conversation_id uuid)
returns integer
language plpgsql
security definer
set search_path to ''
as $function$
declare
    most_chunks integer := hipocampo_private._operator_limit('maintenance', 'read_record_max_chunk_ids');
    most_memories integer := hipocampo_private._operator_limit('maintenance', 'read_record_max_memory_ids');
begin
    if tenant_id is null or coalesce(rpc, '') !~ '^[a-z_]{1,63}$' or coalesce(caller_role, '') !~ '^[a-z_]{1,63}$'
        or char_length(query_hash) > 128 or coalesce(rows_returned, -1) < 0 or latency_ms is null
        or latency_ms not between 0 and 86400000 or similarity not between -1 and 1
        or at is null or at not between now() - interval '1 day' and now() + interval '1 minute'
        or cardinality(chunk_ids) > most_chunks or cardinality(memory_ids) > most_memories then
        raise exception 'standby read: a value is out of bounds (rpc %, caller_role %, at %)', rpc, caller_role, at
            using errcode = '22023';
    end if;
    insert into hipocampo_private.read_queue
        (at, caller, caller_role, tenant_id, rpc, rows_returned, query_hash, latency_ms, chunk_ids, memory_ids,
         similarity, conversation_id)
    values (
        _enqueue_standby_read.at, _enqueue_standby_read.caller, _enqueue_standby_read.caller_role,
        _enqueue_standby_read.tenant_id, _enqueue_standby_read.rpc, _enqueue_standby_read.rows_returned,
        _enqueue_standby_read.query_hash, _enqueue_standby_read.latency_ms,
        coalesce(_enqueue_standby_read.chunk_ids, '{}'), coalesce(_enqueue_standby_read.memory_ids, '{}'),
        _enqueue_standby_read.similarity, _enqueue_standby_read.conversation_id
    );
    return 1;
end;
$function$;

create or replace function hipocampo_private._enqueue_read_on_primary(statement text)
returns void
language plpgsql
set search_path to ''
as $function$
begin
    if not exists (select 1 from pg_catalog.pg_foreign_server where srvname = 'hipocampo_primary') then
        raise exception 'a read in a read-only transaction is recorded on the primary: link it with '
            'hipocampo db link-primary' using errcode = '25006';
    end if;
    begin
        perform 1 from extensions.dblink('hipocampo_primary', statement) as r (ok integer);
    exception when others then
        raise exception 'the read could not be recorded on the primary: %', sqlerrm using errcode = '08006';
    end;
end;
$function$;

revoke execute on function hipocampo_private._enqueue_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], similarity real, conversation_id uuid) from public;
revoke execute on function hipocampo_private._enqueue_standby_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], at timestamp with time zone, caller uuid, caller_role text, similarity real, conversation_id uuid) from public;
grant execute on function hipocampo_private._enqueue_standby_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], at timestamp with time zone, caller uuid, caller_role text, similarity real, conversation_id uuid) to hipocampo_read_recorder;
grant usage on schema hipocampo_private to hipocampo_read_recorder;
