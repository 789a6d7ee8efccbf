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
-- - answer_sources: an item's n, chunk_id, score or support that was not a number was 22P02, a
--   marker of over 9 digits 22003; they now read as missing, as its docblock promises no errors.
-- - cache_put: no knowledge base (or a null one), or a question without words, was 23502; an
--   answer without sources passed its check (a null comparison); now 22023.
-- - record_answer: a null trace_id or answer_source was 23502; now 22023.
-- - take_rate_limit: a cost of 1e308 overflowed the bucket's arithmetic (22003); a cost now lies
--   in (0, 1000000] (22023).
-- - set_knowledge_base_status: a null status was 23502; now 23514, as an unknown one.
-- - set_memory_consent: a null granted was 23502; now 22023.
-- Restated from supabase/schemas/02_config.sql, 03_knowledge_bases.sql, 06_memory.sql and 10_answers.sql;
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

/*
answer_sources(answer text, evidence jsonb) -> jsonb

Purpose: the sources an answer cites: the evidence items whose n it marks ([n] or [n, m]), all of
  them when it marks none, in evidence order; each with its excerpt as plain text (the best
  window, else the content; at most 600 characters).
Parameters: answer - the answer text; evidence - answer_evidence's evidence array (an item's n
  or chunk_id that is not an integer, or score or support that is not a number, reads as
  missing; evidence that is not an array has no items).
Returns: [{"n", "document", "document_id", "source_uri", "chunk_id", "excerpt", "score",
  "support"}] (document: the title; score, support: numbers, 0 when missing).
Errors: none.
Example: select hipocampo.answer_sources('A carga é de 400 horas [1].', e -> 'evidence') from …;
*/
create or replace function hipocampo.answer_sources(answer text, evidence jsonb)
returns jsonb
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    with marked as (
        -- A marker of more than 9 digits names no item (n is an integer).
        select distinct btrim(x)::integer as n
        from regexp_matches(coalesce(answer, ''), '\[(\d+(?:\s*,\s*\d+)*)\]', 'g') as m
        cross join lateral unnest(string_to_array(m[1], ',')) as x
        where btrim(x) ~ '^\d{1,9}$'
    ),
    items as (
        -- Numbers read only where they are numbers: anything else is missing.
        select e.item, e.pos,
            case when (e.item ->> 'n') ~ '^-?\d{1,9}$' then (e.item ->> 'n')::integer end as n,
            case when (e.item ->> 'chunk_id') ~ '^-?\d{1,18}$' then (e.item ->> 'chunk_id')::bigint end as chunk_id,
            case when jsonb_typeof(e.item -> 'score') = 'number' then (e.item ->> 'score')::double precision end
                as score,
            case when jsonb_typeof(e.item -> 'support') = 'number' then (e.item ->> 'support')::double precision end
                as support
        from jsonb_array_elements(
            case when jsonb_typeof(evidence) = 'array' then evidence else '[]' end
        ) with ordinality as e (item, pos)
    ),
    cited as (
        select i.* from items as i
        where i.n in (select m.n from marked as m)
           or not exists (select 1 from items as j where j.n in (select m.n from marked as m))
    )
    select coalesce(jsonb_agg(jsonb_build_object(
        'n', c.n,
        'document', coalesce(c.item ->> 'title', ''),
        'document_id', c.item ->> 'document_id',
        'source_uri', coalesce(c.item ->> 'source_uri', ''),
        'chunk_id', c.chunk_id,
        'excerpt', left(hipocampo.plain_text(coalesce(
            nullif(c.item ->> 'best_window', ''), c.item ->> 'content', ''
        )), 600),
        'score', coalesce(c.score, 0),
        'support', coalesce(c.support, 0)
    ) order by c.pos), '[]')
    from cited as c
$$;

/*
cache_put(question text, kb_ids uuid[], answer jsonb, agent text default null, tenant_id uuid default null)
  -> boolean

Purpose: cache an answer for rag.cache_ttl_seconds of the effective rag config of the call
  (rag_config(kb, agent): the knowledge base's override when kb_ids names exactly one, the agent
  binding's when agent is given, else the tenant's; 0 = never cache). Only answers whose cited
  chunks all belong to these knowledge bases of the tenant are accepted (a client cannot plant
  answers citing anything else).
Parameters: answer - {"answer", "confidence", "sources": [{"chunk_id", …}], …}.
Returns: true when cached.
Errors: 22023 "answer must be a json object with sources"; 22023 "cited chunk … is not in these
  knowledge bases"; 22023 "kb_ids must name at least one knowledge base (and no null)" / "question has no words
  to cache it by"; 42501 as _resolve_tenant; P0002 unknown agent binding.
Example: select hipocampo.cache_put('Qual o prazo?', array[kb], '{"answer": "…", "sources": []}');
*/
-- definer because the cache is written for the whole tenant and no client role may write it directly.
create or replace function hipocampo.cache_put(
    question text, kb_ids uuid[], answer jsonb, agent text default null, tenant_id uuid default null
)
returns boolean
language plpgsql
security definer
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(cache_put.tenant_id);
    ttl integer := (hipocampo.rag_config(
        case when cardinality(cache_put.kb_ids) = 1 then cache_put.kb_ids[1] end, cache_put.agent, t
    ) ->> 'cache_ttl_seconds')::integer;
    bad text;
begin
    if coalesce(jsonb_typeof(answer -> 'sources'), '') <> 'array' then  -- null, not an object, no sources
        raise exception 'answer must be a json object with sources' using errcode = '22023';
    end if;
    if coalesce(cardinality(cache_put.kb_ids), 0) = 0 or array_position(cache_put.kb_ids, null) is not null then
        raise exception 'kb_ids must name at least one knowledge base (and no null)' using errcode = '22023';
    end if;
    if coalesce(hipocampo.normalize_question(cache_put.question), '') = '' then
        raise exception 'question has no words to cache it by' using errcode = '22023';
    end if;
    -- A source whose chunk_id is not an integer cites no chunk of these knowledge bases.
    select s ->> 'chunk_id' into bad
    from jsonb_array_elements(answer -> 'sources') as s
    where not exists (
        select 1 from hipocampo_private.chunks as c
        where c.id = case when (s ->> 'chunk_id') ~ '^\d{1,18}$' then (s ->> 'chunk_id')::bigint end
          and c.tenant_id = t and c.kb_id = any(cache_put.kb_ids)
    )
    limit 1;
    if found then
        raise exception 'cited chunk % is not in these knowledge bases', bad using errcode = '22023';
    end if;
    if coalesce(ttl, 0) <= 0 then
        return false;
    end if;
    insert into hipocampo_private.answer_cache as c (
        tenant_id, kb_key, kb_ids, agent, question_key, answer, expires_at
    ) values (
        t, hipocampo_private._cache_scope(cache_put.kb_ids), cache_put.kb_ids, coalesce(cache_put.agent, ''),
        hipocampo.normalize_question(cache_put.question), answer, now() + make_interval(secs => ttl)
    )
    on conflict on constraint answer_cache_pkey do update
    set answer = excluded.answer, created_at = now(), expires_at = excluded.expires_at;
    return true;
end;
$$;

/*
record_answer(trace_id uuid, question text, answer_source text, reason text, confidence real,
  candidates integer, filtered integer, evidence_chunk_ids bigint[], timings_ms jsonb,
  latency_ms real, kb_ids uuid[], agent text default null, user_id uuid default null,
  tenant_id uuid default null) -> uuid

Purpose: the audit row of one answer call (also refusals and cache hits). The question is kept
  only as its sha256 and the user as the pseudonymous user_ref.
Returns: the trace id.
Errors: 22023 "trace_id, answer_source and latency_ms are required"; 23514 unknown answer_source
  or timings_ms not an object; 23505
  duplicate trace id; 42501 as _resolve_tenant.
Example: select hipocampo.record_answer(gen_random_uuid(), 'q', 'REFUSAL', 'low_confidence', 0.2,
  4, 3, '{}', '{}', 12.5, array[kb]);
*/
-- definer because audit rows are append-only for clients: no client role may write the table.
create or replace function hipocampo.record_answer(
    trace_id uuid, question text, answer_source text, reason text, confidence real,
    candidates integer, filtered integer, evidence_chunk_ids bigint[], timings_ms jsonb,
    latency_ms real, kb_ids uuid[], agent text default null, user_id uuid default null,
    tenant_id uuid default null
)
returns uuid
language plpgsql
security definer
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(record_answer.tenant_id);
    u uuid := coalesce((select auth.uid()), record_answer.user_id);
begin
    if record_answer.trace_id is null or record_answer.answer_source is null or record_answer.latency_ms is null then
        raise exception 'trace_id, answer_source and latency_ms are required' using errcode = '22023';
    end if;
    insert into hipocampo_private.answer_audit (
        trace_id, tenant_id, user_ref, agent, kb_ids, question_sha256, answer_source, reason, confidence,
        candidates, filtered, evidence_chunk_ids, timings_ms, latency_ms
    ) values (
        record_answer.trace_id, t,
        case when u is not null then hipocampo_private._user_ref(t, u) end,
        record_answer.agent, coalesce(record_answer.kb_ids, '{}'),
        encode(sha256(convert_to(coalesce(question, ''), 'UTF8')), 'hex'),
        record_answer.answer_source, record_answer.reason, record_answer.confidence,
        coalesce(record_answer.candidates, 0), coalesce(record_answer.filtered, 0),
        coalesce(record_answer.evidence_chunk_ids, '{}'), coalesce(record_answer.timings_ms, '{}'::jsonb),
        record_answer.latency_ms
    );
    return record_answer.trace_id;
end;
$$;

/*
take_rate_limit(cost double precision default 1, user_id uuid default null, tenant_id uuid default null)
  -> jsonb

Purpose: the answer API's token buckets: one per tenant and user (rag.rate_limit_per_minute of
  the tenant), keyed by the user's pseudonym (_user_ref), and one per tenant
  (rag.tenant_rate_limit_per_minute, locked for tenants) that all its users and its service
  calls share. Both must allow; a call the tenant bucket refuses gives the user's tokens back.
  The user bucket's key comes from the JWT (a user cannot spend another's); service_role names
  the user, or without one spends the tenant's service bucket.
Parameters: cost - tokens this call spends, (0, 1,000,000]; user_id / tenant_id only for service_role.
Returns: {"allowed", "remaining", "limit", "retry_after_ms", "scope": "user" | "tenant"} (the
  scope of the refusal, or of the smaller remainder when allowed).
Errors: 22023 "cost must lie in (0, 1000000] (got …)"; 42501 as _resolve_tenant; 55000 "rag config is
  incomplete: tenant_rate_limit_per_minute …".
Example: select hipocampo.take_rate_limit();
*/
-- definer because the buckets table is not writable by client roles.
create or replace function hipocampo.take_rate_limit(
    cost double precision default 1, user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(take_rate_limit.tenant_id);
    u uuid := coalesce((select auth.uid()), take_rate_limit.user_id);
    cfg jsonb;
    user_bucket text;
    per_user jsonb;
    per_tenant jsonb;
begin
    -- At most a million tokens a call: larger costs overflowed the bucket's arithmetic (22003).
    if cost is null or cost <= 0 or cost > 1e6 or cost = 'nan'::double precision then
        raise exception 'cost must lie in (0, 1000000] (got %)', cost using errcode = '22023';
    end if;
    cfg := hipocampo.rag_config(null, null, t);
    if cfg ->> 'tenant_rate_limit_per_minute' is null then
        raise exception 'rag config is incomplete: tenant_rate_limit_per_minute (seed it from config.toml: hipocampo db migrate)'
            using errcode = '55000';
    end if;
    user_bucket := 'user:' || t || ':' || coalesce(hipocampo_private._user_ref(t, u), 'service');
    per_user := hipocampo_private._take_token(user_bucket, (cfg ->> 'rate_limit_per_minute')::double precision, cost)
        || '{"scope": "user"}'::jsonb;
    if not (per_user ->> 'allowed')::boolean then
        return per_user;
    end if;
    per_tenant := hipocampo_private._take_token('tenant:' || t,
        (cfg ->> 'tenant_rate_limit_per_minute')::double precision, cost) || '{"scope": "tenant"}'::jsonb;
    if not (per_tenant ->> 'allowed')::boolean then
        update hipocampo_private.rate_limit_buckets as r set tokens = least(r.capacity, r.tokens + cost)
        where r.bucket = user_bucket;
        return per_tenant;
    end if;
    return case when (per_tenant ->> 'remaining')::double precision < (per_user ->> 'remaining')::double precision
        then per_tenant else per_user end;
end;
$$;

/*
set_knowledge_base_status(kb_id uuid, status text) -> void

Purpose: move a knowledge base through draft -> indexing -> ready | error.
Errors: 42501 as _caller (before any other work); P0002 unknown knowledge base; 23514 on an unknown status
  (null included: "a knowledge base's status is one of draft, indexing, ready, error").
Returns: nothing.
Example: select hipocampo.set_knowledge_base_status(kb, 'indexing');
*/
create or replace function hipocampo.set_knowledge_base_status(kb_id uuid, status text)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._caller();
    perform hipocampo_private._kb(set_knowledge_base_status.kb_id);
    if set_knowledge_base_status.status is null then
        raise exception 'a knowledge base''s status is one of draft, indexing, ready, error' using errcode = '23514';
    end if;
    update hipocampo_private.knowledge_bases as k
    set status = set_knowledge_base_status.status, updated_at = now()
    where k.id = set_knowledge_base_status.kb_id;
end;
$$;

/*
set_memory_consent(granted boolean, user_id uuid default null, tenant_id uuid default null) -> void

Purpose: record (or revoke) the user's consent to long-term memory (LGPD art. 7 I).
Parameters: granted; user_id / tenant_id only for service_role (users act for themselves).
Errors: 42501 no tenant / no user; 22023 "granted must be true or false".
Returns: nothing.
Example: select hipocampo.set_memory_consent(true);
*/
create or replace function hipocampo.set_memory_consent(
    granted boolean, user_id uuid default null, tenant_id uuid default null
)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(set_memory_consent.user_id, set_memory_consent.tenant_id);
begin
    if set_memory_consent.granted is null then
        raise exception 'granted must be true or false' using errcode = '22023';
    end if;
    insert into hipocampo_private.memory_consents as mc (tenant_id, user_id, granted)
    values (a.actor_tenant, a.actor_user, set_memory_consent.granted)
    on conflict on constraint memory_consents_pkey do update set granted = excluded.granted, updated_at = now();
    perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, null, 'memory.consent',
        case when granted then 'granted' else 'revoked' end, '{}'::jsonb);
end;
$$;
