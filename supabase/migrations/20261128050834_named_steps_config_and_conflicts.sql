-- named steps config and conflicts.
-- _check_config_patch's secret check is _refuse_config_secret and detect_conflicts' facts are _topic_facts: both fit 100 lines (issue 47 §1)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._refuse_config_secret(section text, key text, value jsonb)
returns void
language plpgsql
immutable
set search_path to ''
as $function$
begin
    if key in ('api_key', 'apikey', 'password', 'secret', 'token')
        or (jsonb_typeof(value) = 'string' and (value #>> '{}') ~ '^(sk-[A-Za-z0-9_-]{8,}|eyJ[A-Za-z0-9_-]{10,}\.)') then
        raise exception 'secrets are never stored: give the name of the secret in a *_secret key (%.%)',
            section, key using errcode = '22023';
    end if;
    if key like '%\_secret' and jsonb_typeof(value) = 'string'
        and (value #>> '{}') !~ '^[A-Za-z_][A-Za-z0-9_]{0,127}$' then
        raise exception 'secrets are never stored: %.% must be the name of a secret (letters, digits, _)',
            section, key using errcode = '22023';
    end if;
end;
$function$;

create or replace function hipocampo_private._topic_facts(query_text text, chunk_ids bigint[], stopwords jsonb)
returns table (chunk_id bigint, document_id uuid, title text, trust_score real, sentence text, scope text, kind text, value text, words text[])
language sql
stable
set search_path to ''
as $function$
    with c as (
        select ch.id, ch.document_id, ch.ts_config, ch.content, d.title, d.trust_score
        from hipocampo_private.chunks as ch
        inner join hipocampo_private.documents as d on d.id = ch.document_id and d.tenant_id = ch.tenant_id
        where ch.id = any(_topic_facts.chunk_ids) and d.status = 'active'
    )

    select c.id, c.document_id, c.title, c.trust_score, s.sentence,
           hipocampo_private._scope_of(s.sentence), v.kind, v.value,
           array(
               select l.lexeme
               from pg_catalog.unnest(pg_catalog.tsvector_to_array(pg_catalog.to_tsvector(c.ts_config, s.sentence)))
                   as l (lexeme)
               where l.lexeme !~ '^[0-9]'
           )
    from c
    cross join lateral hipocampo_private._sentences(c.content) as s
    cross join lateral hipocampo_private._sentence_values(s.sentence) as v
    cross join lateral (
        select hipocampo_private._question_lexemes(_topic_facts.query_text, c.ts_config, _topic_facts.stopwords) as terms
    ) as q
    where cardinality(q.terms) > 0
      and (
          select count(*) from pg_catalog.unnest(q.terms) as t (lexeme)
          where t.lexeme = any(pg_catalog.tsvector_to_array(pg_catalog.to_tsvector(c.ts_config, s.sentence)))
      ) >= least(2, cardinality(q.terms))
$function$;

create or replace function hipocampo.detect_conflicts(query_text text, chunk_ids bigint[], trust_margin double precision default null::double precision, stopwords jsonb default null::jsonb, subject_overlap double precision default null::double precision)
returns jsonb
language sql
stable
set search_path to ''
as $function$
    select hipocampo_private._caller();
    with cfg as (
        select s.config -> 'rag' as rag from hipocampo_private.settings as s where s.tenant_id is null
    ),

    question_scope as (
        select case
            when hipocampo_private._scope_of(detect_conflicts.query_text) = 'geral' then null
            else hipocampo_private._scope_of(detect_conflicts.query_text)
        end as scope
    ),

    facts as (
        select f.* from hipocampo_private._topic_facts(
            detect_conflicts.query_text, detect_conflicts.chunk_ids,
            coalesce(detect_conflicts.stopwords, (select cfg.rag -> 'question_stopwords' from cfg))
        ) as f
    ),

    scoped as (
        select f.* from facts as f, question_scope as qs
        where qs.scope is null or f.scope = qs.scope
    ),

    -- The facts another document contradicts about the same subject.
    conflicting as (
        select g.* from scoped as g
        where exists (
            select 1 from scoped as o
            where o.kind = g.kind and o.scope = g.scope
              and o.document_id <> g.document_id and o.value <> g.value
              and (
                  select count(*) from (select unnest(o.words) intersect select unnest(g.words)) as i
              )::double precision / greatest((
                  select count(*) from (select unnest(o.words) union select unnest(g.words)) as u
              ), 1) >= coalesce(
                  detect_conflicts.subject_overlap,
                  ((select cfg.rag ->> 'conflict_subject_overlap' from cfg))::double precision
              )
        )
    ),

    groups as (
        select g.kind, g.scope
        from conflicting as g
        group by g.kind, g.scope
    ),

    ranked as (
        select gr.kind, gr.scope, d.document_id, d.trust_score,
               row_number() over (partition by gr.kind, gr.scope order by d.trust_score desc, d.document_id) as rn
        from groups as gr
        cross join lateral (
            select distinct s.document_id, s.trust_score from conflicting as s
            where s.kind = gr.kind and s.scope = gr.scope
        ) as d
    ),

    verdicts as (
        select r1.kind, r1.scope,
               r1.trust_score - coalesce(r2.trust_score, 0)
               >= coalesce(detect_conflicts.trust_margin, ((select cfg.rag ->> 'conflict_trust_margin' from cfg))::double precision)
               as resolved,
               r1.document_id as top_document
        from ranked as r1
        left join ranked as r2 on r2.kind = r1.kind and r2.scope = r1.scope and r2.rn = 2
        where r1.rn = 1
    )

    select coalesce(jsonb_agg(jsonb_build_object(
        'kind', v.kind,
        'scope', v.scope,
        'resolved', v.resolved,
        'winner_document_id', case when v.resolved then v.top_document end,
        'document_ids', (
            select jsonb_agg(distinct s.document_id) from conflicting as s where s.kind = v.kind and s.scope = v.scope
        ),
        'values', (
            select jsonb_agg(jsonb_build_object(
                'value', s.value, 'document_id', s.document_id, 'chunk_id', s.chunk_id, 'title', s.title,
                'trust_score', s.trust_score, 'sentence', s.sentence
            ) order by s.trust_score desc, s.chunk_id)
            from conflicting as s where s.kind = v.kind and s.scope = v.scope
        )
    ) order by v.kind, v.scope), '[]'::jsonb)
    from verdicts as v
$function$;

create or replace function hipocampo_private._check_config_patch(section text, patch jsonb)
returns void
language plpgsql
stable
set search_path to ''
as $function$
declare
    global_section jsonb;
    item record;
    bounds jsonb;
begin
    if patch is null or jsonb_typeof(patch) <> 'object' then
        raise exception 'patch must be a json object' using errcode = '22023';
    end if;
    -- The keys a tenant may override: the global row's, and the active model's calibrated ones
    -- with their ranges.
    select s.config -> _check_config_patch.section
        || coalesce(hipocampo_private._calibration() -> _check_config_patch.section, '{}'::jsonb)
        || coalesce((
            select jsonb_object_agg(k.key || '_range', hipocampo_private._calibrated_range(k.key))
            from jsonb_array_elements_text(hipocampo_private._calibrated_keys() -> _check_config_patch.section) as k (key)
        ), '{}'::jsonb)
        into global_section
    from hipocampo_private.settings as s where s.tenant_id is null;
    if global_section is null or jsonb_typeof(global_section) <> 'object' then
        raise exception 'unknown section: %', section using errcode = '22023';
    end if;
    for item in select e.key, e.value from jsonb_each(patch) as e loop
        perform hipocampo_private._refuse_config_secret(section, item.key, item.value);
        if not global_section ? item.key or item.key like '%\_range' or item.key like '%\_max\_items'
            or item.key like '%\_max\_length' or item.key like '%\_regex'
            or item.key in ('tenant_locked', 'operator_only') then
            raise exception 'unknown key %.%', section, item.key using errcode = '22023';
        end if;
        if coalesce(global_section -> 'tenant_locked', '[]'::jsonb) ? item.key then
            raise exception '%.% is fixed and cannot be changed per tenant', section, item.key
                using errcode = '22023';
        end if;
        if (item.key like '%\_secret' or coalesce(global_section -> 'operator_only', '[]'::jsonb) ? item.key)
            and (select c.kind from hipocampo_private._caller() as c) <> 'service' then
            if item.key like '%\_secret' then
                raise exception '%.% names a secret of the server: only the operator (service_role) sets it',
                    section, item.key using errcode = '42501';
            end if;
            raise exception '%.% is the operator''s to set (service_role): it is in %.operator_only',
                section, item.key, section using errcode = '42501';
        end if;
        continue when jsonb_typeof(item.value) = 'null';
        if jsonb_typeof(item.value) <> jsonb_typeof(global_section -> item.key) then
            raise exception '%.% must be a %', section, item.key, jsonb_typeof(global_section -> item.key)
                using errcode = '22023';
        end if;
        if section = 'chunking' and jsonb_typeof(item.value) = 'object' and exists (
            select 1 from jsonb_object_keys(global_section -> item.key) as k (name) where not item.value ? k.name
        ) then
            raise exception 'chunking.% must give every key of the rule: % (got %)', item.key,
                (
                    select string_agg(k.name, ', ' order by k.name)
                    from jsonb_object_keys(global_section -> item.key) as k (name)
                ),
                item.value using errcode = '22023';
        end if;
        if jsonb_typeof(item.value) = 'array' and (global_section ->> (item.key || '_max_items'))::integer
            < jsonb_array_length(item.value) then
            raise exception '%.% must have at most % items', section, item.key,
                global_section ->> (item.key || '_max_items') using errcode = '22023';
        end if;
        perform hipocampo_private._check_config_text(section, item.key, item.value, global_section);
        bounds := global_section -> (item.key || '_range');
        -- A range bounds a number, or each element of an array of numbers, or each value of an
        -- object of numbers (retrieval.default_trust).
        if bounds is not null and exists (
            select 1
            from jsonb_array_elements(
                case jsonb_typeof(item.value)
                    when 'array' then item.value
                    when 'object' then (select coalesce(jsonb_agg(v.value), '[]'::jsonb) from jsonb_each(item.value) as v)
                    else jsonb_build_array(item.value)
                end
            ) as e
            where jsonb_typeof(e) <> 'number'
               or (e #>> '{}')::numeric < (bounds ->> 0)::numeric
               or (e #>> '{}')::numeric > (bounds ->> 1)::numeric
        ) then
            raise exception '%.% must lie in [%, %] (got %)', section, item.key, bounds ->> 0, bounds ->> 1,
                item.value using errcode = '22003';
        end if;
    end loop;
end;
$function$;

revoke execute on function hipocampo_private._refuse_config_secret(section text, key text, value jsonb) from public;
revoke execute on function hipocampo_private._topic_facts(query_text text, chunk_ids bigint[], stopwords jsonb) from public;
grant execute on function hipocampo_private._refuse_config_secret(section text, key text, value jsonb) to authenticated;
grant execute on function hipocampo_private._refuse_config_secret(section text, key text, value jsonb) to service_role;
grant execute on function hipocampo_private._topic_facts(query_text text, chunk_ids bigint[], stopwords jsonb) to authenticated;
grant execute on function hipocampo_private._topic_facts(query_text text, chunk_ids bigint[], stopwords jsonb) to service_role;
