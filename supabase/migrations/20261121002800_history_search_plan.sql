-- search_history's plan no longer depends on row estimates. A conversation outside the
-- statistics' most common values (every new one, and most of them in a long-lived table) is
-- estimated at a row or two, and 002700's outer joins of the lexical and dense legs (and the
-- z-score statistics) were then evaluated once per message: about 1.7 s for one 419-message
-- conversation instead of about 30 ms (benchmarks/history_latency.py, docs/BENCHMARKS.md). The
-- legs and the statistics are now materialized once and combined by a grouped union. Scores and
-- results are unchanged (same formula).

/*
search_history(query_text text, query_embedding vector default null,
  filter_conversation_id uuid default null, match_count integer default null,
  filter_modality text default null, user_id uuid default null,
  tenant_id uuid default null) -> setof record

Purpose, parameters, returns and errors: as in migration 002700 (each message scored with its
  context and date words; BM25 + cosine, z-scored over the searched messages). Only the plan
  changes: every leg is computed once, whatever the planner's row estimates.
Example: select content, score from hipocampo.search_history('prazo da matrícula', '[…]', '…'::uuid);
*/
create or replace function hipocampo.search_history(
    query_text text,
    query_embedding extensions.vector default null,
    filter_conversation_id uuid default null,
    match_count integer default null,
    filter_modality text default null,
    user_id uuid default null,
    tenant_id uuid default null
)
returns table (
    message_id bigint, conversation_id uuid, role text, content text, modality text, metadata jsonb,
    created_at timestamptz, dense_score double precision, lexical_score double precision,
    score double precision, rank integer
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(search_history.user_id, search_history.tenant_id);
    cfg jsonb := hipocampo.effective_config(a.actor_tenant) -> 'conversations';
    k integer := coalesce(search_history.match_count, (cfg ->> 'match_count')::integer);
    k1 double precision := (cfg ->> 'bm25_k1')::double precision;
    b double precision := (cfg ->> 'bm25_b')::double precision;
    wd double precision := (cfg ->> 'dense_weight')::double precision;
    wl double precision := (cfg ->> 'lexical_weight')::double precision;
    w_date double precision := (cfg ->> 'date_weight')::double precision;
    tz text := cfg ->> 'time_zone';
    w_before jsonb := cfg -> 'context_weights_before';
    w_after jsonb := cfg -> 'context_weights_after';
    ts regconfig;
    model text;
    lexemes text [];
    q tsquery;
    side record;
begin
    if query_text is null or btrim(query_text) = '' or char_length(query_text) > 2000 then
        raise exception 'query_text must have 1..2000 characters' using errcode = '22023';
    end if;
    if k is null or k1 is null or b is null or wd is null or wl is null or w_date is null
        or tz is null or w_before is null or w_after is null then
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

    -- Query lexemes in each text-search configuration the searched messages use.
    select array_agg(distinct u.lexeme) into lexemes
    from (
        select distinct m.ts_config from hipocampo_private.messages as m
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and (search_history.filter_conversation_id is null or m.conversation_id = search_history.filter_conversation_id)
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
    scoped as (
        select m.id, m.conversation_id, m.modality, m.fts, m.fts_length, m.embedding, m.embedding_model,
            m.ts_config, (m.created_at at time zone tz)::date as day,
            row_number() over (partition by m.conversation_id order by m.created_at, m.id) as pos
        from hipocampo_private.messages as m
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
          and (search_history.filter_conversation_id is null or m.conversation_id = search_history.filter_conversation_id)
    ),
    day_terms as (
        -- Date words, once per local day and language.
        select d.day, d.ts_config, u.lexeme
        from (select distinct s.day, s.ts_config from scoped as s) as d
        cross join lateral unnest(to_tsvector(d.ts_config, hipocampo_private._date_words(d.day, d.ts_config))) as u
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
    neighbours as materialized (
        -- (message, offset) pairs: the message at pos p reads its neighbour at p + o.
        select sc.id, sc.modality, sc.embedding_model, sc.conversation_id, sc.pos, sc.pos + o.o as npos, o.o, o.w
        from scoped as sc cross join offsets as o
    ),
    day_len as (
        select dt.day, dt.ts_config, count(*) * w_date as n from day_terms as dt group by dt.day, dt.ts_config
    ),
    ctx_len as materialized (
        -- Length of each message's context (weighted tokens, date words included).
        select s.id, s.conversation_id, s.pos, sum(s.w * (nb.fts_length + coalesce(dl.n, 0))) as len
        from neighbours as s
        inner join scoped as nb on nb.conversation_id = s.conversation_id and nb.pos = s.npos
        left join day_len as dl on dl.day = nb.day and dl.ts_config = nb.ts_config
        group by s.id, s.conversation_id, s.pos
    ),
    ctx_terms as (
        select n.id, n.len, t.lexeme, sum(t.tf) as tf
        from spread_terms as t
        inner join ctx_len as n on n.conversation_id = t.conversation_id and n.pos = t.pos
        group by n.id, n.len, t.lexeme
    ),
    corpus as materialized (
        select count(*) as n_docs, coalesce(nullif(avg(cl.len), 0), 1) as avg_len from ctx_len as cl
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
    weight_vectors as (
        select o.o, array_fill(o.w::real, array[extensions.vector_dims(query_embedding)])::extensions.vector as v
        from offsets as o
        where query_embedding is not null
    ),
    dense as materialized (
        -- Cosine to the weighted sum of the context's embeddings (<=> normalises the sum).
        select s.id, 1 - (extensions.sum(nb.embedding operator(extensions.*) wv.v) operator(extensions.<=>) query_embedding) as s
        from neighbours as s
        inner join weight_vectors as wv on wv.o = s.o
        inner join scoped as nb on nb.conversation_id = s.conversation_id and nb.pos = s.npos
        where s.embedding_model = model and nb.embedding_model = model
          and (search_history.filter_modality is null or s.modality = search_history.filter_modality)
        group by s.id
    ),
    scores as materialized (
        -- One row per searched message with both legs' scores: a union grouped by message, not
        -- outer joins, so the plan stays linear whatever the row estimates (a conversation outside
        -- the statistics is estimated at a row or two; 002700's joins then ran once per message).
        select u.id, max(u.ds) as ds, max(u.ls) as ls
        from (
            select s.id, null::double precision as ds, null::double precision as ls, true as searched
            from scoped as s
            where search_history.filter_modality is null or s.modality = search_history.filter_modality
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
    fused as (
        select x.id, x.ds, x.ls,
            wd * coalesce((coalesce(x.ds, st.d_min) - st.d_mean) / st.d_sd, 0)
            + wl * (coalesce(x.ls, 0) - st.l_mean) / st.l_sd as f
        from scores as x
        cross join stats as st
        where x.ds is not null or x.ls is not null
        order by f desc, x.id
        limit k
    )
    select m.id, m.conversation_id, m.role, m.content, m.modality, m.metadata, m.created_at,
        f.ds, f.ls, f.f, (row_number() over (order by f.f desc, m.id))::integer
    from fused as f
    inner join hipocampo_private.messages as m on m.id = f.id
    order by f.f desc, m.id
    limit k;
end;
$$;

comment on function hipocampo.search_history(text, extensions.vector, uuid, integer, text, uuid, uuid) is
'Hybrid (BM25 + cosine) search of the caller''s conversation history; each message scored with its neighbours and date.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants hold (001400's stand).
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
