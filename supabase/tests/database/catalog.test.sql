-- Conventions every deployment must keep (docs/design.md §SQL conventions), checked on the
-- database itself: the embedded one in `make test`, a Supabase project with `supabase test db`.
begin;
select plan(6);

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

select * from finish();
rollback;
