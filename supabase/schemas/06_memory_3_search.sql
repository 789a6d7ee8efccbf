-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- Memory search (search_memories and its candidates) and the embeddings written after a memory.
/*
_some_memory_tagged(tenant uuid, who uuid, tags text[], include_staging boolean) -> boolean

Purpose: search_memories' tag fallback test: whether any memory the caller may read (who's own,
  or the tenant's shared ones; every one for a null who) carries one of tags, among the active
  long-term memories and, with include_staging, the staged ones.
Returns: true when one does.
Errors: none.
Example: select hipocampo_private._some_memory_tagged(t, auth.uid(), array['cafe'], true);
*/
create or replace function hipocampo_private._some_memory_tagged(
    tenant uuid, who uuid, tags text[], include_staging boolean
)
returns boolean
language sql
stable
security invoker
set search_path = ''
as $$
    select exists (
        select 1 from hipocampo_private.memories as m
        where m.tenant_id = tenant and m.status = 'active' and m.tags && _some_memory_tagged.tags
          and (who is null or m.user_id = who or m.scope = 'tenant_shared')
        union all
        select 1 from hipocampo_private.memory_staging as s
        where include_staging and s.tenant_id = tenant and s.tags && _some_memory_tagged.tags
          and (who is null or s.user_id = who or s.scope = 'tenant_shared')
    );
$$;

/*
_memory_candidates(tenant uuid, me uuid, model text, query_embedding vector, tags text[],
  emotion text, life_domain text, category text, scope text, include_staging boolean,
  bonus double precision, max_rows integer, threshold double precision, out ids uuid[],
  out tiers text[], out sims double precision[], out scores double precision[], out embs vector[])

Purpose: search_memories' candidates: the tenant's active long-term memories and, with
  include_staging, its staged ones, of the model, the caller's own (me; null = every user's) and the
  tenant's shared ones, under the filters (null = any; tags: any of them); score = cosine
  similarity + bonus when pinned; the best max_rows, then those with score >= threshold.
Parameters: tenant and me the caller's (_resolve_tenant, auth.uid()); the rest as
  search_memories' (bonus = memory.pinned_bonus, max_rows = 8 * match_count).
Returns: ids, tiers ('long_term' | 'staging'), sims (cosine), scores, embs: best score first
  (ties by id); null arrays when none is left.
Errors: none.
Example: select * from hipocampo_private._memory_candidates(tenant, me, model, '[…]', null, null,
  null, null, null, true, 0.05, 40, 0.3);
*/
create or replace function hipocampo_private._memory_candidates(
    tenant uuid, me uuid, model text, query_embedding extensions.vector, tags text[], emotion text,
    life_domain text, category text, scope text, include_staging boolean, bonus double precision,
    max_rows integer, threshold double precision, out ids uuid[], out tiers text[],
    out sims double precision[], out scores double precision[], out embs extensions.vector[]
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
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
$$;

/*
search_memories(query_embedding vector, mode text default 'context', match_count integer default null,
  filter_tags text[] default null, filter_emotion text default null, filter_life_domain text default null,
  filter_category text default null, filter_scope text default null, min_score double precision default null,
  include_staging boolean default true) -> setof record

Purpose: semantic memory search for the caller (own personal memories + the tenant's shared
  ones), over long-term memory and, unless include_staging is false, short-term staging.
  score = cosine similarity + memory.pinned_bonus for pinned memories; kept when score >=
  memory.context_threshold (mode 'context') or memory.answer_threshold (mode 'answer'), or
  min_score; MMR (memory.mmr_lambda) with near-duplicates (cosine > duplicate_cosine) dropped.
  Tag filtering with an empty tag list, or with tags no memory carries, falls back to searching
  without the tag filter and says so in `fallback` ('empty_tags' | 'no_memory_with_tags').
  Returned memories count as accessed (access_count, last_accessed_at), once drain_read_queue
  has taken the read's record (_record_read).
Parameters: query_embedding of the active model; mode 'context' | 'answer'; match_count k,
  1..100 (default memory.match_count); filters; min_score overrides the mode's threshold
  (cosine, -1..1.05).
Returns: memory_id, key, value, description, category, scope, tags, pinned, confidence,
  similarity, score, rank (1-based), fallback, tier ('long_term' | 'staging').
Errors: 42501 as _resolve_tenant; 22023 on an unknown mode; 22023 "match_count must be 1..100
  (got n)"; 22000 on wrong dimensions; 22023 "query_embedding is a zero vector: its cosine
  similarity is undefined"; 55000 "memory config is incomplete: …".
  In named steps: _memory_candidates, then _mmr.
Example: select key, score from hipocampo.search_memories('[…]'::extensions.vector, 'context');
*/
create or replace function hipocampo.search_memories(
    query_embedding extensions.vector,
    mode text default 'context',
    match_count integer default null,
    filter_tags text[] default null,
    filter_emotion text default null,
    filter_life_domain text default null,
    filter_category text default null,
    filter_scope text default null,
    min_score double precision default null,
    include_staging boolean default true
)
returns table (
    memory_id uuid, key text, value jsonb, description text, category text, scope text,
    tags text[], pinned boolean, confidence real, similarity double precision,
    score double precision, rank integer, fallback text, tier text
)
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
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
$$;

comment on function hipocampo.promote_memory(uuid, numeric, boolean) is
'Move a staged memory to long-term memory (recomputed intensity >= 7, or a human override that pins it).';

comment on function hipocampo.staged_memories() is 'The caller''s short-term (staged) memories.';

comment on function hipocampo.search_memories(
    extensions.vector, text, integer, text[], text, text, text, text, double precision, boolean
) is 'Semantic memory search (long-term + staging) with thresholds, pinned bonus, MMR and tag fallback.';

/*
set_memory_embeddings(items jsonb) -> integer

Purpose: give memories that have no embedding one (of the active model): the profile seed and
  any write made without a vector. Memories that already have an embedding are left alone.
Parameters: items - [{"memory_id": uuid, "embedding": [floats]}]; RLS decides which rows the
  caller may update (own personal memories; admins the tenant's shared ones).
Returns: the number of memories updated.
Errors: 42501 as _caller (before any other work); 22000 wrong dimensions; 22023 items is not a json
  array; 22023 "invalid item <memory_id>: …" (a memory_id that is not a uuid, an embedding that is
  not a vector).
Example: select hipocampo.set_memory_embeddings('[{"memory_id": "…", "embedding": [0.1, …]}]');
*/
create or replace function hipocampo.set_memory_embeddings(items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    item jsonb;
    v extensions.vector;
    model text;
    n integer := 0;
    one integer;
begin
    if items is null or jsonb_typeof(items) <> 'array' then
        raise exception 'items must be a json array' using errcode = '22023';
    end if;
    for item in select x from jsonb_array_elements(items) as x loop
        v := (item ->> 'embedding')::extensions.vector;
        model := hipocampo_private._active_model(v, 'embedding');
        update hipocampo_private.memories as m
        set embedding = v, embedding_model = model, updated_at = now()
        where m.id = (item ->> 'memory_id')::uuid and m.embedding is null;
        get diagnostics one = row_count;
        n := n + one;
    end loop;
    return n;
exception when invalid_text_representation or numeric_value_out_of_range then
    raise exception 'invalid item %: %', item ->> 'memory_id', sqlerrm using errcode = '22023';
end;
$$;

comment on function hipocampo.set_memory_embeddings(jsonb) is
'Embed memories written without a vector (e.g. the profile seed).';

create policy "users update their personal memories, admins shared ones"
on hipocampo_private.memories
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
)
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
);

create policy "users update their staged memories, admins shared ones"
on hipocampo_private.memory_staging
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
)
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
);
