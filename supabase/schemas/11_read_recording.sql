-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- Reads that do not write (issue 46 §1). A read RPC (hybrid_search, answer_evidence through it,
-- search_memories, lookup_memories, context_pack) used to write its side effects in the reading
-- transaction: a data_access_log row, the access times of the chunks it returned (chunk_access),
-- the access counters of the memories it returned. On a hot standby every one of them failed
-- (25006), and on the primary they cost row locks and index updates on hot rows. Now a read
-- appends one narrow row to read_queue and nothing else; drain_read_queue (pg_cron every minute,
-- or `hipocampo worker`) turns the queue into the access log, the chunk access times and the
-- memory counters, in one transaction that deletes what it turned (a drain that dies rolls back
-- and the next one takes the same rows). In a read-only transaction (a hot standby, or a
-- PostgREST GET) the row is appended on the primary through dblink (server hipocampo_primary,
-- `hipocampo db link-primary`), so a replica's reads are in the audit trail too. The link logs in
-- as hipocampo_read_recorder, a role that may execute _enqueue_standby_read and nothing else, on
-- a connection that lives for one call; no API role executes any dblink function (00).

-- The link's login role: created here without login; `hipocampo db link-primary` gives it a
-- password and login, `unlink-primary` takes them away. Roles are the cluster's: created once.
do $$
begin
    if not exists (select 1 from pg_catalog.pg_roles where rolname = 'hipocampo_read_recorder') then
        create role hipocampo_read_recorder nologin noinherit;
    end if;
end;
$$;

-- The queue: one row per read, appended by _record_read, deleted by drain_read_queue. A logged
-- table (an unlogged one is emptied by a crash of the server, and these rows are the audit trail
-- until they are drained); no foreign keys (a row is checked when drained: a tenant deleted in
-- the meantime leaves nothing behind) and no index besides its key, so an append is cheap.
create table hipocampo_private.read_queue (
    id bigint generated always as identity primary key,
    at timestamptz not null default now(),
    caller uuid,
    caller_role text not null,
    tenant_id uuid not null,
    rpc text not null,
    rows_returned integer not null,
    query_hash text,
    latency_ms double precision not null,
    chunk_ids bigint[] not null default '{}',
    memory_ids uuid[] not null default '{}',
    -- The mean similarity of what a memory read returned, and the conversation it served (a
    -- context pack's): the per-session similarity the memory design asks to watch.
    conversation_id uuid,
    similarity real
);

-- No policy: only the definer functions below read or write it.
alter table hipocampo_private.read_queue enable row level security;

comment on table hipocampo_private.read_queue is
'Reads not yet drained into data_access_log, chunk_access and the memory counters (drain_read_queue).';

/*
_enqueue_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double
  precision, chunk_ids bigint[], memory_ids uuid[], similarity real default null, conversation_id
  uuid default null) -> void

Purpose: append one row to read_queue, with the time and the caller of the request (now();
  auth.uid(); auth.role(), else the role set, else the session user): here, or in a read-only
  transaction (a hot standby, a PostgREST GET) on the primary through dblink
  (_enqueue_read_on_primary, which has the primary's _enqueue_standby_read append it there). No
  check: granted to nobody; called by _record_read and by definer RPCs that resolved the tenant
  and bounded every value (hybrid_search).
Errors: 25006 and 08006 as _enqueue_read_on_primary.
Returns: nothing.
Example: perform hipocampo_private._enqueue_read(t, 'hybrid_search', 1, 'ab12…', 2.5, array[12], '{}');
*/
create or replace function hipocampo_private._enqueue_read(
    tenant_id uuid,
    rpc text,
    rows_returned integer,
    query_hash text,
    latency_ms double precision,
    chunk_ids bigint[],
    memory_ids uuid[],
    similarity real default null,
    conversation_id uuid default null
)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
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
$$;

/*
_enqueue_standby_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms
  double precision, chunk_ids bigint[], memory_ids uuid[], at timestamptz, caller uuid, caller_role
  text, similarity real, conversation_id uuid) -> integer

Purpose: the primary's side of the read link (issue 57 §1): append one read that a hot standby
  served to read_queue, as the standby's _enqueue_read_on_primary sends it. The only thing the
  login role hipocampo_read_recorder (the link's user, `hipocampo db link-primary`) may execute;
  no API role may. Bounded as _record_read, and at within the last day and not in the future
  (one minute of clock skew).
Errors: 22023 "standby read: … out of bounds".
Returns: 1.
Example: select hipocampo_private._enqueue_standby_read(t, 'search_memories', 2, null, 1.5, '{}', '{}', now(),
  u, 'authenticated', null, null);
*/
-- definer because the link's login role appends this one row to a table it may not otherwise touch.
create or replace function hipocampo_private._enqueue_standby_read(
    tenant_id uuid,
    rpc text,
    rows_returned integer,
    query_hash text,
    latency_ms double precision,
    chunk_ids bigint[],
    memory_ids uuid[],
    at timestamptz,
    caller uuid,
    caller_role text,
    similarity real,
    conversation_id uuid
)
returns integer
language plpgsql
security definer
set search_path = ''
as $$
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
$$;

/*
_enqueue_read_on_primary(statement text) -> void

Purpose: run one _enqueue_standby_read call (a select of one row) on the primary through dblink,
  on a connection to the foreign server hipocampo_primary opened for this call and closed by it
  (dblink's unnamed form: nothing outlives the call, so no later statement of the backend, by any
  role, can reuse it). The server's user mapping logs in as hipocampo_read_recorder, which may
  execute _enqueue_standby_read and nothing else. Used by _enqueue_read in a read-only
  transaction (a hot standby, a PostgREST GET).
Errors: 25006 "a read in a read-only transaction is recorded on the primary: link it with
  hipocampo db link-primary" (no server hipocampo_primary); 08006 "the read could not be recorded
  on the primary: …" (the primary refused or cannot be reached: the read fails rather than go
  unrecorded).
Returns: nothing.
Example: perform hipocampo_private._enqueue_read_on_primary('select 1 from hipocampo_private._enqueue_standby_read(…)');
*/
create or replace function hipocampo_private._enqueue_read_on_primary(statement text)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
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
$$;

/*
_record_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double
  precision, chunk_ids bigint[] default '{}', memory_ids uuid[] default '{}', similarity real default
  null, conversation_id uuid default null) -> void

Purpose: record one read for the audit trail and the access statistics, without writing the
  access log, chunk_access or the memory counters in the reading transaction: one row appended to
  read_queue (in a read-only transaction: on the primary, through dblink), turned into them by
  drain_read_queue. Caller and role are taken from the request; the tenant is _resolve_tenant's
  (a null tenant_id is the caller's own); a null latency_ms is the time since the statement began
  (the RPC call); similarity is the mean similarity of what a memory read returned and
  conversation_id the conversation it served (null when none). Bounded (issue 44 §5): rpc 1..63
  characters of [a-z_], similarity in [-1, 1],
  query_hash at most 128 characters, rows_returned and latency_ms >= 0, at most
  maintenance.read_record_max_chunk_ids chunk ids (1000) and read_record_max_memory_ids memory ids
  (10000: a user's active memories, memory.max_active_per_user, are at most 10000).
  Written only by the read it records (issue 57 §4): rpc is one of search_memories,
  lookup_memories, context_pack and search_history, and that RPC is on the call stack (its
  schema-qualified plpgsql frame in pg_context), so no caller appends a read that did not happen,
  names another RPC, or passes ids the read did not return; latency_ms is at most the time since
  the statement began.
Errors: 42501 "read record: written only by the read it records (…), never called directly"; 22023
  "read record: latency_ms is at most the time since the statement began"; 42501 as
  _resolve_tenant; 22023 "read record: rpc must be 1..63 characters of [a-z_]" /
  "read record: query_hash must be at most 128 characters" / "read record: rows_returned and
  latency_ms must be >= 0" / "read record: similarity must be in [-1, 1]" / "read record: at most n chunk ids and m memory ids (…)"; 55000 as
  _operator_limit; 25006 and 08006 as _enqueue_read_on_primary.
Returns: nothing.
Example: perform hipocampo_private._record_read(t, 'search_memories', 2, null, 1.5, memory_ids => ids);
*/
-- definer because callers may append a record of their own reads but never read or change the queue.
create or replace function hipocampo_private._record_read(
    tenant_id uuid,
    rpc text,
    rows_returned integer,
    query_hash text,
    latency_ms double precision,
    chunk_ids bigint[] default '{}',
    memory_ids uuid[] default '{}',
    similarity real default null,
    conversation_id uuid default null
)
returns void
language plpgsql
security definer
set search_path = ''
as $$
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
$$;

/*
drain_read_queue(max_rows integer default 10000) -> jsonb

Purpose: turn up to max_rows recorded reads, oldest first, into what they stand for: one
  data_access_log row each (at = the read's time), the access time of each chunk returned
  (chunk_access: its latest read), access_count + (times returned) and last_accessed_at of each
  memory returned (long-term or staged); and delete them, in the same statement (a drain that dies
  rolls back and leaves them to the next). Rows of a tenant deleted since, and chunks or memories
  deleted since, leave nothing behind. Several drains may run at once (skip locked). Run every
  minute by pg_cron (maintenance.read_queue_cron) or by `hipocampo worker`: a read is in the access
  log within that delay.
Parameters: max_rows - 1..100000 rows per call.
Run as: service_role (or the database owner: pg_cron).
Returns: {"reads": n, "chunks_touched": n, "memories_touched": n, "left": n (rows still queued)}.
Errors: 22023 "max_rows must be 1..100000 (got n)".
Example: select hipocampo.drain_read_queue();
*/
create or replace function hipocampo.drain_read_queue(max_rows integer default 10000)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    result jsonb;
begin
    if max_rows is null or max_rows not between 1 and 100000 then
        raise exception 'max_rows must be 1..100000 (got %)', max_rows using errcode = '22023';
    end if;
    with batch as (
        delete from hipocampo_private.read_queue as q
        where q.id in (
            select x.id from hipocampo_private.read_queue as x order by x.id limit max_rows for update skip locked
        )
        returning q.*
    ),

    live as (
        select b.* from batch as b
        where exists (select 1 from hipocampo_private.tenants as tn where tn.id = b.tenant_id)
    ),

    logged as (
        insert into hipocampo_private.data_access_log
            (at, caller, caller_role, tenant_id, rpc, rows_returned, query_hash, latency_ms, similarity, conversation_id)
        select l.at, l.caller, l.caller_role, l.tenant_id, l.rpc, l.rows_returned, l.query_hash, l.latency_ms,
            l.similarity, l.conversation_id
        from live as l order by l.id
        returning 1
    ),

    -- In chunk order, so that two drains lock the same rows in one order (no deadlock).
    chunks as (
        insert into hipocampo_private.chunk_access as a (chunk_id, tenant_id, last_accessed_at)
        select c.id, c.tenant_id, max(l.at)
        from live as l
        cross join lateral unnest(l.chunk_ids) as x (chunk_id)
        inner join hipocampo_private.chunks as c on x.chunk_id = c.id and l.tenant_id = c.tenant_id
        group by c.id, c.tenant_id
        order by c.id
        on conflict on constraint chunk_access_pkey do update
        set last_accessed_at = greatest(a.last_accessed_at, excluded.last_accessed_at)
        returning 1
    ),

    touched as (
        select x.memory_id, l.tenant_id, count(*) as times, max(l.at) as last_at
        from live as l cross join lateral unnest(l.memory_ids) as x (memory_id)
        group by x.memory_id, l.tenant_id
    ),

    memories as (
        update hipocampo_private.memories as m
        set access_count = m.access_count + t.times, last_accessed_at = greatest(m.last_accessed_at, t.last_at)
        from touched as t where m.id = t.memory_id and m.tenant_id = t.tenant_id
        returning 1
    ),

    staged as (
        update hipocampo_private.memory_staging as s
        set access_count = s.access_count + t.times, last_accessed_at = greatest(s.last_accessed_at, t.last_at)
        from touched as t where s.id = t.memory_id and s.tenant_id = t.tenant_id
        returning 1
    )

    select jsonb_build_object(
        'reads', (select count(*) from logged),
        'chunks_touched', (select count(*) from chunks),
        'memories_touched', (select count(*) from memories) + (select count(*) from staged)
    ) into result;
    return result || jsonb_build_object('left', (select count(*) from hipocampo_private.read_queue));
end;
$$;

comment on function hipocampo.drain_read_queue(integer) is
'Turn recorded reads into the access log, chunk access times and memory counters (pg_cron / worker).';
