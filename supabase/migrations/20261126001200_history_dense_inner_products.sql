-- search_history's dense leg from inner products. Each message's context score was the cosine
-- of the query to the weighted sum of up to eleven embeddings, built per message (a vector
-- multiplied and added per neighbour, in a subquery per message). The same cosine is
-- q.S / (|q| |S|), and both terms are sums of inner products: q.e of each message, and e.e' of
-- each message with its next ones (as far as two offsets of a context lie apart). The function now
-- computes those scalars in one ordered pass and sums them per position; same top 10 and scores
-- within 1e-6 on LoCoMo's ten conversations (docs/BENCHMARKS.md §History search, before / after).
-- A zero query_embedding gives no dense score (it gave NaN). Restated from
-- supabase/schemas/07_conversations.sql; re-runnable.
set local check_function_bodies = off;

/*
search_history(query_text text, query_embedding vector default null,
  filter_conversation_id uuid default null, match_count integer default null,
  filter_modality text default null, user_id uuid default null,
  tenant_id uuid default null, query_token_ids integer[] default null,
  query_token_bits varbit[] default null) -> setof record

Purpose: search the caller's own conversation history (one conversation, or all). Each message is
  scored with its context: itself (weight 1) plus the messages before it in its conversation
  weighted by conversations.context_weights_before (nearest first) and those after it by
  conversations.context_weights_after (order: created_at, id), read with window functions in one
  pass per leg. Lexical leg: Okapi BM25 (conversations.bm25_k1 / bm25_b) over the context's
  weighted term frequencies, which include each message's date words (_date_words of created_at
  in conversations.time_zone, weight conversations.date_weight; 0 = off); document frequencies
  and lengths over the searched messages' contexts. Dense leg (when query_embedding is given):
  cosine to the weighted sum of the context's embeddings of the active model, exact, computed from
  inner products (the query with each message, each message with its next ones) without building
  the sum (a zero query_embedding gives no dense score). Both legs
  are z-scored over every searched message (BM25 0 without a query term; a missing cosine counts
  as the leg's minimum) and summed with conversations.dense_weight / lexical_weight; messages
  matched by neither leg are left out. Then, given the query's tokens, the top
  conversations.token_rerank_candidates are re-ranked: fused score and MaxSim token score, each
  z-scored over the candidates, weighted 1 and conversations.token_rerank_weight (0 = off); the
  query tokens' idf is counted over the newest conversations.token_idf_sample searched messages.
  With filter_modality, neighbours of any modality give context; only messages of that modality
  are returned.
Parameters: query_text 1..conversations.max_query_chars (2,000) characters; query_embedding of
  the active model (optional); filter_conversation_id (null = every conversation of the user);
  match_count k, 1..100 (default
  conversations.match_count); filter_modality chat | voice; user_id / tenant_id only for
  service_role; query_token_ids / query_token_bits - the question's WordPiece ids and the sign
  bits of its token embeddings (same model as query_embedding, which they need; 1..512 items).
Returns: message_id, conversation_id, role, content, modality, metadata, created_at,
  dense_score (cosine of the context), lexical_score (BM25 of the context), score (the ranking
  score), rank (1-based), token_score (MaxSim in [-1, 1]; null without the re-rank or without
  the message's tokens).
Errors: 42501 as _memory_actor; 22023 empty or too long query; 22023 "match_count must be 1..100
  (got n)"; 22023 "conversations.context_weights_before must be an array of at most 5 numbers in
  [0, 1]" (and _after); 22023 unknown conversations.time_zone; 22023 "query tokens need
  query_embedding (their model's)"; 22023 as _check_message_tokens for the query tokens (bits as
  long as query_embedding's dimensions); 22000 wrong dimensions; 55000 "conversations config is
  incomplete: …".
Example: select content, score from hipocampo.search_history('what did Mel paint?', '[…]', '…'::uuid,
  query_token_ids => array[2054, …], query_token_bits => array[b'0110…', …]);
*/
create or replace function hipocampo.search_history(
    query_text text,
    query_embedding extensions.vector default null,
    filter_conversation_id uuid default null,
    match_count integer default null,
    filter_modality text default null,
    user_id uuid default null,
    tenant_id uuid default null,
    query_token_ids integer[] default null,
    query_token_bits varbit[] default null
)
returns table (
    message_id bigint, conversation_id uuid, role text, content text, modality text, metadata jsonb,
    created_at timestamptz, dense_score double precision, lexical_score double precision,
    score double precision, rank integer, token_score double precision
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
    day_terms as materialized (
        -- Date words, once per local day and language.
        select d.day, d.ts_config, u.lexeme
        from (
            select distinct (m.created_at at time zone tz)::date as day, m.ts_config
            from hipocampo_private.messages as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
              and (search_history.filter_conversation_id is null
                  or m.conversation_id = search_history.filter_conversation_id)
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
          and (search_history.filter_conversation_id is null or m.conversation_id = search_history.filter_conversation_id)
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
          and (search_history.filter_conversation_id is null or m.conversation_id = search_history.filter_conversation_id)
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
          and (search_history.filter_modality is null or d.modality = search_history.filter_modality)
    ),
    scores as materialized (
        -- One row per searched message with both legs' scores: a union grouped by message, not
        -- outer joins, so the plan stays linear whatever the row estimates (a conversation outside
        -- the statistics is estimated at a row or two, and outer joins then ran once per message).
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
$$;

comment on function hipocampo.search_history(
    text, extensions.vector, uuid, integer, text, uuid, uuid, integer[], varbit[]
) is
'Hybrid (BM25 + cosine) search of the caller''s conversation history, each message with its neighbours and date; re-ranked by late interaction over tokens when the query''s are given.';
