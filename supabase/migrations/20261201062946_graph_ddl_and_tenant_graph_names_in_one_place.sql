-- graph ddl and tenant graph names in one place.
-- review: the HNSW graphs' statement (_model_graph_ddl) and the tenant graph's name pattern (_is_tenant_graph_name) each in one place
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._is_tenant_graph_name(index_name text)
returns boolean
language sql
immutable
set search_path to ''
as $function$
    select coalesce(index_name ~ '^chunks_hnsw_[0-9a-f]{12}_[0-9a-f]{32}$', false)
$function$;

create or replace function hipocampo_private._model_graph_ddl(index_name text, tbl text, dims integer, model_name text, tenant uuid)
returns text
language sql
immutable
set search_path to ''
as $function$
    select pg_catalog.format(
        'create index if not exists %I on hipocampo_private.%I '
        'using hnsw ((embedding::extensions.vector(%s)) extensions.vector_cosine_ops) '
        'with (m = 16, ef_construction = 64) where embedding_model = %L',
        index_name, tbl, dims, model_name
    ) || case when tenant is not null then pg_catalog.format(' and tenant_id = %L', tenant) else '' end
$function$;

create or replace function hipocampo.build_tenant_graphs()
returns jsonb
language plpgsql
set search_path to ''
set jit to 'off'
as $function$
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
$function$;

-- definer because creating an index needs ownership of the table.
create or replace function hipocampo_private._create_tenant_graph(model_name text, tenant uuid)
returns text
language plpgsql
security definer
set search_path to ''
as $function$
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
$function$;

-- definer because dropping an index needs ownership of the table.
create or replace function hipocampo_private._drop_tenant_graph(index_name text)
returns boolean
language plpgsql
security definer
set search_path to ''
as $function$
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
$function$;

-- definer because creating an index needs ownership of the tables.
create or replace function hipocampo_private._ensure_model_index(model_name text)
returns text
language plpgsql
security definer
set search_path to ''
as $function$
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
$function$;

revoke execute on function hipocampo_private._is_tenant_graph_name(index_name text) from public;
revoke execute on function hipocampo_private._model_graph_ddl(index_name text, tbl text, dims integer, model_name text, tenant uuid) from public;
grant execute on function hipocampo_private._is_tenant_graph_name(index_name text) to service_role;
