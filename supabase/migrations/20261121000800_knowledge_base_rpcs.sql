-- RPCs for configuration, embedding models, knowledge bases, documents and ingestion.

/*
_resolve_tenant(requested uuid) -> uuid

Purpose: the tenant a call acts on. A caller with a current tenant (JWT claims + membership)
  acts on it; a caller that bypasses RLS (service_role, the owner) must name one.
Parameters: requested - optional tenant id.
Returns: the tenant id.
Errors: 42501 "tenant mismatch: …" when requested differs from the JWT tenant;
  42501 "no tenant: …" when there is neither.
Example: select hipocampo_private._resolve_tenant(null);
*/
create function hipocampo_private._resolve_tenant(requested uuid)
returns uuid
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    jwt_tenant uuid := hipocampo_private.current_tenant_id();
    bypass boolean;
begin
    if jwt_tenant is not null then
        if requested is not null and requested <> jwt_tenant then
            raise exception 'tenant mismatch: the JWT claims name another tenant'
                using errcode = '42501';
        end if;
        return jwt_tenant;
    end if;
    select r.rolbypassrls or r.rolsuper into bypass
    from pg_catalog.pg_roles as r where r.rolname = current_user;
    if coalesce(bypass, false) and requested is not null then
        return requested;
    end if;
    raise exception 'no tenant: the JWT claims name no tenant this user belongs to'
        using errcode = '42501',
              hint = 'set app_metadata.tenant_id in the JWT, or pass tenant_id as service_role';
end;
$$;

/*
effective_config(tenant_id uuid default null, kb_id uuid default null) -> jsonb

Purpose: the configuration in force: the global row, overridden per section by the tenant's
  row, overridden by the knowledge base's overrides.
Parameters: tenant_id - null = the caller's tenant; kb_id - optional knowledge base.
Returns: a jsonb object with sections retrieval, chunking, embedding.
Errors: 42501 as _resolve_tenant.
Example: select hipocampo.effective_config() -> 'retrieval' ->> 'min_similarity';
*/
create function hipocampo.effective_config(tenant_id uuid default null, kb_id uuid default null)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(effective_config.tenant_id);
    cfg jsonb;
    layer jsonb;
    section text;
begin
    select s.config into cfg from hipocampo_private.settings as s where s.tenant_id is null;
    cfg := coalesce(cfg, '{}'::jsonb);
    for layer in
        select s.config from hipocampo_private.settings as s where s.tenant_id = t
        union all
        select k.overrides from hipocampo_private.knowledge_bases as k
        where k.id = effective_config.kb_id and k.tenant_id = t
    loop
        for section in select jsonb_object_keys(layer) loop
            if jsonb_typeof(layer -> section) = 'object' then
                cfg := jsonb_set(
                    cfg, array[section],
                    coalesce(cfg -> section, '{}'::jsonb) || (layer -> section)
                );
            else
                cfg := jsonb_set(cfg, array[section], layer -> section);
            end if;
        end loop;
    end loop;
    return cfg;
end;
$$;

/*
register_embedding_model(name text, provider text, dims integer, activate boolean default false) -> text

Purpose: add an embedding model to the registry beside the existing ones and create its
  partial HNSW index. Never changes the dims of a registered model.
Parameters: name; provider 'local' | 'openai' | 'azure'; dims 1..2000; activate - make it the default.
Returns: the HNSW index name.
Errors: 22023 "model … is registered with … dimensions" on a dims change; 23514 on bad values.
Example: select hipocampo.register_embedding_model('all-MiniLM-L6-v2', 'local', 384, true);
*/
create function hipocampo.register_embedding_model(
    name text, provider text, dims integer, activate boolean default false
)
returns text
language plpgsql
security invoker
set search_path = ''
as $$
declare
    existing integer;
begin
    select e.dims into existing from hipocampo_private.embedding_models as e
    where e.name = register_embedding_model.name;
    if existing is not null and existing <> register_embedding_model.dims then
        raise exception 'model % is registered with % dimensions, not %',
            register_embedding_model.name, existing, register_embedding_model.dims
            using errcode = '22023';
    end if;
    insert into hipocampo_private.embedding_models (name, provider, dims)
    values (register_embedding_model.name, register_embedding_model.provider,
            register_embedding_model.dims)
    on conflict on constraint embedding_models_pkey do nothing;
    if activate then
        perform hipocampo.activate_embedding_model(register_embedding_model.name);
    end if;
    return hipocampo_private._ensure_model_index(register_embedding_model.name);
end;
$$;

/*
activate_embedding_model(name text) -> void

Purpose: confirm the switch to a registered model: it becomes the default of retrieval.
Errors: P0002 "unknown embedding model".
Example: select hipocampo.activate_embedding_model('text-embedding-3-small');
*/
create function hipocampo.activate_embedding_model(name text)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if not exists (
        select 1 from hipocampo_private.embedding_models as e
        where e.name = activate_embedding_model.name
    ) then
        raise exception 'unknown embedding model: %', activate_embedding_model.name
            using errcode = 'P0002';
    end if;
    update hipocampo_private.embedding_models as e set active = false
    where e.active and e.name <> activate_embedding_model.name;
    update hipocampo_private.embedding_models as e set active = true
    where e.name = activate_embedding_model.name;
end;
$$;

/*
drop_embedding_model(name text) -> bigint

Purpose: after a confirmed switch, delete an inactive model's chunk rows (embeddings) and its
  registry row.
Returns: number of chunk rows deleted.
Errors: P0002 "unknown embedding model"; 55000 "model … is active" for the active model.
Example: select hipocampo.drop_embedding_model('old-model');
*/
create function hipocampo.drop_embedding_model(name text)
returns bigint
language plpgsql
security invoker
set search_path = ''
as $$
declare
    is_active boolean;
    n bigint;
begin
    select e.active into is_active from hipocampo_private.embedding_models as e
    where e.name = drop_embedding_model.name;
    if is_active is null then
        raise exception 'unknown embedding model: %', drop_embedding_model.name
            using errcode = 'P0002';
    end if;
    if is_active then
        raise exception 'model % is active; activate another model first',
            drop_embedding_model.name using errcode = '55000';
    end if;
    delete from hipocampo_private.chunks as c where c.embedding_model = drop_embedding_model.name;
    get diagnostics n = row_count;
    delete from hipocampo_private.kb_term_stats as s
    where s.embedding_model = drop_embedding_model.name;
    delete from hipocampo_private.kb_text_stats as s
    where s.embedding_model = drop_embedding_model.name;
    delete from hipocampo_private.embedding_models as e
    where e.name = drop_embedding_model.name;
    return n;
end;
$$;

/*
create_knowledge_base(name text, description text default null, tags text[] default '{}',
  language text default 'portuguese', overrides jsonb default '{}', tenant_id uuid default null) -> uuid

Purpose: create a knowledge base (status draft) in the caller's tenant; idempotent by name.
Parameters: name 1..200 chars, unique per tenant; language 'portuguese' | 'english' | 'simple';
  overrides - per-KB config sections; tenant_id - service_role only.
Returns: the knowledge-base id (the existing one when the name exists).
Errors: 42501 no tenant / not an admin; 23514 on a bad name or language.
Example: select hipocampo.create_knowledge_base('regulamentos');
*/
create function hipocampo.create_knowledge_base(
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
begin
    insert into hipocampo_private.knowledge_bases (tenant_id, name, description, tags, language, overrides)
    values (t, create_knowledge_base.name, create_knowledge_base.description,
            coalesce(create_knowledge_base.tags, '{}'), create_knowledge_base.language,
            coalesce(create_knowledge_base.overrides, '{}'))
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
_kb(kb_id uuid) -> hipocampo_private.knowledge_bases

Purpose: the knowledge base row, as the caller's RLS sees it.
Errors: P0002 "unknown knowledge base: …" when it does not exist or is another tenant's.
*/
create function hipocampo_private._kb(kb_id uuid)
returns hipocampo_private.knowledge_bases
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    k hipocampo_private.knowledge_bases;
begin
    select * into k from hipocampo_private.knowledge_bases as b where b.id = _kb.kb_id;
    if not found then
        raise exception 'unknown knowledge base: %', kb_id using errcode = 'P0002';
    end if;
    return k;
end;
$$;

/*
knowledge_base_id(name text, tenant_id uuid default null) -> uuid

Purpose: look a knowledge base up by name in the caller's tenant.
Errors: P0002 "unknown knowledge base: …".
Example: select hipocampo.knowledge_base_id('regulamentos');
*/
create function hipocampo.knowledge_base_id(name text, tenant_id uuid default null)
returns uuid
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(knowledge_base_id.tenant_id);
    kb uuid;
begin
    select k.id into kb from hipocampo_private.knowledge_bases as k
    where k.tenant_id = t and k.name = knowledge_base_id.name;
    if kb is null then
        raise exception 'unknown knowledge base: %', knowledge_base_id.name using errcode = 'P0002';
    end if;
    return kb;
end;
$$;

/*
list_knowledge_bases(tenant_id uuid default null) -> setof record

Purpose: the caller's knowledge bases with document and chunk counts.
Returns: id, name, description, tags, status, language, documents, chunks, updated_at.
Example: select * from hipocampo.list_knowledge_bases();
*/
create function hipocampo.list_knowledge_bases(tenant_id uuid default null)
returns table (
    id uuid, name text, description text, tags text[], status text, language text,
    documents bigint, chunks bigint, updated_at timestamptz
)
language sql
stable
security invoker
set search_path = ''
as $$
    select
        k.id, k.name, k.description, k.tags, k.status, k.language,
        (select count(*) from hipocampo_private.documents as d where d.kb_id = k.id),
        (select count(*) from hipocampo_private.chunks as c where c.kb_id = k.id),
        k.updated_at
    from hipocampo_private.knowledge_bases as k
    where k.tenant_id = hipocampo_private._resolve_tenant(list_knowledge_bases.tenant_id)
    order by k.name
$$;

/*
set_knowledge_base_status(kb_id uuid, status text) -> void

Purpose: move a knowledge base through draft -> indexing -> ready | error.
Errors: P0002 unknown knowledge base; 23514 on an unknown status.
Example: select hipocampo.set_knowledge_base_status(kb, 'indexing');
*/
create function hipocampo.set_knowledge_base_status(kb_id uuid, status text)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._kb(set_knowledge_base_status.kb_id);
    update hipocampo_private.knowledge_bases as k
    set status = set_knowledge_base_status.status, updated_at = now()
    where k.id = set_knowledge_base_status.kb_id;
end;
$$;

/*
document_hashes(kb_id uuid) -> setof (document_id uuid, source_uri text, content_hash text)

Purpose: what a knowledge base holds, so a client can skip unchanged documents before embedding.
Errors: P0002 unknown knowledge base.
Example: select * from hipocampo.document_hashes(kb);
*/
create function hipocampo.document_hashes(kb_id uuid)
returns table (document_id uuid, source_uri text, content_hash text)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._kb(document_hashes.kb_id);
    return query
    select d.id, d.source_uri, d.content_hash from hipocampo_private.documents as d
    where d.kb_id = document_hashes.kb_id;
end;
$$;

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
Errors: P0002 unknown knowledge base / embedding model; 22023 bad document or chunks shape;
  22000 "embedding of chunk i has n dimensions; model … expects d"; 42501 not an admin.
Example: select hipocampo.ingest_document(kb, '{"title":"Regimento","source_uri":"file:///r.pdf",
  "content_hash":"ab…"}', '[{"chunk_index":0,"content":"…","token_count":12,"content_hash":"cd…",
  "embedding":[0.1, …]}]', 'all-MiniLM-L6-v2');
*/
create function hipocampo.ingest_document(
    kb_id uuid, document jsonb, chunks jsonb, embedding_model text
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
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

/*
delete_document(document_id uuid) -> boolean

Purpose: delete a document; its chunks and their embeddings go with it (cascade).
Returns: true when a document was deleted, false when none is visible with that id.
Errors: 42501 not an admin.
Example: select hipocampo.delete_document('…');
*/
create function hipocampo.delete_document(document_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
as $$
begin
    delete from hipocampo_private.documents as d where d.id = delete_document.document_id;
    return found;
end;
$$;

/*
purge_expired(now timestamptz default now()) -> jsonb

Purpose: delete documents and chunks whose expires_at has passed (retention).
Parameters: now - the clock (tests pass a frozen one).
Returns: {"documents": n, "chunks": n}.
Example: select hipocampo.purge_expired();
*/
create function hipocampo.purge_expired(now timestamptz default now())
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    n_docs integer;
    n_chunks integer;
begin
    delete from hipocampo_private.chunks as c where c.expires_at <= purge_expired.now;
    get diagnostics n_chunks = row_count;
    delete from hipocampo_private.documents as d where d.expires_at <= purge_expired.now;
    get diagnostics n_docs = row_count;
    return jsonb_build_object('documents', n_docs, 'chunks', n_chunks);
end;
$$;

/*
start_ingestion_job(kb_id uuid, documents_total integer) -> uuid
finish_ingestion_job(job_id uuid, status text, counts jsonb, errors jsonb) -> void

Purpose: record an ingestion run (status running -> succeeded | partial | failed, counts, errors).
Errors: P0002 unknown knowledge base / job; 23514 on an unknown status.
Example: select hipocampo.finish_ingestion_job(j, 'succeeded', '{"documents_ingested": 3}', '[]');
*/
create function hipocampo.start_ingestion_job(kb_id uuid, documents_total integer)
returns uuid
language plpgsql
security invoker
set search_path = ''
as $$
declare
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(start_ingestion_job.kb_id);
    job uuid;
begin
    insert into hipocampo_private.ingestion_jobs (tenant_id, kb_id, documents_total, created_by)
    values (k.tenant_id, k.id, documents_total, (select auth.uid()))
    returning id into job;
    return job;
end;
$$;

create function hipocampo.finish_ingestion_job(
    job_id uuid, status text, counts jsonb default '{}', errors jsonb default '[]'
)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
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

grant execute on function hipocampo_private._resolve_tenant(uuid) to authenticated, service_role;
grant execute on function hipocampo_private._kb(uuid) to authenticated, service_role;
grant execute on function hipocampo.effective_config(uuid, uuid) to authenticated, service_role;
grant execute on function hipocampo.register_embedding_model(text, text, integer, boolean)
to service_role;
grant execute on function hipocampo.activate_embedding_model(text) to service_role;
grant execute on function hipocampo.drop_embedding_model(text) to service_role;
grant execute on function hipocampo.create_knowledge_base(text, text, text[], text, jsonb, uuid)
to authenticated, service_role;
grant execute on function hipocampo.knowledge_base_id(text, uuid) to authenticated, service_role;
grant execute on function hipocampo.list_knowledge_bases(uuid) to authenticated, service_role;
grant execute on function hipocampo.set_knowledge_base_status(uuid, text)
to authenticated, service_role;
grant execute on function hipocampo.document_hashes(uuid) to authenticated, service_role;
grant execute on function hipocampo.ingest_document(uuid, jsonb, jsonb, text)
to authenticated, service_role;
grant execute on function hipocampo.delete_document(uuid) to authenticated, service_role;
grant execute on function hipocampo.purge_expired(timestamptz) to service_role;
grant execute on function hipocampo.start_ingestion_job(uuid, integer) to authenticated, service_role;
grant execute on function hipocampo.finish_ingestion_job(uuid, text, jsonb, jsonb)
to authenticated, service_role;

comment on function hipocampo.effective_config(uuid, uuid) is
'Config in force for a tenant (and KB): global row <- tenant row <- KB overrides.';
comment on function hipocampo.register_embedding_model(text, text, integer, boolean) is
'Register an embedding model beside the others and create its partial HNSW index.';
comment on function hipocampo.activate_embedding_model(text) is
'Make a registered embedding model the default of retrieval.';
comment on function hipocampo.drop_embedding_model(text) is
'Delete an inactive model''s embeddings and registry row, after a confirmed switch.';
comment on function hipocampo.create_knowledge_base(text, text, text[], text, jsonb, uuid) is
'Create (or find by name) a knowledge base in the caller''s tenant.';
comment on function hipocampo.knowledge_base_id(text, uuid) is 'Knowledge-base id by name.';
comment on function hipocampo.list_knowledge_bases(uuid) is
'Knowledge bases of the caller''s tenant with document and chunk counts.';
comment on function hipocampo.set_knowledge_base_status(uuid, text) is
'Set a knowledge base''s status: draft, indexing, ready or error.';
comment on function hipocampo.document_hashes(uuid) is
'Content hashes of a knowledge base''s documents (for client-side dedupe).';
comment on function hipocampo.ingest_document(uuid, jsonb, jsonb, text) is
'Write one document and its chunks atomically; unchanged documents are not rewritten.';
comment on function hipocampo.delete_document(uuid) is
'Delete a document with its chunks and embeddings.';
comment on function hipocampo.purge_expired(timestamptz) is
'Delete documents and chunks past their expires_at.';
comment on function hipocampo.start_ingestion_job(uuid, integer) is 'Open an ingestion-job record.';
comment on function hipocampo.finish_ingestion_job(uuid, text, jsonb, jsonb) is
'Close an ingestion-job record with its status, counts and errors.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
