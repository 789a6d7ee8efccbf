-- search memories in named steps.
-- Issue 47 §1: search_memories' candidates in their own step (_memory_candidates); same rows.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._memory_candidates(tenant uuid, me uuid, model text, query_embedding extensions.vector, tags text[], emotion text, life_domain text, category text, scope text, include_staging boolean, bonus double precision, max_rows integer, threshold double precision, out ids uuid[], out tiers text[], out sims double precision[], out scores double precision[], out embs extensions.vector[])
returns record
language plpgsql
stable
set search_path to ''
as $function$
begin
    select array_agg(x.id order by x.score desc, x.id), array_agg(x.tier order by x.score desc, x.id),
        array_agg(x.sim order by x.score desc, x.id), array_agg(x.score order by x.score desc, x.id),
        array_agg(x.embedding order by x.score desc, x.id)
    into ids, tiers, sims, scores, embs
    from (
        select u.id, u.tier, u.embedding, 1 - (u.embedding operator(extensions.<=>) _memory_candidates.query_embedding) as sim,
            1 - (u.embedding operator(extensions.<=>) _memory_candidates.query_embedding)
            + case when u.pinned then bonus else 0 end as score
        from (
            select m.id, 'long_term' as tier, m.embedding, m.pinned, m.user_id, m.scope, m.tags, m.emotion,
                m.life_domain, m.category, m.embedding_model
            from hipocampo_private.memories as m
            where m.tenant_id = tenant and m.status = 'active'
            union all
            select s.id, 'staging', s.embedding, s.pinned, s.user_id, s.scope, s.tags, s.emotion,
                s.life_domain, s.category, s.embedding_model
            from hipocampo_private.memory_staging as s
            where _memory_candidates.include_staging and s.tenant_id = tenant
        ) as u
        where u.embedding_model = _memory_candidates.model
          and (me is null or u.user_id = me or u.scope = 'tenant_shared')
          and (_memory_candidates.tags is null or u.tags && _memory_candidates.tags)
          and (_memory_candidates.emotion is null or u.emotion = _memory_candidates.emotion)
          and (_memory_candidates.life_domain is null or u.life_domain = _memory_candidates.life_domain)
          and (_memory_candidates.category is null or u.category = _memory_candidates.category)
          and (_memory_candidates.scope is null or u.scope = _memory_candidates.scope)
        order by score desc, u.id
        limit max_rows
    ) as x
    where x.score >= threshold;
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
    c record;  -- _memory_candidates: ids, tiers, sims, scores, embs (best first)
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

    c := hipocampo_private._memory_candidates(
        t, me, model, query_embedding, use_tags, search_memories.filter_emotion, search_memories.filter_life_domain,
        search_memories.filter_category, search_memories.filter_scope, include_staging, bonus, k * 8, threshold
    );

    if c.ids is not null then
        -- MMR on the scores, near-duplicates dropped (shared with hybrid_search).
        sel := hipocampo_private._mmr(c.embs, c.scores, k, lambda, dup);
    end if;

    return query
    select u.id, u.key, u.value, u.description, u.category, u.scope, u.tags, u.pinned, u.confidence,
        c.sims[o.pos], c.scores[o.pos], o.ord::integer, why, c.tiers[o.pos]
    from unnest(sel) with ordinality as o (pos, ord)
    inner join (
        select m.id, m.key, m.value, m.description, m.category, m.scope, m.tags, m.pinned, m.confidence
        from hipocampo_private.memories as m where m.tenant_id = t
        union all
        select s.id, s.key, s.value, s.description, s.category, s.scope, s.tags, s.pinned, s.confidence
        from hipocampo_private.memory_staging as s where s.tenant_id = t
    ) as u on u.id = c.ids[o.pos]
    order by o.ord;
    if cardinality(sel) = 0 and why is not null then
        -- Still say that the tag filter was dropped, with no rows to carry it.
        return query select null::uuid, null::text, null::jsonb, null::text, null::text, null::text,
            null::text [], null::boolean, null::real, null::double precision, null::double precision,
            0, why, null::text;
    end if;
    perform hipocampo_private._record_read(t, 'search_memories', cardinality(sel), null, null, memory_ids => array(
        select c.ids[x] from unnest(sel) as x), similarity => (select avg(c.sims[x]) from unnest(sel) as x)::real);
end;
$function$;

revoke execute on function hipocampo_private._memory_candidates(tenant uuid, me uuid, model text, query_embedding extensions.vector, tags text[], emotion text, life_domain text, category text, scope text, include_staging boolean, bonus double precision, max_rows integer, threshold double precision, out ids uuid[], out tiers text[], out sims double precision[], out scores double precision[], out embs extensions.vector[]) from public;
grant execute on function hipocampo_private._memory_candidates(tenant uuid, me uuid, model text, query_embedding extensions.vector, tags text[], emotion text, life_domain text, category text, scope text, include_staging boolean, bonus double precision, max_rows integer, threshold double precision, out ids uuid[], out tiers text[], out sims double precision[], out scores double precision[], out embs extensions.vector[]) to authenticated;
grant execute on function hipocampo_private._memory_candidates(tenant uuid, me uuid, model text, query_embedding extensions.vector, tags text[], emotion text, life_domain text, category text, scope text, include_staging boolean, bonus double precision, max_rows integer, threshold double precision, out ids uuid[], out tiers text[], out sims double precision[], out scores double precision[], out embs extensions.vector[]) to service_role;
