-- The chunks' delete trigger collects the emptied knowledge bases with their tenants once and
-- deletes their postings by those (tenant, knowledge base) pairs; it read the distinct pairs of
-- the deleted rows twice (migration 20261125001700). Restated from
-- supabase/schemas/03_knowledge_bases.sql; re-runnable.
set local check_function_bodies = off;

/*
_chunks_stats_after_delete() -> trigger

Purpose: AFTER DELETE (statement, transition table) trigger of chunks: removes the deleted
  chunks' terms from the BM25 statistics of their knowledge bases. A knowledge base left without
  any chunk (deleted, or its tenant) loses its postings and statistics whole, by key range: one
  probe of the postings key per posting of every deleted chunk did not finish in minutes for a
  million chunks (docs/SCALE.md).
Returns: null (a statement trigger).
Errors: none of its own.
*/
-- definer because, as for inserts, every writer of chunks keeps the statistics right.
create or replace function hipocampo_private._chunks_stats_after_delete()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
    -- Knowledge bases without chunks of any model now, with their tenants (the postings key).
    emptied uuid[];
    emptied_tenants uuid[];
begin
    select coalesce(array_agg(k.kb_id), '{}'), coalesce(array_agg(k.tenant_id), '{}')
    into emptied, emptied_tenants
    from (select distinct o.tenant_id, o.kb_id from old_rows as o) as k
    where not exists (
        select 1 from hipocampo_private.chunks as c
        where c.tenant_id = k.tenant_id and c.kb_id = k.kb_id
    );
    if cardinality(emptied) > 0 then
        delete from hipocampo_private.kb_postings as p
        using unnest(emptied_tenants, emptied) as k (tenant_id, kb_id)
        where p.tenant_id = k.tenant_id and p.kb_id = k.kb_id;
        delete from hipocampo_private.kb_term_stats as s where s.kb_id = any(emptied);
        delete from hipocampo_private.kb_text_stats as s where s.kb_id = any(emptied);
    end if;

    update hipocampo_private.kb_text_stats as s
    set chunk_count = s.chunk_count - d.n,
        token_total = s.token_total - d.len
    from (
        select o.kb_id, o.embedding_model, count(*) as n,
            sum(hipocampo_private.tsvector_token_count(o.fts)) as len
        from old_rows as o
        where o.kb_id <> all(emptied)
        group by o.kb_id, o.embedding_model
    ) as d
    where s.kb_id = d.kb_id and s.embedding_model = d.embedding_model;

    with removed as (
        select o.kb_id, o.embedding_model, u.lexeme, count(*) as n
        from old_rows as o
        cross join lateral pg_catalog.unnest(o.fts) as u
        where o.kb_id <> all(emptied)
        group by o.kb_id, o.embedding_model, u.lexeme
    )
    update hipocampo_private.kb_term_stats as s
    set doc_freq = s.doc_freq - r.n
    from removed as r
    where s.kb_id = r.kb_id and s.embedding_model = r.embedding_model and s.lexeme = r.lexeme;

    delete from hipocampo_private.kb_term_stats as s
    where s.doc_freq <= 0
      and s.kb_id in (select o.kb_id from old_rows as o where o.kb_id <> all(emptied));

    delete from hipocampo_private.kb_postings as p
    using old_rows as o, pg_catalog.unnest(o.fts) as u
    where o.kb_id <> all(emptied)
      and p.tenant_id = o.tenant_id and p.kb_id = o.kb_id and p.lexeme = u.lexeme and p.chunk_id = o.id;
    return null;
end;
$$;
