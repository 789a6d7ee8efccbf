-- The answer gate's sentence similarity (issue 22 §3-§4). A chunk's support was lexical alone (the
-- idf-weighted share of the question's terms it covers), which cannot read paraphrase. A chunk may
-- now carry its sentences' embeddings (chunks.sentence_embeddings, by the chunk's model, written at
-- ingestion), and answer_evidence adds rag.sentence_weight * clip((c - low) / (high - low), 0, 1)
-- to the support, c the best cosine between the question and a sentence. The three keys belong to
-- the embedding model's calibration (_calibrated_keys' new rag section): weight 0 keeps the gate
-- as it was (all-MiniLM-L6-v2); multilingual-e5-small's come from FaQuAD's train split
-- (config.toml, seeded by `hipocampo db migrate`). Stored calibrations get the rag section with
-- weight 0 here, so nothing changes until the seed or set_model_calibration gives a model its
-- values. Restated from supabase/schemas/02_config.sql, 03_knowledge_bases.sql and
-- 10_answers.sql; re-runnable.
set local check_function_bodies = off;

alter table hipocampo_private.chunks add column if not exists sentence_embeddings extensions.vector[];

alter table hipocampo_private.chunks drop constraint if exists chunks_sentence_embeddings_count;
alter table hipocampo_private.chunks add constraint chunks_sentence_embeddings_count
check (cardinality(sentence_embeddings) between 1 and 64);

update hipocampo_private.model_calibrations
set
    config = config || '{"rag": {"sentence_weight": 0, "sentence_cosine_low": 0.8, "sentence_cosine_high": 0.9}}'::jsonb,
    updated_at = now()
where not config ? 'rag';

/*
_calibrated_keys() -> jsonb

Purpose: which config keys belong to an embedding model's calibration rather than to the global
  row: the cosine thresholds and the dense weights of fusion (issue 22 §2), and the answer gate's
  sentence similarity (its weight and the cosines it rises between). Every calibration holds all
  of them; the global row holds none of them.
Returns: {section: [key, …]}.
Errors: none.
Example: select hipocampo_private._calibrated_keys() -> 'memory';
*/
create or replace function hipocampo_private._calibrated_keys()
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
    select '{
        "retrieval": ["min_similarity", "dense_weight", "dedupe_threshold"],
        "memory": ["context_threshold", "answer_threshold", "duplicate_cosine"],
        "conversations": ["dense_weight"],
        "rag": ["sentence_weight", "sentence_cosine_low", "sentence_cosine_high"]
    }'::jsonb
$$;

/*
rag_config(kb_id uuid default null, agent text default null, tenant_id uuid default null) -> jsonb

Purpose: the effective rag section: global row <- the active model's calibration (the sentence
  similarity keys) <- tenant row <- knowledge base overrides <- agent binding overrides, plus "kb_ids" (the agent's knowledge bases, or [kb_id]) and "agent"; checked
  to hold every key of config.toml's [rag] that a reader uses.
Parameters: kb_id - optional knowledge base; agent - optional binding name; tenant_id only for
  service_role.
Returns: jsonb object (keys of config.toml [rag]).
Errors: 42501 as _resolve_tenant; P0002 "unknown agent binding: …"; 55000 "rag config is
  incomplete: seed it from config.toml (hipocampo db migrate)".
Example: select hipocampo.rag_config(null, 'portaria') ->> 'top_k';
*/
create or replace function hipocampo.rag_config(kb_id uuid default null, agent text default null, tenant_id uuid default null)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(rag_config.tenant_id);
    b hipocampo_private.agent_bindings;
    kbs uuid[];
    cfg jsonb;
begin
    if agent is not null then
        select * into b from hipocampo_private.agent_bindings as x where x.tenant_id = t and x.name = agent;
        if b.id is null then
            raise exception 'unknown agent binding: %', agent using errcode = 'P0002';
        end if;
    end if;
    kbs := coalesce(b.kb_ids, case when kb_id is null then null else array[kb_id] end);
    -- Knowledge-base overrides apply when the call names one knowledge base.
    cfg := coalesce(hipocampo.effective_config(
        t, case when cardinality(kbs) = 1 then kbs[1] end
    ) -> 'rag', '{}'::jsonb);
    return hipocampo_private._require_config(
        cfg || coalesce(b.rag_overrides, '{}'::jsonb), 'rag', array[
            'enabled', 'provider', 'chat_model', 'azure_deployment', 'azure_api_version', 'api_key_secret',
            'endpoint_secret', 'base_url_secret', 'embedding_model', 'embedding_deployment',
            'embedding_api_version', 'embedding_dimensions', 'embedding_normalize', 'top_k', 'min_score',
            'evidence_token_budget', 'min_confidence', 'question_stopwords', 'cross_check_min_documents',
            'authoritative_trust', 'authoritative_source_types', 'conflict_trust_margin',
            'conflict_subject_overlap', 'sentence_weight', 'sentence_cosine_low', 'sentence_cosine_high',
            'cache_ttl_seconds',
            'rate_limit_per_minute', 'question_min_chars', 'question_max_chars', 'context_prompt',
            'refusal_message'
        ]
    ) || jsonb_build_object('kb_ids', to_jsonb(kbs), 'agent', agent);
end;
$$;

/*
_ingest_item(document jsonb, chunks jsonb, embedding_model text, dims integer) -> jsonb

Purpose: check one document and its chunks for ingest_document / ingest_documents, before
  anything is written (in ingest_document's order of checks), and return the document with its
  title and source_uri scrubbed of PII (what the documents trigger stores, so the lookup by
  source_uri finds it).
Parameters: document, chunks - as ingest_document takes them; embedding_model, dims - the
  model and its dimensions (null: the model is not registered).
Returns: the document object, title and source_uri scrubbed.
Errors: 22023 "document must be an object with title, source_uri and content_hash"; 22001
  "document.title is n characters; the limit is 500", "document.source_uri is n bytes; the limit
  is 2048"; 22023 "chunks must be a non-empty json array"; P0002 "unknown embedding model: …";
  22000 "embedding of chunk i has n dimensions; model … expects d"; 22023 "chunk i needs content
  and content_hash"; 22023 "sentence_embeddings of chunk i must be a json array of 1 to 64
  embeddings"; 22000 "a sentence embedding of chunk i has n dimensions; model … expects d".
Example: select hipocampo_private._ingest_item('{"title":"t","source_uri":"u","content_hash":"h"}',
  '[{"chunk_index":0,"content":"c","content_hash":"x","embedding":"[0.1,…]"}]', 'all-MiniLM-L6-v2', 384);
*/
create or replace function hipocampo_private._ingest_item(
    document jsonb, chunks jsonb, embedding_model text, dims integer
)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    bad record;
begin
    if document is null or jsonb_typeof(document) <> 'object'
        or coalesce(document ->> 'title', '') = ''
        or coalesce(document ->> 'source_uri', '') = ''
        or coalesce(document ->> 'content_hash', '') = '' then
        raise exception 'document must be an object with title, source_uri and content_hash'
            using errcode = '22023';
    end if;
    -- What is stored is scrubbed (the documents trigger); look the document up by the same.
    document := document || jsonb_build_object(
        'title', (hipocampo_private._pii_scrub(document ->> 'title')).text,
        'source_uri', (hipocampo_private._pii_scrub(document ->> 'source_uri')).text);
    if char_length(document ->> 'title') > 500 then
        raise exception 'document.title is % characters; the limit is 500', char_length(document ->> 'title')
            using errcode = '22001';
    end if;
    if octet_length(document ->> 'source_uri') > 2048 then
        raise exception 'document.source_uri is % bytes; the limit is 2048', octet_length(document ->> 'source_uri')
            using errcode = '22001';
    end if;
    if chunks is null or jsonb_typeof(chunks) <> 'array' or jsonb_array_length(chunks) = 0 then
        raise exception 'chunks must be a non-empty json array' using errcode = '22023';
    end if;
    if dims is null then
        raise exception 'unknown embedding model: %', embedding_model using errcode = 'P0002';
    end if;
    -- An embedding is a json array of numbers or pgvector's text form '[0.1,0.2,…]' (parsed
    -- once, by the insert; here its elements are counted by its commas).
    select c.i, c.n into bad
    from (
        select x.ordinality - 1 as i, x.value as chunk,
            case jsonb_typeof(x.value -> 'embedding')
                when 'array' then jsonb_array_length(x.value -> 'embedding')
                when 'string' then
                    pg_catalog.length(x.value ->> 'embedding')
                    - pg_catalog.length(pg_catalog.replace(x.value ->> 'embedding', ',', '')) + 1
            end as n
        from jsonb_array_elements(chunks) with ordinality as x
    ) as c
    where c.n is distinct from dims
       or coalesce(c.chunk ->> 'content', '') = ''
       or coalesce(c.chunk ->> 'content_hash', '') = ''
    limit 1;
    if found then
        if bad.n is distinct from dims then
            raise exception 'embedding of chunk % has % dimensions; model % expects %',
                bad.i, coalesce(bad.n, 0), embedding_model, dims
                using errcode = '22000';
        end if;
        raise exception 'chunk % needs content and content_hash', bad.i using errcode = '22023';
    end if;
    -- Sentence embeddings (optional): 1..64 per chunk, each with the model's dimensions.
    select x.ordinality - 1 as i into bad
    from jsonb_array_elements(chunks) with ordinality as x
    where jsonb_typeof(x.value -> 'sentence_embeddings') <> 'null'
      and (jsonb_typeof(x.value -> 'sentence_embeddings') <> 'array'
          or jsonb_array_length(x.value -> 'sentence_embeddings') not between 1 and 64)
    limit 1;
    if found then
        raise exception 'sentence_embeddings of chunk % must be a json array of 1 to 64 embeddings', bad.i
            using errcode = '22023';
    end if;
    select x.ordinality - 1 as i, y.n into bad
    from jsonb_array_elements(chunks) with ordinality as x
    cross join lateral (
        select case jsonb_typeof(v.value)
                when 'array' then jsonb_array_length(v.value)
                when 'string' then
                    pg_catalog.length(v.value #>> '{}')
                    - pg_catalog.length(pg_catalog.replace(v.value #>> '{}', ',', '')) + 1
            end as n
        from jsonb_array_elements(
            case when jsonb_typeof(x.value -> 'sentence_embeddings') = 'array' then x.value -> 'sentence_embeddings' end
        ) as v
    ) as y
    where y.n is distinct from dims
    limit 1;
    if found then
        raise exception 'a sentence embedding of chunk % has % dimensions; model % expects %',
            bad.i, coalesce(bad.n, 0), embedding_model, dims
            using errcode = '22000';
    end if;
    return document;
end;
$$;

/*
_write_documents(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text) -> jsonb

Purpose: the writes of ingest_document and ingest_documents, set-based: one statement per step
  for the whole batch (look up, delete the replaced chunks, update, insert documents, insert
  chunks, count), so the chunks' statement triggers (PII scrub aside, which is per row) update
  the BM25 statistics and postings once per batch. Semantics per document as ingest_document
  gives them.
Parameters: k - the knowledge base; items - [{document (checked and scrubbed by _ingest_item),
  chunks}] with distinct source_uris; embedding_model - a registered model.
Returns: [{"document_id", "status", "chunks", "skipped"}], in the order of items.
Errors: 42501 "only tenant admins can ingest documents" (the policies refused a write); 23514
  "invalid document: …" (a check constraint); 22023 "invalid document field: …" (an unparsable
  date, number or vector).
Example: select hipocampo_private._write_documents(k, '[{"document": {…}, "chunks": […]}]', 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo_private._write_documents(
    k hipocampo_private.knowledge_bases, items jsonb, embedding_model text
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    trust jsonb := hipocampo.effective_config(k.tenant_id, k.id) -> 'retrieval' -> 'default_trust';
    state jsonb;  -- [{i, doc_id, old_hash, status}]: one element per item, in order
    result jsonb;
begin
    select jsonb_agg(jsonb_build_object(
        'i', x.i, 'doc_id', d.id, 'old_hash', d.content_hash,
        'status', case
            when d.id is null then 'inserted'
            when d.content_hash is distinct from x.doc ->> 'content_hash' then 'replaced'
            when exists (
                select 1 from hipocampo_private.chunks as c
                where c.document_id = d.id and c.embedding_model = _write_documents.embedding_model
            ) then 'unchanged'
            else 'embedded'
        end) order by x.i)
    into state
    from (
        select (e.ordinality - 1)::integer as i, e.value -> 'document' as doc
        from jsonb_array_elements(items) with ordinality as e
    ) as x
    left join hipocampo_private.documents as d
        on d.kb_id = k.id and d.source_uri = x.doc ->> 'source_uri';

    if not jsonb_path_exists(state, '$[*] ? (@.status != "unchanged")') then
        -- Nothing to write: every document is stored with this model's chunks.
        return (
            select jsonb_agg(jsonb_build_object(
                'document_id', s.doc_id, 'status', s.status, 'chunks', 0, 'skipped', 0) order by s.i)
            from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        );
    end if;

    if jsonb_path_exists(state, '$[*] ? (@.status == "embedded" || @.status == "replaced")') then
        -- A changed text replaces every model's chunks (no model keeps serving the old text); the
        -- same text for a model without chunks (a model switch) replaces only that model's.
        delete from hipocampo_private.chunks as c
        using jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        where s.status in ('embedded', 'replaced') and c.document_id = s.doc_id
          and (c.embedding_model = _write_documents.embedding_model or s.status = 'replaced');

        update hipocampo_private.documents as d set
            source_type = coalesce(u.doc ->> 'source_type', d.source_type),
            doc_type = coalesce(u.doc ->> 'doc_type', d.doc_type),
            title = u.doc ->> 'title',
            author = coalesce(u.doc ->> 'author', d.author),
            published_at = coalesce((u.doc ->> 'published_at')::timestamptz, d.published_at),
            version = coalesce(u.doc ->> 'version', d.version),
            trust_score = coalesce((u.doc ->> 'trust_score')::real, d.trust_score),
            data_classification = coalesce(u.doc ->> 'data_classification', d.data_classification),
            content_hash = u.doc ->> 'content_hash',
            status = coalesce(u.doc ->> 'status', d.status),
            expires_at = (u.doc ->> 'expires_at')::timestamptz,
            pii_replacements = coalesce((u.doc ->> 'pii_replacements')::integer, d.pii_replacements),
            updated_at = now()
        from (
            select s.doc_id, items -> s.i -> 'document' as doc
            from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
            where s.status in ('embedded', 'replaced')
        ) as u
        where d.id = u.doc_id;
    end if;

    with inserted as (
        insert into hipocampo_private.documents (
            tenant_id, kb_id, source_type, doc_type, title, source_uri, author, published_at,
            version, trust_score, data_classification, content_hash, status, expires_at, pii_replacements
        )
        select
            k.tenant_id, k.id, coalesce(n.doc ->> 'source_type', 'other'),
            n.doc ->> 'doc_type', n.doc ->> 'title', n.doc ->> 'source_uri',
            n.doc ->> 'author', (n.doc ->> 'published_at')::timestamptz,
            n.doc ->> 'version',
            -- the source type's default trust (retrieval.default_trust; 0.5 when it has none)
            coalesce((n.doc ->> 'trust_score')::real,
                (trust ->> coalesce(n.doc ->> 'source_type', 'other'))::real, 0.5),
            coalesce(n.doc ->> 'data_classification', 'internal'), n.doc ->> 'content_hash',
            coalesce(n.doc ->> 'status', 'active'), (n.doc ->> 'expires_at')::timestamptz,
            coalesce((n.doc ->> 'pii_replacements')::integer, 0)
        from (
            select s.i, items -> s.i -> 'document' as doc
            from jsonb_to_recordset(state) as s (i integer, status text)
            where s.status = 'inserted'
        ) as n
        order by n.i
        returning id, source_uri
    )

    select jsonb_agg(jsonb_build_object(
        'i', s.i, 'doc_id', coalesce(s.doc_id, ins.id), 'status', s.status) order by s.i)
    into state
    from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
    left join inserted as ins
        on s.status = 'inserted' and ins.source_uri = items -> s.i -> 'document' ->> 'source_uri';

    with written as (
        insert into hipocampo_private.chunks (
            tenant_id, kb_id, document_id, chunk_index, content, token_count, metadata,
            content_hash, ts_config, embedding, embedding_model, expires_at, sentence_embeddings
        )
        select
            k.tenant_id, k.id, s.doc_id, (c.value ->> 'chunk_index')::integer, c.value ->> 'content',
            coalesce((c.value ->> 'token_count')::integer, 0), coalesce(c.value -> 'metadata', '{}'::jsonb),
            c.value ->> 'content_hash', hipocampo_private.text_search_config(k.language),
            (c.value ->> 'embedding')::extensions.vector, _write_documents.embedding_model,
            (items -> s.i -> 'document' ->> 'expires_at')::timestamptz,
            case when jsonb_typeof(c.value -> 'sentence_embeddings') = 'array' then array(
                select (x.v #>> '{}')::extensions.vector
                from jsonb_array_elements(c.value -> 'sentence_embeddings') with ordinality as x (v, n)
                order by x.n
            ) end
        from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        cross join lateral jsonb_array_elements(items -> s.i -> 'chunks') with ordinality as c
        where s.status <> 'unchanged'
        order by s.i, c.ordinality
        on conflict on constraint chunks_tenant_hash_model_key do nothing
        returning document_id
    )

    select jsonb_agg(jsonb_build_object(
        'document_id', s.doc_id, 'status', s.status, 'chunks', coalesce(w.n, 0),
        'skipped', case
            when s.status = 'unchanged' then 0
            else jsonb_array_length(items -> s.i -> 'chunks') - coalesce(w.n, 0)
        end) order by s.i)
    into result
    from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
    left join (
        select w.document_id, count(*)::integer as n from written as w group by w.document_id
    ) as w on w.document_id = s.doc_id;

    update hipocampo_private.documents as d set chunk_count = (r.value ->> 'chunks')::integer
    from jsonb_array_elements(result) as r
    where d.id = (r.value ->> 'document_id')::uuid and r.value ->> 'status' <> 'unchanged';
    return result;
exception
    when insufficient_privilege then
        raise exception 'only tenant admins can ingest documents' using errcode = '42501';
    when check_violation then
        raise exception 'invalid document: %', sqlerrm using errcode = '23514';
    when invalid_text_representation or invalid_datetime_format or datetime_field_overflow
        or numeric_value_out_of_range then
        raise exception 'invalid document field: %', sqlerrm using errcode = '22023';
end;
$$;

/*
answer_evidence(query_text text, query_embedding vector, kb_ids uuid[] default null,
  agent text default null, tenant_id uuid default null) -> jsonb

Purpose: everything an answer needs from the database in one call, with the rules of the rag
  config (rag_config): hybrid retrieval of rag.top_k chunks, plus up to 3 near-duplicates of each
  from other documents (retrieval drops those; two versions of a policy are such twins);
  support per chunk = its lexical support (evidence_support) + rag.sentence_weight *
  clip((c - rag.sentence_cosine_low) / (rag.sentence_cosine_high - rag.sentence_cosine_low), 0, 1),
  c the best cosine between the question and the chunk's sentences (chunks.sentence_embeddings,
  stored at ingestion; none: nothing added; the three keys are the embedding model's calibration,
  weight 0 = lexical support alone);
  evidence = chunks with support >= rag.min_score, in the order of the combined score, under
  rag.evidence_token_budget tokens (near-duplicates: _near_duplicates, HNSW on large scopes); conflicts (detect_conflicts): a resolved one drops the losing
  documents' chunks, an unresolved one refuses; confidence = the best support, refused below
  rag.min_confidence; cross-check: >= rag.cross_check_min_documents distinct documents with
  support >= rag.min_confidence, or one of rag.authoritative_source_types with trust >=
  rag.authoritative_trust.
Parameters: query_text 1..2,000 characters; query_embedding of the active model; kb_ids (default:
  the agent binding's); agent - binding name; tenant_id only for service_role.
Returns: {"decision": "answer" | "refuse", "reason": null | "rag_disabled" | "no_evidence" |
  "low_confidence" | "conflicting_sources" | "cross_check_failed", "confidence", "candidates",
  "filtered" (below min_score), "conflicts" (detect_conflicts), "evidence": [{"n", "chunk_id",
  "document_id", "kb_id", "title", "source_uri", "source_type", "trust_score", "published_at",
  "content", "best_window", "score", "dense_score", "lexical_score", "support", "lexical_support",
  "sentence_similarity" (c, null without sentence embeddings or with weight 0), "token_count"}],
  "config": the rag config used}.
Errors: 22023 "no knowledge base: …" when neither kb_ids nor an agent names one; as hybrid_search
  (22023 query length, 22000 dimensions); 42501 no tenant; P0002 unknown agent binding.
Example: select hipocampo.answer_evidence('Qual o prazo?', '[…]'::extensions.vector, array[kb]);
*/
create or replace function hipocampo.answer_evidence(
    query_text text,
    query_embedding extensions.vector,
    kb_ids uuid[] default null,
    agent text default null,
    tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set plan_cache_mode = force_generic_plan
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(answer_evidence.tenant_id);
    cfg jsonb := hipocampo.rag_config(
        case when cardinality(answer_evidence.kb_ids) = 1 then answer_evidence.kb_ids[1] end,
        answer_evidence.agent, t
    );
    kbs uuid[] := coalesce(answer_evidence.kb_ids,
        (select array_agg(x::uuid) from jsonb_array_elements_text(
            case when jsonb_typeof(cfg -> 'kb_ids') = 'array' then cfg -> 'kb_ids' else '[]'::jsonb end
        ) as x));
    top_k integer := (cfg ->> 'top_k')::integer;
    min_score double precision := (cfg ->> 'min_score')::double precision;
    min_confidence double precision := (cfg ->> 'min_confidence')::double precision;
    budget integer := (cfg ->> 'evidence_token_budget')::integer;
    w_sentence double precision := (cfg ->> 'sentence_weight')::double precision;
    s_low double precision := (cfg ->> 'sentence_cosine_low')::double precision;
    -- (a step at s_low when the two cosines are equal)
    s_span double precision := greatest(
        (cfg ->> 'sentence_cosine_high')::double precision - (cfg ->> 'sentence_cosine_low')::double precision, 1e-6
    );
    dedupe double precision := (hipocampo.effective_config(t) -> 'retrieval' ->> 'dedupe_threshold')::double precision;
    candidates jsonb;
    evidence jsonb := '[]'::jsonb;
    conflicts jsonb := '[]'::jsonb;
    losers jsonb := '[]'::jsonb;
    item jsonb;
    used integer := 0;
    n_candidates integer;
    n_filtered integer;
    confidence double precision;
    agreeing integer;
    authoritative boolean;
    reason text;
begin
    if coalesce(cardinality(kbs), 0) = 0 then
        raise exception 'no knowledge base: pass kb_ids or an agent bound to knowledge bases'
            using errcode = '22023';
    end if;
    if not coalesce((cfg ->> 'enabled')::boolean, true) then
        return jsonb_build_object('decision', 'refuse', 'reason', 'rag_disabled', 'confidence', 0,
            'candidates', 0, 'filtered', 0, 'conflicts', '[]'::jsonb, 'evidence', '[]'::jsonb, 'config', cfg);
    end if;

    select coalesce(jsonb_agg(to_jsonb(h) order by h.rank), '[]'::jsonb) into candidates
    from hipocampo.hybrid_search(
        query_text => answer_evidence.query_text,
        query_embedding => answer_evidence.query_embedding,
        kb_ids => kbs,
        match_count => top_k,
        tenant_id => t
    ) as h;
    -- Near-duplicates of the hits (cosine above retrieval.dedupe_threshold, other active
    -- documents) re-enter as candidates with their twin's scores: retrieval drops them as
    -- duplicates, but two versions of a policy that differ in one number are exactly the
    -- conflicts to see (and the newer version may be the twin that was dropped). The lookup runs
    -- once, materialized: as a function scan inside the join it ran again for every hit.
    with nd as materialized (
        select n.of_chunk_id, n.chunk_id, n.distance
        from hipocampo_private._near_duplicates(
            array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as e), kbs, t, dedupe, 3
        ) as n
    )
    select candidates || coalesce(jsonb_agg(h.e || jsonb_build_object(
               'chunk_id', x.id, 'document_id', x.document_id, 'kb_id', x.kb_id, 'content', x.content,
               'metadata', x.metadata, 'title', d.title, 'source_uri', d.source_uri,
               'source_type', d.source_type, 'trust_score', d.trust_score, 'published_at', d.published_at,
               'near_duplicate_of', h.id
           ) order by h.rank, nd.distance), '[]'::jsonb)
    into candidates
    from (
        select (e ->> 'chunk_id')::bigint as id, (e ->> 'rank')::integer as rank, e
        from jsonb_array_elements(candidates) as e
    ) as h
    inner join nd on nd.of_chunk_id = h.id
    inner join hipocampo_private.chunks as x on x.id = nd.chunk_id
    inner join hipocampo_private.documents as d on d.id = x.document_id and d.status = 'active';
    -- token_count and the sentence cosine by primary key per candidate (scalar subqueries): as a
    -- join the planner read every chunk of the tenant (RLS's tenant index) and hashed them.
    select coalesce(jsonb_agg(e || jsonb_build_object(
               'support', coalesce(s.support, 0) + coalesce(
                   w_sentence * least(1, greatest(0, (x.sim - s_low) / s_span)), 0
               ),
               'lexical_support', coalesce(s.support, 0), 'sentence_similarity', x.sim,
               'best_window', s.best_window,
               'token_count', (
                   select ch.token_count from hipocampo_private.chunks as ch
                   where ch.id = (e ->> 'chunk_id')::bigint
               )
           ) order by (e ->> 'rank')::integer, e ->> 'near_duplicate_of' nulls first), '[]'::jsonb)
    into candidates
    from jsonb_array_elements(candidates) as e
    cross join lateral (
        select case when w_sentence > 0 then (
            -- (a zero vector's cosine is NaN, which would compare above every number: left out)
            select max(1 - d.d) filter (where d.d <> 'NaN'::double precision)
            from hipocampo_private.chunks as ch
            cross join lateral unnest(ch.sentence_embeddings) as v
            cross join lateral (select v operator(extensions.<=>) answer_evidence.query_embedding as d) as d
            where ch.id = (e ->> 'chunk_id')::bigint
        ) end as sim
    ) as x
    left join hipocampo.evidence_support(
        answer_evidence.query_text,
        array(select (y ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as y),
        cfg -> 'question_stopwords'
    ) as s on s.chunk_id = (e ->> 'chunk_id')::bigint;

    n_candidates := jsonb_array_length(candidates);
    select count(*) into n_filtered from jsonb_array_elements(candidates) as e
    where coalesce((e ->> 'support')::double precision, 0) < min_score;

    conflicts := hipocampo.detect_conflicts(
        answer_evidence.query_text,
        array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as e
              where coalesce((e ->> 'support')::double precision, 0) >= min_score),
        (cfg ->> 'conflict_trust_margin')::double precision,
        cfg -> 'question_stopwords',
        (cfg ->> 'conflict_subject_overlap')::double precision
    );
    -- Resolved conflicts: the losing documents' chunks leave the evidence.
    select coalesce(jsonb_agg(distinct d), '[]'::jsonb) into losers
    from jsonb_array_elements(conflicts) as k, jsonb_array_elements(k -> 'document_ids') as d
    where (k ->> 'resolved')::boolean and d <> k -> 'winner_document_id';

    for item in
        select e from jsonb_array_elements(candidates) as e
        where coalesce((e ->> 'support')::double precision, 0) >= min_score
          and not losers @> jsonb_build_array(e -> 'document_id')
        order by (e ->> 'final_score')::double precision desc, (e ->> 'rank')::integer
    loop
        exit when used > 0 and used + (item ->> 'token_count')::integer > budget;
        used := used + (item ->> 'token_count')::integer;
        evidence := evidence || jsonb_build_array(jsonb_build_object(
            'n', jsonb_array_length(evidence) + 1,
            'chunk_id', item -> 'chunk_id', 'document_id', item -> 'document_id', 'kb_id', item -> 'kb_id',
            'title', item -> 'title', 'source_uri', item -> 'source_uri', 'source_type', item -> 'source_type',
            'trust_score', item -> 'trust_score', 'published_at', item -> 'published_at',
            'metadata', item -> 'metadata',
            -- A single chunk over the budget is cut to it (4 characters per token).
            'content', case when used > budget then left(item ->> 'content', budget * 4) else item ->> 'content' end,
            'best_window', item -> 'best_window', 'score', item -> 'final_score',
            'dense_score', item -> 'dense_score', 'lexical_score', item -> 'lexical_score',
            'support', item -> 'support', 'lexical_support', item -> 'lexical_support',
            'sentence_similarity', item -> 'sentence_similarity',
            'token_count', least((item ->> 'token_count')::integer, budget)
        ));
    end loop;

    select max((e ->> 'support')::double precision) into confidence from jsonb_array_elements(evidence) as e;
    select count(distinct e ->> 'document_id') filter (
               where (e ->> 'support')::double precision >= min_confidence
           ),
           coalesce(bool_or(
               (e ->> 'support')::double precision >= min_confidence
               and (cfg -> 'authoritative_source_types') ? (e ->> 'source_type')
               and (e ->> 'trust_score')::double precision >= (cfg ->> 'authoritative_trust')::double precision
           ), false)
    into agreeing, authoritative
    from jsonb_array_elements(evidence) as e;

    reason := case
        when jsonb_array_length(evidence) = 0 then 'no_evidence'
        when exists (select 1 from jsonb_array_elements(conflicts) as k where not (k ->> 'resolved')::boolean)
            then 'conflicting_sources'
        when coalesce(confidence, 0) < min_confidence then 'low_confidence'
        when agreeing < (cfg ->> 'cross_check_min_documents')::integer and not authoritative
            then 'cross_check_failed'
    end;
    return jsonb_build_object(
        'decision', case when reason is null then 'answer' else 'refuse' end,
        'reason', reason,
        'confidence', coalesce(confidence, 0),
        'candidates', n_candidates,
        'filtered', n_filtered,
        'conflicts', conflicts,
        'evidence', evidence,
        'config', cfg
    );
end;
$$;

/*
chunks_without_sentences(batch_size integer default 100, filter_tenant_id uuid default null,
  after_chunk_id bigint default 0) -> table (chunk_id bigint, tenant_id uuid, content text)

Purpose: the sentence backfill's work list: chunks of the active model without sentence
  embeddings in knowledge bases whose rag.sentence_weight is above 0 (the active model's
  calibration <- the tenant's row <- the knowledge base's overrides), e.g. ingested before the
  weight was set, or given a row of a new model by set_row_embeddings. The listed chunks stay
  locked (for update skip locked) until the caller's transaction ends: store their sentences
  with set_chunk_sentences in the same transaction; concurrent workers take other chunks.
Parameters: batch_size 1..1000 chunks; filter_tenant_id - only that tenant's chunks (null: every
  tenant's); after_chunk_id - only chunks with a greater id (a caller's cursor).
Returns: at most batch_size rows by chunk id, with the chunk's content (its sentences are what
  the client embeds); none when no model is active.
Errors: 42501 for any role but service_role (no EXECUTE); 22023 "batch_size must be 1..1000".
Example: select chunk_id, content from hipocampo.chunks_without_sentences(100);
*/
create or replace function hipocampo.chunks_without_sentences(
    batch_size integer default 100, filter_tenant_id uuid default null, after_chunk_id bigint default 0
)
returns table (chunk_id bigint, tenant_id uuid, content text)
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
    model text;
begin
    if batch_size is null or batch_size not between 1 and 1000 then
        raise exception 'batch_size must be 1..1000' using errcode = '22023';
    end if;
    select e.name into model from hipocampo_private.embedding_models as e where e.active;
    return query
    with weighed as materialized (
        -- The knowledge bases whose gate reads sentences, each with its own config layers.
        select k.id from hipocampo_private.knowledge_bases as k
        where (chunks_without_sentences.filter_tenant_id is null or k.tenant_id = chunks_without_sentences.filter_tenant_id)
          and coalesce((
              hipocampo.effective_config(k.tenant_id, k.id) -> 'rag' ->> 'sentence_weight'
          )::double precision, 0) > 0
    )
    select c.id, c.tenant_id, c.content
    from hipocampo_private.chunks as c
    where c.kb_id in (select w.id from weighed as w)
      and c.embedding_model = model and c.sentence_embeddings is null
      and c.id > coalesce(chunks_without_sentences.after_chunk_id, 0)
    order by c.id
    limit batch_size
    for update of c skip locked;
end;
$$;

comment on function hipocampo.chunks_without_sentences(integer, uuid, bigint) is
'Chunks of the active model without sentence embeddings where rag.sentence_weight > 0 (locked for the caller''s transaction): the sentence backfill''s work list.';

/*
set_chunk_sentences(items jsonb) -> integer

Purpose: store the sentence embeddings of chunks chunks_without_sentences listed (the chunk's
  sentences embedded by its own model as passages, what ingestion sends as
  chunks[i].sentence_embeddings); a chunk's earlier ones are replaced.
Parameters: items - [{"id": "<chunk id>", "sentence_embeddings": [1..64 embeddings, each a json
  array of numbers or pgvector's text form, with the dimensions of the chunk's model]}].
Returns: the number of chunks updated (an id of no chunk counts 0).
Errors: 42501 for any role but service_role (no EXECUTE); 22023 "items must be a json array";
  22023 "sentence_embeddings of chunk <id> must be a json array of 1 to 64 embeddings"; 22000 "a
  sentence embedding of chunk <id> has n dimensions; its model expects d".
Example: select hipocampo.set_chunk_sentences('[{"id": "42", "sentence_embeddings": ["[0.1,…]"]}]');
*/
create or replace function hipocampo.set_chunk_sentences(items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    item jsonb;
    vs extensions.vector [];
    dims integer;
    bad integer;
    n integer := 0;
    one integer;
begin
    if items is null or jsonb_typeof(items) <> 'array' then
        raise exception 'items must be a json array' using errcode = '22023';
    end if;
    for item in select x from jsonb_array_elements(items) as x loop
        if jsonb_typeof(item -> 'sentence_embeddings') is distinct from 'array'
            or jsonb_array_length(item -> 'sentence_embeddings') not between 1 and 64 then
            raise exception 'sentence_embeddings of chunk % must be a json array of 1 to 64 embeddings',
                item ->> 'id' using errcode = '22023';
        end if;
        vs := array(
            select (v.value #>> '{}')::extensions.vector
            from jsonb_array_elements(item -> 'sentence_embeddings') with ordinality as v
            order by v.ordinality
        );
        select extensions.vector_dims(c.embedding) into dims
        from hipocampo_private.chunks as c where c.id = (item ->> 'id')::bigint;
        select extensions.vector_dims(v) into bad from unnest(vs) as v
        where extensions.vector_dims(v) is distinct from dims
        limit 1;
        if dims is not null and bad is not null then
            raise exception 'a sentence embedding of chunk % has % dimensions; its model expects %',
                item ->> 'id', bad, dims using errcode = '22000';
        end if;
        update hipocampo_private.chunks as c set sentence_embeddings = vs
        where c.id = (item ->> 'id')::bigint;
        get diagnostics one = row_count;
        n := n + one;
    end loop;
    return n;
end;
$$;

comment on function hipocampo.set_chunk_sentences(jsonb) is
'Store chunks'' sentence embeddings (the sentence backfill; service_role).';

revoke execute on function hipocampo.chunks_without_sentences(integer, uuid, bigint) from public;
revoke execute on function hipocampo.set_chunk_sentences(jsonb) from public;
grant execute on function hipocampo.chunks_without_sentences(batch_size integer, filter_tenant_id uuid, after_chunk_id bigint)
to service_role;
grant execute on function hipocampo.set_chunk_sentences(items jsonb) to service_role;
