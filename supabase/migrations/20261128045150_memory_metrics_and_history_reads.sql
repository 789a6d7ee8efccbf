-- memory metrics and history reads.
-- memory reads record their mean similarity and conversation (hipocampo.memory_search_similarity: the 7-day similarity per session), hipocampo.memory_quota_use counts active memories per user against the quota, search_history records its reads (its latency in read_stats), tenant_metrics carries them for the hub; context_pack's memory step is _pack_memories (issue 45 §2)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo_private._enqueue_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], at timestamp with time zone, caller uuid, caller_role text);

drop function if exists hipocampo_private._record_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[]);

alter table hipocampo_private.data_access_log add column conversation_id uuid;

alter table hipocampo_private.data_access_log add column similarity real;

alter table hipocampo_private.read_queue add column conversation_id uuid;

alter table hipocampo_private.read_queue add column similarity real;

set check_function_bodies = off;

-- definer because a tenant admin counts every member's memories, which RLS hides from them (the
-- counts only, never a memory or a user id).
create or replace function hipocampo.memory_quota_use(tenant_id uuid default null::uuid)
returns table (max_active_per_user integer, users bigint, active_p50 double precision, active_p95 double precision, active_max bigint, users_near_quota bigint, users_at_quota bigint)
language plpgsql
stable
security definer
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(memory_quota_use.tenant_id);  -- 42501 before any other work
    gate record := hipocampo_private._caller();
    quota integer := coalesce(
        (select (s.config #>> '{memory,max_active_per_user}')::integer
         from hipocampo_private.settings as s where s.tenant_id = t),
        (select (g.config #>> '{memory,max_active_per_user}')::integer
         from hipocampo_private.settings as g where g.tenant_id is null)
    );
begin
    if gate.kind <> 'service' and gate.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can read the tenant''s metrics' using errcode = '42501';
    end if;
    return query
    select
        quota, count(*), percentile_cont(0.5) within group (order by u.active),
        percentile_cont(0.95) within group (order by u.active), max(u.active),
        count(*) filter (where u.active >= 0.9 * quota), count(*) filter (where u.active >= quota)
    from (
        select count(*) as active
        from hipocampo_private.memories as m
        where m.tenant_id = t and m.status = 'active' and m.scope = 'personal'
        group by m.user_id
    ) as u;
end;
$function$;

-- noqa: disable=all
create or replace view "hipocampo"."memory_search_similarity" as  WITH daily AS (
         SELECT l.tenant_id,
            l.conversation_id,
            date_trunc('day'::text, l.at) AS day,
            count(*) AS reads,
            sum(l.similarity) AS similarity_sum
           FROM hipocampo_private.data_access_log l
          WHERE ((l.rpc = ANY (ARRAY['search_memories'::text, 'context_pack'::text])) AND (l.similarity IS NOT NULL))
          GROUP BY l.tenant_id, l.conversation_id, (date_trunc('day'::text, l.at))
        )
 SELECT d.tenant_id,
    d.conversation_id,
    d.day,
    d.reads,
    round(((sum(w.similarity_sum) / (sum(w.reads))::double precision))::numeric, 4) AS similarity_7d,
    sum(w.reads) AS reads_7d
   FROM (daily d
     JOIN daily w ON (((d.tenant_id = w.tenant_id) AND (NOT (d.conversation_id IS DISTINCT FROM w.conversation_id)) AND ((w.day >= (d.day - '6 days'::interval)) AND (w.day <= d.day)))))
  GROUP BY d.tenant_id, d.conversation_id, d.day, d.reads;
-- noqa: enable=all


create or replace function hipocampo_private._enqueue_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], at timestamp with time zone default null::timestamp with time zone, caller uuid default null::uuid, caller_role text default null::text, similarity real default null::real, conversation_id uuid default null::uuid)
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
                '%L::bigint[], %L::uuid[], pg_catalog.to_timestamp(%L::numeric), %L::uuid, %L, %L::real, %L::uuid)',
                _enqueue_read.tenant_id, _enqueue_read.rpc, _enqueue_read.rows_returned, _enqueue_read.query_hash,
                _enqueue_read.latency_ms, coalesce(_enqueue_read.chunk_ids, '{}'),
                coalesce(_enqueue_read.memory_ids, '{}'), extract(epoch from _enqueue_read.at), _enqueue_read.caller,
                _enqueue_read.caller_role, _enqueue_read.similarity, _enqueue_read.conversation_id
            ));
            return;
        end if;
    end if;
    insert into hipocampo_private.read_queue
        (at, caller, caller_role, tenant_id, rpc, rows_returned, query_hash, latency_ms, chunk_ids, memory_ids,
         similarity, conversation_id)
    values (
        _enqueue_read.at, _enqueue_read.caller, _enqueue_read.caller_role, _enqueue_read.tenant_id,
        _enqueue_read.rpc, _enqueue_read.rows_returned, _enqueue_read.query_hash, _enqueue_read.latency_ms,
        coalesce(_enqueue_read.chunk_ids, '{}'), coalesce(_enqueue_read.memory_ids, '{}'),
        _enqueue_read.similarity, _enqueue_read.conversation_id
    );
end;
$function$;

create or replace function hipocampo_private._memory_read_metrics(tenant_id uuid, since timestamp with time zone, as_service boolean)
returns jsonb
language sql
stable
set search_path to ''
as $function$
    with daily as (
        select date_trunc('day', l.at) as day, count(*) as n, sum(l.similarity) as s
        from hipocampo_private.data_access_log as l
        where l.tenant_id = _memory_read_metrics.tenant_id and l.similarity is not null
          and l.rpc in ('search_memories', 'context_pack') and l.at >= since - interval '6 days'
        group by date_trunc('day', l.at)
    )

    select jsonb_build_object(
        'reads', coalesce((
            select jsonb_agg(jsonb_build_object(
                'day', r.day::date, 'rpc', r.rpc, 'calls', r.calls, 'latency_p95_ms', r.latency_p95_ms
            ) order by r.day, r.rpc)
            from hipocampo.read_stats as r
            where r.tenant_id = _memory_read_metrics.tenant_id and r.day >= since
        ), '[]'::jsonb),
        'memory_similarity', coalesce((
            select jsonb_agg(jsonb_build_object(
                'day', d.day::date, 'similarity_7d', round((w.s / w.n)::numeric, 4), 'reads_7d', w.n
            ) order by d.day)
            from daily as d
            cross join lateral (
                select sum(x.s) as s, sum(x.n) as n from daily as x
                where x.day between d.day - interval '6 days' and d.day
            ) as w
            where d.day >= since
        ), '[]'::jsonb),
        'memory_quota', (
            select to_jsonb(q) from hipocampo.memory_quota_use(
                case when as_service then _memory_read_metrics.tenant_id end
            ) as q
        )
    )
$function$;

create or replace function hipocampo_private._pack_memories(tenant_id uuid, user_id uuid, query_embedding extensions.vector, model text, mem jsonb, budget integer, conversation_id uuid, out memories jsonb, out used integer, out dropped integer)
returns record
language plpgsql
set search_path to ''
as $function$
declare
    item jsonb;
    cost integer;
begin
    memories := '[]'::jsonb;
    used := 0;
    dropped := 0;
    for item in
        select jsonb_build_object(
            'memory_id', m.id, 'key', m.key, 'value', m.value, 'description', m.description,
            'category', m.category, 'scope', m.scope, 'similarity', 1 - x.distance, 'preference', x.preference
        ) as j
        from hipocampo_private.memories as m
        cross join lateral (
            select
                m.category in ('preference', 'style') or m.key like 'prefs.%' as preference,
                m.embedding operator(extensions.<=>) _pack_memories.query_embedding as distance
        ) as x
        where m.tenant_id = _pack_memories.tenant_id and m.status = 'active'
          and (m.user_id = _pack_memories.user_id and m.scope = 'personal' or m.scope = 'tenant_shared')
          and m.embedding_model = _pack_memories.model
          and (x.preference or 1 - x.distance >= (mem ->> 'context_threshold')::double precision)
        order by x.preference desc, x.distance
        limit (mem ->> 'match_count')::integer
    loop
        cost := hipocampo_private._pack_tokens(item ->> 'description');
        if used + cost <= budget then
            used := used + cost;
            memories := memories || jsonb_build_array(item);
        else
            dropped := dropped + 1;
        end if;
    end loop;
    perform hipocampo_private._record_read(_pack_memories.tenant_id, 'context_pack', jsonb_array_length(memories),
        null, null, memory_ids => array(select (j ->> 'memory_id')::uuid from jsonb_array_elements(memories) as j),
        similarity => (select avg((j ->> 'similarity')::real)::real from jsonb_array_elements(memories) as j),
        conversation_id => _pack_memories.conversation_id);
end;
$function$;

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
    if _record_read.similarity not between -1 and 1 then
        raise exception 'read record: similarity must be in [-1, 1]' using errcode = '22023';
    end if;
    if cardinality(_record_read.chunk_ids) > most_chunks or cardinality(_record_read.memory_ids) > most_memories then
        raise exception 'read record: at most % chunk ids and % memory ids (maintenance.read_record_max_chunk_ids, read_record_max_memory_ids)',
            most_chunks, most_memories using errcode = '22023';
    end if;
    perform hipocampo_private._enqueue_read(
        t, _record_read.rpc, _record_read.rows_returned, _record_read.query_hash,
        coalesce(_record_read.latency_ms, extract(epoch from clock_timestamp() - statement_timestamp()) * 1000),
        _record_read.chunk_ids, _record_read.memory_ids,
        similarity => _record_read.similarity, conversation_id => _record_read.conversation_id
    );
end;
$function$;

create or replace function hipocampo_private._search_history(query_text text, query_embedding extensions.vector default null::extensions.vector, filter_conversation_id uuid default null::uuid, match_count integer default null::integer, filter_modality text default null::text, user_id uuid default null::uuid, tenant_id uuid default null::uuid, query_token_ids integer[] default null::integer[], query_token_bits bit varying[] default null::bit varying[])
returns table (message_id bigint, conversation_id uuid, role text, content text, modality text, metadata jsonb, created_at timestamp with time zone, dense_score double precision, lexical_score double precision, score double precision, rank integer, token_score double precision)
language plpgsql
stable
set search_path to ''
as $function$
declare
    a record := hipocampo_private._memory_actor(_search_history.user_id, _search_history.tenant_id);
    cfg jsonb := hipocampo.effective_config(a.actor_tenant) -> 'conversations';
    k integer := coalesce(_search_history.match_count, (cfg ->> 'match_count')::integer);
    max_chars integer := (cfg ->> 'max_query_chars')::integer;
    k1 double precision := (cfg ->> 'bm25_k1')::double precision;
    b double precision := (cfg ->> 'bm25_b')::double precision;
    wd double precision := (cfg ->> 'dense_weight')::double precision;
    wl double precision := (cfg ->> 'lexical_weight')::double precision;
    w_date double precision := (cfg ->> 'date_weight')::double precision;
    tz text := cfg ->> 'time_zone';
    w_before jsonb := cfg -> 'context_weights_before';
    w_after jsonb := cfg -> 'context_weights_after';
    w_token double precision := (cfg ->> 'token_rerank_weight')::double precision;
    n_candidates integer := (cfg ->> 'token_rerank_candidates')::integer;
    n_idf integer := (cfg ->> 'token_idf_sample')::integer;
    rerank boolean;
    ts regconfig;
    model text;
    lexemes text [];
    q tsquery;
    side record;
    -- Context weights by distance (1..5), 0 beyond the configured ones; all of them by offset
    -- -5..5 at wv[offset + 6]; the farthest apart two offsets of a context can be (span); the
    -- query's norm.
    wb double precision [];
    wa double precision [];
    wv double precision [];
    span integer;
    q_norm double precision;
begin
    if k is null or k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    if query_text is null or btrim(query_text) = '' or char_length(query_text) > max_chars then
        raise exception 'query_text must have 1..% characters', max_chars using errcode = '22023';
    end if;
    if max_chars is null or k is null or k1 is null or b is null or wd is null or wl is null or w_date is null
        or tz is null or w_before is null or w_after is null or w_token is null or n_candidates is null
        or n_idf is null then
        raise exception 'conversations config is incomplete: seed it from config.toml (hipocampo db migrate)'
            using errcode = '55000';
    end if;
    for side in select * from (values ('before', w_before), ('after', w_after)) as x (name, weights) loop
        if jsonb_typeof(side.weights) <> 'array' or jsonb_array_length(side.weights) > 5
            or exists (
                select 1 from jsonb_array_elements(side.weights) as e
                where jsonb_typeof(e) <> 'number' or (e #>> '{}')::double precision not between 0 and 1
            ) then
            raise exception 'conversations.context_weights_% must be an array of at most 5 numbers in [0, 1]',
                side.name using errcode = '22023';
        end if;
    end loop;
    begin
        perform pg_catalog.now() at time zone tz;
    exception when invalid_parameter_value then
        raise exception 'unknown conversations.time_zone: %', tz using errcode = '22023';
    end;
    ts := hipocampo_private.text_search_config(cfg ->> 'language');
    if query_embedding is not null then
        model := hipocampo_private._active_model(query_embedding, 'query_embedding');
    end if;
    if query_token_bits is not null or query_token_ids is not null then
        if query_embedding is null then
            raise exception 'query tokens need query_embedding (their model''s)' using errcode = '22023';
        end if;
        perform hipocampo_private._check_message_tokens(
            query_token_ids, query_token_bits, extensions.vector_dims(query_embedding), 'query_token'
        );
    end if;
    -- The late-interaction re-rank applies with query tokens, an embedding and a weight > 0.
    rerank := w_token > 0 and query_embedding is not null and cardinality(query_token_bits) > 0;
    wb := array(select coalesce((w_before ->> d)::double precision, 0) from generate_series(0, 4) as d);
    wa := array(select coalesce((w_after ->> d)::double precision, 0) from generate_series(0, 4) as d);
    wv := array(select wb[6 - i] from generate_series(1, 5) as i) || array[1.0::double precision] || wa;
    span := coalesce((select max(i) from generate_series(1, 5) as i where wb[i] > 0), 0)
        + coalesce((select max(i) from generate_series(1, 5) as i where wa[i] > 0), 0);
    if query_embedding is not null then
        q_norm := sqrt(-(query_embedding operator(extensions.<#>) query_embedding));
    end if;

    -- Query lexemes in each text-search configuration the searched messages use.
    select array_agg(distinct u.lexeme) into lexemes
    from (
        select distinct m.ts_config from hipocampo_private.messages as m
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and (_search_history.filter_conversation_id is null or m.conversation_id = _search_history.filter_conversation_id)
    ) as c
    cross join lateral unnest(to_tsvector(c.ts_config, query_text)) as u;
    if lexemes is null then
        lexemes := array(select u.lexeme from unnest(to_tsvector(ts, query_text)) as u);
    end if;
    if cardinality(lexemes) > 0 then
        q := array_to_string(array(select quote_literal(l) from unnest(lexemes) as l), ' | ')::tsquery;
    end if;

    return query
    with offsets as (
        -- A message's context: itself (offset 0, weight 1) and its neighbours by position.
        select 0 as o, 1.0::double precision as w
        union all
        select -e.i::integer, (e.w #>> '{}')::double precision
        from jsonb_array_elements(w_before) with ordinality as e (w, i)
        union all
        select e.i::integer, (e.w #>> '{}')::double precision
        from jsonb_array_elements(w_after) with ordinality as e (w, i)
    ),
    day_terms as materialized (
        -- Date words, once per local day and language.
        select d.day, d.ts_config, u.lexeme
        from (
            select distinct (m.created_at at time zone tz)::date as day, m.ts_config
            from hipocampo_private.messages as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
              and (_search_history.filter_conversation_id is null
                  or m.conversation_id = _search_history.filter_conversation_id)
        ) as d
        cross join lateral unnest(to_tsvector(d.ts_config, hipocampo_private._date_words(d.day, d.ts_config))) as u
    ),
    day_len as materialized (
        -- Weighted date-word count per local day and language, as one object read by key (a
        -- lookup per message, whatever the row estimates).
        select coalesce(jsonb_object_agg(x.day::text || ' ' || x.ts_config::text, x.n), '{}'::jsonb) as by_day
        from (
            select dt.day, dt.ts_config, count(*) * w_date as n from day_terms as dt group by dt.day, dt.ts_config
        ) as x
    ),
    own as materialized (
        -- Each searched message without its embedding: text, length with date words.
        select m.id, m.conversation_id, m.created_at, m.modality, m.fts, m.ts_config, m.token_ids,
            (m.created_at at time zone tz)::date as day,
            m.fts_length + coalesce(
                (dl.by_day ->> (((m.created_at at time zone tz)::date)::text || ' ' || m.ts_config::text))::double precision, 0
            ) as len
        from hipocampo_private.messages as m
        cross join day_len as dl
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and (_search_history.filter_conversation_id is null or m.conversation_id = _search_history.filter_conversation_id)
    ),
    scoped as materialized (
        -- Position in the conversation and length of the context (weighted tokens, date words
        -- included), read with lag / lead in one ordered pass.
        select s.id, s.conversation_id, s.modality, s.fts, s.ts_config, s.day,
            row_number() over w as pos,
            s.len
            + wb[1] * coalesce(lag(s.len, 1) over w, 0) + wb[2] * coalesce(lag(s.len, 2) over w, 0)
            + wb[3] * coalesce(lag(s.len, 3) over w, 0) + wb[4] * coalesce(lag(s.len, 4) over w, 0)
            + wb[5] * coalesce(lag(s.len, 5) over w, 0)
            + wa[1] * coalesce(lead(s.len, 1) over w, 0) + wa[2] * coalesce(lead(s.len, 2) over w, 0)
            + wa[3] * coalesce(lead(s.len, 3) over w, 0) + wa[4] * coalesce(lead(s.len, 4) over w, 0)
            + wa[5] * coalesce(lead(s.len, 5) over w, 0) as len
        from own as s
        window w as (partition by s.conversation_id order by s.created_at, s.id)
    ),
    own_terms as (
        -- The query's lexemes in each message (term frequency) and in its date words (date_weight).
        select s.conversation_id, s.pos, u.lexeme, coalesce(array_length(u.positions, 1), 1)::double precision as tf
        from scoped as s
        cross join lateral unnest(s.fts) as u
        where q is not null and s.fts @@ q and u.lexeme = any(lexemes)
        union all
        select s.conversation_id, s.pos, dt.lexeme, w_date
        from scoped as s
        inner join day_terms as dt on dt.day = s.day and dt.ts_config = s.ts_config
        where w_date > 0 and dt.lexeme = any(lexemes)
    ),
    spread_terms as materialized (
        -- A term of the message at position p counts for the message at p - o with weight w(o).
        -- (materialized: the join below must be on both keys, whatever the row estimates)
        select ot.conversation_id, ot.pos - o.o as pos, ot.lexeme, o.w * ot.tf as tf
        from own_terms as ot cross join offsets as o
    ),
    ctx_terms as (
        select n.id, n.len, t.lexeme, sum(t.tf) as tf
        from spread_terms as t
        inner join scoped as n on n.conversation_id = t.conversation_id and n.pos = t.pos
        group by n.id, n.len, t.lexeme
    ),
    corpus as materialized (
        select count(*) as n_docs, coalesce(nullif(avg(s.len), 0), 1) as avg_len from scoped as s
    ),
    df as materialized (
        select t.lexeme, count(*) as n from ctx_terms as t group by t.lexeme
    ),
    lexical as materialized (
        select t.id, sum(
            ln(1 + (cp.n_docs - d.n + 0.5) / (d.n + 0.5))
            * t.tf * (k1 + 1) / (t.tf + k1 * (1 - b + b * t.len / cp.avg_len))
        ) as s
        from ctx_terms as t
        inner join df as d on d.lexeme = t.lexeme
        cross join corpus as cp
        group by t.id
    ),
    own_dots as materialized (
        -- Each searched message's inner products, 0 without an embedding of the active model: with
        -- the query (dq), with itself (nn), and with the next 1..10 messages of its conversation
        -- (g), as far as two offsets of a context lie apart (span). Scalars from here on: the
        -- context's weighted sum of embeddings is never built.
        select m.id, m.conversation_id, m.modality, x.e is not null as has_e,
            row_number() over w as pos,
            coalesce(-(x.e operator(extensions.<#>) query_embedding), 0) as dq,
            coalesce(-(x.e operator(extensions.<#>) x.e), 0) as nn,
            array[
                case when span >= 1 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 1) over w), 0) end,
                case when span >= 2 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 2) over w), 0) end,
                case when span >= 3 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 3) over w), 0) end,
                case when span >= 4 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 4) over w), 0) end,
                case when span >= 5 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 5) over w), 0) end,
                case when span >= 6 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 6) over w), 0) end,
                case when span >= 7 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 7) over w), 0) end,
                case when span >= 8 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 8) over w), 0) end,
                case when span >= 9 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 9) over w), 0) end,
                case when span >= 10 then coalesce(-(x.e operator(extensions.<#>) lead(x.e, 10) over w), 0) end
            ] as g
        from hipocampo_private.messages as m
        cross join lateral (select case when m.embedding_model = model then m.embedding end as e) as x
        where query_embedding is not null
          and m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and (_search_history.filter_conversation_id is null or m.conversation_id = _search_history.filter_conversation_id)
        window w as (partition by m.conversation_id order by m.created_at, m.id)
    ),
    dense_parts as materialized (
        -- S, the context's weighted sum of embeddings, of the message at position p: the message
        -- at p + o (weight w(o)) adds w(o) q.e to q.S, and w(o)^2 e.e + 2 w(o) sum_d w(o + d) e.e'
        -- (e' the message d further on) to |S|^2. Grouped by the position they count for.
        select d.conversation_id, d.pos - o.o as pos, sum(o.w * d.dq) as num,
            sum(o.w * o.w * d.nn + 2 * o.w * (
                coalesce(wv[o.o + 7] * d.g[1], 0) + coalesce(wv[o.o + 8] * d.g[2], 0)
                + coalesce(wv[o.o + 9] * d.g[3], 0) + coalesce(wv[o.o + 10] * d.g[4], 0)
                + coalesce(wv[o.o + 11] * d.g[5], 0) + coalesce(wv[o.o + 12] * d.g[6], 0)
                + coalesce(wv[o.o + 13] * d.g[7], 0) + coalesce(wv[o.o + 14] * d.g[8], 0)
                + coalesce(wv[o.o + 15] * d.g[9], 0) + coalesce(wv[o.o + 16] * d.g[10], 0)
            )) as den
        from own_dots as d
        cross join offsets as o
        group by d.conversation_id, d.pos - o.o
    ),
    dense as materialized (
        -- Cosine of the query to S: q.S / (|q| |S|), for the messages with an embedding (a
        -- neighbour without one adds nothing, as a missing one).
        select d.id, p.num / nullif(sqrt(p.den) * q_norm, 0) as s
        from own_dots as d
        inner join dense_parts as p on p.conversation_id = d.conversation_id and p.pos = d.pos
        where d.has_e and p.den > 0
          and (_search_history.filter_modality is null or d.modality = _search_history.filter_modality)
    ),
    scores as materialized (
        -- One row per searched message with both legs' scores: a union grouped by message, not
        -- outer joins, so the plan stays linear whatever the row estimates (a conversation outside
        -- the statistics is estimated at a row or two, and outer joins then ran once per message).
        select u.id, max(u.ds) as ds, max(u.ls) as ls
        from (
            select s.id, null::double precision as ds, null::double precision as ls, true as searched
            from scoped as s
            where _search_history.filter_modality is null or s.modality = _search_history.filter_modality
            union all
            select l.id, null, l.s, false from lexical as l
            union all
            select d.id, d.s, null, false from dense as d
        ) as u
        group by u.id
        having bool_or(u.searched)
    ),
    stats as materialized (
        -- z-scores over every searched message: BM25 0 without a query term, cosine at the leg's
        -- minimum without an embedding.
        select
            avg(coalesce(x.ls, 0)) as l_mean,
            coalesce(nullif(stddev_pop(coalesce(x.ls, 0)), 0), 1) as l_sd,
            avg(x.ds) as d_mean,
            coalesce(nullif(stddev_pop(x.ds), 0), 1) as d_sd,
            min(x.ds) as d_min
        from scores as x
    ),
    fused as materialized (
        -- The top k, or with the re-rank its top token_rerank_candidates (at least k).
        select x.id, x.ds, x.ls,
            wd * coalesce((coalesce(x.ds, st.d_min) - st.d_mean) / st.d_sd, 0)
            + wl * (coalesce(x.ls, 0) - st.l_mean) / st.l_sd as f
        from scores as x
        cross join stats as st
        where x.ds is not null or x.ls is not null
        order by f desc, x.id
        limit case when rerank then greatest(k, n_candidates) else k end
    ),
    query_ids as materialized (
        select qt.i, qt.id, qt.bits
        from unnest(query_token_ids, query_token_bits) with ordinality as qt (id, bits, i)
        where rerank
    ),
    idf_sample as materialized (
        -- The messages the query tokens' idf is counted over: the searched ones, at most the
        -- newest token_idf_sample of them (a whole history stays cheap; a conversation is exact).
        select o.id, o.token_ids from own as o where rerank order by o.id desc limit n_idf
    ),
    query_tokens as materialized (
        -- Each query token with its BM25-style idf among the sampled messages (token ids).
        select q.i, q.bits, ln(1 + (n.n - coalesce(d.n, 0) + 0.5) / (coalesce(d.n, 0) + 0.5)) as w
        from query_ids as q
        cross join (select count(*) as n from idf_sample) as n
        left join (
            -- Only the messages sharing a token with the query are unnested.
            select u.id, count(distinct o.id) as n
            from idf_sample as o
            cross join lateral unnest(o.token_ids) as u (id)
            where o.token_ids operator(pg_catalog.&&) query_token_ids and u.id = any(query_token_ids)
            group by u.id
        ) as d on d.id = q.id
    ),
    token_scores as materialized (
        -- Late interaction (MaxSim): for each query token the most similar token of the message
        -- (1 - 2 hamming / bits: the cosine of the sign vectors), idf-weighted mean. The message's
        -- bits are read once and paired with every query token.
        select f.id, sum(x.w * x.sim) / nullif(sum(x.w), 0) as ts
        from fused as f
        inner join hipocampo_private.messages as m on m.id = f.id
        cross join lateral (
            select max(t.w) as w, 1 - 2 * min(bit_count(d.b operator(pg_catalog.#) t.bits))::double precision
                / max(bit_length(t.bits)) as sim
            from unnest(m.token_bits) as d (b)
            cross join query_tokens as t
            group by t.i
        ) as x
        where rerank and m.token_bits is not null and m.embedding_model = model
        group by f.id
    ),
    candidate_stats as materialized (
        select avg(f.f) as f_mean, coalesce(nullif(stddev_pop(f.f), 0), 1) as f_sd,
            avg(t.ts) as t_mean, coalesce(nullif(stddev_pop(t.ts), 0), 1) as t_sd, min(t.ts) as t_min
        from fused as f
        left join token_scores as t on t.id = f.id
    ),
    ranked as (
        -- Without the re-rank the fused score stands; with it, both z-scored over the candidates
        -- (a candidate without tokens at the tokens' minimum).
        select f.id, f.ds, f.ls, t.ts,
            case when rerank then (f.f - cs.f_mean) / cs.f_sd
                + w_token * coalesce((coalesce(t.ts, cs.t_min) - cs.t_mean) / cs.t_sd, 0)
            else f.f end as s
        from fused as f
        cross join candidate_stats as cs
        left join token_scores as t on t.id = f.id
    )
    select m.id, m.conversation_id, m.role, m.content, m.modality, m.metadata, m.created_at,
        r.ds, r.ls, r.s, (row_number() over (order by r.s desc, m.id))::integer, r.ts
    from ranked as r
    inner join hipocampo_private.messages as m on m.id = r.id
    order by r.s desc, m.id
    limit k;
end;
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
        select p.memories, p.used, p.dropped into memories, used, dropped_memories
        from hipocampo_private._pack_memories(a.actor_tenant, a.actor_user, query_embedding, model, mem, budget,
            context_pack.conversation_id) as p;
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
$function$;

create or replace function hipocampo.search_history(query_text text, query_embedding extensions.vector default null::extensions.vector, filter_conversation_id uuid default null::uuid, match_count integer default null::integer, filter_modality text default null::text, user_id uuid default null::uuid, tenant_id uuid default null::uuid, query_token_ids integer[] default null::integer[], query_token_bits bit varying[] default null::bit varying[])
returns table (message_id bigint, conversation_id uuid, role text, content text, modality text, metadata jsonb, created_at timestamp with time zone, dense_score double precision, lexical_score double precision, score double precision, rank integer, token_score double precision)
language plpgsql
set search_path to ''
as $function$
declare
    n integer;
begin
    return query select * from hipocampo_private._search_history(
        search_history.query_text, search_history.query_embedding, search_history.filter_conversation_id,
        search_history.match_count, search_history.filter_modality, search_history.user_id,
        search_history.tenant_id, search_history.query_token_ids, search_history.query_token_bits
    );
    get diagnostics n = row_count;
    perform hipocampo_private._record_read(
        (hipocampo_private._memory_actor(search_history.user_id, search_history.tenant_id)).actor_tenant,
        'search_history', n, null, null
    );
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
    perform hipocampo_private._record_read(t, 'search_memories', cardinality(sel), null, null, memory_ids => array(
        select ids[x] from unnest(sel) as x), similarity => (select avg(sims[x]) from unnest(sel) as x)::real);
end;
$function$;

create or replace function hipocampo.tenant_metrics(days integer default 30, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
stable
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(tenant_metrics.tenant_id);  -- 42501 before any other work
    gate record := hipocampo_private._caller();
    since timestamptz;
begin
    if gate.kind <> 'service' and gate.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can read the tenant''s metrics' using errcode = '42501';
    end if;
    if tenant_metrics.days is null or tenant_metrics.days not between 1 and 366 then
        raise exception 'days must lie in [1, 366] (got %)', coalesce(tenant_metrics.days::text, 'null')
            using errcode = '22023';
    end if;
    since := date_trunc('day', now()) - make_interval(days => tenant_metrics.days - 1);
    return jsonb_build_object(
        'tenant_id', t,
        'days', tenant_metrics.days,
        'answers', coalesce((
            select jsonb_agg(jsonb_build_object(
                'day', a.day::date, 'query_count', a.query_count,
                'latency_p50_ms', a.latency_p50_ms, 'latency_p95_ms', a.latency_p95_ms,
                'refusals', a.refusals, 'refusal_rate', a.refusal_rate, 'cache_hit_rate', a.cache_hit_rate
            ) order by a.day)
            from hipocampo.rag_answer_stats as a
            where a.tenant_id = t and a.day >= since
        ), '[]'::jsonb),
        'searches', coalesce((
            select jsonb_agg(jsonb_build_object(
                'day', s.day::date, 'query_count', s.query_count,
                'latency_p50_ms', s.latency_p50_ms, 'latency_p95_ms', s.latency_p95_ms
            ) order by s.day)
            from hipocampo.rag_search_stats as s
            where s.tenant_id = t and s.day >= since
        ), '[]'::jsonb),
        'refusals', coalesce((
            select jsonb_agg(jsonb_build_object('reason', r.reason, 'refusals', r.n) order by r.n desc, r.reason)
            from (
                select x.reason, sum(x.refusals) as n
                from hipocampo.rag_refusals as x
                where x.tenant_id = t and x.day >= since
                group by x.reason
            ) as r
        ), '[]'::jsonb),
        'memory_events', coalesce((
            select jsonb_agg(jsonb_build_object('day', e.day, 'event', e.event, 'events', e.events)
                order by e.day, e.event)
            from hipocampo.memory_events_daily as e
            where e.tenant_id = t and e.day >= since::date
        ), '[]'::jsonb),
        'memory_rejections', coalesce((
            select jsonb_agg(jsonb_build_object('reason', r.reason, 'rejected', r.n) order by r.n desc, r.reason)
            from (
                select coalesce(e.reason, 'unknown') as reason, count(*) as n
                from hipocampo_private.memory_events as e
                where e.tenant_id = t and e.event = 'memory.write_rejected' and e.at >= since
                group by coalesce(e.reason, 'unknown')
            ) as r
        ), '[]'::jsonb)
    ) || hipocampo_private._memory_read_metrics(t, since, gate.kind = 'service');
end;
$function$;

revoke execute on function hipocampo.memory_quota_use(tenant_id uuid) from public;
revoke execute on function hipocampo_private._enqueue_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], at timestamp with time zone, caller uuid, caller_role text, similarity real, conversation_id uuid) from public;
revoke execute on function hipocampo_private._memory_read_metrics(tenant_id uuid, since timestamp with time zone, as_service boolean) from public;
revoke execute on function hipocampo_private._pack_memories(tenant_id uuid, user_id uuid, query_embedding extensions.vector, model text, mem jsonb, budget integer, conversation_id uuid, out memories jsonb, out used integer, out dropped integer) from public;
revoke execute on function hipocampo_private._record_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], similarity real, conversation_id uuid) from public;
revoke execute on function hipocampo_private._search_history(query_text text, query_embedding extensions.vector, filter_conversation_id uuid, match_count integer, filter_modality text, user_id uuid, tenant_id uuid, query_token_ids integer[], query_token_bits bit varying[]) from public;
grant execute on function hipocampo.memory_quota_use(tenant_id uuid) to authenticated;
grant execute on function hipocampo.memory_quota_use(tenant_id uuid) to service_role;
grant execute on function hipocampo_private._memory_read_metrics(tenant_id uuid, since timestamp with time zone, as_service boolean) to authenticated;
grant execute on function hipocampo_private._memory_read_metrics(tenant_id uuid, since timestamp with time zone, as_service boolean) to service_role;
grant execute on function hipocampo_private._pack_memories(tenant_id uuid, user_id uuid, query_embedding extensions.vector, model text, mem jsonb, budget integer, conversation_id uuid, out memories jsonb, out used integer, out dropped integer) to authenticated;
grant execute on function hipocampo_private._pack_memories(tenant_id uuid, user_id uuid, query_embedding extensions.vector, model text, mem jsonb, budget integer, conversation_id uuid, out memories jsonb, out used integer, out dropped integer) to service_role;
grant execute on function hipocampo_private._record_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], similarity real, conversation_id uuid) to authenticated;
grant execute on function hipocampo_private._record_read(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision, chunk_ids bigint[], memory_ids uuid[], similarity real, conversation_id uuid) to service_role;
grant execute on function hipocampo_private._search_history(query_text text, query_embedding extensions.vector, filter_conversation_id uuid, match_count integer, filter_modality text, user_id uuid, tenant_id uuid, query_token_ids integer[], query_token_bits bit varying[]) to authenticated;
grant execute on function hipocampo_private._search_history(query_text text, query_embedding extensions.vector, filter_conversation_id uuid, match_count integer, filter_modality text, user_id uuid, tenant_id uuid, query_token_ids integer[], query_token_bits bit varying[]) to service_role;
grant select on table hipocampo.memory_search_similarity to authenticated;
grant select on table hipocampo.memory_search_similarity to service_role;
comment on function hipocampo.memory_quota_use(pg_catalog.uuid) is 'One tenant: users with active personal memories, their distribution and the users near or at memory.max_active_per_user (admins).';
comment on view hipocampo.memory_search_similarity is 'Per tenant, conversation and day: the 7-day moving average of the similarity memory reads returned.';
alter view hipocampo.memory_search_similarity set (security_invoker = true);
