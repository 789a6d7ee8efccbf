-- audit bounds from config.
-- the read record's and memory event's size bounds are the operator's config (maintenance.*), not numbers written in SQL (issue 44 §5)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._operator_limit(section text, key text)
returns integer
language plpgsql
stable
set search_path to ''
as $function$
declare
    v integer := (
        select (g.config -> _operator_limit.section ->> _operator_limit.key)::integer
        from hipocampo_private.settings as g where g.tenant_id is null
    );
begin
    if v is null then
        raise exception '%.% is not configured (seed it from config.toml: hipocampo db migrate)', section, key
            using errcode = '55000';
    end if;
    return v;
end;
$function$;

-- definer because callers append events but may never change or delete them.
create or replace function hipocampo_private._memory_event(tenant_id uuid, user_id uuid, memory_id uuid, event text, reason text, detail jsonb)
returns void
language plpgsql
security definer
set search_path to ''
as $function$
declare
    t uuid := _memory_event.tenant_id;
    u uuid := _memory_event.user_id;
    most_reason integer := hipocampo_private._operator_limit('maintenance', 'memory_event_reason_max_chars');
    most_detail integer := hipocampo_private._operator_limit('maintenance', 'memory_event_detail_max_bytes');
begin
    if (hipocampo_private._caller()).kind <> 'service' then
        select s.actor_tenant, s.actor_user into t, u
        from hipocampo_private._data_subject(_memory_event.user_id, _memory_event.tenant_id) as s;
    end if;
    if _memory_event.event in ('user.erased', 'memory.inspected') then
        raise exception 'memory event: % is written only by its RPC', _memory_event.event using errcode = '22023';
    end if;
    if char_length(_memory_event.reason) > most_reason then
        raise exception 'memory event: reason must be at most % characters (maintenance.memory_event_reason_max_chars)',
            most_reason using errcode = '22023';
    end if;
    if octet_length(_memory_event.detail::text) > most_detail then
        raise exception 'memory event: detail must be at most % bytes (maintenance.memory_event_detail_max_bytes)',
            most_detail using errcode = '22023';
    end if;
    insert into hipocampo_private.memory_events (tenant_id, user_id, memory_id, event, reason, detail)
    values (t, u, _memory_event.memory_id, _memory_event.event, _memory_event.reason,
            coalesce(_memory_event.detail, '{}'::jsonb));
end;
$function$;

-- definer because callers may append a record of their own reads but never read or change the queue.
create or replace function hipocampo_private._record_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[] default '{}'::bigint[], memory_ids uuid[] default '{}'::uuid[])
returns void
language plpgsql
security definer
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(_record_read.tenant_id);
    most_chunks integer := hipocampo_private._operator_limit('maintenance', 'read_record_max_chunk_ids');
    most_memories integer := hipocampo_private._operator_limit('maintenance', 'read_record_max_memory_ids');
begin
    if coalesce(_record_read.rpc, '') !~ '^[a-z_]{1,63}$' then
        raise exception 'read record: rpc must be 1..63 characters of [a-z_]' using errcode = '22023';
    end if;
    if char_length(_record_read.query_hash) > 128 then
        raise exception 'read record: query_hash must be at most 128 characters' using errcode = '22023';
    end if;
    if _record_read.rows_returned < 0 or _record_read.latency_ms < 0 then
        raise exception 'read record: rows_returned and latency_ms must be >= 0' using errcode = '22023';
    end if;
    if cardinality(_record_read.chunk_ids) > most_chunks or cardinality(_record_read.memory_ids) > most_memories then
        raise exception 'read record: at most % chunk ids and % memory ids (maintenance.read_record_max_chunk_ids, read_record_max_memory_ids)',
            most_chunks, most_memories using errcode = '22023';
    end if;
    perform hipocampo_private._enqueue_read(
        t, _record_read.rpc, _record_read.rows_returned, _record_read.query_hash,
        coalesce(_record_read.latency_ms, extract(epoch from clock_timestamp() - statement_timestamp()) * 1000),
        _record_read.chunk_ids, _record_read.memory_ids
    );
end;
$function$;

revoke execute on function hipocampo_private._operator_limit(section text, key text) from public;
