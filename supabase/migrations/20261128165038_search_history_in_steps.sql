-- search history in steps.
-- hipocampo_private._search_history (373 lines) is named steps (issue 47 §1): _history_settings, _history_terms, _history_offsets, _history_contexts, _history_lexical, _history_dense, _history_fused, then the re-rank; same results (benchmarks/history_ab.py)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._history_contexts(actor_tenant uuid, actor_user uuid, conversation uuid, lexemes text[], cfg jsonb, wb double precision[], wa double precision[])
returns table (id bigint, conversation_id uuid, modality text, fts tsvector, pos bigint, len double precision, date_hits text[])
language plpgsql
stable
set search_path to ''
as $function$
declare
    tz text := cfg ->> 'time_zone';
    w_date double precision := (cfg ->> 'date_weight')::double precision;
begin
    return query
    with day_terms as materialized (
        -- Date words, once per local day and language.
        select d.day, d.ts_config, u.lexeme
        from (
            select distinct (m.created_at at time zone tz)::date as day, m.ts_config
            from hipocampo_private.messages as m
            where m.tenant_id = actor_tenant and m.user_id = actor_user
              and (conversation is null or m.conversation_id = conversation)
        ) as d
        cross join lateral unnest(to_tsvector(d.ts_config, hipocampo_private._date_words(d.day, d.ts_config))) as u
    ),
    by_day as materialized (
        -- Per local day and language: the weighted date-word count and the query's lexemes among
        -- the date words, as objects read by key (a lookup per message, whatever the estimates).
        select coalesce(jsonb_object_agg(x.key, x.n), '{}'::jsonb) as len,
            coalesce(jsonb_object_agg(x.key, x.hits) filter (where x.hits is not null), '{}'::jsonb) as hits
        from (
            select dt.day::text || ' ' || dt.ts_config::text as key, count(*) * w_date as n,
                jsonb_agg(dt.lexeme) filter (where w_date > 0 and dt.lexeme = any(lexemes)) as hits
            from day_terms as dt group by dt.day, dt.ts_config
        ) as x
    ),
    own as materialized (
        select m.id, m.conversation_id, m.created_at, m.modality, m.fts,
            m.fts_length + coalesce((b.len ->> k.key)::double precision, 0) as len,
            case when b.hits ? k.key then array(select jsonb_array_elements_text(b.hits -> k.key)) end as hits
        from hipocampo_private.messages as m
        cross join by_day as b
        cross join lateral (
            select ((m.created_at at time zone tz)::date)::text || ' ' || m.ts_config::text as key
        ) as k
        where m.tenant_id = actor_tenant and m.user_id = actor_user
          and (conversation is null or m.conversation_id = conversation)
    )
    select s.id, s.conversation_id, s.modality, s.fts,
        row_number() over w,
        s.len
        + wb[1] * coalesce(lag(s.len, 1) over w, 0) + wb[2] * coalesce(lag(s.len, 2) over w, 0)
        + wb[3] * coalesce(lag(s.len, 3) over w, 0) + wb[4] * coalesce(lag(s.len, 4) over w, 0)
        + wb[5] * coalesce(lag(s.len, 5) over w, 0)
        + wa[1] * coalesce(lead(s.len, 1) over w, 0) + wa[2] * coalesce(lead(s.len, 2) over w, 0)
        + wa[3] * coalesce(lead(s.len, 3) over w, 0) + wa[4] * coalesce(lead(s.len, 4) over w, 0)
        + wa[5] * coalesce(lead(s.len, 5) over w, 0),
        s.hits
    from own as s
    window w as (partition by s.conversation_id order by s.created_at, s.id);
end;
$function$;

create or replace function hipocampo_private._history_dense(actor_tenant uuid, actor_user uuid, conversation uuid, modality text, query_embedding extensions.vector, model text, cfg jsonb, wv double precision[], span integer, q_norm double precision)
returns table (id bigint, ds double precision)
language plpgsql
stable
set search_path to ''
as $function$
begin
    return query
    with own_dots as materialized (
        -- Each searched message's inner products, 0 without an embedding of the model: with the
        -- query (dq), with itself (nn), and with the next 1..10 messages of its conversation (g).
        select m.id, m.modality, x.e is not null as has_e, m.conversation_id, row_number() over w as pos,
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
          and m.tenant_id = actor_tenant and m.user_id = actor_user
          and (conversation is null or m.conversation_id = conversation)
        window w as (partition by m.conversation_id order by m.created_at, m.id)
    ),
    dense_parts as materialized (
        -- The message at p + o (weight w(o)) adds w(o) q.e to q.S of the message at p, and
        -- w(o)^2 e.e + 2 w(o) sum_d w(o + d) e.e' (e' the message d further on) to |S|^2.
        select d.conversation_id, d.pos - o.o as pos, sum(o.w * d.dq) as num,
            sum(o.w * o.w * d.nn + 2 * o.w * (
                coalesce(wv[o.o + 7] * d.g[1], 0) + coalesce(wv[o.o + 8] * d.g[2], 0)
                + coalesce(wv[o.o + 9] * d.g[3], 0) + coalesce(wv[o.o + 10] * d.g[4], 0)
                + coalesce(wv[o.o + 11] * d.g[5], 0) + coalesce(wv[o.o + 12] * d.g[6], 0)
                + coalesce(wv[o.o + 13] * d.g[7], 0) + coalesce(wv[o.o + 14] * d.g[8], 0)
                + coalesce(wv[o.o + 15] * d.g[9], 0) + coalesce(wv[o.o + 16] * d.g[10], 0)
            )) as den
        from own_dots as d
        cross join hipocampo_private._history_offsets(cfg -> 'context_weights_before', cfg -> 'context_weights_after') as o
        group by d.conversation_id, d.pos - o.o
    )
    select d.id, p.num / nullif(sqrt(p.den) * q_norm, 0)
    from own_dots as d
    inner join dense_parts as p on p.conversation_id = d.conversation_id and p.pos = d.pos
    where d.has_e and p.den > 0
      and (_history_dense.modality is null or d.modality = _history_dense.modality);
end;
$function$;

create or replace function hipocampo_private._history_fused(actor_tenant uuid, actor_user uuid, conversation uuid, modality text, query_embedding extensions.vector, lexemes text[], q tsquery, cfg jsonb, wb double precision[], wa double precision[], wv double precision[], span integer, model text, q_norm double precision, n integer)
returns table (id bigint, ds double precision, ls double precision, f double precision)
language plpgsql
stable rows 100
set search_path to ''
as $function$
declare
    wd double precision := (cfg ->> 'dense_weight')::double precision;
    wl double precision := (cfg ->> 'lexical_weight')::double precision;
begin
    return query
    with scores as materialized (
        -- One row per searched message with both legs' scores: a union grouped by message, not
        -- outer joins, so the plan stays linear whatever the row estimates.
        select u.id, max(u.ds) as ds, max(u.ls) as ls
        from (
            select l.id, null::double precision as ds, l.ls, true as searched
            from hipocampo_private._history_lexical(
                actor_tenant, actor_user, conversation, modality, lexemes, q, cfg, wb, wa
            ) as l
            union all
            select d.id, d.ds, null, false
            from hipocampo_private._history_dense(
                actor_tenant, actor_user, conversation, modality, query_embedding, model, cfg, wv, span, q_norm
            ) as d
        ) as u
        group by u.id
        having bool_or(u.searched)
    ),
    stats as materialized (
        select
            avg(coalesce(x.ls, 0)) as l_mean,
            coalesce(nullif(stddev_pop(coalesce(x.ls, 0)), 0), 1) as l_sd,
            avg(x.ds) as d_mean,
            coalesce(nullif(stddev_pop(x.ds), 0), 1) as d_sd,
            min(x.ds) as d_min
        from scores as x
    )
    select x.id, x.ds, x.ls,
        wd * coalesce((coalesce(x.ds, st.d_min) - st.d_mean) / st.d_sd, 0)
        + wl * (coalesce(x.ls, 0) - st.l_mean) / st.l_sd as f
    from scores as x
    cross join stats as st
    where x.ds is not null or x.ls is not null
    order by 4 desc, 1
    limit n;
end;
$function$;

create or replace function hipocampo_private._history_lexical(actor_tenant uuid, actor_user uuid, conversation uuid, modality text, lexemes text[], q tsquery, cfg jsonb, wb double precision[], wa double precision[])
returns table (id bigint, ls double precision)
language plpgsql
stable
set search_path to ''
as $function$
declare
    k1 double precision := (cfg ->> 'bm25_k1')::double precision;
    b double precision := (cfg ->> 'bm25_b')::double precision;
    w_date double precision := (cfg ->> 'date_weight')::double precision;
begin
    return query
    with scoped as materialized (
        select * from hipocampo_private._history_contexts(actor_tenant, actor_user, conversation, lexemes, cfg, wb, wa)
    ),
    own_terms as (
        -- The query's lexemes in each message (term frequency) and in its date words (date_weight).
        select s.conversation_id, s.pos, u.lexeme, coalesce(array_length(u.positions, 1), 1)::double precision as tf
        from scoped as s
        cross join lateral unnest(s.fts) as u
        where q is not null and s.fts @@ q and u.lexeme = any(lexemes)
        union all
        select s.conversation_id, s.pos, h.lexeme, w_date
        from scoped as s
        cross join lateral unnest(s.date_hits) as h (lexeme)
    ),
    spread_terms as materialized (
        -- A term of the message at position p counts for the message at p - o with weight w(o).
        -- (materialized: the join below must be on both keys, whatever the row estimates)
        select ot.conversation_id, ot.pos - o.o as pos, ot.lexeme, o.w * ot.tf as tf
        from own_terms as ot
        cross join hipocampo_private._history_offsets(cfg -> 'context_weights_before', cfg -> 'context_weights_after') as o
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
    )
    -- A union grouped by message, not an outer join: the plan stays linear whatever the estimates.
    select u.id, max(u.s)
    from (
        select s.id, null::double precision as s, true as searched
        from scoped as s
        where _history_lexical.modality is null or s.modality = _history_lexical.modality
        union all
        select l.id, l.s, false from lexical as l
    ) as u
    group by u.id
    having bool_or(u.searched);
end;
$function$;

create or replace function hipocampo_private._history_offsets(w_before jsonb, w_after jsonb)
returns table (o integer, w double precision)
language sql
immutable
set search_path to ''
as $function$
    select 0, 1.0::double precision
    union all
    select -e.i::integer, (e.w #>> '{}')::double precision
    from jsonb_array_elements(w_before) with ordinality as e (w, i)
    union all
    select e.i::integer, (e.w #>> '{}')::double precision
    from jsonb_array_elements(w_after) with ordinality as e (w, i)
$function$;

create or replace function hipocampo_private._history_settings(cfg jsonb, match_count integer, query_text text, query_embedding extensions.vector, query_token_ids integer[], query_token_bits bit varying[], out k integer, out ts regconfig, out model text, out rerank boolean, out wb double precision[], out wa double precision[], out wv double precision[], out span integer, out q_norm double precision)
returns record
language plpgsql
stable
set search_path to ''
as $function$
declare
    max_chars integer := (cfg ->> 'max_query_chars')::integer;
    w_before jsonb := cfg -> 'context_weights_before';
    w_after jsonb := cfg -> 'context_weights_after';
    tz text := cfg ->> 'time_zone';
    side record;
begin
    k := coalesce(_history_settings.match_count, (cfg ->> 'match_count')::integer);
    if k is null or k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    if query_text is null or btrim(query_text) = '' or char_length(query_text) > max_chars then
        raise exception 'query_text must have 1..% characters', max_chars using errcode = '22023';
    end if;
    if max_chars is null or (cfg ->> 'bm25_k1') is null or (cfg ->> 'bm25_b') is null
        or (cfg ->> 'dense_weight') is null or (cfg ->> 'lexical_weight') is null or (cfg ->> 'date_weight') is null
        or tz is null or w_before is null or w_after is null or (cfg ->> 'token_rerank_weight') is null
        or (cfg ->> 'token_rerank_candidates') is null or (cfg ->> 'token_idf_sample') is null then
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
        q_norm := sqrt(-(query_embedding operator(extensions.<#>) query_embedding));
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
    rerank := (cfg ->> 'token_rerank_weight')::double precision > 0 and query_embedding is not null
        and cardinality(query_token_bits) > 0;
    wb := array(select coalesce((w_before ->> d)::double precision, 0) from generate_series(0, 4) as d);
    wa := array(select coalesce((w_after ->> d)::double precision, 0) from generate_series(0, 4) as d);
    wv := array(select wb[6 - i] from generate_series(1, 5) as i) || array[1.0::double precision] || wa;
    span := coalesce((select max(i) from generate_series(1, 5) as i where wb[i] > 0), 0)
        + coalesce((select max(i) from generate_series(1, 5) as i where wa[i] > 0), 0);
end;
$function$;

create or replace function hipocampo_private._history_terms(actor_tenant uuid, actor_user uuid, conversation uuid, query_text text, ts regconfig, out lexemes text[], out q tsquery)
returns record
language plpgsql
stable
set search_path to ''
as $function$
begin
    select array_agg(distinct u.lexeme) into lexemes
    from (
        select distinct m.ts_config from hipocampo_private.messages as m
        where m.tenant_id = actor_tenant and m.user_id = actor_user
          and (conversation is null or m.conversation_id = conversation)
    ) as c
    cross join lateral unnest(to_tsvector(c.ts_config, query_text)) as u;
    if lexemes is null then
        lexemes := array(select u.lexeme from unnest(to_tsvector(ts, query_text)) as u);
    end if;
    if cardinality(lexemes) > 0 then
        q := array_to_string(array(select quote_literal(l) from unnest(lexemes) as l), ' | ')::tsquery;
    end if;
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
    st record;
    t record;
    w_token double precision := (cfg ->> 'token_rerank_weight')::double precision;
    n_idf integer := (cfg ->> 'token_idf_sample')::integer;
begin
    select * into st from hipocampo_private._history_settings(
        cfg, match_count, query_text, query_embedding, query_token_ids, query_token_bits
    );
    select * into t from hipocampo_private._history_terms(a.actor_tenant, a.actor_user, filter_conversation_id, query_text, st.ts);
    return query
    with fused as materialized (
        select * from hipocampo_private._history_fused(
            a.actor_tenant, a.actor_user, filter_conversation_id, filter_modality, query_embedding, t.lexemes, t.q,
            cfg, st.wb, st.wa, st.wv, st.span, st.model, st.q_norm,
            case when st.rerank then greatest(st.k, (cfg ->> 'token_rerank_candidates')::integer) else st.k end
        )
    ),
    idf_sample as materialized (
        -- The newest token_idf_sample searched messages (a whole history stays cheap): the user's
        -- messages first (offset 0), so the plan never walks the table in id order instead.
        select o.id, o.token_ids from (
            select m.id, m.token_ids from hipocampo_private.messages as m
            where st.rerank and m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
              and (filter_conversation_id is null or m.conversation_id = filter_conversation_id)
            offset 0
        ) as o
        order by o.id desc limit n_idf
    ),
    query_tokens as materialized (
        -- Each query token with its BM25-style idf among the sampled messages (token ids).
        select q.i, q.bits, ln(1 + (n.n - coalesce(d.n, 0) + 0.5) / (coalesce(d.n, 0) + 0.5)) as w
        from unnest(query_token_ids, query_token_bits) with ordinality as q (id, bits, i)
        cross join (select count(*) as n from idf_sample) as n
        left join (
            select u.id, count(distinct o.id) as n
            from idf_sample as o
            cross join lateral unnest(o.token_ids) as u (id)
            where o.token_ids operator(pg_catalog.&&) query_token_ids and u.id = any(query_token_ids)
            group by u.id
        ) as d on d.id = q.id
        where st.rerank
    ),
    token_scores as materialized (
        select f.id, sum(x.w * x.sim) / nullif(sum(x.w), 0) as ts
        from fused as f
        inner join hipocampo_private.messages as m on m.id = f.id
        cross join lateral (
            select max(qt.w) as w, 1 - 2 * min(bit_count(d.b operator(pg_catalog.#) qt.bits))::double precision
                / max(bit_length(qt.bits)) as sim
            from unnest(m.token_bits) as d (b)
            cross join query_tokens as qt
            group by qt.i
        ) as x
        where st.rerank and m.token_bits is not null and m.embedding_model = st.model
        group by f.id
    ),
    candidate_stats as materialized (
        select avg(f.f) as f_mean, coalesce(nullif(stddev_pop(f.f), 0), 1) as f_sd,
            avg(x.ts) as t_mean, coalesce(nullif(stddev_pop(x.ts), 0), 1) as t_sd, min(x.ts) as t_min
        from fused as f
        left join token_scores as x on x.id = f.id
    ),
    ranked as (
        select f.id, f.ds, f.ls, x.ts,
            case when st.rerank then (f.f - cs.f_mean) / cs.f_sd
                + w_token * coalesce((coalesce(x.ts, cs.t_min) - cs.t_mean) / cs.t_sd, 0)
            else f.f end as s
        from fused as f
        cross join candidate_stats as cs
        left join token_scores as x on x.id = f.id
    )
    select m.id, m.conversation_id, m.role, m.content, m.modality, m.metadata, m.created_at,
        r.ds, r.ls, r.s, (row_number() over (order by r.s desc, m.id))::integer, r.ts
    from ranked as r
    inner join hipocampo_private.messages as m on m.id = r.id
    order by r.s desc, m.id
    limit st.k;
end;
$function$;

revoke execute on function hipocampo_private._history_contexts(actor_tenant uuid, actor_user uuid, conversation uuid, lexemes text[], cfg jsonb, wb double precision[], wa double precision[]) from public;
revoke execute on function hipocampo_private._history_dense(actor_tenant uuid, actor_user uuid, conversation uuid, modality text, query_embedding extensions.vector, model text, cfg jsonb, wv double precision[], span integer, q_norm double precision) from public;
revoke execute on function hipocampo_private._history_fused(actor_tenant uuid, actor_user uuid, conversation uuid, modality text, query_embedding extensions.vector, lexemes text[], q tsquery, cfg jsonb, wb double precision[], wa double precision[], wv double precision[], span integer, model text, q_norm double precision, n integer) from public;
revoke execute on function hipocampo_private._history_lexical(actor_tenant uuid, actor_user uuid, conversation uuid, modality text, lexemes text[], q tsquery, cfg jsonb, wb double precision[], wa double precision[]) from public;
revoke execute on function hipocampo_private._history_offsets(w_before jsonb, w_after jsonb) from public;
revoke execute on function hipocampo_private._history_settings(cfg jsonb, match_count integer, query_text text, query_embedding extensions.vector, query_token_ids integer[], query_token_bits bit varying[], out k integer, out ts regconfig, out model text, out rerank boolean, out wb double precision[], out wa double precision[], out wv double precision[], out span integer, out q_norm double precision) from public;
revoke execute on function hipocampo_private._history_terms(actor_tenant uuid, actor_user uuid, conversation uuid, query_text text, ts regconfig, out lexemes text[], out q tsquery) from public;
grant execute on function hipocampo_private._history_contexts(actor_tenant uuid, actor_user uuid, conversation uuid, lexemes text[], cfg jsonb, wb double precision[], wa double precision[]) to authenticated;
grant execute on function hipocampo_private._history_contexts(actor_tenant uuid, actor_user uuid, conversation uuid, lexemes text[], cfg jsonb, wb double precision[], wa double precision[]) to service_role;
grant execute on function hipocampo_private._history_dense(actor_tenant uuid, actor_user uuid, conversation uuid, modality text, query_embedding extensions.vector, model text, cfg jsonb, wv double precision[], span integer, q_norm double precision) to authenticated;
grant execute on function hipocampo_private._history_dense(actor_tenant uuid, actor_user uuid, conversation uuid, modality text, query_embedding extensions.vector, model text, cfg jsonb, wv double precision[], span integer, q_norm double precision) to service_role;
grant execute on function hipocampo_private._history_fused(actor_tenant uuid, actor_user uuid, conversation uuid, modality text, query_embedding extensions.vector, lexemes text[], q tsquery, cfg jsonb, wb double precision[], wa double precision[], wv double precision[], span integer, model text, q_norm double precision, n integer) to authenticated;
grant execute on function hipocampo_private._history_fused(actor_tenant uuid, actor_user uuid, conversation uuid, modality text, query_embedding extensions.vector, lexemes text[], q tsquery, cfg jsonb, wb double precision[], wa double precision[], wv double precision[], span integer, model text, q_norm double precision, n integer) to service_role;
grant execute on function hipocampo_private._history_lexical(actor_tenant uuid, actor_user uuid, conversation uuid, modality text, lexemes text[], q tsquery, cfg jsonb, wb double precision[], wa double precision[]) to authenticated;
grant execute on function hipocampo_private._history_lexical(actor_tenant uuid, actor_user uuid, conversation uuid, modality text, lexemes text[], q tsquery, cfg jsonb, wb double precision[], wa double precision[]) to service_role;
grant execute on function hipocampo_private._history_offsets(w_before jsonb, w_after jsonb) to authenticated;
grant execute on function hipocampo_private._history_offsets(w_before jsonb, w_after jsonb) to service_role;
grant execute on function hipocampo_private._history_settings(cfg jsonb, match_count integer, query_text text, query_embedding extensions.vector, query_token_ids integer[], query_token_bits bit varying[], out k integer, out ts regconfig, out model text, out rerank boolean, out wb double precision[], out wa double precision[], out wv double precision[], out span integer, out q_norm double precision) to authenticated;
grant execute on function hipocampo_private._history_settings(cfg jsonb, match_count integer, query_text text, query_embedding extensions.vector, query_token_ids integer[], query_token_bits bit varying[], out k integer, out ts regconfig, out model text, out rerank boolean, out wb double precision[], out wa double precision[], out wv double precision[], out span integer, out q_norm double precision) to service_role;
grant execute on function hipocampo_private._history_terms(actor_tenant uuid, actor_user uuid, conversation uuid, query_text text, ts regconfig, out lexemes text[], out q tsquery) to authenticated;
grant execute on function hipocampo_private._history_terms(actor_tenant uuid, actor_user uuid, conversation uuid, query_text text, ts regconfig, out lexemes text[], out q tsquery) to service_role;
