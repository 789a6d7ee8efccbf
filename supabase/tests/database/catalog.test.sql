-- Conventions every deployment must keep (docs/design.md §SQL conventions), checked on the
-- database itself: the embedded one in `make test`, a Supabase project with `supabase test db`.
begin;
select plan(8);

select is_empty(
    $$
    select n.nspname || '.' || c.relname
    from pg_catalog.pg_class as c
    inner join pg_catalog.pg_namespace as n on n.oid = c.relnamespace
    where n.nspname in ('hipocampo', 'hipocampo_private') and c.relkind in ('r', 'p')
      and not c.relrowsecurity
    $$,
    'every table of hipocampo and hipocampo_private has RLS enabled'
);

select is_empty(
    $$
    select c.relname
    from pg_catalog.pg_class as c
    inner join pg_catalog.pg_namespace as n on n.oid = c.relnamespace
    where n.nspname = 'hipocampo' and c.relkind in ('r', 'p')
    $$,
    'the exposed schema hipocampo holds no tables (only the RPC surface and views)'
);

select is_empty(
    $$
    select p.oid::regprocedure::text
    from pg_catalog.pg_proc as p
    inner join pg_catalog.pg_namespace as n on n.oid = p.pronamespace
    where n.nspname in ('hipocampo', 'hipocampo_private')
      and not coalesce('search_path=""' = any(p.proconfig), false)
    $$,
    'every function sets search_path to the empty string'
);

select is_empty(
    $$
    select p.oid::regprocedure::text
    from pg_catalog.pg_proc as p
    inner join pg_catalog.pg_namespace as n on n.oid = p.pronamespace
    where n.nspname in ('hipocampo', 'hipocampo_private')
      and exists (
          select 1
          from pg_catalog.aclexplode(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) as a
          where a.grantee = 0 and a.privilege_type = 'EXECUTE'
      )
    $$,
    'no function is executable by PUBLIC'
);

select is_empty(
    $$
    select p.oid::regprocedure::text
    from pg_catalog.pg_proc as p
    inner join pg_catalog.pg_namespace as n on n.oid = p.pronamespace
    where n.nspname in ('hipocampo', 'hipocampo_private')
      and pg_catalog.has_function_privilege('anon', p.oid, 'EXECUTE')
    $$,
    'anon can execute no function'
);

select isnt_empty(
    $$
    select i.indexname
    from pg_catalog.pg_indexes as i
    where i.schemaname = 'hipocampo_private' and i.tablename = 'chunks'
      and i.indexdef like '%USING hnsw%vector_cosine_ops%'
    $$,
    'chunks have an HNSW index with vector_cosine_ops (the <=> operator of the dense leg)'
);

select is_empty(
    $$
    select c.conname::text
    from pg_catalog.pg_constraint as c
    where c.contype = 'f'
      and c.connamespace in ('hipocampo'::regnamespace, 'hipocampo_private'::regnamespace)
      -- the referenced table is a handful of model rows, deleted only by drop_embedding_model
      and c.conname not in (
          'chunks_embedding_model_fkey', 'memories_embedding_model_fkey', 'messages_embedding_model_fkey'
      )
      and not exists (
          select 1 from pg_catalog.pg_index as i
          where i.indrelid = c.conrelid
            and (i.indkey::int2 [])[0:least(i.indnkeyatts, cardinality(c.conkey)) - 1] <@ c.conkey
      )
    $$,
    'every foreign key has an index leading with its columns (a delete of a referenced row '
    || 'looks the referencing rows up; without one, deleting n memories scanned memories n times)'
);

select is_empty(
    $$
    select p.oid::regprocedure::text
    from pg_catalog.pg_proc as p
    inner join pg_catalog.pg_namespace as n on n.oid = p.pronamespace
    left join pg_catalog.pg_depend as d
        on d.classid = 'pg_catalog.pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e'
    left join pg_catalog.pg_extension as e on e.oid = d.refobjid
    where n.nspname = 'extensions'
      and (
          pg_catalog.has_function_privilege('anon', p.oid, 'EXECUTE')
          or pg_catalog.has_function_privilege('authenticated', p.oid, 'EXECUTE')
      )
      -- Listed, with the reason an API role executes them: the invoker RPCs compute with them as
      -- the caller (vector: the embeddings' type, its operators and casts; pg_trgm: the title
      -- and near-duplicate similarity; unaccent: the text search configurations' dictionary;
      -- pgtap: this test framework, installed by the test run).
      -- Not listed, so revoked (issue 57 §1): dblink, whose connections run as whatever a foreign
      -- server maps to.
      and coalesce(e.extname, '') not in ('vector', 'pg_trgm', 'unaccent', 'pgtap')
    $$,
    'no function of the extensions schema is executable by anon or authenticated unless its '
    || 'extension is listed with a reason (dblink is not)'
);

select * from finish();
rollback;
