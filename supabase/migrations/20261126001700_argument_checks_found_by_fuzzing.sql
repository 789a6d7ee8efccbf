-- Arguments the RPC fuzzer (tests/sql/test_fuzz_rpcs.py, now over the admin RPCs too) found
-- answered by a raw engine error instead of a documented SQLSTATE:
-- - create_knowledge_base: a null name or language was a not-null violation (23502); its
--   overrides were stored unvalidated (a knowledge base could be created with rag.top_k 999).
--   A null name is now 23514 as a bad one, a null language the default, and each section of the
--   overrides is checked as set_knowledge_base_config checks it.
-- - set_agent_binding: a null name was 23502; a malformed one the table's 23514. Both are now
--   22023 naming the format.
-- - set_document_metadata: a date such as expires_at given as a huge number was 22009 from the
--   cast; it is now 22023 "invalid document field", as other unparsable dates are.
-- - extractive_answer: a support that is not a number was 22P02, evidence that is not an array
--   22023 from jsonb_array_elements; it documents no errors, so such support counts as 0 and
--   such evidence quotes nothing.
-- Restated from supabase/schemas/02_config.sql, 03_knowledge_bases.sql and 10_answers.sql;
-- re-runnable.

/*
create_knowledge_base(name text, description text default null, tags text[] default '{}',
  language text default 'portuguese', overrides jsonb default '{}', tenant_id uuid default null) -> uuid

Purpose: create a knowledge base (status draft) in the caller's tenant; idempotent by name.
Parameters: name 1..200 chars, unique per tenant; language 'portuguese' | 'english' | 'simple'
  (null = 'portuguese'); overrides - per-KB config sections, {section: {key: value}}, each
  validated as set_knowledge_base_config validates it (null = none); tenant_id - service_role only.
Returns: the knowledge-base id (the existing one when the name exists).
Errors: 42501 no tenant / not an admin; 23514 on a bad name (null included: "a knowledge base
  needs a name of 1..200 characters") or language; 22023 "overrides must be a json object of
  config sections" / 22023 / 22003 as _check_config_patch.
Example: select hipocampo.create_knowledge_base('regulamentos');
*/
create or replace function hipocampo.create_knowledge_base(
    name text,
    description text default null,
    tags text[] default '{}',
    language text default 'portuguese',
    overrides jsonb default '{}',
    tenant_id uuid default null
)
returns uuid
language plpgsql
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(create_knowledge_base.tenant_id);
    kb uuid;
    section record;
begin
    if create_knowledge_base.name is null then
        raise exception 'a knowledge base needs a name of 1..200 characters' using errcode = '23514';
    end if;
    if jsonb_typeof(coalesce(overrides, '{}')) <> 'object' then
        raise exception 'overrides must be a json object of config sections' using errcode = '22023';
    end if;
    for section in select e.key, e.value from jsonb_each(coalesce(overrides, '{}')) as e loop
        perform hipocampo_private._check_config_patch(section.key, section.value);
    end loop;
    insert into hipocampo_private.knowledge_bases (tenant_id, name, description, tags, language, overrides)
    values (t, create_knowledge_base.name, create_knowledge_base.description,
            coalesce(create_knowledge_base.tags, '{}'), coalesce(create_knowledge_base.language, 'portuguese'),
            jsonb_strip_nulls(coalesce(create_knowledge_base.overrides, '{}')))
    on conflict on constraint knowledge_bases_tenant_name_key do nothing
    returning id into kb;
    if kb is null then
        select k.id into kb from hipocampo_private.knowledge_bases as k
        where k.tenant_id = t and k.name = create_knowledge_base.name;
    end if;
    return kb;
exception when insufficient_privilege then
    raise exception 'only tenant admins can create knowledge bases' using errcode = '42501';
end;
$$;

/*
set_agent_binding(name text, kb_ids uuid[], rag_overrides jsonb default '{}', tenant_id uuid default null)
  -> uuid

Purpose: create or replace an agent binding: its knowledge bases and its overrides of the rag
  section (validated like the tenant's; replaced as a whole).
Parameters: name ^[a-z0-9][a-z0-9_.-]{0,62}$; kb_ids of the tenant (at least one);
  tenant_id only for service_role.
Returns: the binding id.
Errors: 42501 not an admin; 22023 "an agent binding's name must match
  ^[a-z0-9][a-z0-9_.-]{0,62}$ (got …)" / "an agent binding needs at least one knowledge base" /
  22023 / 22003 as _check_config_patch; P0002 "unknown knowledge base: …".
Example: select hipocampo.set_agent_binding('portaria', array[kb], '{"top_k": 3}');
*/
create or replace function hipocampo.set_agent_binding(
    name text, kb_ids uuid[], rag_overrides jsonb default '{}'::jsonb, tenant_id uuid default null
)
returns uuid
language plpgsql
security invoker
set search_path = ''
as $$
#variable_conflict use_column
declare
    t uuid := hipocampo_private._resolve_tenant(set_agent_binding.tenant_id);
    missing uuid;
    result uuid;
begin
    perform hipocampo_private._require_admin();
    if set_agent_binding.name is null or set_agent_binding.name !~ '^[a-z0-9][a-z0-9_.-]{0,62}$' then
        raise exception 'an agent binding''s name must match ^[a-z0-9][a-z0-9_.-]{0,62}$ (got %)',
            coalesce(left(set_agent_binding.name, 80), 'null') using errcode = '22023';
    end if;
    if coalesce(cardinality(kb_ids), 0) = 0 then
        raise exception 'an agent binding needs at least one knowledge base' using errcode = '22023';
    end if;
    perform hipocampo_private._check_config_patch('rag', coalesce(rag_overrides, '{}'::jsonb));
    select k into missing from unnest(set_agent_binding.kb_ids) as k
    where not exists (
        select 1 from hipocampo_private.knowledge_bases as b where b.id = k and b.tenant_id = t
    )
    limit 1;
    if missing is not null then
        raise exception 'unknown knowledge base: %', missing using errcode = 'P0002';
    end if;
    insert into hipocampo_private.agent_bindings as a (tenant_id, name, kb_ids, rag_overrides)
    values (t, set_agent_binding.name, set_agent_binding.kb_ids,
            jsonb_strip_nulls(coalesce(set_agent_binding.rag_overrides, '{}'::jsonb)))
    on conflict on constraint agent_bindings_tenant_name_key do update
    set kb_ids = excluded.kb_ids, rag_overrides = excluded.rag_overrides, updated_at = now()
    returning a.id into result;
    return result;
end;
$$;

/*
extractive_answer(evidence jsonb, min_support double precision, max_quotes integer default 2) -> text

Purpose: the offline answer (rag.provider = extractive): the best window of each evidence item
  whose support reaches min_support (at least the first item), at most max_quotes, in evidence
  order, each as plain text (plain_text, whitespace collapsed) followed by its citation marker
  [n]; a window already quoted is not repeated. Deterministic.
Parameters: evidence - answer_evidence's evidence array (n, best_window, content, support); an
  item's support that is not a number counts as 0, and evidence that is not an array quotes
  nothing; min_support - rag.min_confidence (0..1); max_quotes >= 1.
Returns: the answer text, or null when there is nothing to quote (the caller refuses:
  generation_failed).
Errors: none.
Example: select hipocampo.extractive_answer(e -> 'evidence', 0.3) from hipocampo.answer_evidence(…) as e;
*/
create or replace function hipocampo.extractive_answer(
    evidence jsonb,
    min_support double precision,
    max_quotes integer default 2
)
returns text
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    with items as (
        select e.item, e.pos
        from jsonb_array_elements(
            case when jsonb_typeof(evidence) = 'array' then evidence else '[]' end
        ) with ordinality as e (item, pos)
    ),
    chosen as (
        select i.item, i.pos from items as i
        where case when jsonb_typeof(i.item -> 'support') = 'number' then (i.item ->> 'support')::double precision
            else 0 end >= min_support
        order by i.pos
        limit greatest(max_quotes, 1)
    ),
    picked as (
        select c.item, c.pos from chosen as c
        union all
        select i.item, i.pos from items as i where i.pos = 1 and not exists (select 1 from chosen)
    ),
    quoted as (
        select p.pos, p.item ->> 'n' as n,
            btrim(regexp_replace(hipocampo.plain_text(coalesce(
                nullif(p.item ->> 'best_window', ''), p.item ->> 'content', ''
            )), '\s+', ' ', 'g')) as quote
        from picked as p
    ),
    firsts as (
        select distinct on (q.quote) q.pos, q.n, q.quote from quoted as q
        where q.quote <> ''
        order by q.quote, q.pos
    )
    select nullif(string_agg(f.quote || ' [' || f.n || ']', ' ' order by f.pos), '')
    from firsts as f
$$;

/*
set_document_metadata(document_id uuid, metadata jsonb) -> jsonb

Purpose: change what describes a document without touching its text, chunks or embeddings:
  source type, trust, dates, version, author, classification (what `hipocampo ingest` applies
  when only these changed: "metadata updated", no embedding call). expires_at is copied to the
  document's chunks (retention). The change drops the knowledge base's cached answers (the
  documents trigger).
Parameters: document_id; metadata - a json object with any of source_type, doc_type, author,
  published_at (timestamptz), version, trust_score (0..1), data_classification, expires_at
  (timestamptz or null = never); a key that is absent is left as it is.
Returns: {"document_id", "source_type", "trust_score", "expires_at", "updated": [keys changed]}.
Errors: 42501 as _caller (before any other work); 42501 "only tenant admins can change
  documents"; 22023 "metadata must be a json object" / "unknown document field …" / "invalid
  document field: …" (unparsable date or number) / "… must not be null"; P0002 "unknown
  document: …" (also another tenant's); 22003 "trust_score must lie in [0, 1] (got …)"; 23514
  "invalid document: …" (unknown source type or classification).
Example: select hipocampo.set_document_metadata(doc, '{"trust_score": 0.9, "source_type": "regulation"}');
*/
create or replace function hipocampo.set_document_metadata(document_id uuid, metadata jsonb)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    allowed constant text[] := array[
        'source_type', 'doc_type', 'author', 'published_at', 'version', 'trust_score',
        'data_classification', 'expires_at'
    ];
    bad text;
    before hipocampo_private.documents;
    d hipocampo_private.documents;
begin
    if gate.kind <> 'service' and gate.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can change documents' using errcode = '42501';
    end if;
    if metadata is null or jsonb_typeof(metadata) <> 'object' then
        raise exception 'metadata must be a json object' using errcode = '22023';
    end if;
    select string_agg(e.key, ', ' order by e.key) into bad from jsonb_object_keys(metadata) as e (key)
    where e.key <> all(allowed);
    if bad is not null then
        raise exception 'unknown document field %; one of %', bad, array_to_string(allowed, ', ')
            using errcode = '22023';
    end if;
    select string_agg(e.key, ', ' order by e.key) into bad from jsonb_each(metadata) as e
    where e.key in ('source_type', 'trust_score', 'data_classification') and jsonb_typeof(e.value) = 'null';
    if bad is not null then
        raise exception '% must not be null', bad using errcode = '22023';
    end if;
    if jsonb_typeof(metadata -> 'trust_score') = 'number'
        and (metadata ->> 'trust_score')::numeric not between 0 and 1 then
        raise exception 'trust_score must lie in [0, 1] (got %)', metadata ->> 'trust_score' using errcode = '22003';
    end if;
    select * into before from hipocampo_private.documents as x where x.id = set_document_metadata.document_id;
    update hipocampo_private.documents as x set
        source_type = coalesce(metadata ->> 'source_type', x.source_type),
        doc_type = case when metadata ? 'doc_type' then metadata ->> 'doc_type' else x.doc_type end,
        author = case when metadata ? 'author' then metadata ->> 'author' else x.author end,
        published_at = case
            when metadata ? 'published_at' then (metadata ->> 'published_at')::timestamptz else x.published_at
        end,
        version = case when metadata ? 'version' then metadata ->> 'version' else x.version end,
        trust_score = coalesce((metadata ->> 'trust_score')::real, x.trust_score),
        data_classification = coalesce(metadata ->> 'data_classification', x.data_classification),
        expires_at = case
            when metadata ? 'expires_at' then (metadata ->> 'expires_at')::timestamptz else x.expires_at
        end,
        updated_at = now()
    where x.id = set_document_metadata.document_id
    returning * into d;
    if d.id is null then
        raise exception 'unknown document: %', document_id using errcode = 'P0002';
    end if;
    if d.expires_at is distinct from before.expires_at then
        update hipocampo_private.chunks as c set expires_at = d.expires_at where c.document_id = d.id;
    end if;
    return jsonb_build_object(
        'document_id', d.id, 'source_type', d.source_type, 'trust_score', d.trust_score,
        'expires_at', d.expires_at,
        'updated', coalesce((
            select jsonb_agg(x.key order by x.key)
            from jsonb_each(to_jsonb(d)) as x
            where x.key = any(allowed) and x.value is distinct from to_jsonb(before) -> x.key
        ), '[]'::jsonb)
    );
exception
    when insufficient_privilege then
        raise exception 'only tenant admins can change documents' using errcode = '42501';
    when check_violation then
        raise exception 'invalid document: %', sqlerrm using errcode = '23514';
    when invalid_text_representation or invalid_datetime_format or datetime_field_overflow
        or invalid_time_zone_displacement_value then
        raise exception 'invalid document field: %', sqlerrm using errcode = '22023';
end;
$$;
