-- Every RPC resolves its caller first. 003800 put the caller model into the helpers that take a
-- tenant or user (_resolve_tenant, _memory_actor, …); the RPCs below act on rows by id and relied
-- on RLS alone, so a JWT without sub, without a tenant claim or with a removed membership reached
-- their bodies and got an empty answer (false, null, P0002) instead of a refusal. Each is restated
-- unchanged but for its first step, hipocampo_private._caller() (42501 before any other work), as
-- is _session, which the session RPCs read through. Not gated: normalize_question (a pure function
-- of its argument) and remember (its first step is _remember's _memory_actor).

-- Restated from migration 001500; the caller is resolved first.
/*
close_session(session_id uuid) -> boolean

Purpose: end a session now (its conversation history stays).
Returns: true when a session was closed.
Example: select hipocampo.close_session('…');
Errors: 42501 as _caller (before any other work).
*/
create or replace function hipocampo.close_session(session_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    n integer;
begin
    delete from hipocampo_private.sessions as x
    where x.id = close_session.session_id
      and ((select auth.uid()) is null or x.user_id = (select auth.uid()));
    get diagnostics n = row_count;
    return n > 0;
end;
$$;

-- Restated from migration 001100; the caller is resolved first.
/*
correct_memory(memory_id uuid, value jsonb, description text, embedding vector default null) -> jsonb

Purpose: "isso está errado": replace a memory's value. The old row is deprecated (history kept,
  valid_to set), the new one supersedes it with source explicit_user and confidence 1; audited
  as memory.corrected.
Returns: {"status": "corrected", "memory_id": new id, "superseded": old id}.
Errors: 42501 as _caller (before any other work); P0002 "unknown memory" (not visible to the caller, or not active).
Example: select hipocampo.correct_memory('…', '"Ana"', 'O nome do usuário é Ana');
*/
create or replace function hipocampo.correct_memory(
    memory_id uuid, value jsonb, description text, embedding extensions.vector default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    old hipocampo_private.memories;
    new_id uuid;
begin
    select * into old from hipocampo_private.memories as m
    where m.id = correct_memory.memory_id and m.status = 'active'
    for update;
    if old.id is null then
        raise exception 'unknown memory: %', memory_id using errcode = 'P0002';
    end if;
    update hipocampo_private.memories as m
    set status = 'deprecated', valid_to = now(), updated_at = now()
    where m.id = old.id;
    insert into hipocampo_private.memories (
        tenant_id, user_id, scope, category, key, value, description, confidence, source, source_ref,
        conversation_id, pinned, tags, emotion, intensity, life_domain, embedding, embedding_model,
        token_count, supersedes, expires_at
    ) values (
        old.tenant_id, old.user_id, old.scope, old.category, old.key, correct_memory.value,
        btrim(correct_memory.description), 1, 'explicit_user', 'correction', old.conversation_id,
        old.pinned, old.tags, old.emotion, old.intensity, old.life_domain,
        coalesce(correct_memory.embedding, old.embedding),
        case when correct_memory.embedding is null then old.embedding_model
             else (select e.name from hipocampo_private.embedding_models as e where e.active) end,
        ceil(char_length(correct_memory.description) / 4.0)::integer, old.id, old.expires_at
    ) returning id into new_id;
    perform hipocampo_private._memory_event(old.tenant_id, coalesce((select auth.uid()), old.user_id),
        new_id, 'memory.corrected', null,
        jsonb_build_object('key', old.key, 'old_value', old.value, 'supersedes', old.id));
    return jsonb_build_object('status', 'corrected', 'memory_id', new_id, 'superseded', old.id);
end;
$$;

-- Restated from migration 000800; the caller is resolved first.
/*
delete_document(document_id uuid) -> boolean

Purpose: delete a document; its chunks and their embeddings go with it (cascade).
Returns: true when a document was deleted, false when none is visible with that id.
Errors: 42501 as _caller (before any other work); 42501 not an admin.
Example: select hipocampo.delete_document('…');
*/
create or replace function hipocampo.delete_document(document_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._caller();
    delete from hipocampo_private.documents as d where d.id = delete_document.document_id;
    return found;
end;
$$;

-- Restated from migration 002100; the caller is resolved first.
/*
detect_conflicts(query_text text, chunk_ids bigint[], trust_margin double precision default null,
  stopwords jsonb default null) -> jsonb

Purpose: conflicts between the documents of the given chunks: two active documents that state
  different deadlines (days), dd/mm/yyyy dates or R$ values, in sentences on the question's topic
  (sharing at least min(2, n) of its n terms), within one scope (nacional, internacional,
  geral). When the question names a scope, only that scope counts. Values that differ inside one
  document are not a conflict. A conflict is resolved when one document's trust exceeds every
  other's by trust_margin (default rag.conflict_trust_margin): its values win.
Parameters: query_text; chunk_ids visible to the caller; trust_margin 0..1; stopwords as
  evidence_support.
Returns: a json array of {"kind", "scope", "resolved", "winner_document_id", "document_ids",
  "values": [{"value", "document_id", "chunk_id", "title", "trust_score", "sentence"}]}; [] when none.
Errors: 42501 as _caller (before any other work).
Example: select hipocampo.detect_conflicts('Qual o prazo de reembolso internacional?', array[1, 2]);
*/
create or replace function hipocampo.detect_conflicts(
    query_text text, chunk_ids bigint[], trust_margin double precision default null, stopwords jsonb default null
)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    select hipocampo_private._caller();
    with cfg as (
        select s.config -> 'rag' as rag from hipocampo_private.settings as s where s.tenant_id is null
    ),

    c as (
        select ch.id, ch.document_id, ch.ts_config, ch.content, d.title, d.trust_score
        from hipocampo_private.chunks as ch
        inner join hipocampo_private.documents as d on d.id = ch.document_id and d.tenant_id = ch.tenant_id
        where ch.id = any(detect_conflicts.chunk_ids) and d.status = 'active'
    ),

    question_scope as (
        select case
            when hipocampo_private._scope_of(detect_conflicts.query_text) = 'geral' then null
            else hipocampo_private._scope_of(detect_conflicts.query_text)
        end as scope
    ),

    facts as (
        select c.id as chunk_id, c.document_id, c.title, c.trust_score, s.sentence,
               hipocampo_private._scope_of(s.sentence) as scope, v.kind, v.value
        from c
        cross join lateral hipocampo_private._sentences(c.content) as s
        cross join lateral hipocampo_private._sentence_values(s.sentence) as v
        cross join lateral (
            select hipocampo_private._question_lexemes(
                detect_conflicts.query_text, c.ts_config,
                coalesce(detect_conflicts.stopwords, (select cfg.rag -> 'question_stopwords' from cfg))
            ) as terms
        ) as q
        where cardinality(q.terms) > 0
          and (
              select count(*) from pg_catalog.unnest(q.terms) as t (lexeme)
              where t.lexeme = any(pg_catalog.tsvector_to_array(pg_catalog.to_tsvector(c.ts_config, s.sentence)))
          ) >= least(2, cardinality(q.terms))
    ),

    scoped as (
        select f.* from facts as f, question_scope as qs
        where qs.scope is null or f.scope = qs.scope
    ),

    groups as (
        select g.kind, g.scope
        from scoped as g
        where exists (
            select 1 from scoped as o
            where o.kind = g.kind and o.scope = g.scope
              and o.document_id <> g.document_id and o.value <> g.value
        )
        group by g.kind, g.scope
    ),

    ranked as (
        select gr.kind, gr.scope, d.document_id, d.trust_score,
               row_number() over (partition by gr.kind, gr.scope order by d.trust_score desc, d.document_id) as rn
        from groups as gr
        cross join lateral (
            select distinct s.document_id, s.trust_score from scoped as s
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
            select jsonb_agg(distinct s.document_id) from scoped as s where s.kind = v.kind and s.scope = v.scope
        ),
        'values', (
            select jsonb_agg(jsonb_build_object(
                'value', s.value, 'document_id', s.document_id, 'chunk_id', s.chunk_id, 'title', s.title,
                'trust_score', s.trust_score, 'sentence', s.sentence
            ) order by s.trust_score desc, s.chunk_id)
            from scoped as s where s.kind = v.kind and s.scope = v.scope
        )
    ) order by v.kind, v.scope), '[]'::jsonb)
    from verdicts as v
$$;

-- Restated from migration 000800; the caller is resolved first.
/*
document_hashes(kb_id uuid) -> setof (document_id uuid, source_uri text, content_hash text)

Purpose: what a knowledge base holds, so a client can skip unchanged documents before embedding.
Errors: 42501 as _caller (before any other work); P0002 unknown knowledge base.
Example: select * from hipocampo.document_hashes(kb);
*/
create or replace function hipocampo.document_hashes(kb_id uuid)
returns table (document_id uuid, source_uri text, content_hash text)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._caller();
    perform hipocampo_private._kb(document_hashes.kb_id);
    return query
    select d.id, d.source_uri, d.content_hash from hipocampo_private.documents as d
    where d.kb_id = document_hashes.kb_id;
end;
$$;

-- Restated from migration 002100; the caller is resolved first.
/*
evidence_support(query_text text, chunk_ids bigint[], stopwords jsonb default null) -> setof record

Purpose: how well each chunk covers a question. coverage = idf-weighted share of the question's
  terms (BM25 idf of the chunk's knowledge base) present in the chunk (title included);
  window_coverage = the same over the chunk's best window of two consecutive sentences;
  support = (coverage + window_coverage) / 2, in [0, 1] (docs/design.md §answers).
Parameters: query_text 1..2,000 characters; chunk_ids visible to the caller (RLS);
  stopwords - json array of stems (default rag.question_stopwords).
Returns: chunk_id, coverage, window_coverage, support, best_window (text of the best window).
Errors: 42501 as _caller (before any other work); otherwise none (chunks the caller cannot see are left out).
Example: select * from hipocampo.evidence_support('Qual o prazo de trancamento?', array[12, 15]);
*/
create or replace function hipocampo.evidence_support(query_text text, chunk_ids bigint[], stopwords jsonb default null)
returns table (
    chunk_id bigint, coverage double precision, window_coverage double precision,
    support double precision, best_window text
)
language sql
stable
security invoker
set search_path = ''
as $$
    select hipocampo_private._caller();
    with c as (
        select ch.id, ch.kb_id, ch.embedding_model, ch.ts_config, ch.fts, ch.content
        from hipocampo_private.chunks as ch
        where ch.id = any(evidence_support.chunk_ids)
    ),

    q as (
        select
            c.id,
            l.lexeme,
            pg_catalog.ln(
                1 + (coalesce(st.chunk_count, 0) - coalesce(ts.doc_freq, 0) + 0.5)
                / (coalesce(ts.doc_freq, 0) + 0.5)
            ) as idf
        from c
        cross join lateral pg_catalog.unnest(hipocampo_private._question_lexemes(
            evidence_support.query_text, c.ts_config,
            coalesce(evidence_support.stopwords,
                     (select s.config -> 'rag' -> 'question_stopwords'
                      from hipocampo_private.settings as s where s.tenant_id is null))
        )) as l (lexeme)
        left join hipocampo_private.kb_text_stats as st
            on st.kb_id = c.kb_id and st.embedding_model = c.embedding_model
        left join hipocampo_private.kb_term_stats as ts
            on ts.kb_id = c.kb_id and ts.embedding_model = c.embedding_model and ts.lexeme = l.lexeme
    ),

    totals as (
        select q.id, sum(q.idf) as total, sum(q.idf) filter (
            where q.lexeme = any(pg_catalog.tsvector_to_array((select c.fts from c where c.id = q.id)))
        ) as found
        from q group by q.id
    ),

    sentences as (
        select c.id, s.ord, s.sentence,
               pg_catalog.tsvector_to_array(pg_catalog.to_tsvector(c.ts_config, s.sentence)) as lexemes
        from c cross join lateral hipocampo_private._sentences(c.content) as s
    ),

    windows as (
        select a.id, a.ord,
               a.sentence || coalesce(' ' || b.sentence, '') as text,
               a.lexemes || coalesce(b.lexemes, '{}') as lexemes
        from sentences as a
        left join sentences as b on b.id = a.id and b.ord = a.ord + 1
    ),

    scored as (
        select distinct on (w.id) w.id, w.text,
               coalesce((select sum(q.idf) from q where q.id = w.id and q.lexeme = any(w.lexemes)), 0) as found
        from windows as w
        order by w.id, 3 desc, w.ord
    )

    select
        c.id,
        coalesce(t.found / nullif(t.total, 0), 0),
        coalesce(s.found / nullif(t.total, 0), 0),
        (coalesce(t.found / nullif(t.total, 0), 0) + coalesce(s.found / nullif(t.total, 0), 0)) / 2,
        s.text
    from c
    left join totals as t on t.id = c.id
    left join scored as s on s.id = c.id
$$;

-- Restated from migration 000800; the caller is resolved first.
/*
finish_ingestion_job(job_id uuid, status text, counts jsonb, errors jsonb) -> void

Purpose: close an ingestion run (start_ingestion_job): its final status and counts.
Parameters: job_id - the run; status - succeeded | partial | failed; counts - {"documents_ingested",
  "documents_unchanged", "documents_failed", "chunks_written"} (a missing count is 0); errors - a
  json array of {document, error} (null = []).
Returns: nothing.
Errors: 42501 as _caller (before any other work); P0002 "unknown ingestion job: …"; 23514 on an unknown status.
Example: select hipocampo.finish_ingestion_job(j, 'succeeded', '{"documents_ingested": 3}', '[]');
*/
create or replace function hipocampo.finish_ingestion_job(
    job_id uuid, status text, counts jsonb default '{}', errors jsonb default '[]'
)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._caller();
    update hipocampo_private.ingestion_jobs as j set
        status = finish_ingestion_job.status,
        documents_ingested = coalesce((counts ->> 'documents_ingested')::integer, 0),
        documents_unchanged = coalesce((counts ->> 'documents_unchanged')::integer, 0),
        documents_failed = coalesce((counts ->> 'documents_failed')::integer, 0),
        chunks_written = coalesce((counts ->> 'chunks_written')::integer, 0),
        errors = coalesce(finish_ingestion_job.errors, '[]'::jsonb),
        finished_at = now()
    where j.id = finish_ingestion_job.job_id;
    if not found then
        raise exception 'unknown ingestion job: %', job_id using errcode = 'P0002';
    end if;
end;
$$;

-- Restated from migration 001100; the caller is resolved first.
/*
forget_memory(memory_id uuid) -> boolean

Purpose: "esquece isso": soft delete (status deleted); the row stays for audit until erased.
Returns: true when an active memory was forgotten, false when none is visible with that id.
Example: select hipocampo.forget_memory('…');
Errors: 42501 as _caller (before any other work).
*/
create or replace function hipocampo.forget_memory(memory_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    m hipocampo_private.memories;
begin
    update hipocampo_private.memories as x
    set status = 'deleted', valid_to = now(), updated_at = now()
    where x.id = forget_memory.memory_id and x.status = 'active'
    returning * into m;
    if m.id is null then
        return false;
    end if;
    perform hipocampo_private._memory_event(m.tenant_id, coalesce((select auth.uid()), m.user_id), m.id,
        'memory.forgotten', null, jsonb_build_object('key', m.key));
    return true;
end;
$$;

-- Restated from migration 000800; the caller is resolved first.
/*
ingest_document(kb_id uuid, document jsonb, chunks jsonb, embedding_model text) -> jsonb

Purpose: write one document and all its chunks in one transaction. A document is identified by
  (kb_id, document.source_uri): unchanged content_hash -> nothing written; changed -> its chunks
  are replaced; new -> inserted. A chunk whose (tenant, content_hash, model) already exists is skipped.
Parameters:
  document - {title, source_uri, content_hash, source_type?, doc_type?, author?, published_at?,
    version?, trust_score? 0..1, data_classification?, expires_at?, status?}
  chunks - [{chunk_index, content, token_count, content_hash, metadata?, embedding: [float, …]}]
  embedding_model - a registered model; every embedding must have its dims.
Returns: {"document_id", "status": "inserted" | "replaced" | "unchanged", "chunks": n, "skipped": n}.
Errors: 42501 as _caller (before any other work); P0002 unknown knowledge base / embedding model; 22023 bad document or chunks shape;
  22000 "embedding of chunk i has n dimensions; model … expects d"; 42501 not an admin.
Example: select hipocampo.ingest_document(kb, '{"title":"Regimento","source_uri":"file:///r.pdf",
  "content_hash":"ab…"}', '[{"chunk_index":0,"content":"…","token_count":12,"content_hash":"cd…",
  "embedding":[0.1, …]}]', 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo.ingest_document(
    kb_id uuid, document jsonb, chunks jsonb, embedding_model text
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(ingest_document.kb_id);
    model_dims integer;
    doc_id uuid;
    old_hash text;
    result_status text;
    written integer;
    total integer;
    bad record;
begin
    if document is null or jsonb_typeof(document) <> 'object'
        or coalesce(document ->> 'title', '') = ''
        or coalesce(document ->> 'source_uri', '') = ''
        or coalesce(document ->> 'content_hash', '') = '' then
        raise exception 'document must be an object with title, source_uri and content_hash'
            using errcode = '22023';
    end if;
    if chunks is null or jsonb_typeof(chunks) <> 'array' or jsonb_array_length(chunks) = 0 then
        raise exception 'chunks must be a non-empty json array' using errcode = '22023';
    end if;
    select e.dims into model_dims from hipocampo_private.embedding_models as e
    where e.name = ingest_document.embedding_model;
    if model_dims is null then
        raise exception 'unknown embedding model: %', ingest_document.embedding_model
            using errcode = 'P0002';
    end if;
    select c.ordinality - 1 as i, jsonb_array_length(c.value -> 'embedding') as n into bad
    from jsonb_array_elements(chunks) with ordinality as c
    where jsonb_typeof(c.value -> 'embedding') is distinct from 'array'
       or jsonb_array_length(c.value -> 'embedding') <> model_dims
       or coalesce(c.value ->> 'content', '') = ''
       or coalesce(c.value ->> 'content_hash', '') = ''
    limit 1;
    if found then
        if bad.n is distinct from model_dims then
            raise exception 'embedding of chunk % has % dimensions; model % expects %',
                bad.i, coalesce(bad.n, 0), ingest_document.embedding_model, model_dims
                using errcode = '22000';
        end if;
        raise exception 'chunk % needs content and content_hash', bad.i using errcode = '22023';
    end if;

    select d.id, d.content_hash into doc_id, old_hash from hipocampo_private.documents as d
    where d.kb_id = k.id and d.source_uri = document ->> 'source_uri';

    if doc_id is not null and old_hash = document ->> 'content_hash'
        and exists (
            select 1 from hipocampo_private.chunks as c
            where c.document_id = doc_id and c.embedding_model = ingest_document.embedding_model
        ) then
        return jsonb_build_object('document_id', doc_id, 'status', 'unchanged', 'chunks', 0, 'skipped', 0);
    end if;

    if doc_id is null then
        insert into hipocampo_private.documents (
            tenant_id, kb_id, source_type, doc_type, title, source_uri, author, published_at,
            version, trust_score, data_classification, content_hash, status, expires_at
        ) values (
            k.tenant_id, k.id, coalesce(document ->> 'source_type', 'other'),
            document ->> 'doc_type', document ->> 'title', document ->> 'source_uri',
            document ->> 'author', (document ->> 'published_at')::timestamptz,
            document ->> 'version', coalesce((document ->> 'trust_score')::real, 0.5),
            coalesce(document ->> 'data_classification', 'internal'), document ->> 'content_hash',
            coalesce(document ->> 'status', 'active'), (document ->> 'expires_at')::timestamptz
        ) returning id into doc_id;
        result_status := 'inserted';
    else
        delete from hipocampo_private.chunks as c
        where c.document_id = doc_id and c.embedding_model = ingest_document.embedding_model;
        update hipocampo_private.documents as d set
            source_type = coalesce(document ->> 'source_type', d.source_type),
            doc_type = coalesce(document ->> 'doc_type', d.doc_type),
            title = document ->> 'title',
            author = coalesce(document ->> 'author', d.author),
            published_at = coalesce((document ->> 'published_at')::timestamptz, d.published_at),
            version = coalesce(document ->> 'version', d.version),
            trust_score = coalesce((document ->> 'trust_score')::real, d.trust_score),
            data_classification = coalesce(document ->> 'data_classification', d.data_classification),
            content_hash = document ->> 'content_hash',
            status = coalesce(document ->> 'status', d.status),
            expires_at = (document ->> 'expires_at')::timestamptz,
            updated_at = now()
        where d.id = doc_id;
        result_status := 'replaced';
    end if;

    insert into hipocampo_private.chunks (
        tenant_id, kb_id, document_id, chunk_index, content, token_count, metadata,
        content_hash, ts_config, embedding, embedding_model, expires_at
    )
    select
        k.tenant_id, k.id, doc_id, (c ->> 'chunk_index')::integer, c ->> 'content',
        coalesce((c ->> 'token_count')::integer, 0), coalesce(c -> 'metadata', '{}'::jsonb),
        c ->> 'content_hash', hipocampo_private.text_search_config(k.language),
        (c ->> 'embedding')::extensions.vector, ingest_document.embedding_model,
        (document ->> 'expires_at')::timestamptz
    from jsonb_array_elements(chunks) as c
    on conflict on constraint chunks_tenant_hash_model_key do nothing;
    get diagnostics written = row_count;
    total := jsonb_array_length(chunks);

    update hipocampo_private.documents as d set chunk_count = written where d.id = doc_id;
    return jsonb_build_object(
        'document_id', doc_id, 'status', result_status, 'chunks', written, 'skipped', total - written
    );
exception
    when insufficient_privilege then
        raise exception 'only tenant admins can ingest documents' using errcode = '42501';
    when check_violation then
        raise exception 'invalid document: %', sqlerrm using errcode = '23514';
    when invalid_text_representation or invalid_datetime_format or datetime_field_overflow then
        raise exception 'invalid document field: %', sqlerrm using errcode = '22023';
end;
$$;

-- Restated from migration 003100; the caller is resolved first.
/*
promote_memory(staging_id uuid, intensity numeric, override boolean default false) -> jsonb

Purpose, parameters and returns: as in migration 001200. Only the config reading changes: the
  memory section comes from the config rows with no values of its own.
Errors: 42501 as _caller (before any other work); as in 001200, and 55000 "memory config is incomplete: …" (not seeded from config.toml).
*/
create or replace function hipocampo.promote_memory(staging_id uuid, intensity numeric, override boolean default false)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    s hipocampo_private.memory_staging;
    cfg jsonb;
    r jsonb;
    level numeric := round(promote_memory.intensity, 1);
begin
    if level is null then
        raise exception 'intensity is required (0..10)' using errcode = '22004';
    end if;
    if level < 0 or level > 10 then
        raise exception 'intensity must lie in 0..10 (got %)', level using errcode = '23514';
    end if;
    select * into s from hipocampo_private.memory_staging as x where x.id = promote_memory.staging_id for update;
    if s.id is null then
        raise exception 'unknown staged memory: %', staging_id using errcode = 'P0002';
    end if;
    cfg := hipocampo_private._memory_config(hipocampo.effective_config(s.tenant_id) -> 'memory');
    if not coalesce(override, false)
        and level < (cfg ->> 'staging_below_intensity')::numeric then
        update hipocampo_private.memory_staging as x set intensity = level, updated_at = now()
        where x.id = s.id;
        return jsonb_build_object('status', 'kept', 'memory_id', s.id, 'intensity', level);
    end if;
    r := hipocampo_private._remember(
        s.key, s.value, s.description, s.category, s.embedding, s.scope, s.confidence, s.source, s.source_ref,
        s.conversation_id, s.tags, s.emotion, level, s.life_domain, s.pinned or coalesce(override, false),
        s.token_count, null, case when (select auth.uid()) is null then s.user_id end, s.tenant_id, 'long_term'
    );
    if r ->> 'status' = 'rejected' then
        return r;
    end if;
    delete from hipocampo_private.memory_staging as x where x.id = s.id;
    perform hipocampo_private._memory_event(s.tenant_id, coalesce((select auth.uid()), s.user_id),
        (r ->> 'memory_id')::uuid, 'memory.promoted', case when override then 'override' else 'intensity' end,
        jsonb_build_object('staging_id', s.id, 'key', s.key, 'intensity', level, 'result', r ->> 'status'));
    return r || jsonb_build_object('promoted_from', s.id);
end;
$$;

-- Restated from migration 001800; the caller is resolved first.
/*
seed_profile(profile jsonb, source_ref text default 'onboarding', user_id uuid default null,
  tenant_id uuid default null) -> jsonb

Purpose: write the onboarding profile as memories (source profile_seed, confidence 1) through
  the gate: user.name, user.preferred_language, user.timezone, user.locale, user.role_title,
  user.communication_style (identity_profile); tenant.name, tenant.segment,
  tenant.business_model (tenant_business); tenant.primary_goals (goals_kpis); prefs.no_emojis,
  prefs.no_tech_terms, prefs.short_answers, prefs.channels_enabled (preference).
  Idempotent (unchanged values write nothing); any other key is refused, so free conversation is
  never stored. Each memory's description is a Portuguese sentence ("Cargo do usuário: síndica";
  yes/no for booleans), so that semantic recall finds profile facts by meaning.
Returns: {"<key>": "<status of remember>", …}.
Errors: 42501 as _caller (before any other work); 22023 "unknown profile keys: …"; 22023 on a source_ref other than onboarding | profile.
Example: select hipocampo.seed_profile('{"user.name": "Ana", "prefs.short_answers": true}');
*/
create or replace function hipocampo.seed_profile(
    profile jsonb, source_ref text default 'onboarding', user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    allowed constant jsonb := '{
        "user.name": "identity_profile", "user.preferred_language": "identity_profile",
        "user.timezone": "identity_profile", "user.locale": "identity_profile",
        "user.role_title": "identity_profile", "user.communication_style": "identity_profile",
        "tenant.name": "tenant_business", "tenant.segment": "tenant_business",
        "tenant.business_model": "tenant_business", "tenant.primary_goals": "goals_kpis",
        "prefs.no_emojis": "preference", "prefs.no_tech_terms": "preference",
        "prefs.short_answers": "preference", "prefs.channels_enabled": "preference"
    }';
    -- What each key means, in the users' language: the description that gets embedded.
    labels constant jsonb := '{
        "user.name": "Nome do usuário", "user.preferred_language": "Idioma preferido do usuário",
        "user.timezone": "Fuso horário do usuário", "user.locale": "Localidade (formato de datas e números) do usuário",
        "user.role_title": "Cargo do usuário", "user.communication_style": "Estilo de comunicação preferido",
        "tenant.name": "Nome da empresa ou organização", "tenant.segment": "Segmento de atuação da empresa",
        "tenant.business_model": "Modelo de negócio da empresa", "tenant.primary_goals": "Objetivos principais da empresa",
        "prefs.no_emojis": "Prefere respostas sem emojis", "prefs.no_tech_terms": "Prefere evitar termos técnicos",
        "prefs.short_answers": "Prefere respostas curtas", "prefs.channels_enabled": "Canais de atendimento habilitados"
    }';
    unknown text;
    item record;
    result jsonb := '{}'::jsonb;
    r jsonb;
begin
    if profile is null or jsonb_typeof(profile) <> 'object' then
        raise exception 'profile must be a json object' using errcode = '22023';
    end if;
    if source_ref not in ('onboarding', 'profile') then
        raise exception 'source_ref must be onboarding or profile (got %)', source_ref using errcode = '22023';
    end if;
    select string_agg(k, ', ' order by k) into unknown from jsonb_object_keys(profile) as k
    where not allowed ? k;
    if unknown is not null then
        raise exception 'unknown profile keys: %', unknown using errcode = '22023',
            hint = 'seed_profile stores only the onboarding keys; use remember for anything else';
    end if;
    for item in select e.key, e.value from jsonb_each(profile) as e order by e.key loop
        r := hipocampo.remember(
            key => item.key, value => item.value,
            description => (labels ->> item.key) || ': ' || case jsonb_typeof(item.value)
                when 'boolean' then case when item.value = 'true'::jsonb then 'sim' else 'não' end
                when 'array' then (select string_agg(x, ', ') from jsonb_array_elements_text(item.value) as x)
                else coalesce(item.value #>> '{}', item.value::text) end,
            category => allowed ->> item.key, confidence => 1.0, source => 'profile_seed',
            source_ref => seed_profile.source_ref,
            tags => array[split_part(item.key, '.', 1), replace(split_part(item.key, '.', 2), '.', '_')],
            user_id => seed_profile.user_id, tenant_id => seed_profile.tenant_id
        );
        result := result || jsonb_build_object(item.key, r ->> 'status');
    end loop;
    return result;
end;
$$;

-- Restated from migration 002000; the caller is resolved first.
/*
set_knowledge_base_config(kb_id uuid, section text, patch jsonb) -> jsonb

Purpose: per-knowledge-base overrides (e.g. rag.top_k, rag.min_confidence, retrieval.*), merged
  into knowledge_bases.overrides; a null value removes an override. Validated like the tenant's.
Parameters: kb_id of the caller's tenant; section e.g. 'rag'; patch a json object.
Returns: the knowledge base's overrides of that section after the change.
Errors: 42501 as _caller (before any other work); 42501 not an admin; P0002 "unknown knowledge base"; 22023 / 22003 as _check_config_patch.
Example: select hipocampo.set_knowledge_base_config(kb, 'rag', '{"min_confidence": 0.7}');
*/
create or replace function hipocampo.set_knowledge_base_config(kb_id uuid, section text, patch jsonb)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(set_knowledge_base_config.kb_id);
    current jsonb;
begin
    perform hipocampo_private._require_admin();
    perform hipocampo_private._check_config_patch(set_knowledge_base_config.section, patch);
    current := jsonb_strip_nulls(coalesce(k.overrides -> section, '{}'::jsonb) || patch);
    update hipocampo_private.knowledge_bases as b
    set overrides = jsonb_set(b.overrides, array[set_knowledge_base_config.section], current), updated_at = now()
    where b.id = k.id;
    return current;
end;
$$;

-- Restated from migration 000800; the caller is resolved first.
/*
set_knowledge_base_status(kb_id uuid, status text) -> void

Purpose: move a knowledge base through draft -> indexing -> ready | error.
Errors: 42501 as _caller (before any other work); P0002 unknown knowledge base; 23514 on an unknown status.
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
    update hipocampo_private.knowledge_bases as k
    set status = set_knowledge_base_status.status, updated_at = now()
    where k.id = set_knowledge_base_status.kb_id;
end;
$$;

-- Restated from migration 001800; the caller is resolved first.
/*
set_memory_embeddings(items jsonb) -> integer

Purpose: give memories that have no embedding one (of the active model): the profile seed and
  any write made without a vector. Memories that already have an embedding are left alone.
Parameters: items - [{"memory_id": uuid, "embedding": [floats]}]; RLS decides which rows the
  caller may update (own personal memories; admins the tenant's shared ones).
Returns: the number of memories updated.
Errors: 42501 as _caller (before any other work); 22000 wrong dimensions; 22023 items is not a json array.
Example: select hipocampo.set_memory_embeddings('[{"memory_id": "…", "embedding": [0.1, …]}]');
*/
create or replace function hipocampo.set_memory_embeddings(items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
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
end;
$$;

-- Restated from migration 003500; the caller is resolved first.
/*
set_message_tokens(message_id bigint, token_ids integer[], token_bits varbit[]) -> void

Purpose: store a message's tokens for search_history's late-interaction re-rank: the WordPiece
  ids and, for each, the sign bits of its contextual embedding by the message's embedding model
  (hipocampo.LocalMiniLM.embed_tokens reads the message after its two previous ones).
Parameters: message_id - one of the caller's messages (RLS), with an embedding; token_ids /
  token_bits - 1..512 items each, bits as long as the model's dimensions (384).
Returns: nothing.
Errors: 42501 as _caller (before any other work); P0002 "unknown message: <id>" (absent or another user's); 22023 "the message has no
  embedding: its tokens belong to the embedding's model"; 22023 as _check_message_tokens.
Example: select hipocampo.set_message_tokens(42, array[2054, 2003], array[b'0110…', b'1001…']);
*/
create or replace function hipocampo.set_message_tokens(message_id bigint, token_ids integer[], token_bits varbit[])
returns void
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    dims integer;
    found_it boolean;
begin
    select true, extensions.vector_dims(m.embedding) into found_it, dims
    from hipocampo_private.messages as m where m.id = set_message_tokens.message_id;
    if found_it is null then
        raise exception 'unknown message: %', message_id using errcode = 'P0002';
    end if;
    if dims is null then
        raise exception 'the message has no embedding: its tokens belong to the embedding''s model'
            using errcode = '22023';
    end if;
    perform hipocampo_private._check_message_tokens(token_ids, token_bits, dims, 'token');
    update hipocampo_private.messages as m
    set token_ids = set_message_tokens.token_ids, token_bits = set_message_tokens.token_bits
    where m.id = set_message_tokens.message_id;
end;
$$;

-- Restated from migration 000800; the caller is resolved first.
/*
start_ingestion_job(kb_id uuid, documents_total integer) -> uuid
finish_ingestion_job(job_id uuid, status text, counts jsonb, errors jsonb) -> void

Purpose: record an ingestion run (status running -> succeeded | partial | failed, counts, errors).
Errors: 42501 as _caller (before any other work); P0002 unknown knowledge base / job; 23514 on an unknown status.
Example: select hipocampo.finish_ingestion_job(j, 'succeeded', '{"documents_ingested": 3}', '[]');
*/
create or replace function hipocampo.start_ingestion_job(kb_id uuid, documents_total integer)
returns uuid
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(start_ingestion_job.kb_id);
    job uuid;
begin
    insert into hipocampo_private.ingestion_jobs (tenant_id, kb_id, documents_total, created_by)
    values (k.tenant_id, k.id, documents_total, (select auth.uid()))
    returning id into job;
    return job;
end;
$$;

-- Restated from migration 003100; the caller is resolved first.
/*
_session(session_id uuid, renew boolean) -> hipocampo_private.sessions

Purpose: the caller's live session, locked; renewed (last_activity_at = now(), expires_at =
  least(now() + sessions.inactivity_ttl_minutes, absolute_expires_at)) when renew. The sessions
  config is read from the config rows only.
Errors: 42501 as _caller (before any other work); P0002 "unknown or expired session"; 55000 "sessions config is incomplete: …".
Example: select (hipocampo_private._session(s, false)).id;
*/
create or replace function hipocampo_private._session(session_id uuid, renew boolean)
returns hipocampo_private.sessions
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    s hipocampo_private.sessions;
    cfg jsonb;
begin
    select * into s from hipocampo_private.sessions as x
    where x.id = _session.session_id and x.expires_at > now()
      and ((select auth.uid()) is null or x.user_id = (select auth.uid()))
    for update;
    if s.id is null then
        raise exception 'unknown or expired session: %', session_id using errcode = 'P0002';
    end if;
    if renew then
        cfg := hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions');
        update hipocampo_private.sessions as x
        set last_activity_at = now(),
            expires_at = least(
                now() + make_interval(mins => (cfg ->> 'inactivity_ttl_minutes')::integer),
                x.absolute_expires_at
            )
        where x.id = s.id
        returning * into s;
    end if;
    return s;
end;
$$;
