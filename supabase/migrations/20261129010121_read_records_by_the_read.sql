-- read records by the read.
-- Issue 57 §4: a read record is written only by the read RPC it records (on the call stack), with a latency no larger than the statement's.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

-- definer because callers may append a record of their own reads but never read or change the queue.
create or replace function hipocampo_private._record_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[] default '{}'::bigint[], memory_ids uuid[] default '{}'::uuid[], similarity real default null::real, conversation_id uuid default null::uuid)
returns void
language plpgsql
security definer
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(_record_read.tenant_id);
    most_chunks integer := hipocampo_private._operator_limit('maintenance', 'read_record_max_chunk_ids');
    most_memories integer := hipocampo_private._operator_limit('maintenance', 'read_record_max_memory_ids');
    elapsed double precision := extract(epoch from clock_timestamp() - statement_timestamp()) * 1000;
    stack text;
begin
    -- Written only by the read that happened (issue 57 §4): the named read RPC is on the call
    -- stack (its plpgsql frame, schema-qualified: no caller's own function can stand for it).
    get diagnostics stack = pg_context;
    if coalesce(_record_read.rpc, '') not in ('search_memories', 'lookup_memories', 'context_pack', 'search_history')
        or stack !~ ('function hipocampo\.' || _record_read.rpc || '\(') then
        raise exception 'read record: written only by the read it records (search_memories, lookup_memories, '
            'context_pack, search_history), never called directly' using errcode = '42501';
    end if;
    if _record_read.latency_ms > elapsed + 1 then
        raise exception 'read record: latency_ms is at most the time since the statement began' using errcode = '22023';
    end if;
    if coalesce(_record_read.rpc, '') !~ '^[a-z_]{1,63}$' then
        raise exception 'read record: rpc must be 1..63 characters of [a-z_]' using errcode = '22023';
    end if;
    if char_length(_record_read.query_hash) > 128 then
        raise exception 'read record: query_hash must be at most 128 characters' using errcode = '22023';
    end if;
    if _record_read.rows_returned < 0 or _record_read.latency_ms < 0 then
        raise exception 'read record: rows_returned and latency_ms must be >= 0' using errcode = '22023';
    end if;
    if _record_read.similarity not between -1 and 1 then
        raise exception 'read record: similarity must be in [-1, 1]' using errcode = '22023';
    end if;
    if cardinality(_record_read.chunk_ids) > most_chunks or cardinality(_record_read.memory_ids) > most_memories then
        raise exception 'read record: at most % chunk ids and % memory ids (maintenance.read_record_max_chunk_ids, read_record_max_memory_ids)',
            most_chunks, most_memories using errcode = '22023';
    end if;
    perform hipocampo_private._enqueue_read(
        t, _record_read.rpc, _record_read.rows_returned, _record_read.query_hash,
        coalesce(_record_read.latency_ms, elapsed),
        _record_read.chunk_ids, _record_read.memory_ids,
        similarity => _record_read.similarity, conversation_id => _record_read.conversation_id
    );
end;
$function$;
