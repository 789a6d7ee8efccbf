-- reads off the read path.
-- a read records itself in a queue (on the primary through dblink when read-only), drained into the access log and access counters
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

create extension if not exists dblink with schema extensions;
drop function if exists hipocampo_private._log_access(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision);

drop function if exists hipocampo_private._touch_memories(ids uuid[], tenant_id uuid);

drop function if exists hipocampo_private._write_access_log(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision);

create table hipocampo_private.read_queue (
    id bigint generated always as identity not null,
    at timestamp with time zone not null default now(),
    caller uuid,
    caller_role text not null,
    tenant_id uuid not null,
    rpc text not null,
    rows_returned integer not null,
    query_hash text,
    latency_ms double precision not null,
    chunk_ids bigint[] not null default '{}'::bigint[],
    memory_ids uuid[] not null default '{}'::uuid[]
);


alter table hipocampo_private.read_queue enable row level security;

create unique index read_queue_pkey on hipocampo_private.read_queue using btree (id);

alter table hipocampo_private.read_queue add constraint read_queue_pkey primary key using index read_queue_pkey;

set check_function_bodies = off;

create or replace function hipocampo.drain_read_queue(max_rows integer default 10000)
returns jsonb
language plpgsql
set search_path to ''
as $function$
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
            (at, caller, caller_role, tenant_id, rpc, rows_returned, query_hash, latency_ms)
        select l.at, l.caller, l.caller_role, l.tenant_id, l.rpc, l.rows_returned, l.query_hash, l.latency_ms
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
$function$;

create or replace function hipocampo_private._enqueue_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], at timestamp with time zone default null::timestamp with time zone, caller uuid default null::uuid, caller_role text default null::text)
returns void
language plpgsql
set search_path to ''
as $function$
begin
    -- A call from the primary's side of the link has at, caller and caller_role filled in: it is
    -- appended there (never sent on, so a read-only primary fails rather than call itself).
    if _enqueue_read.caller_role is null then
        at := now();
        caller := (select auth.uid());
        caller_role := coalesce((select auth.role()), nullif(current_setting('role'), 'none'), session_user::text);
        if current_setting('transaction_read_only')::boolean then
            perform hipocampo_private._enqueue_read_on_primary(format(
                'select 1 from hipocampo_private._enqueue_read(%L::uuid, %L, %L::integer, %L, %L::double precision, '
                '%L::bigint[], %L::uuid[], pg_catalog.to_timestamp(%L::numeric), %L::uuid, %L)',
                _enqueue_read.tenant_id, _enqueue_read.rpc, _enqueue_read.rows_returned, _enqueue_read.query_hash,
                _enqueue_read.latency_ms, coalesce(_enqueue_read.chunk_ids, '{}'),
                coalesce(_enqueue_read.memory_ids, '{}'), extract(epoch from _enqueue_read.at), _enqueue_read.caller,
                _enqueue_read.caller_role
            ));
            return;
        end if;
    end if;
    insert into hipocampo_private.read_queue
        (at, caller, caller_role, tenant_id, rpc, rows_returned, query_hash, latency_ms, chunk_ids, memory_ids)
    values (
        _enqueue_read.at, _enqueue_read.caller, _enqueue_read.caller_role, _enqueue_read.tenant_id,
        _enqueue_read.rpc, _enqueue_read.rows_returned, _enqueue_read.query_hash, _enqueue_read.latency_ms,
        coalesce(_enqueue_read.chunk_ids, '{}'), coalesce(_enqueue_read.memory_ids, '{}')
    );
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
    for attempt in 1..2 loop
        begin
            if 'hipocampo_primary' <> all(coalesce(extensions.dblink_get_connections(), '{}')) then
                perform extensions.dblink_connect('hipocampo_primary', 'hipocampo_primary');
            end if;
            perform 1 from extensions.dblink('hipocampo_primary', statement) as r (ok integer);
            return;
        exception when others then
            if 'hipocampo_primary' = any(coalesce(extensions.dblink_get_connections(), '{}')) then
                perform extensions.dblink_disconnect('hipocampo_primary');
            end if;
            if attempt = 2 then
                raise exception 'the read could not be recorded on the primary: %', sqlerrm using errcode = '08006';
            end if;
        end;
    end loop;
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
    if cardinality(_record_read.chunk_ids) > 1000 or cardinality(_record_read.memory_ids) > 10000 then
        raise exception 'read record: at most 1000 chunk ids and 10000 memory ids' using errcode = '22023';
    end if;
    perform hipocampo_private._enqueue_read(
        t, _record_read.rpc, _record_read.rows_returned, _record_read.query_hash,
        coalesce(_record_read.latency_ms, extract(epoch from clock_timestamp() - statement_timestamp()) * 1000),
        _record_read.chunk_ids, _record_read.memory_ids
    );
end;
$function$;

create or replace function hipocampo_private._some_memory_tagged(tenant uuid, who uuid, tags text[], include_staging boolean)
returns boolean
language sql
stable
set search_path to ''
as $function$
    select exists (
        select 1 from hipocampo_private.memories as m
        where m.tenant_id = tenant and m.status = 'active' and m.tags && _some_memory_tagged.tags
          and (who is null or m.user_id = who or m.scope = 'tenant_shared')
        union all
        select 1 from hipocampo_private.memory_staging as s
        where include_staging and s.tenant_id = tenant and s.tags && _some_memory_tagged.tags
          and (who is null or s.user_id = who or s.scope = 'tenant_shared')
    );
$function$;

create or replace function hipocampo.context_pack(conversation_id uuid, query text, query_embedding extensions.vector default null::extensions.vector, modality text default 'chat'::text, token_budget integer default null::integer, kb_ids uuid[] default null::uuid[], agent text default null::text, session_id uuid default null::uuid, user_id uuid default null::uuid, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    a record := hipocampo_private._memory_actor(context_pack.user_id, context_pack.tenant_id);
    cfg jsonb := hipocampo.effective_config(a.actor_tenant);
    cp jsonb := coalesce(cfg -> 'context_pack', '{}'::jsonb);
    mem jsonb := coalesce(cfg -> 'memory', '{}'::jsonb);
    rag jsonb;
    budget integer := coalesce(context_pack.token_budget, (cp ->> 'default_token_budget')::integer);
    used integer := 0;
    total integer;
    policy text;
    window_n integer;
    conv jsonb;
    model text;
    sess hipocampo_private.sessions;
    kbs uuid[];
    cited jsonb;
    item jsonb;
    cost integer;
    summary text;
    memories jsonb := '[]'::jsonb;
    messages jsonb := '[]'::jsonb;
    chunks jsonb := '[]'::jsonb;
    session_view jsonb;
    rag_state jsonb := jsonb_build_object('skipped', true, 'reason', 'no_knowledge_base');
    dropped_memories integer := 0;
    dropped_messages integer := 0;
    dropped_chunks integer := 0;
begin
    if query is null or char_length(btrim(query)) not between 1 and (cfg #>> '{rag,question_max_chars}')::integer then
        raise exception 'query must have 1 to % characters', cfg #>> '{rag,question_max_chars}' using errcode = '22023';
    end if;
    if modality is null or modality not in ('chat', 'voice') then
        raise exception 'modality must be chat or voice' using errcode = '22023';
    end if;
    if budget is null or budget < (cp ->> 'min_token_budget')::integer then
        raise exception 'token_budget must be at least % tokens', cp ->> 'min_token_budget' using errcode = '22023';
    end if;

    -- 1. Memory: preferences first, then the memories closest to the query.
    if query_embedding is not null then
        model := hipocampo_private._active_model(query_embedding, 'query_embedding');
        for item in
            select jsonb_build_object(
                'memory_id', m.id, 'key', m.key, 'value', m.value, 'description', m.description,
                'category', m.category, 'scope', m.scope, 'similarity', 1 - x.distance, 'preference', x.preference
            ) as j
            from hipocampo_private.memories as m
            cross join lateral (
                select
                    m.category in ('preference', 'style') or m.key like 'prefs.%' as preference,
                    m.embedding operator(extensions.<=>) query_embedding as distance
            ) as x
            where m.tenant_id = a.actor_tenant and m.status = 'active'
              and (m.user_id = a.actor_user and m.scope = 'personal' or m.scope = 'tenant_shared')
              and m.embedding_model = model
              and (x.preference or 1 - x.distance >= (mem ->> 'context_threshold')::double precision)
            order by x.preference desc, x.distance
            limit (mem ->> 'match_count')::integer
        loop
            cost := hipocampo_private._pack_tokens(item ->> 'description');
            if used + cost <= budget then
                used := used + cost;
                memories := memories || jsonb_build_array(item);
            else
                dropped_memories := dropped_memories + 1;
            end if;
        end loop;
        perform hipocampo_private._record_read(a.actor_tenant, 'context_pack', jsonb_array_length(memories), null, null,
            memory_ids => array(select (j ->> 'memory_id')::uuid from jsonb_array_elements(memories) as j));
    end if;

    -- 2. Session: the rolling summary and the window of recent messages, the task state.
    select count(*) into total from hipocampo_private.messages as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
      and m.conversation_id = context_pack.conversation_id;
    if total < (cp ->> 'all_below')::integer then
        policy := 'all';
        window_n := total;
    elsif total <= (cp ->> 'summary_above')::integer then
        policy := 'recent_with_summary';
        window_n := (cp ->> 'recent_with_summary')::integer;
    else
        policy := 'recent_long';
        window_n := (cp ->> 'recent_long')::integer;
    end if;
    conv := hipocampo.conversation_context(context_pack.conversation_id, window_n, a.actor_user, a.actor_tenant);
    if policy <> 'all' and conv ->> 'summary' is not null then
        summary := conv ->> 'summary';
        cost := hipocampo_private._pack_tokens(summary);
        if used + cost > budget then
            -- The summary is cut to what is left (4 characters per token).
            summary := left(summary, greatest((budget - used - 4) * 4, 0));
            cost := hipocampo_private._pack_tokens(summary);
        end if;
        if summary = '' or used + cost > budget then
            summary := null;
        else
            used := used + cost;
        end if;
    end if;

    if context_pack.session_id is not null then
        sess := hipocampo_private._session(context_pack.session_id, not current_setting('transaction_read_only')::boolean);
    else
        select * into sess from hipocampo_private.sessions as s
        where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
          and s.conversation_id = context_pack.conversation_id and s.expires_at > now()
        order by s.last_activity_at desc
        limit 1;
    end if;
    if sess.id is not null then
        session_view := hipocampo_private._session_view(sess) - 'messages';
        cost := hipocampo_private._pack_tokens((session_view - 'summary')::text);
        if used + cost <= budget then
            used := used + cost;
        else
            session_view := jsonb_build_object('session_id', sess.id, 'truncated', true);
            used := used + hipocampo_private._pack_tokens(session_view::text);
        end if;
    end if;

    for item in
        select e from jsonb_array_elements(conv -> 'messages') as e order by (e ->> 'id')::bigint desc
    loop
        cost := hipocampo_private._pack_tokens(item ->> 'content');
        if used + cost <= budget then
            used := used + cost;
            messages := jsonb_build_array(item) || messages;
        else
            dropped_messages := dropped_messages + 1;
        end if;
    end loop;

    -- 3. RAG: chunks with citations, unless the conversation already cited all of them.
    if kb_ids is not null or agent is not null then
        rag := hipocampo.rag_config(
            case when cardinality(context_pack.kb_ids) = 1 then context_pack.kb_ids[1] end,
            context_pack.agent, a.actor_tenant
        );
        kbs := coalesce(context_pack.kb_ids,
            (select array_agg(x::uuid) from jsonb_array_elements_text(
            case when jsonb_typeof(rag -> 'kb_ids') = 'array' then rag -> 'kb_ids' else '[]'::jsonb end
        ) as x));
        if query_embedding is null then
            rag_state := jsonb_build_object('skipped', true, 'reason', 'no_query_embedding');
        elsif not coalesce((rag ->> 'enabled')::boolean, true) then
            rag_state := jsonb_build_object('skipped', true, 'reason', 'rag_disabled');
        else
            select coalesce(jsonb_agg(case jsonb_typeof(x) when 'object' then x -> 'chunk_id' else x end), '[]'::jsonb)
            into cited
            from (
                select m.metadata from hipocampo_private.messages as m
                where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
                  and m.conversation_id = context_pack.conversation_id
                order by m.id desc
                limit greatest(window_n, 1)
            ) as w,
                jsonb_array_elements(coalesce(w.metadata -> 'citations', '[]'::jsonb)) as x;
            select coalesce(jsonb_agg(jsonb_build_object(
                'chunk_id', h.chunk_id, 'document_id', h.document_id, 'title', h.title,
                'source_uri', h.source_uri, 'content', h.content, 'score', h.final_score
            ) order by h.rank), '[]'::jsonb)
            into item
            from hipocampo.hybrid_search(
                query_text => context_pack.query, query_embedding => context_pack.query_embedding,
                kb_ids => kbs, match_count => (rag ->> 'top_k')::integer, tenant_id => a.actor_tenant,
                -- The model of the memories' vector (during a switch search_model may name another).
                embedding_model => model
            ) as h;
            if jsonb_array_length(item) > 0 and not exists (
                select 1 from jsonb_array_elements(item) as h where not cited @> jsonb_build_array(h -> 'chunk_id')
            ) then
                rag_state := jsonb_build_object('skipped', true, 'reason', 'covered_by_session');
            else
                rag_state := jsonb_build_object('skipped', false, 'reason', null);
                for item in select e from jsonb_array_elements(item) as e loop
                    cost := hipocampo_private._pack_tokens(item ->> 'content');
                    if used + cost <= budget then
                        used := used + cost;
                        chunks := chunks || jsonb_build_array(item || jsonb_build_object(
                            'n', jsonb_array_length(chunks) + 1,
                            'citation', '[' || (jsonb_array_length(chunks) + 1) || '] ' || (item ->> 'title')
                        ));
                    else
                        dropped_chunks := dropped_chunks + 1;
                    end if;
                end loop;
            end if;
        end if;
    end if;

    return jsonb_build_object(
        'conversation_id', context_pack.conversation_id,
        'modality', context_pack.modality,
        'query', context_pack.query,
        'token_budget', budget,
        'tokens_used', used,
        'retrieval_order', jsonb_build_array('memory', 'session', 'rag', 'tools', 'model'),
        'window', jsonb_build_object(
            'policy', policy, 'total_messages', total, 'included', jsonb_array_length(messages)
        ),
        'summary', summary,
        'messages', messages,
        'memories', memories,
        'session', session_view,
        'chunks', chunks,
        'rag', rag_state,
        'dropped', jsonb_build_object(
            'memories', dropped_memories, 'messages', dropped_messages, 'chunks', dropped_chunks
        )
    );
end;
$function$;

create or replace function hipocampo.delete_tenant(tenant_id uuid)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    tn hipocampo_private.tenants;
    out jsonb;
begin
    if gate.kind <> 'service' then
        raise exception 'only service_role can delete tenants' using errcode = '42501';
    end if;
    select * into tn from hipocampo_private.tenants as x where x.id = delete_tenant.tenant_id for update;
    if tn.id is null then
        raise exception 'unknown tenant: %', delete_tenant.tenant_id using errcode = 'P0002';
    end if;
    out := jsonb_build_object(
        'tenant_id', tn.id, 'slug', tn.slug,
        'knowledge_bases', (select count(*) from hipocampo_private.knowledge_bases as k where k.tenant_id = tn.id),
        'documents', (select count(*) from hipocampo_private.documents as d where d.tenant_id = tn.id),
        'chunks', (select count(*) from hipocampo_private.chunks as c where c.tenant_id = tn.id),
        'memories', (select count(*) from hipocampo_private.memories as m where m.tenant_id = tn.id),
        'messages', (select count(*) from hipocampo_private.messages as g where g.tenant_id = tn.id),
        'members', (select count(*) from hipocampo_private.memberships as b where b.tenant_id = tn.id)
    );
    -- The knowledge bases' cascade deletes each one's chunks in one statement, so the chunks'
    -- delete trigger drops its postings and statistics by key range.
    delete from hipocampo_private.tenants as x where x.id = tn.id;
    delete from hipocampo_private.settings as s where s.tenant_id = tn.id;
    with e as (delete from hipocampo_private.memory_events as e where e.tenant_id = tn.id returning 1),
        l as (delete from hipocampo_private.data_access_log as l where l.tenant_id = tn.id returning 1),
        q as (delete from hipocampo_private.read_queue as q where q.tenant_id = tn.id returning 1)
    select out || jsonb_build_object(
        'audit_rows', (select count(*) from e) + (select count(*) from l) + (select count(*) from q)
    )
    into out;
    return out;
end;
$function$;

-- definer because erasure deletes the user's audit events, which no client role may delete.
create or replace function hipocampo.erase_user(user_id uuid default null::uuid, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
security definer
set search_path to ''
as $function$
declare
    a record := hipocampo_private._data_subject(erase_user.user_id, erase_user.tenant_id);
    ref text := hipocampo_private._user_ref(a.actor_tenant, a.actor_user);
    pseudonym uuid := md5(hipocampo_private._user_ref(a.actor_tenant, a.actor_user))::uuid;
    -- Before the membership goes: a user erasing themselves is no caller afterwards.
    who record := hipocampo_private._acting_for(a.actor_tenant, a.actor_user);
    counts jsonb := '{}'::jsonb;
    n integer;
begin
    if who.reason = 'tenant_admin' and exists (
        select 1 from hipocampo_private.memberships as m
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.role = 'admin'
    ) then
        raise exception 'an admin''s data is erased by that admin or by the operator (service_role)'
            using errcode = '42501';
    end if;
    delete from hipocampo_private.memories as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.scope = 'personal';
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('memories', n);
    update hipocampo_private.memories as m set user_id = pseudonym
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('shared_memories_pseudonymised', n);
    delete from hipocampo_private.memory_staging as s
    where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('staged_memories', n);
    delete from hipocampo_private.messages as m where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('messages', n);
    delete from hipocampo_private.conversation_summaries as s
    where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('conversation_summaries', n);
    delete from hipocampo_private.sessions as s where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('sessions', n);
    delete from hipocampo_private.memory_consents as c
    where c.tenant_id = a.actor_tenant and c.user_id = a.actor_user;
    delete from hipocampo_private.memory_events as e
    where e.tenant_id = a.actor_tenant and e.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('events', n);
    update hipocampo_private.data_access_log as l set caller = null
    where l.tenant_id = a.actor_tenant and l.caller = a.actor_user;
    update hipocampo_private.read_queue as q set caller = null
    where q.tenant_id = a.actor_tenant and q.caller = a.actor_user;
    update hipocampo_private.ingestion_jobs as j set created_by = null
    where j.tenant_id = a.actor_tenant and j.created_by = a.actor_user;
    -- The user's rate-limit bucket (keyed by the pseudonym; by the raw id in older databases).
    delete from hipocampo_private.rate_limit_buckets as r
    where r.bucket in ('user:' || a.actor_tenant || ':' || ref, 'user:' || a.actor_tenant || ':' || a.actor_user);
    delete from hipocampo_private.memberships as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('memberships', n);
    insert into hipocampo_private.memory_events (tenant_id, user_id, user_ref, event, reason, detail)
    values (a.actor_tenant, null, ref, 'user.erased', who.reason, counts || who.detail);
    return counts || jsonb_build_object('user_ref', ref);
end;
$function$;

-- definer because under RLS every statement re-resolved the caller's membership (a definer call
-- per table read, about a fifth of a 250-chunk search; docs/BENCHMARKS.md §Hybrid search on a
-- small knowledge base): the tenant is resolved once above, by _resolve_tenant from the request,
-- and every statement below reads only that tenant's rows (tenant_id = t, or ids those returned).
-- plan_cache_mode force_generic_plan: PL/pgSQL keeps a statement's generic plan only when its
-- estimated cost is no higher than that of the custom plans; with the array arguments (the scope,
-- the candidate ids) it was not, so the static statements were planned again on every call (~0.5
-- ms of a 1.8 ms search on a 250-passage knowledge base; the plans are the same shape either way:
-- docs/BENCHMARKS.md §Hybrid search: plans kept, vectors read late). The dynamic statement of the
-- HNSW path is planned per call as before (EXECUTE).
create or replace function hipocampo.hybrid_search(query_text text, query_embedding extensions.vector, kb_ids uuid[] default null::uuid[], source_types text[] default null::text[], metadata_filter jsonb default null::jsonb, match_count integer default null::integer, min_similarity double precision default null::double precision, fusion text default null::text, dense_weight double precision default null::double precision, lexical_weight double precision default null::double precision, rerank text default null::text, mmr_lambda double precision default null::double precision, embedding_model text default null::text, tenant_id uuid default null::uuid)
returns table (chunk_id bigint, document_id uuid, kb_id uuid, chunk_index integer, content text, metadata jsonb, title text, source_uri text, source_type text, author text, published_at timestamp with time zone, trust_score real, dense_score double precision, lexical_score double precision, fused_score double precision, final_score double precision, rank integer)
language plpgsql
security definer
set search_path to ''
set plan_cache_mode to 'force_generic_plan'
as $function$
declare
    started timestamptz := clock_timestamp();
    t uuid := hipocampo_private._resolve_tenant(hybrid_search.tenant_id);
    r jsonb;
    model text;
    dims integer;
    scope uuid [];
    scope_rows bigint;
    k integer;
    n_cand integer;
    min_sim double precision;
    fuse text;
    w_dense double precision;
    w_lex double precision;
    rrf_k double precision;
    rr text;
    lambda double precision;
    dup double precision;
    k1 double precision;
    b double precision;
    half_life double precision;
    exact_max bigint;
    dense_sql text;
    d_ids bigint [];
    d_sims double precision [];
    t_kb uuid [];
    t_lex text [];
    t_idf double precision [];
    t_avg double precision [];
    s_ids bigint [];
    s_scores double precision [];
    l_ids bigint [];
    l_scores double precision [];
    lim integer;
    f_ids bigint [];
    f_sim double precision [];
    f_score double precision [];
    f_fused double precision [];
    f_final double precision [];
    f_emb extensions.vector [];
    c_rel double precision [];
    sel_pos integer [] := '{}';
    n integer;
    s double precision;
    above bigint;
begin
    if query_text is null or btrim(query_text) = '' then
        raise exception 'query_text must be 1..2000 characters (got an empty query)'
            using errcode = '22023';
    end if;
    if query_embedding is null then
        raise exception 'query_embedding is required' using errcode = '22023';
    end if;

    -- The model and the scope.
    if hybrid_search.embedding_model is null then
        -- The active model, or during a switch the previous one until this scope is complete.
        model := hipocampo_private._search_model(t, hybrid_search.kb_ids);
        select e.name, e.dims into model, dims from hipocampo_private.embedding_models as e
        where e.name = model;
    else
        select e.name, e.dims into model, dims from hipocampo_private.embedding_models as e
        where e.name = hybrid_search.embedding_model;
    end if;
    if model is null then
        raise exception 'unknown embedding model: %',
            coalesce(hybrid_search.embedding_model, '(no active model)') using errcode = 'P0002';
    end if;
    if extensions.vector_dims(query_embedding) <> dims then
        raise exception 'query_embedding has % dimensions; model % expects %',
            extensions.vector_dims(query_embedding), model, dims using errcode = '22000';
    end if;
    -- A zero vector's cosine is NaN, which compares above every number: it passed the similarity
    -- floor for every chunk and put NaN in the fused scores.
    if (query_embedding operator(extensions.<#>) query_embedding) = 0 then
        raise exception 'query_embedding is a zero vector: its cosine similarity is undefined'
            using errcode = '22023';
    end if;

    select array_agg(kb.id) into scope from hipocampo_private.knowledge_bases as kb
    where kb.tenant_id = t and (hybrid_search.kb_ids is null or kb.id = any(hybrid_search.kb_ids));
    if hybrid_search.kb_ids is not null
        and coalesce(cardinality(scope), 0) < cardinality(array(select distinct unnest(hybrid_search.kb_ids))) then
        raise exception 'unknown knowledge base: %',
            (select string_agg(x::text, ', ') from unnest(hybrid_search.kb_ids) as x
             where x <> all(coalesce(scope, '{}'))) using errcode = 'P0002';
    end if;
    scope := coalesce(scope, '{}');

    -- Parameters: argument, else KB override (single KB), else tenant row, else global row
    -- (seeded from config.toml: no values of its own here).
    -- The thresholds of the model searched (issue 22 §2): its calibration, under the tenant's and
    -- the knowledge base's overrides.
    perform hipocampo_private._calibration(model, true);
    r := hipocampo_private._config_section(
        t, case when cardinality(scope) = 1 then scope[1] end, 'retrieval', model
    );
    if exists (
        select 1 from unnest(array[
            'max_query_chars', 'match_count', 'min_similarity', 'fusion', 'dense_weight', 'lexical_weight',
            'rrf_k', 'rerank', 'mmr_lambda', 'dedupe_threshold', 'bm25_k1', 'bm25_b', 'freshness_half_life_days',
            'exact_scan_max_rows', 'candidate_multiplier', 'min_candidates', 'hnsw_ef_search',
            'trust_recency_similarity_weight', 'trust_recency_trust_weight', 'trust_recency_freshness_weight'
        ]) as key
        where r -> key is null or r -> key = 'null'::jsonb
    ) then
        raise exception 'retrieval config is incomplete: seed it from config.toml (hipocampo db migrate)'
            using errcode = '55000';
    end if;
    if char_length(query_text) > (r ->> 'max_query_chars')::integer then
        raise exception 'query_text must be 1..% characters (got %)',
            (r ->> 'max_query_chars')::integer, char_length(query_text)
            using errcode = '22023';
    end if;
    k := coalesce(hybrid_search.match_count, (r ->> 'match_count')::integer);
    min_sim := coalesce(hybrid_search.min_similarity, (r ->> 'min_similarity')::double precision);
    fuse := coalesce(hybrid_search.fusion, r ->> 'fusion');
    w_dense := coalesce(hybrid_search.dense_weight, (r ->> 'dense_weight')::double precision);
    w_lex := coalesce(hybrid_search.lexical_weight, (r ->> 'lexical_weight')::double precision);
    rrf_k := (r ->> 'rrf_k')::double precision;
    rr := coalesce(hybrid_search.rerank, r ->> 'rerank');
    lambda := coalesce(hybrid_search.mmr_lambda, (r ->> 'mmr_lambda')::double precision);
    dup := (r ->> 'dedupe_threshold')::double precision;
    k1 := (r ->> 'bm25_k1')::double precision;
    b := (r ->> 'bm25_b')::double precision;
    half_life := (r ->> 'freshness_half_life_days')::double precision;
    exact_max := (r ->> 'exact_scan_max_rows')::bigint;

    if k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    -- After the range check: k * candidate_multiplier overflowed integer for k = -2^31 (22003).
    n_cand := greatest(k * (r ->> 'candidate_multiplier')::integer, (r ->> 'min_candidates')::integer);
    if min_sim < -1 or min_sim > 1 then
        raise exception 'min_similarity must be -1..1 (got %)', min_sim using errcode = '22023';
    end if;
    -- A positive weight or lambda below 1e-6 is refused: multiplied by a score it underflowed
    -- (5e-324 * 0.02 raised 22003, found by the RPC fuzzer).
    if lambda < 0 or lambda > 1 or (lambda > 0 and lambda < 1e-6) then
        raise exception 'mmr_lambda must be 0 or 1e-6..1 (got %)', lambda using errcode = '22023';
    end if;
    if w_dense < 0 or w_lex < 0 or w_dense + w_lex = 0 or w_dense > 100 or w_lex > 100
        or (w_dense > 0 and w_dense < 1e-6) or (w_lex > 0 and w_lex < 1e-6) then
        raise exception 'dense_weight and lexical_weight must be 0 or 1e-6..100, not both 0'
            using errcode = '22023';
    end if;
    if fuse not in ('score', 'rrf') then
        raise exception 'fusion must be score or rrf (got %)', fuse using errcode = '22023';
    end if;
    if rr not in ('none', 'trust_recency') then
        raise exception 'rerank must be none or trust_recency (got %)', rr using errcode = '22023';
    end if;

    -- Dense leg. Large scopes: the typed cast matches the model's partial HNSW index
    -- (vector_cosine_ops <-> <=>), with pgvector's iterative scan so filters still leave n_cand
    -- rows; the cast names the model's dims, so that statement is dynamic. Small scopes are
    -- scanned exactly, ordered by the similarity itself (one cosine per chunk, no index order):
    -- for a model of at most 640 dimensions by the static statement below (its plan is cached; a
    -- dynamic statement is planned on every call), which reads the vectors from the covering
    -- index chunks_scope_vectors_idx; for a wider model (no entry in that index) by the dynamic
    -- statement without the cast, which reads the heap.
    -- Nearest chunks first (chunk-level filters only), then document filters on those: the
    -- best 4 * n_cand first, every chunk of the scope only when that leaves fewer than n_cand.
    select coalesce(sum(st.chunk_count), 0) into scope_rows from hipocampo_private.kb_text_stats as st
    where st.kb_id = any(scope) and st.embedding_model = model;
    if scope_rows > exact_max or dims > 640 then
        if scope_rows > exact_max then
            perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
            perform set_config('hnsw.ef_search',
                greatest((r ->> 'hnsw_ef_search')::integer, n_cand)::text, true);
        end if;
        dense_sql := format(
            'with nn as ('
            'select c.id, c.document_id, 1 - (c.embedding%1$s operator(extensions.<=>) $1) as sim '
            'from hipocampo_private.chunks as c '
            'where c.tenant_id = $2 and c.kb_id = any($3) and c.embedding_model = $4 '
            'and ($6::jsonb is null or c.metadata @> $6) '
            'and (c.expires_at is null or c.expires_at > now()) '
            'order by (c.embedding%1$s operator(extensions.<=>) $1) '
            'limit $9), '
            'ok as (select nn.id, nn.sim from nn '
            'join hipocampo_private.documents as d on d.id = nn.document_id '
            'where d.status = ''active'' and ($5::text[] is null or d.source_type = any($5)) '
            'and nn.sim >= $8 order by nn.sim desc, nn.id limit $7) '
            'select coalesce(array_agg(ok.id order by ok.sim desc, ok.id), ''{}''), '
            'coalesce(array_agg(ok.sim order by ok.sim desc, ok.id), ''{}''), '
            '(select count(*) from nn where nn.sim >= $8) from ok',
            case when scope_rows > exact_max then format('::extensions.vector(%s)', dims) else '' end
        );
    end if;
    for pass in 1..2 loop
        lim := case when pass = 1 then n_cand * 4 else scope_rows + 1 end;
        if dense_sql is not null then
            execute dense_sql
            into d_ids, d_sims, above
            using query_embedding, t, scope, model, hybrid_search.source_types,
                  hybrid_search.metadata_filter, n_cand, min_sim, lim;
        else
            -- From the covering index chunks_scope_vectors_idx (an index-only scan: its predicate
            -- is repeated so that a cached generic plan can use it). The metadata filter, not in
            -- the index, is checked on the nearest with the document filters; the second pass
            -- covers what it drops, so the rows are those of filtering first.
            with nn as (
                select c.id, c.document_id, 1 - (c.embedding operator(extensions.<=>) query_embedding) as sim
                from hipocampo_private.chunks as c
                where c.tenant_id = t and c.kb_id = any(scope) and c.embedding_model = model
                  and extensions.vector_dims(c.embedding) <= 640
                  and (c.expires_at is null or c.expires_at > now())
                order by sim desc
                limit lim
            ),
            ok as (
                select nn.id, nn.sim from nn
                inner join hipocampo_private.documents as d on d.id = nn.document_id
                where d.status = 'active'
                  and (hybrid_search.source_types is null or d.source_type = any(hybrid_search.source_types))
                  and nn.sim >= min_sim
                  and (hybrid_search.metadata_filter is null or exists (
                      select 1 from hipocampo_private.chunks as m
                      where m.id = nn.id and m.metadata @> hybrid_search.metadata_filter
                  ))
                order by nn.sim desc, nn.id
                limit n_cand
            )
            select coalesce(array_agg(ok.id order by ok.sim desc, ok.id), '{}'),
                coalesce(array_agg(ok.sim order by ok.sim desc, ok.id), '{}'),
                (select count(*) from nn where nn.sim >= min_sim)
            into d_ids, d_sims, above
            from ok;
        end if;
        -- Again without the limit only when document filters dropped candidates we need.
        exit when cardinality(d_ids) >= n_cand or lim > scope_rows or above <= cardinality(d_ids);
    end loop;

    -- Lexical leg: Okapi BM25 with OR semantics over the query's stemmed, unaccented lexemes
    -- (the KB's language), read from the inverted index kb_postings: one primary-key range per
    -- term, then arithmetic. idf and the average length come from the per-KB statistics.
    select
        coalesce(array_agg(q.kb_id), '{}'),
        coalesce(array_agg(q.lexeme), '{}'),
        coalesce(array_agg(ln(1 + (st.chunk_count - ts.doc_freq + 0.5) / (ts.doc_freq + 0.5))), '{}'),
        coalesce(array_agg(st.token_total::double precision / greatest(st.chunk_count, 1)), '{}')
    into t_kb, t_lex, t_idf, t_avg
    from (
        select distinct kb.id as kb_id, u.lexeme
        from hipocampo_private.knowledge_bases as kb
        cross join lateral pg_catalog.unnest(
            pg_catalog.to_tsvector(hipocampo_private.text_search_config(kb.language), query_text)
        ) as u
        where kb.id = any(scope)
    ) as q
    inner join hipocampo_private.kb_term_stats as ts
        on ts.kb_id = q.kb_id and ts.embedding_model = model and ts.lexeme = q.lexeme
    inner join hipocampo_private.kb_text_stats as st
        on st.kb_id = q.kb_id and st.embedding_model = model
    where ts.doc_freq > 0;

    select
        coalesce(array_agg(x.chunk_id order by x.score desc, x.chunk_id), '{}'),
        coalesce(array_agg(x.score order by x.score desc, x.chunk_id), '{}')
    into s_ids, s_scores
    from (
        select p.chunk_id,
            sum(tm.idf * p.tf * (k1 + 1) / (p.tf + k1 * (1 - b + b * p.chunk_length / tm.avg_len))) as score
        from unnest(t_kb, t_lex, t_idf, t_avg) as tm (kb_id, lexeme, idf, avg_len)
        -- One primary-key range per term: "offset 0" keeps the planner from flattening the
        -- lateral subquery into a join it may run as a scan of all the tenant's postings.
        cross join lateral (
            select ps.chunk_id, ps.tf, ps.chunk_length
            from hipocampo_private.kb_postings as ps
            where ps.tenant_id = t and ps.kb_id = tm.kb_id and ps.lexeme = tm.lexeme
            offset 0
        ) as p
        group by p.chunk_id
    ) as x;

    -- Filters (model, status, expiry, source type, metadata) are checked on the best 4 * n_cand
    -- first; only when they leave fewer than n_cand is every scored chunk checked.
    for pass in 1..2 loop
        lim := case when pass = 1 then n_cand * 4 else cardinality(s_ids) end;
        select coalesce(array_agg(f.id order by f.ord), '{}'), coalesce(array_agg(f.score order by f.ord), '{}')
        into l_ids, l_scores
        from (
            select u.id, u.score, u.ord
            from unnest(s_ids[1:lim], s_scores[1:lim]) with ordinality as u (id, score, ord)
            inner join hipocampo_private.chunks as c on c.id = u.id
            inner join hipocampo_private.documents as d on d.id = c.document_id
            where c.embedding_model = model
              and (hybrid_search.source_types is null or d.source_type = any(hybrid_search.source_types))
              and (hybrid_search.metadata_filter is null or c.metadata @> hybrid_search.metadata_filter)
              and d.status = 'active'
              and (c.expires_at is null or c.expires_at > now())
            order by u.ord
            limit n_cand
        ) as f;
        exit when cardinality(l_ids) >= n_cand or cardinality(s_ids) <= n_cand * 4;
    end loop;

    -- Fusion over the union of both legs, each candidate chunk read once. Every candidate gets
    -- both signals, so the fusion compares like with like: the BM25 score of a dense-only hit is
    -- the lexical leg's (every chunk of the scope holding a query term was scored there; 0 when
    -- it holds none), the cosine of a lexical-only hit is computed here and counts as a dense
    -- signal at or above min_similarity, as in the dense leg. Score fusion: each leg's z-score
    -- over the candidates (a candidate without the signal takes the leg's lowest), weighted; the
    -- means and deviations are summed in rank order. RRF: each leg's rank. Then rerank; ranked
    -- candidates into arrays. The vectors are not carried through these steps (copying ~70 of
    -- 1.5 kB through the sorts was half of a 250-passage search): MMR reads them below.
    with legs as (
        select coalesce(dl.id, ll.id) as id, dl.sim, ll.score
        from unnest(d_ids, d_sims) as dl (id, sim)
        full outer join unnest(l_ids, l_scores) as ll (id, score) on ll.id = dl.id
    ),
    cand as (
        select lg.id, d.trust_score, d.published_at, c.created_at,
            case
                when lg.sim is not null then lg.sim
                when 1 - (c.embedding operator(extensions.<=>) query_embedding) >= min_sim
                    then 1 - (c.embedding operator(extensions.<=>) query_embedding)
            end as sim,
            coalesce(lg.score, sc.score, 0) as score
        from legs as lg
        inner join hipocampo_private.chunks as c on c.id = lg.id
        inner join hipocampo_private.documents as d on d.id = c.document_id
        left join unnest(s_ids, s_scores) as sc (id, score) on lg.score is null and sc.id = lg.id
    ),
    st as (
        select
            avg(cd.sim order by cd.sim desc, cd.id) as avg_d,
            stddev_pop(cd.sim order by cd.sim desc, cd.id) as sd_d,
            min(cd.sim) as min_d,
            avg(cd.score order by cd.score desc, cd.id) as avg_l,
            stddev_pop(cd.score order by cd.score desc, cd.id) as sd_l,
            min(cd.score) as min_l
        from cand as cd
    ),
    fused as (
        select cd.*,
            case fuse
                when 'rrf' then
                    w_dense * coalesce(1.0 / (rrf_k + case when cd.sim is not null then
                        row_number() over (order by cd.sim desc nulls last, cd.id) end), 0)
                    + w_lex * coalesce(1.0 / (rrf_k + row_number() over (order by cd.score desc, cd.id)), 0)
                else
                    w_dense * coalesce(
                        (cd.sim - st.avg_d) / nullif(st.sd_d, 0), (st.min_d - st.avg_d) / nullif(st.sd_d, 0), 0
                    )
                    + w_lex * coalesce(
                        (cd.score - st.avg_l) / nullif(st.sd_l, 0), (st.min_l - st.avg_l) / nullif(st.sd_l, 0), 0
                    )
            end as fused
        from cand as cd cross join st
    ),
    ranked as (
        select fd.*,
            case rr
                when 'trust_recency' then
                    coalesce(
                        (fd.fused - min(fd.fused) over ())
                        / nullif(max(fd.fused) over () - min(fd.fused) over (), 0), 1
                    ) * (r ->> 'trust_recency_similarity_weight')::double precision
                    + fd.trust_score * (r ->> 'trust_recency_trust_weight')::double precision
                    + (r ->> 'trust_recency_freshness_weight')::double precision * exp(
                        -greatest(extract(epoch from now() - coalesce(fd.published_at, fd.created_at)), 0)
                        / 86400.0 / half_life
                    )
                else fd.fused
            end as final
        from fused as fd
    )
    select
        array_agg(x.id order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.sim order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.score order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.fused order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id),
        array_agg(x.final order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id)
    into f_ids, f_sim, f_score, f_fused, f_final
    from ranked as x;

    -- MMR (lambda) with near-duplicate removal (cosine > dedupe_threshold), over positions;
    -- relevance on a 0..1 scale for the trade-off. With lambda = 1 the picks are the first
    -- candidates that are not near-duplicates of an earlier pick, so the vectors of the first 2k
    -- are read, and every candidate's only when those leave fewer than k picks.
    if f_ids is not null then
        n := cardinality(f_ids);
        s := f_final[1] - f_final[n];
        c_rel := array(
            select case when s > 0 then (x.v - f_final[n]) / s else 1 end
            from unnest(f_final) with ordinality as x (v, ord) order by x.ord
        );
        lim := case when lambda = 1 then least(n, 2 * k) else n end;
        loop
            select array_agg(c.embedding order by u.ord) into f_emb
            from unnest(f_ids[1:lim]) with ordinality as u (id, ord)
            inner join hipocampo_private.chunks as c on c.id = u.id;
            sel_pos := hipocampo_private._mmr(f_emb, c_rel[1:lim], k, lambda, dup);
            exit when cardinality(sel_pos) >= k or lim >= n;
            lim := n;
        end loop;
    end if;

    -- The picked candidates, in pick order, as rows (a plan that does not depend on the arrays'
    -- contents: subscripts in a join condition kept it from being cached).
    return query
    select c.id, c.document_id, c.kb_id, c.chunk_index, c.content, c.metadata,
        d.title, d.source_uri, d.source_type, d.author, d.published_at, d.trust_score,
        o.sim, o.score, o.fused, o.final, o.ord::integer
    from unnest(
        array(select f_ids[x] from unnest(sel_pos) as x), array(select f_sim[x] from unnest(sel_pos) as x),
        array(select f_score[x] from unnest(sel_pos) as x), array(select f_fused[x] from unnest(sel_pos) as x),
        array(select f_final[x] from unnest(sel_pos) as x)
    ) with ordinality as o (id, sim, score, fused, final, ord)
    inner join hipocampo_private.chunks as c on c.id = o.id
    inner join hipocampo_private.documents as d on d.id = c.document_id
    order by o.ord;

    -- The read's record, appended to the read queue (in a read-only transaction: on the primary),
    -- which drain_read_queue turns into the access log and the chunks' access times.
    perform hipocampo_private._enqueue_read(
        t, 'hybrid_search', cardinality(sel_pos), encode(sha256(convert_to(query_text, 'UTF8')), 'hex'),
        extract(epoch from clock_timestamp() - started) * 1000, array(select f_ids[x] from unnest(sel_pos) as x),
        '{}'
    );
end;
$function$;

create or replace function hipocampo.lookup_memories(key text default null::text, category text default null::text, include_history boolean default false)
returns setof hipocampo_private.memories
language plpgsql
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(null);
    n integer;
begin
    return query
    with found as (
        select m.* from hipocampo_private.memories as m
        where m.tenant_id = t
          and (lookup_memories.key is null or m.key = lookup_memories.key)
          and (lookup_memories.category is null or m.category = lookup_memories.category)
          and (include_history or m.status = 'active')
          and ((select auth.uid()) is null or m.user_id = (select auth.uid()) or m.scope = 'tenant_shared')
    )
    select * from found order by found.key, found.valid_from desc;
    get diagnostics n = row_count;
    perform hipocampo_private._record_read(
        t, 'lookup_memories', n, null, null,
        memory_ids => array(select m.id from hipocampo_private.memories as m
              where m.tenant_id = t and m.status = 'active'
                and (lookup_memories.key is null or m.key = lookup_memories.key)
                and (lookup_memories.category is null or m.category = lookup_memories.category)
                and ((select auth.uid()) is null or m.user_id = (select auth.uid()) or m.scope = 'tenant_shared')
              limit 10000)
    );
end;
$function$;

create or replace function hipocampo.schedule_maintenance()
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    cfg jsonb := (select s.config -> 'maintenance' from hipocampo_private.settings as s where s.tenant_id is null);
    jobs jsonb;
    job record;
begin
    if not exists (select 1 from pg_catalog.pg_extension where extname = 'pg_cron') then
        raise exception 'pg_cron is not installed: enable it (on Supabase: Integrations → Cron), then call '
            'hipocampo.schedule_maintenance() again' using errcode = '55000';
    end if;
    jobs := jsonb_build_object(
        'hipocampo-memory-maintenance',
        jsonb_build_array(cfg ->> 'memory_cron', 'select hipocampo.run_memory_maintenance()'),
        'hipocampo-session-purge',
        jsonb_build_array(cfg ->> 'session_purge_cron', 'select hipocampo.purge_sessions()'),
        'hipocampo-retention-purge',
        jsonb_build_array(cfg ->> 'retention_cron', 'select hipocampo.purge_expired()'),
        'hipocampo-transient-purge',
        jsonb_build_array(cfg ->> 'transient_purge_cron', 'select hipocampo.purge_transient_state()'),
        'hipocampo-interrupted-ingestion',
        jsonb_build_array(cfg ->> 'ingestion_recovery_cron', 'select hipocampo.recover_ingestion_jobs()'),
        'hipocampo-read-queue',
        jsonb_build_array(cfg ->> 'read_queue_cron', 'select hipocampo.drain_read_queue()')
    );
    if exists (select 1 from jsonb_each(jobs) as j where j.value ->> 0 is null) then
        raise exception 'maintenance config is incomplete: seed it from config.toml (hipocampo db migrate)'
            using errcode = '55000';
    end if;
    for job in select j.key, j.value from jsonb_each(jobs) as j loop
        perform cron.schedule(job.key, job.value ->> 0, job.value ->> 1);
    end loop;
    return (select jsonb_object_agg(j.key, j.value -> 0) from jsonb_each(jobs) as j);
end;
$function$;

create or replace function hipocampo.search_memories(query_embedding extensions.vector, mode text default 'context'::text, match_count integer default null::integer, filter_tags text[] default null::text[], filter_emotion text default null::text, filter_life_domain text default null::text, filter_category text default null::text, filter_scope text default null::text, min_score double precision default null::double precision, include_staging boolean default true)
returns table (memory_id uuid, key text, value jsonb, description text, category text, scope text, tags text[], pinned boolean, confidence real, similarity double precision, score double precision, rank integer, fallback text, tier text)
language plpgsql
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(null);
    me uuid := (select auth.uid());
    cfg jsonb := hipocampo_private._memory_config(hipocampo.effective_config(t) -> 'memory');
    threshold double precision;
    bonus double precision := (cfg ->> 'pinned_bonus')::double precision;
    lambda double precision := (cfg ->> 'mmr_lambda')::double precision;
    dup double precision := (cfg ->> 'duplicate_cosine')::double precision;
    k integer := coalesce(search_memories.match_count, (cfg ->> 'match_count')::integer);
    model text;
    use_tags text [] := search_memories.filter_tags;
    why text;
    ids uuid [];
    tiers text [];
    sims double precision [];
    scores double precision [];
    embs extensions.vector [];
    sel integer [] := '{}';
begin
    if k is null or k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    if mode is null or mode not in ('context', 'answer') then
        raise exception 'mode must be context or answer (got %)', mode using errcode = '22023';
    end if;
    threshold := coalesce(min_score, case mode
        when 'answer' then (cfg ->> 'answer_threshold')::double precision
        else (cfg ->> 'context_threshold')::double precision end);
    model := hipocampo_private._active_model(query_embedding, 'query_embedding');
    -- A zero vector's cosine is NaN, which compares above every number (every memory would pass
    -- the threshold).
    if (query_embedding operator(extensions.<#>) query_embedding) = 0 then
        raise exception 'query_embedding is a zero vector: its cosine similarity is undefined'
            using errcode = '22023';
    end if;
    if use_tags is not null and cardinality(use_tags) = 0 then
        why := 'empty_tags';
        use_tags := null;
    elsif use_tags is not null and not hipocampo_private._some_memory_tagged(t, me, use_tags, include_staging) then
        why := 'no_memory_with_tags';
        use_tags := null;
    end if;

    select array_agg(x.id order by x.score desc, x.id), array_agg(x.tier order by x.score desc, x.id),
        array_agg(x.sim order by x.score desc, x.id), array_agg(x.score order by x.score desc, x.id),
        array_agg(x.embedding order by x.score desc, x.id)
    into ids, tiers, sims, scores, embs
    from (
        select u.id, u.tier, u.embedding, 1 - (u.embedding operator(extensions.<=>) query_embedding) as sim,
            1 - (u.embedding operator(extensions.<=>) query_embedding)
            + case when u.pinned then bonus else 0 end as score
        from (
            select m.id, 'long_term' as tier, m.embedding, m.pinned, m.user_id, m.scope, m.tags, m.emotion,
                m.life_domain, m.category, m.embedding_model
            from hipocampo_private.memories as m
            where m.tenant_id = t and m.status = 'active'
            union all
            select s.id, 'staging', s.embedding, s.pinned, s.user_id, s.scope, s.tags, s.emotion,
                s.life_domain, s.category, s.embedding_model
            from hipocampo_private.memory_staging as s
            where include_staging and s.tenant_id = t
        ) as u
        where u.embedding_model = model
          and (me is null or u.user_id = me or u.scope = 'tenant_shared')
          and (use_tags is null or u.tags && use_tags)
          and (search_memories.filter_emotion is null or u.emotion = search_memories.filter_emotion)
          and (search_memories.filter_life_domain is null or u.life_domain = search_memories.filter_life_domain)
          and (search_memories.filter_category is null or u.category = search_memories.filter_category)
          and (search_memories.filter_scope is null or u.scope = search_memories.filter_scope)
        order by score desc, u.id
        limit k * 8
    ) as x
    where x.score >= threshold;

    if ids is not null then
        -- MMR on the scores, near-duplicates dropped (shared with hybrid_search).
        sel := hipocampo_private._mmr(embs, scores, k, lambda, dup);
    end if;

    return query
    select u.id, u.key, u.value, u.description, u.category, u.scope, u.tags, u.pinned, u.confidence,
        sims[o.pos], scores[o.pos], o.ord::integer, why, tiers[o.pos]
    from unnest(sel) with ordinality as o (pos, ord)
    inner join (
        select m.id, m.key, m.value, m.description, m.category, m.scope, m.tags, m.pinned, m.confidence
        from hipocampo_private.memories as m where m.tenant_id = t
        union all
        select s.id, s.key, s.value, s.description, s.category, s.scope, s.tags, s.pinned, s.confidence
        from hipocampo_private.memory_staging as s where s.tenant_id = t
    ) as u on u.id = ids[o.pos]
    order by o.ord;
    if cardinality(sel) = 0 and why is not null then
        -- Still say that the tag filter was dropped, with no rows to carry it.
        return query select null::uuid, null::text, null::jsonb, null::text, null::text, null::text,
            null::text [], null::boolean, null::real, null::double precision, null::double precision,
            0, why, null::text;
    end if;
    perform hipocampo_private._record_read(t, 'search_memories', cardinality(sel), null, null,
        memory_ids => array(select ids[x] from unnest(sel) as x));
end;
$function$;

create or replace function hipocampo_private._session(session_id uuid, renew boolean)
returns hipocampo_private.sessions
language plpgsql
set search_path to ''
as $function$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    s hipocampo_private.sessions;
    cfg jsonb;
begin
    -- Locked only to renew it: a read without renewal must run in a read-only transaction (a replica).
    if renew then
        select * into s from hipocampo_private.sessions as x
        where x.id = _session.session_id and x.expires_at > now()
          and ((select auth.uid()) is null or x.user_id = (select auth.uid()))
        for update;
    else
        select * into s from hipocampo_private.sessions as x
        where x.id = _session.session_id and x.expires_at > now()
          and ((select auth.uid()) is null or x.user_id = (select auth.uid()));
    end if;
    if s.id is null then
        raise exception 'unknown or expired session: %', session_id using errcode = 'P0002';
    end if;
    if renew then
        cfg := hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions');
        update hipocampo_private.sessions as x
        set last_activity_at = now(),
            expires_at = least(
                now() + make_interval(mins => (cfg ->> 'inactivity_ttl_minutes')::integer),
                x.absolute_expires_at
            )
        where x.id = s.id
        returning * into s;
    end if;
    return s;
end;
$function$;

revoke execute on function hipocampo.drain_read_queue(max_rows integer) from public;
revoke execute on function hipocampo_private._enqueue_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], at timestamp with time zone, caller uuid, caller_role text) from public;
revoke execute on function hipocampo_private._enqueue_read_on_primary(statement text) from public;
revoke execute on function hipocampo_private._record_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[]) from public;
revoke execute on function hipocampo_private._some_memory_tagged(tenant uuid, who uuid, tags text[], include_staging boolean) from public;
grant execute on function hipocampo.drain_read_queue(max_rows integer) to service_role;
grant execute on function hipocampo_private._record_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[]) to authenticated;
grant execute on function hipocampo_private._record_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[]) to service_role;
grant execute on function hipocampo_private._some_memory_tagged(tenant uuid, who uuid, tags text[], include_staging boolean) to authenticated;
grant execute on function hipocampo_private._some_memory_tagged(tenant uuid, who uuid, tags text[], include_staging boolean) to service_role;
grant all on table hipocampo_private.read_queue to service_role;
comment on function hipocampo.drain_read_queue(integer) is 'Turn recorded reads into the access log, chunk access times and memory counters (pg_cron / worker).';
comment on table hipocampo_private.read_queue is 'Reads not yet drained into data_access_log, chunk_access and the memory counters (drain_read_queue).';
