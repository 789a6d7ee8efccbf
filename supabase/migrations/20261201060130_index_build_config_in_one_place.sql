-- index build config in one place.
-- build_model_index and build_tenant_graphs set the index build's memory and workers through _use_index_build_config
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._use_index_build_config()
returns jsonb
language plpgsql
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo.build_model_index(embedding_model text)
returns text
language plpgsql
set search_path to ''
set jit to 'off'
as $function$
begin
    perform hipocampo_private._use_index_build_config();
    return hipocampo_private._ensure_model_index(build_model_index.embedding_model);
end;
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
          and c.relname ~ '^chunks_hnsw_[0-9a-f]{12}_[0-9a-f]{32}$' and c.relname <> all(keep)
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

revoke execute on function hipocampo_private._use_index_build_config() from public;
grant execute on function hipocampo_private._use_index_build_config() to service_role;
