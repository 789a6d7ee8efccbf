-- tenant graphs.
-- issue 60 §2: a large tenant's own HNSW graph (build_tenant_graphs), measured by _exact_scan_max
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo_private._exact_scan_max(scope_rows bigint, model text, settings jsonb);

set check_function_bodies = off;

create or replace function hipocampo.build_tenant_graphs()
returns jsonb
language plpgsql
set search_path to ''
set jit to 'off'
as $function$
declare
    cfg jsonb := (
        select s.config -> 'maintenance' from hipocampo_private.settings as s
        where s.tenant_id is null
    );
    min_chunks bigint := (cfg ->> 'tenant_graph_min_chunks')::bigint;
    keep text[];
    built jsonb := '[]';
    dropped jsonb := '[]';
    g record;
    t0 timestamptz;
begin
    if min_chunks is null or cfg ->> 'index_build_maintenance_work_mem_mb' is null
        or cfg ->> 'index_build_parallel_workers' is null then
        raise exception 'maintenance config is incomplete: tenant_graph_min_chunks, '
            'index_build_maintenance_work_mem_mb, index_build_parallel_workers' using errcode = '55000';
    end if;
    perform pg_catalog.set_config(
        'maintenance_work_mem', (cfg ->> 'index_build_maintenance_work_mem_mb') || 'MB', true
    );
    perform pg_catalog.set_config(
        'max_parallel_maintenance_workers', cfg ->> 'index_build_parallel_workers', true
    );
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
    execute format(
        'create index if not exists %I on hipocampo_private.chunks '
        'using hnsw ((embedding::extensions.vector(%s)) extensions.vector_cosine_ops) '
        'with (m = 16, ef_construction = 64) where embedding_model = %L and tenant_id = %L',
        idx, m.dims, m.name, tenant
    );
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
    if index_name is null or index_name !~ '^chunks_hnsw_[0-9a-f]{12}_[0-9a-f]{32}$' then
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

create or replace function hipocampo_private._exact_scan_max(scope_rows bigint, model text, settings jsonb, tenant uuid)
returns bigint
language sql
stable
set search_path to ''
as $function$
    select case when coalesce(
        _exact_scan_max.scope_rows::double precision * _exact_scan_max.scope_rows
        <= (_exact_scan_max.settings ->> 'hnsw_visit_cost')::double precision
        * (_exact_scan_max.settings ->> 'candidates')::integer * coalesce(
            (
                select c.reltuples from pg_catalog.pg_class as c
                where c.oid = pg_catalog.to_regclass(
                    'hipocampo_private.'
                    || hipocampo_private._tenant_graph_name(_exact_scan_max.model, _exact_scan_max.tenant)
                ) and c.reltuples > 0
            ),
            (
                select c.reltuples from pg_catalog.pg_class as c
                where c.oid = pg_catalog.to_regclass(
                    'hipocampo_private.' || hipocampo_private._model_index_name('chunks', _exact_scan_max.model)
                )
            )
        ), false)
        then greatest(_exact_scan_max.scope_rows, (_exact_scan_max.settings ->> 'exact_scan_max_rows')::bigint)
        else (_exact_scan_max.settings ->> 'exact_scan_max_rows')::bigint
    end
$function$;

create or replace function hipocampo_private._tenant_graph_name(model_name text, tenant uuid)
returns text
language sql
immutable
set search_path to ''
as $function$
    select 'chunks_hnsw_' || pg_catalog.substr(pg_catalog.md5(model_name), 1, 12) || '_'
        || pg_catalog.replace(tenant::text, '-', '')
$function$;

create or replace function hipocampo_private._tenant_model_chunks()
returns table (tenant_id uuid, model text, chunks bigint)
language sql
stable
set search_path to ''
as $function$
    select st.tenant_id, st.embedding_model, sum(st.chunk_count)::bigint
    from hipocampo_private.kb_text_stats as st
    inner join hipocampo_private.embedding_models as m on m.name = st.embedding_model
    inner join hipocampo_private.tenants as t on t.id = st.tenant_id
    group by st.tenant_id, st.embedding_model
$function$;

create or replace function hipocampo.schedule_maintenance()
returns jsonb
language plpgsql
set search_path to ''
set jit to 'off'
as $function$
declare
    cfg jsonb := (select s.config -> 'maintenance' from hipocampo_private.settings as s where s.tenant_id is null);
    jobs jsonb;
    job record;
begin
    if not exists (select 1 from pg_catalog.pg_extension where extname = 'pg_cron') then
        raise exception 'pg_cron is not installed: enable it (on Supabase: Integrations → Cron), then call '
            'hipocampo.schedule_maintenance() again' using errcode = '55000';
    end if;
    jobs := jsonb_build_object(
        'hipocampo-memory-maintenance',
        jsonb_build_array(cfg ->> 'memory_cron', 'select hipocampo.run_memory_maintenance()'),
        'hipocampo-session-purge',
        jsonb_build_array(cfg ->> 'session_purge_cron', 'select hipocampo.purge_sessions()'),
        'hipocampo-retention-purge',
        jsonb_build_array(cfg ->> 'retention_cron', 'select hipocampo.purge_expired()'),
        'hipocampo-transient-purge',
        jsonb_build_array(cfg ->> 'transient_purge_cron', 'select hipocampo.purge_transient_state()'),
        'hipocampo-interrupted-ingestion',
        jsonb_build_array(cfg ->> 'ingestion_recovery_cron', 'select hipocampo.recover_ingestion_jobs()'),
        'hipocampo-read-queue',
        jsonb_build_array(cfg ->> 'read_queue_cron', 'select hipocampo.drain_read_queue()'),
        'hipocampo-tenant-graphs',
        jsonb_build_array(cfg ->> 'tenant_graphs_cron', 'select hipocampo.build_tenant_graphs()')
    );
    if exists (select 1 from jsonb_each(jobs) as j where j.value ->> 0 is null) then
        raise exception 'maintenance config is incomplete: seed it from config.toml (hipocampo db migrate)'
            using errcode = '55000';
    end if;
    for job in select j.key, j.value from jsonb_each(jobs) as j loop
        perform cron.schedule(job.key, job.value ->> 0, job.value ->> 1);
    end loop;
    return (select jsonb_object_agg(j.key, j.value -> 0) from jsonb_each(jobs) as j);
end;
$function$;

create or replace function hipocampo_private._dense_leg(tenant uuid, scope uuid[], model text, dims integer, query_embedding extensions.vector, source_types text[], metadata_filter jsonb, settings jsonb, out ids bigint[], out sims double precision[])
returns record
language plpgsql
set search_path to ''
as $function$
declare
    n_cand integer := (settings ->> 'candidates')::integer;
    min_sim double precision := (settings ->> 'min_similarity')::double precision;
    exact_max bigint;
    scope_rows bigint;
    dense_sql text;
    lim integer;
    above bigint;
begin
    select coalesce(sum(st.chunk_count), 0) into scope_rows from hipocampo_private.kb_text_stats as st
    where st.kb_id = any(scope) and st.embedding_model = model;
    exact_max := hipocampo_private._exact_scan_max(scope_rows, model, settings, tenant);
    if scope_rows > exact_max or dims > 640 then
        if scope_rows > exact_max then
            perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
            perform set_config('hnsw.ef_search',
                greatest((settings ->> 'hnsw_ef_search')::integer, n_cand)::text, true);
        end if;
        dense_sql := format(
            'with nn as ('
            'select c.id, c.document_id, 1 - (c.embedding%1$s operator(extensions.<=>) $1) as sim '
            'from hipocampo_private.chunks as c '
            'where c.tenant_id = $2 and c.kb_id = any($3) and c.embedding_model = $4 '
            'and ($6::jsonb is null or c.metadata @> $6) '
            'and (c.expires_at is null or c.expires_at > now()) '
            'order by (c.embedding%1$s operator(extensions.<=>) $1) '
            'limit $9), '
            'ok as (select nn.id, nn.sim from nn '
            'join hipocampo_private.documents as d on d.id = nn.document_id '
            'where d.status = ''active'' and ($5::text[] is null or d.source_type = any($5)) '
            'and nn.sim >= $8 order by nn.sim desc, nn.id limit $7) '
            'select coalesce(array_agg(ok.id order by ok.sim desc, ok.id), ''{}''), '
            'coalesce(array_agg(ok.sim order by ok.sim desc, ok.id), ''{}''), '
            '(select count(*) from nn where nn.sim >= $8) from ok',
            case when scope_rows > exact_max then format('::extensions.vector(%s)', dims) else '' end
        );
    end if;
    -- The index returns the nearest n_cand first (each further row of an HNSW scan costs a graph
    -- step: 4 * n_cand rows took 2.7 ms where n_cand took 1.1 at 5k chunks); the exact scan
    -- reads every chunk anyway and keeps the nearest 4 * n_cand.
    lim := case when scope_rows > exact_max then n_cand else n_cand * 4 end;
    loop
        if dense_sql is not null then
            execute dense_sql into ids, sims, above
            using query_embedding, tenant, scope, model, source_types, metadata_filter, n_cand, min_sim, lim;
        else
            -- From the covering index chunks_scope_vectors_idx (an index-only scan: its predicate
            -- is repeated so that a cached generic plan can use it), one index range per knowledge
            -- base: with "kb_id = any(scope)" the generic plan scanned the whole table whenever
            -- one tenant held most chunks ("offset 0" keeps the range a parameterised scan). The
            -- metadata filter, not in the index, is checked on the nearest with the document
            -- filters; the second pass covers what it drops, so the rows are those of filtering first.
            with nn as (
                select c.id, c.document_id, 1 - (c.embedding operator(extensions.<=>) query_embedding) as sim
                from unnest(scope) as sc (kb_id)
                cross join lateral (
                    select ch.id, ch.document_id, ch.embedding
                    from hipocampo_private.chunks as ch
                    where ch.tenant_id = tenant and ch.kb_id = sc.kb_id and ch.embedding_model = model
                      and extensions.vector_dims(ch.embedding) <= 640
                      and (ch.expires_at is null or ch.expires_at > now())
                    offset 0
                ) as c
                order by sim desc
                limit lim
            ),
            ok as (
                select nn.id, nn.sim from nn
                inner join hipocampo_private.documents as d on d.id = nn.document_id
                where d.status = 'active'
                  and (_dense_leg.source_types is null or d.source_type = any(_dense_leg.source_types))
                  and nn.sim >= min_sim
                  and (_dense_leg.metadata_filter is null or exists (
                      select 1 from hipocampo_private.chunks as m
                      where m.id = nn.id and m.metadata @> _dense_leg.metadata_filter
                  ))
                order by nn.sim desc, nn.id
                limit n_cand
            )
            select coalesce(array_agg(ok.id order by ok.sim desc, ok.id), '{}'),
                coalesce(array_agg(ok.sim order by ok.sim desc, ok.id), '{}'),
                (select count(*) from nn where nn.sim >= min_sim)
            into ids, sims, above
            from ok;
        end if;
        -- Again with more rows (4 * n_cand, then the whole scope) while the filters leave too few.
        exit when cardinality(ids) >= n_cand or lim > scope_rows or above <= cardinality(ids);
        lim := case when lim < n_cand * 4 then n_cand * 4 else scope_rows + 1 end;
    end loop;
end;
$function$;

revoke execute on function hipocampo.build_tenant_graphs() from public;
revoke execute on function hipocampo_private._create_tenant_graph(model_name text, tenant uuid) from public;
revoke execute on function hipocampo_private._drop_tenant_graph(index_name text) from public;
revoke execute on function hipocampo_private._exact_scan_max(scope_rows bigint, model text, settings jsonb, tenant uuid) from public;
revoke execute on function hipocampo_private._tenant_graph_name(model_name text, tenant uuid) from public;
revoke execute on function hipocampo_private._tenant_model_chunks() from public;
grant execute on function hipocampo.build_tenant_graphs() to service_role;
grant execute on function hipocampo_private._create_tenant_graph(model_name text, tenant uuid) to service_role;
grant execute on function hipocampo_private._drop_tenant_graph(index_name text) to service_role;
grant execute on function hipocampo_private._exact_scan_max(scope_rows bigint, model text, settings jsonb, tenant uuid) to authenticated;
grant execute on function hipocampo_private._exact_scan_max(scope_rows bigint, model text, settings jsonb, tenant uuid) to service_role;
grant execute on function hipocampo_private._tenant_graph_name(model_name text, tenant uuid) to service_role;
grant execute on function hipocampo_private._tenant_model_chunks() to service_role;
comment on function hipocampo.build_tenant_graphs() is 'Give each tenant holding maintenance.tenant_graph_min_chunks chunks of a model an HNSW graph of its own; drop the ones no longer needed.';
