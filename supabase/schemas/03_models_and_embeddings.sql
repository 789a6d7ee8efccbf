-- Embedding models (issue 22): registering, activating and dropping a model, its HNSW indexes,
-- the search model during a switch, and the backfill that embeds what the active model lacks
-- (rows_to_embed / set_row_embeddings, sentences, retries and dead letters).

-- Function bodies may name objects of later schema files; they are checked when called.
set check_function_bodies = off;

/*
_model_index_name(tbl text, model_name text) -> text

Purpose: the name of one embedding model's partial HNSW index on a table (chunks, memories or
  memory_staging): <table>_embedding_hnsw_<the first 12 hex digits of md5(model)>, short enough
  for any model name. One place for the name _ensure_model_index creates and _drop_model_index
  drops.
Parameters: tbl - the table's name in hipocampo_private; model_name - the model.
Returns: the index name.
Errors: none.
Example: select hipocampo_private._model_index_name('chunks', 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo_private._model_index_name(tbl text, model_name text)
returns text
language sql
immutable
security invoker
set search_path = ''
as $$
    select tbl || '_embedding_hnsw_' || pg_catalog.substr(pg_catalog.md5(model_name), 1, 12)
$$;

/*
_model_graph_ddl(index_name text, tbl text, dims integer, model_name text, tenant uuid) -> text

Purpose: the statement that creates one HNSW graph of an embedding model, if missing: on
  hipocampo_private.<tbl>, over embedding::vector(dims), opclass vector_cosine_ops (retrieval
  orders by the cosine-distance operator <=>), m=16, ef_construction=64, partial on the model,
  and on the tenant when one is given (a tenant graph, build_tenant_graphs). The one place of the
  graphs' parameters (_ensure_model_index, _create_tenant_graph).
Parameters: index_name; tbl - chunks, memories or memory_staging; dims - the model's, 1..2000;
  model_name; tenant - null for the model's graph of every tenant.
Returns: the statement.
Errors: none.
Example: select hipocampo_private._model_graph_ddl('chunks_embedding_hnsw_…', 'chunks', 384,
  'multilingual-e5-small', null);
*/
create or replace function hipocampo_private._model_graph_ddl(
    index_name text, tbl text, dims integer, model_name text, tenant uuid
)
returns text
language sql
immutable
security invoker
set search_path = ''
as $$
    select pg_catalog.format(
        'create index if not exists %I on hipocampo_private.%I '
        'using hnsw ((embedding::extensions.vector(%s)) extensions.vector_cosine_ops) '
        'with (m = 16, ef_construction = 64) where embedding_model = %L',
        index_name, tbl, dims, model_name
    ) || case when tenant is not null then pg_catalog.format(' and tenant_id = %L', tenant) else '' end
$$;

/*
_ensure_model_index(model_name text) -> text

Purpose: create the partial HNSW indexes of one embedding model on chunks, memories and
  memory_staging, if missing (_model_graph_ddl: HNSW m=16, ef_construction=64, vector_cosine_ops).
Parameters: model_name - a registered model.
Returns: the chunks index name.
Errors: P0002 "unknown embedding model" when it is not registered.
Example: select hipocampo_private._ensure_model_index('all-MiniLM-L6-v2');
*/
-- definer because creating an index needs ownership of the tables.
create or replace function hipocampo_private._ensure_model_index(model_name text)
returns text
language plpgsql
security definer
set search_path = ''
as $$
declare
    m hipocampo_private.embedding_models;
    tbl text;
    idx text;
begin
    select * into m from hipocampo_private.embedding_models as e where e.name = model_name;
    if not found then
        raise exception 'unknown embedding model: %', model_name using errcode = 'P0002';
    end if;
    foreach tbl in array array['chunks', 'memories', 'memory_staging'] loop
        idx := hipocampo_private._model_index_name(tbl, m.name);
        execute hipocampo_private._model_graph_ddl(idx, tbl, m.dims, m.name, null);
    end loop;
    return hipocampo_private._model_index_name('chunks', m.name);
end;
$$;

/*
_drop_model_index(model_name text) -> boolean

Purpose: drop the partial HNSW index of one embedding model on chunks (defer_model_index).
Parameters: model_name - a registered model.
Returns: true when the index existed and was dropped.
Errors: P0002 "unknown embedding model: …" when it is not registered.
Example: select hipocampo_private._drop_model_index('all-MiniLM-L6-v2');
*/
-- definer because dropping an index needs ownership of the table.
create or replace function hipocampo_private._drop_model_index(model_name text)
returns boolean
language plpgsql
security definer
set search_path = ''
as $$
declare
    idx text := hipocampo_private._model_index_name('chunks', model_name);
begin
    if not exists (select 1 from hipocampo_private.embedding_models as e where e.name = model_name) then
        raise exception 'unknown embedding model: %', model_name using errcode = 'P0002';
    end if;
    if to_regclass('hipocampo_private.' || idx) is null then
        return false;
    end if;
    execute format('drop index hipocampo_private.%I', idx);
    return true;
end;
$$;

/*
defer_model_index(embedding_model text) -> boolean

Purpose: before a large first load of a model's chunks (the bulk path, `hipocampo ingest
  --defer-index`): drop the model's HNSW index on chunks, so the load does not add each chunk to
  the graph one by one; build_model_index builds it after the load in one pass (faster: 100k
  SciFact chunks, docs/BENCHMARKS.md §Bulk ingestion). Until then searches of knowledge bases
  over retrieval.exact_scan_max_rows chunks scan exactly (same results, slower): meant for a
  first load, before the knowledge bases serve.
Parameters: embedding_model - a registered model.
Returns: true when the index existed and was dropped; false when it was already absent.
Errors: 42501 for any caller but service_role (grant); P0002 "unknown embedding model: …".
Example: select hipocampo.defer_model_index('all-MiniLM-L6-v2');
*/
create or replace function hipocampo.defer_model_index(embedding_model text)
returns boolean
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
begin
    return hipocampo_private._drop_model_index(defer_model_index.embedding_model);
end;
$$;

comment on function hipocampo.defer_model_index(text) is
'Before a large first load: drop the model''s HNSW index on chunks (build_model_index builds it after).';

/*
_use_index_build_config() -> jsonb

Purpose: for an index build in this transaction (build_model_index, build_tenant_graphs): set
  maintenance_work_mem to maintenance.index_build_maintenance_work_mem_mb and
  max_parallel_maintenance_workers to maintenance.index_build_parallel_workers, from the global
  config row (config.toml's; for this transaction only).
Parameters: none.
Returns: the global row's maintenance section.
Errors: 55000 "maintenance config is incomplete: index_build_maintenance_work_mem_mb,
  index_build_parallel_workers" when the row lacks them (run `hipocampo db migrate`).
Example: select hipocampo_private._use_index_build_config();
*/
create or replace function hipocampo_private._use_index_build_config()
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    cfg jsonb := (
        select s.config -> 'maintenance' from hipocampo_private.settings as s
        where s.tenant_id is null
    );
begin
    if cfg ->> 'index_build_maintenance_work_mem_mb' is null or cfg ->> 'index_build_parallel_workers' is null then
        raise exception 'maintenance config is incomplete: index_build_maintenance_work_mem_mb, index_build_parallel_workers'
            using errcode = '55000';
    end if;
    perform pg_catalog.set_config(
        'maintenance_work_mem', (cfg ->> 'index_build_maintenance_work_mem_mb') || 'MB', true
    );
    perform pg_catalog.set_config(
        'max_parallel_maintenance_workers', cfg ->> 'index_build_parallel_workers', true
    );
    return cfg;
end;
$$;

/*
build_model_index(embedding_model text) -> text

Purpose: build the model's HNSW indexes (chunks, memories, memory_staging) that are missing,
  after defer_model_index and a bulk load: one pass over the rows with
  maintenance.index_build_maintenance_work_mem_mb of memory (the graph is built in memory when
  it fits) and maintenance.index_build_parallel_workers parallel workers (config rows, from
  config.toml; set for this transaction only). Writes to the tables wait while it builds.
Parameters: embedding_model - a registered model.
Returns: the chunks index name.
Errors: 42501 for any caller but service_role (grant); P0002 "unknown embedding model: …";
  55000 "maintenance config is incomplete: index_build_maintenance_work_mem_mb,
  index_build_parallel_workers" when the global row lacks them (run `hipocampo db migrate`:
  _use_index_build_config).
Example: select hipocampo.build_model_index('all-MiniLM-L6-v2');
*/
create or replace function hipocampo.build_model_index(embedding_model text)
returns text
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
begin
    perform hipocampo_private._use_index_build_config();
    return hipocampo_private._ensure_model_index(build_model_index.embedding_model);
end;
$$;

comment on function hipocampo.build_model_index(text) is
'Build the model''s missing HNSW indexes in one pass, with the maintenance config''s memory and workers.';

/*
_tenant_graph_name(model_name text, tenant uuid) -> text

Purpose: the name of one tenant's own HNSW graph of one embedding model on chunks (issue 60 §2):
  chunks_hnsw_<the first 12 hex digits of md5(model)>_<the tenant id's 32 hex digits>, 57
  characters. One place for the name _exact_scan_max looks up and build_tenant_graphs creates and
  drops.
Parameters: model_name - the model; tenant - the tenant.
Returns: the index name.
Errors: none.
Example: select hipocampo_private._tenant_graph_name('multilingual-e5-small', tenant);
*/
create or replace function hipocampo_private._tenant_graph_name(model_name text, tenant uuid)
returns text
language sql
immutable
security invoker
set search_path = ''
as $$
    select 'chunks_hnsw_' || pg_catalog.substr(pg_catalog.md5(model_name), 1, 12) || '_'
        || pg_catalog.replace(tenant::text, '-', '')
$$;

/*
_is_tenant_graph_name(index_name text) -> boolean

Purpose: whether a name is one _tenant_graph_name gives (chunks_hnsw_, 12 hex digits, _, 32 hex
  digits): how build_tenant_graphs finds the tenant graphs on chunks and _drop_tenant_graph
  refuses any other index.
Parameters: index_name - an index's name (null: false).
Returns: the verdict.
Errors: none.
Example: select hipocampo_private._is_tenant_graph_name('chunks_embedding_hnsw_005d4258d321'); -- false
*/
create or replace function hipocampo_private._is_tenant_graph_name(index_name text)
returns boolean
language sql
immutable
security invoker
set search_path = ''
as $$
    select coalesce(index_name ~ '^chunks_hnsw_[0-9a-f]{12}_[0-9a-f]{32}$', false)
$$;

/*
_create_tenant_graph(model_name text, tenant uuid) -> text

Purpose: create one tenant's own HNSW graph of a model on chunks, if missing: the model's graph
  (_model_graph_ddl) restricted to the tenant's chunks (a partial index on embedding_model and
  tenant_id). The dense leg's statement names both
  (parameters of a one-shot plan, so the predicate matches), and the planner takes the smaller
  graph.
Parameters: model_name - a registered model; tenant - a tenant.
Returns: the index name.
Errors: P0002 "unknown embedding model: …" when it is not registered.
Example: select hipocampo_private._create_tenant_graph('multilingual-e5-small', tenant);
*/
-- definer because creating an index needs ownership of the table.
create or replace function hipocampo_private._create_tenant_graph(model_name text, tenant uuid)
returns text
language plpgsql
security definer
set search_path = ''
as $$
declare
    m hipocampo_private.embedding_models;
    idx text := hipocampo_private._tenant_graph_name(model_name, tenant);
begin
    select * into m from hipocampo_private.embedding_models as e where e.name = model_name;
    if not found then
        raise exception 'unknown embedding model: %', model_name using errcode = 'P0002';
    end if;
    execute hipocampo_private._model_graph_ddl(idx, 'chunks', m.dims, m.name, tenant);
    return idx;
end;
$$;

/*
_drop_tenant_graph(index_name text) -> boolean

Purpose: drop one tenant graph of chunks (build_tenant_graphs, when its tenant shrank or left, or
  its model was dropped). Only an index on chunks named as _tenant_graph_name names them.
Parameters: index_name - the graph's name.
Returns: true when it existed and was dropped.
Errors: 22023 "not a tenant graph: …" for any other name.
Example: select hipocampo_private._drop_tenant_graph('chunks_hnsw_…');
*/
-- definer because dropping an index needs ownership of the table.
create or replace function hipocampo_private._drop_tenant_graph(index_name text)
returns boolean
language plpgsql
security definer
set search_path = ''
as $$
begin
    if not hipocampo_private._is_tenant_graph_name(index_name) then
        raise exception 'not a tenant graph: %', index_name using errcode = '22023';
    end if;
    if not exists (
        select 1 from pg_catalog.pg_index as i
        where i.indexrelid = pg_catalog.to_regclass('hipocampo_private.' || index_name)
          and i.indrelid = 'hipocampo_private.chunks'::regclass
    ) then
        return false;
    end if;
    execute format('drop index hipocampo_private.%I', index_name);
    return true;
end;
$$;

/*
_tenant_model_chunks() -> table (tenant_id uuid, model text, chunks bigint)

Purpose: how many chunks each tenant holds of each registered model (the sum of its knowledge
  bases' kb_text_stats): what build_tenant_graphs compares with maintenance.tenant_graph_min_chunks.
Parameters: none.
Returns: one row per (tenant, model) with chunks.
Errors: none (rows the caller cannot see are left out, RLS; service_role sees all).
Example: select * from hipocampo_private._tenant_model_chunks() order by chunks desc;
*/
create or replace function hipocampo_private._tenant_model_chunks()
returns table (tenant_id uuid, model text, chunks bigint)
language sql
stable
security invoker
set search_path = ''
as $$
    select st.tenant_id, st.embedding_model, sum(st.chunk_count)::bigint
    from hipocampo_private.kb_text_stats as st
    inner join hipocampo_private.embedding_models as m on m.name = st.embedding_model
    inner join hipocampo_private.tenants as t on t.id = st.tenant_id
    group by st.tenant_id, st.embedding_model
$$;

/*
build_tenant_graphs() -> jsonb

Purpose: an HNSW graph of its own for each tenant with many chunks of a model, and none for the
  others (issue 60 §2). A tenant's filtered walk of the model's one graph passes the other
  tenants' nodes (the smaller its share, the more), so a large tenant in a large database is
  neither walked nor scanned fast (docs/SCALE.md); in a graph of its own, its walk visits only
  its chunks. Builds a graph for every (tenant, model) holding at least
  maintenance.tenant_graph_min_chunks chunks (kb_text_stats), largest first; drops a graph whose
  tenant holds fewer than half of that (so a tenant near the bound is not rebuilt each run), is
  gone, or whose model is no longer registered. _exact_scan_max measures a scope against its
  tenant's graph when there is one, and the planner takes it. A graph repeats its chunks'
  entries of the model's graph (disk, and writes to both). Run by the maintenance schedule
  (hipocampo-tenant-graphs) or `hipocampo worker`; builds with the maintenance config's memory and
  workers, as build_model_index. One transaction: writes to chunks wait until it commits (the
  first run on benchmarks/tenants.py's million chunks built 22 graphs in 74 s; later runs build
  only the graphs of tenants that grew past the bound).
Parameters: none.
Returns: {"min_chunks": n, "built": [{"tenant_id", "model", "chunks", "ms"}, …],
  "dropped": ["<index name>", …]}.
Errors: 42501 for any caller but service_role (grant); 55000 "maintenance config is incomplete:
  tenant_graph_min_chunks" when the global row lacks it (run `hipocampo db migrate`), and as
  _use_index_build_config.
Example: select hipocampo.build_tenant_graphs();
*/
create or replace function hipocampo.build_tenant_graphs()
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    min_chunks bigint := (hipocampo_private._use_index_build_config() ->> 'tenant_graph_min_chunks')::bigint;
    keep text[];
    built jsonb := '[]';
    dropped jsonb := '[]';
    g record;
    t0 timestamptz;
begin
    if min_chunks is null then
        raise exception 'maintenance config is incomplete: tenant_graph_min_chunks' using errcode = '55000';
    end if;
    -- Step 1: drop the graphs no (tenant, model) of at least half the bound keeps.
    keep := array(
        select hipocampo_private._tenant_graph_name(z.model, z.tenant_id) from hipocampo_private._tenant_model_chunks() as z
        where z.chunks * 2 >= min_chunks
    );
    for g in
        select c.relname::text as name from pg_catalog.pg_index as i
        inner join pg_catalog.pg_class as c on c.oid = i.indexrelid
        where i.indrelid = 'hipocampo_private.chunks'::regclass
          and hipocampo_private._is_tenant_graph_name(c.relname) and c.relname <> all(keep)
        order by c.relname
    loop
        perform hipocampo_private._drop_tenant_graph(g.name);
        dropped := dropped || pg_catalog.to_jsonb(g.name);
    end loop;
    -- Step 2: build the missing graphs of the (tenant, model) pairs at or above the bound.
    for g in
        select z.tenant_id, z.model, z.chunks from hipocampo_private._tenant_model_chunks() as z
        where z.chunks >= min_chunks
          and pg_catalog.to_regclass(
              'hipocampo_private.' || hipocampo_private._tenant_graph_name(z.model, z.tenant_id)
          ) is null
        order by z.chunks desc, z.tenant_id, z.model
    loop
        t0 := pg_catalog.clock_timestamp();
        perform hipocampo_private._create_tenant_graph(g.model, g.tenant_id);
        built := built || pg_catalog.jsonb_build_object(
            'tenant_id', g.tenant_id, 'model', g.model, 'chunks', g.chunks,
            'ms', pg_catalog.round(
                (extract(epoch from pg_catalog.clock_timestamp() - t0) * 1000)::numeric, 1
            )
        );
    end loop;
    return pg_catalog.jsonb_build_object('min_chunks', min_chunks, 'built', built, 'dropped', dropped);
end;
$$;

comment on function hipocampo.build_tenant_graphs() is
'Give each tenant holding maintenance.tenant_graph_min_chunks chunks of a model an HNSW graph of its own; drop the ones no longer needed.';

/*
register_embedding_model(name text, provider text, dims integer, activate boolean default false) -> text

Purpose: add an embedding model to the registry beside the existing ones and create its
  partial HNSW index. Never changes the dims of a registered model.
Parameters: name; provider 'local' | 'openai' | 'azure'; dims 1..2000; activate - make it the default.
Returns: the HNSW index name.
Errors: 22023 "model … is registered with … dimensions" on a dims change; 23514 on bad values (null
  included: "an embedding model needs a name, a provider (local | openai | azure) and dims
  1..2000").
Example: select hipocampo.register_embedding_model('all-MiniLM-L6-v2', 'local', 384, true);
*/
create or replace function hipocampo.register_embedding_model(
    name text, provider text, dims integer, activate boolean default false
)
returns text
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    existing integer;
begin
    if register_embedding_model.name is null or register_embedding_model.provider is null
        or register_embedding_model.dims is null then
        raise exception 'an embedding model needs a name, a provider (local | openai | azure) and dims 1..2000'
            using errcode = '23514';
    end if;
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

comment on function hipocampo.register_embedding_model(text, text, integer, boolean) is
'Register an embedding model beside the others and create its partial HNSW index.';

/*
activate_embedding_model(name text) -> void

Purpose: confirm the switch to a registered model: it becomes the default of retrieval, and its
  calibration (model_calibrations) the thresholds in force (effective_config).
Returns: nothing.
Errors: 42501 for any role but service_role (no EXECUTE); P0002 "unknown embedding model"; 55000
  "embedding model <name> has no calibration: run hipocampo calibrate --model <name> --write".
Example: select hipocampo.activate_embedding_model('text-embedding-3-small');
*/
create or replace function hipocampo.activate_embedding_model(name text)
returns void
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
begin
    if not exists (
        select 1 from hipocampo_private.embedding_models as e
        where e.name = activate_embedding_model.name
    ) then
        raise exception 'unknown embedding model: %', activate_embedding_model.name
            using errcode = 'P0002';
    end if;
    perform hipocampo_private._calibration(activate_embedding_model.name, true);
    update hipocampo_private.embedding_models as e set active = false
    where e.active and e.name <> activate_embedding_model.name;
    update hipocampo_private.embedding_models as e set active = true, activated_at = now()
    where e.name = activate_embedding_model.name;
end;
$$;

comment on function hipocampo.activate_embedding_model(text) is
'Make a registered embedding model the default of retrieval.';

/*
_search_model(tenant_id uuid, kb_ids uuid[]) -> text

Purpose: the embedding model a search of these knowledge bases reads when the caller names none.
  The active model once every chunk of the scope has a row of it. During a switch (the new model
  active, its rows being added by the backfill, rows_to_embed / set_row_embeddings), the most
  recently active model that has a row for every chunk of the scope: search keeps answering from
  it until the scope is complete, then moves, knowledge base by knowledge base. With one model
  registered, that one; a model no chunk of the scope lacks by kb_text_stats (the chunks' counts
  per knowledge base and model), that one: no scan of the chunks either way.
Parameters: tenant_id - the resolved tenant; kb_ids - the scope (null: all its knowledge bases).
Returns: a model's name; null when no model is active.
Errors: none.
Example: select hipocampo_private._search_model(t, array[kb]);
*/
create or replace function hipocampo_private._search_model(tenant_id uuid, kb_ids uuid[])
returns text
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    active text;
    candidate text;
    scope uuid[] := _search_model.kb_ids;
begin
    select e.name into active from hipocampo_private.embedding_models as e where e.active;
    if active is null or (select count(*) from hipocampo_private.embedding_models) = 1 then
        return active;
    end if;
    if scope is null then
        scope := array(select k.id from hipocampo_private.knowledge_bases as k where k.tenant_id = _search_model.tenant_id);
    end if;
    -- One model at a time, the active one first: with the model a constant, each chunk of the
    -- scope without a row of it is one probe of chunks_tenant_hash_model_key (as one statement
    -- over every model, the plan hashed that whole index, every chunk of every tenant, per search).
    for candidate in
        select m.name from hipocampo_private.embedding_models as m
        where m.active or m.activated_at is not null
        order by m.active desc, m.activated_at desc, m.name
    loop
        -- No chunk of the scope has another model (kb_text_stats counts the chunks per knowledge
        -- base and model, kept by the chunks' triggers): nothing to probe. The usual case, one
        -- model's chunks, in a database that has known two models (a scan of the scope before).
        if not exists (
            select 1 from hipocampo_private.kb_text_stats as st
            where st.tenant_id = _search_model.tenant_id and st.kb_id = any(scope)
              and st.embedding_model <> candidate and st.chunk_count > 0
        ) then
            return candidate;
        end if;
        if not exists (
            select 1 from hipocampo_private.chunks as c
            where c.tenant_id = _search_model.tenant_id
              and c.kb_id = any(scope)
              and c.embedding_model <> candidate
              and not exists (
                  select 1 from hipocampo_private.chunks as n
                  where n.tenant_id = c.tenant_id and n.content_hash = c.content_hash and n.embedding_model = candidate
              )
        ) then
            return candidate;
        end if;
    end loop;
    return active;
end;
$$;

/*
search_model(kb_ids uuid[] default null, tenant_id uuid default null) -> text

Purpose: the embedding model whose query vector a search of these knowledge bases needs now:
  hybrid_search and answer_evidence read this model when the call names none. The active model;
  during a switch, the previously active one until every chunk of these knowledge bases has a row
  of the active model (_search_model). Clients embed the question with it (Orchestrator.ask,
  hipocampo search).
Parameters: kb_ids - the knowledge bases to search (null: all of the tenant's); tenant_id -
  service_role only.
Returns: a model's name; null when no model is active.
Errors: 42501 as _resolve_tenant.
Example: select hipocampo.search_model(array[kb]);
*/
create or replace function hipocampo.search_model(kb_ids uuid[] default null, tenant_id uuid default null)
returns text
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
begin
    return hipocampo_private._search_model(hipocampo_private._resolve_tenant(search_model.tenant_id), kb_ids);
end;
$$;

comment on function hipocampo.search_model(uuid[], uuid) is
'The embedding model a search of these knowledge bases reads now: the active one, or during a switch the previous one until they are complete.';

/*
drop_embedding_model(name text) -> bigint

Purpose: after a confirmed switch, delete an inactive model's chunk rows (embeddings) and its
  registry row. Memories that are no longer active (deprecated, deleted, expired: history no
  search reads) lose their vectors of that model; every chunk of it (a chunk's row holds the only
  copy of its text), active and staged memory and message must have been given the active
  model's first (rows_to_embed / set_row_embeddings), so a drop never deletes text.
Returns: number of chunk rows deleted.
Errors: P0002 "unknown embedding model"; 55000 "model … is active" for the active model; 55000
  "model <name> still embeds N chunks, N active memories, N staged memories and N messages that
  the active model does not: embed them with the active model first (hipocampo db
  embed-missing)".
Example: select hipocampo.drop_embedding_model('old-model');
*/
create or replace function hipocampo.drop_embedding_model(name text)
returns bigint
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    is_active boolean;
    n bigint;
    n_memories bigint;
    n_staged bigint;
    n_messages bigint;
    n_chunks bigint;
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
    select count(*) into n_memories from hipocampo_private.memories as m
    where m.embedding_model = drop_embedding_model.name and m.status = 'active';
    select count(*) into n_staged from hipocampo_private.memory_staging as s
    where s.embedding_model = drop_embedding_model.name;
    select count(*) into n_messages from hipocampo_private.messages as m
    where m.embedding_model = drop_embedding_model.name;
    -- A chunk whose content has no row of the active model would leave with its only text.
    select count(*) into n_chunks from hipocampo_private.chunks as c
    where c.embedding_model = drop_embedding_model.name
      and not exists (
          select 1 from hipocampo_private.chunks as k
          inner join hipocampo_private.embedding_models as e on e.name = k.embedding_model and e.active
          where k.tenant_id = c.tenant_id and k.content_hash = c.content_hash
      );
    if n_chunks + n_memories + n_staged + n_messages > 0 then
        raise exception 'model % still embeds % chunks, % active memories, % staged memories and % messages that the active model does not: embed them with the active model first (hipocampo db embed-missing)',
            drop_embedding_model.name, n_chunks, n_memories, n_staged, n_messages using errcode = '55000';
    end if;
    update hipocampo_private.memories as m set embedding = null, embedding_model = null
    where m.embedding_model = drop_embedding_model.name;
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

comment on function hipocampo.drop_embedding_model(text) is
'Delete an inactive model''s embeddings and registry row, after a confirmed switch; refused while any row would lose its only text or vector.';

/*
_embedding_kind(kind text) -> text

Purpose: the kind of row the embedding backfill handles, checked (rows_to_embed,
  set_row_embeddings, record_embedding_failure, requeue_embedding_failures).
Parameters: kind - chunks | memories | memory_staging | messages.
Returns: kind.
Errors: 22023 "kind must be chunks, memories, memory_staging or messages".
Example: perform hipocampo_private._embedding_kind(kind);
*/
create or replace function hipocampo_private._embedding_kind(kind text)
returns text
language plpgsql
immutable
security invoker
set search_path = ''
as $$
begin
    if kind is null or kind not in ('chunks', 'memories', 'memory_staging', 'messages') then
        raise exception 'kind must be chunks, memories, memory_staging or messages' using errcode = '22023';
    end if;
    return kind;
end;
$$;

/*
rows_to_embed(kind text, batch_size integer default 100, after_id text default null)
  -> table (row_id text, content text)

Purpose: rows that search cannot read with the active model - no embedding, or one of another
  model: chunks whose content has no chunk of the active model ('chunks', one per content hash
  of a tenant, with the text ingestion embeds: its contextual header - metadata.title, the
  document's title and the chunk's heading path; the document's title without one -, a newline,
  the content),
  active memories ('memories') and staged memories ('memory_staging') with their description,
  messages ('messages') with their content. The listed rows stay locked (for update
  skip locked) until the caller's transaction ends: store their vectors with set_row_embeddings
  in the same transaction; concurrent workers take other rows, and a worker that dies leaves its
  rows to the next (its transaction rolls back). Rows whose embedding failed wait for their retry
  time and dead-lettered ones are left out (record_embedding_failure).
Parameters: kind chunks | memories | memory_staging | messages; batch_size 1..1000 rows;
  after_id - only rows with a greater id (a caller's cursor: a chunk's or message's number, a
  memory's uuid, as text).
Returns: at most batch_size rows by id: row_id (the id as text) and the text to embed.
Errors: 22023 "kind must be chunks, memories, memory_staging or messages"; 22023 "batch_size must be
  1..1000"; 22023 "after_id of <kind> must be an id as rows_to_embed gives it (got …)"; 55000 "no
  embedding model is active".
Example: select row_id, content from hipocampo.rows_to_embed('messages', 100);
*/
create or replace function hipocampo.rows_to_embed(kind text, batch_size integer default 100, after_id text default null)
returns table (row_id text, content text)
language plpgsql
volatile
security invoker
set search_path = ''
set jit = off
as $$
declare
    model text;
begin
    perform hipocampo_private._embedding_kind(kind);
    if batch_size is null or batch_size not between 1 and 1000 then
        raise exception 'batch_size must be 1..1000' using errcode = '22023';
    end if;
    -- A chunk's or message's cursor is a number, a memory's a uuid.
    begin
        if kind in ('chunks', 'messages') then
            perform rows_to_embed.after_id::bigint;
        else
            perform rows_to_embed.after_id::uuid;
        end if;
    exception when invalid_text_representation or numeric_value_out_of_range then
        raise exception 'after_id of % must be an id as rows_to_embed gives it (got %)', kind, after_id
            using errcode = '22023';
    end;
    select e.name into model from hipocampo_private.embedding_models as e where e.active;
    if model is null then
        raise exception 'no embedding model is active' using errcode = '55000';
    end if;
    if kind = 'chunks' then
        return query
        -- The contextual header ingestion embedded (the title and the chunk's heading path).
        select c.id::text, coalesce(c.metadata ->> 'title', d.title) || E'\n' || c.content
        from hipocampo_private.chunks as c
        inner join hipocampo_private.documents as d on d.id = c.document_id
        where c.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or c.id > rows_to_embed.after_id::bigint)
          -- One source row per content: the oldest, of whichever model.
          and c.id = (
              select min(o.id) from hipocampo_private.chunks as o
              where o.tenant_id = c.tenant_id and o.content_hash = c.content_hash
          )
          and not exists (
              select 1 from hipocampo_private.chunks as n
              where n.tenant_id = c.tenant_id and n.content_hash = c.content_hash and n.embedding_model = model
          )
          and not exists (
              select 1 from hipocampo_private.embedding_failures as f
              where f.kind = 'chunks' and f.row_id = c.id::text and (f.dead or f.next_attempt_at > now())
          )
        order by c.id
        limit batch_size
        for update of c skip locked;
    elsif kind = 'memories' then
        return query
        select m.id::text, m.description from hipocampo_private.memories as m
        where m.status = 'active' and m.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or m.id > rows_to_embed.after_id::uuid)
          and not exists (
              select 1 from hipocampo_private.embedding_failures as f
              where f.kind = 'memories' and f.row_id = m.id::text and (f.dead or f.next_attempt_at > now())
          )
        order by m.id
        limit batch_size
        for update of m skip locked;
    elsif kind = 'memory_staging' then
        return query
        select s.id::text, s.description from hipocampo_private.memory_staging as s
        where s.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or s.id > rows_to_embed.after_id::uuid)
          and not exists (
              select 1 from hipocampo_private.embedding_failures as f
              where f.kind = 'memory_staging' and f.row_id = s.id::text and (f.dead or f.next_attempt_at > now())
          )
        order by s.id
        limit batch_size
        for update of s skip locked;
    else
        return query
        select m.id::text, m.content from hipocampo_private.messages as m
        where m.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or m.id > rows_to_embed.after_id::bigint)
          and not exists (
              select 1 from hipocampo_private.embedding_failures as f
              where f.kind = 'messages' and f.row_id = m.id::text and (f.dead or f.next_attempt_at > now())
          )
        order by m.id
        limit batch_size
        for update of m skip locked;
    end if;
end;
$$;

comment on function hipocampo.rows_to_embed(text, integer, text) is
'Chunks, active and staged memories and messages without an embedding of the active model (locked for the caller''s transaction): the work list after a model switch.';

/*
set_row_embeddings(kind text, items jsonb) -> integer

Purpose: store embeddings of the active model for rows rows_to_embed listed. A chunk gets a new
  row of the active model beside its source row (as ingestion adds a model's chunks: postings
  and statistics by the chunks triggers); a chunk of that content already there is kept. A
  memory or message that already has an embedding of the active model keeps it (a repeated
  call changes nothing). A stored row
  leaves the retry bookkeeping (embedding_failures). A message's
  tokens belong to its embedding's model, so they are cleared with it (the token backfill,
  messages_without_tokens, lists the message again).
Parameters: kind as rows_to_embed; items - [{"id": "<a chunk's or message's number, or a uuid>", "embedding":
  [floats]}].
Returns: the number of rows updated.
Errors: 22023 "kind must be chunks, memories, memory_staging or messages"; 22023 "items must be a json
  array"; 22023 "invalid item <id>: …" (an id of the wrong kind, an embedding that is not a
  vector); 22000 "embedding has N dimensions; model M expects D"; 55000 "no embedding model is
  active".
Example: select hipocampo.set_row_embeddings('messages', '[{"id": "42", "embedding": [0.1, …]}]');
*/
create or replace function hipocampo.set_row_embeddings(kind text, items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    item jsonb;
    v extensions.vector;
    model text;
    n integer := 0;
    one integer;
begin
    perform hipocampo_private._embedding_kind(kind);
    if items is null or jsonb_typeof(items) <> 'array' then
        raise exception 'items must be a json array' using errcode = '22023';
    end if;
    if not exists (select 1 from hipocampo_private.embedding_models as e where e.active) then
        raise exception 'no embedding model is active' using errcode = '55000';
    end if;
    for item in select x from jsonb_array_elements(items) as x loop
        v := (item ->> 'embedding')::extensions.vector;
        model := hipocampo_private._active_model(v, 'embedding');
        if kind = 'chunks' then
            insert into hipocampo_private.chunks (
                tenant_id, kb_id, document_id, chunk_index, content, token_count, metadata, content_hash,
                ts_config, embedding, embedding_model, expires_at
            )
            select o.tenant_id, o.kb_id, o.document_id, o.chunk_index, o.content, o.token_count, o.metadata,
                o.content_hash, o.ts_config, v, model, o.expires_at
            from hipocampo_private.chunks as o
            where o.id = (item ->> 'id')::bigint
            on conflict on constraint chunks_tenant_hash_model_key do nothing;
        elsif kind = 'memories' then
            update hipocampo_private.memories as m set embedding = v, embedding_model = model
            where m.id = (item ->> 'id')::uuid and m.embedding_model is distinct from model;
        elsif kind = 'memory_staging' then
            update hipocampo_private.memory_staging as s set embedding = v, embedding_model = model
            where s.id = (item ->> 'id')::uuid and s.embedding_model is distinct from model;
        else
            update hipocampo_private.messages as m
            set embedding = v, embedding_model = model, token_ids = null, token_bits = null
            where m.id = (item ->> 'id')::bigint and m.embedding_model is distinct from model;
        end if;
        get diagnostics one = row_count;
        n := n + one;
        -- Embedded now (or already): no longer a failure waiting for its retry.
        delete from hipocampo_private.embedding_failures as f
        where f.kind = set_row_embeddings.kind and f.row_id = item ->> 'id';
    end loop;
    return n;
exception when invalid_text_representation or numeric_value_out_of_range then
    raise exception 'invalid item %: %', item ->> 'id', sqlerrm using errcode = '22023';
end;
$$;

comment on function hipocampo.set_row_embeddings(text, jsonb) is
'Store embeddings of the active model for rows rows_to_embed listed (a chunk gets a row of the active model; a message''s tokens are cleared with its old embedding).';

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
set jit = off
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
  22023 "sentence_embeddings of chunk <id> must be a json array of 1 to 64 embeddings"; 22023
  "invalid item <id>: …" (an id that is not a number, a sentence embedding that is not a
  vector); 22000 "a sentence embedding of chunk <id> has n dimensions; its model expects d".
Example: select hipocampo.set_chunk_sentences('[{"id": "42", "sentence_embeddings": ["[0.1,…]"]}]');
*/
create or replace function hipocampo.set_chunk_sentences(items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
set jit = off
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
exception when invalid_text_representation or numeric_value_out_of_range then
    raise exception 'invalid item %: %', item ->> 'id', sqlerrm using errcode = '22023';
end;
$$;

comment on function hipocampo.set_chunk_sentences(jsonb) is
'Store chunks'' sentence embeddings (the sentence backfill; service_role).';

/*
record_embedding_failure(kind text, row_ids text[], error text) -> jsonb

Purpose: the retry bookkeeping of the embedding backfill (issue 20 §4): rows rows_to_embed listed
  whose vectors could not be computed (the provider failed) are retried after
  maintenance.embedding_retry_seconds * 2^(attempts - 1), at most
  maintenance.embedding_retry_max_seconds, and dead-lettered (no longer listed) after
  maintenance.embedding_max_attempts failures, keeping the last error. A row embedded later
  (set_row_embeddings) leaves the table.
Parameters: kind chunks | memories | memory_staging | messages; row_ids - the rows' ids as rows_to_embed
  gave them; error - what failed (up to 2,000 characters kept).
Returns: {"retrying": n, "dead": n} after this failure.
Errors: 42501 for any role but service_role (no EXECUTE); 22023 "kind must be chunks, memories,
  memory_staging or messages"; 55000 "maintenance config is incomplete: …".
Example: select hipocampo.record_embedding_failure('messages', array['42'], 'HTTP 503 from the provider');
*/
create or replace function hipocampo.record_embedding_failure(kind text, row_ids text[], error text)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    m jsonb := (select s.config -> 'maintenance' from hipocampo_private.settings as s where s.tenant_id is null);
    max_attempts integer := (m ->> 'embedding_max_attempts')::integer;
    base double precision := (m ->> 'embedding_retry_seconds')::double precision;
    cap double precision := (m ->> 'embedding_retry_max_seconds')::double precision;
    result jsonb;
begin
    perform hipocampo_private._embedding_kind(kind);
    if max_attempts is null or base is null or cap is null then
        raise exception 'maintenance config is incomplete: embedding_max_attempts, embedding_retry_seconds, embedding_retry_max_seconds (seed it from config.toml: hipocampo db migrate)'
            using errcode = '55000';
    end if;
    with failed as (
        insert into hipocampo_private.embedding_failures as f
            (kind, row_id, attempts, last_error, next_attempt_at, dead)
        select record_embedding_failure.kind, r, 1, left(coalesce(error, 'unknown error'), 2000),
            now() + make_interval(secs => least(base, cap)), max_attempts <= 1
        from (select distinct unnest(row_ids) as r) as ids
        where r is not null
        on conflict on constraint embedding_failures_pkey do update
        set attempts = f.attempts + 1,
            last_error = excluded.last_error,
            next_attempt_at = now() + make_interval(secs => least(base * power(2, f.attempts), cap)),
            dead = f.attempts + 1 >= max_attempts,
            updated_at = now()
        returning f.dead
    )
    select jsonb_build_object(
        'retrying', count(*) filter (where not failed.dead), 'dead', count(*) filter (where failed.dead)
    ) into result
    from failed;
    return result;
end;
$$;

comment on function hipocampo.record_embedding_failure(text, text[], text) is
'Record that rows could not be embedded: retried with exponential backoff, dead-lettered after maintenance.embedding_max_attempts.';

/*
requeue_embedding_failures(kind text default null) -> integer

Purpose: give dead-lettered rows (and those waiting for a retry) back to the backfill at once,
  e.g. after the provider is fixed: their failure records are deleted, so rows_to_embed lists them
  again.
Parameters: kind - chunks | memories | memory_staging | messages, or null for all.
Returns: the number of rows requeued.
Errors: 42501 for any role but service_role (no EXECUTE); 22023 on an unknown kind.
Example: select hipocampo.requeue_embedding_failures('messages');
*/
create or replace function hipocampo.requeue_embedding_failures(kind text default null)
returns integer
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    n integer;
begin
    if kind is not null then
        perform hipocampo_private._embedding_kind(kind);
    end if;
    delete from hipocampo_private.embedding_failures as f
    where requeue_embedding_failures.kind is null or f.kind = requeue_embedding_failures.kind;
    get diagnostics n = row_count;
    return n;
end;
$$;

comment on function hipocampo.requeue_embedding_failures(text) is
'Give dead-lettered and waiting rows back to the embedding backfill.';

/*
active_embedding_model() -> table (name text, provider text, dims integer, distance text)

Purpose: the embedding model search reads (the registry's active row); no row when none is
  active.
Returns: at most one row.
Errors: 42501 as _caller.
Example: select name, dims from hipocampo.active_embedding_model();
*/
create or replace function hipocampo.active_embedding_model()
returns table (name text, provider text, dims integer, distance text)
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
begin
    perform hipocampo_private._caller();
    return query
    select e.name, e.provider, e.dims, e.distance from hipocampo_private.embedding_models as e where e.active;
end;
$$;

comment on function hipocampo.active_embedding_model() is 'The active embedding model of the registry.';
