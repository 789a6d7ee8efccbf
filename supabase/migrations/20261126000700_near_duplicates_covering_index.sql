-- _near_duplicates (answer_evidence's lookup of each hit's near-duplicates in other documents)
-- reads a small scope's vectors from the covering index chunks_scope_vectors_idx (migration
-- 20261126000600) by an index-only scan, as hybrid_search's exact scan does: the exact statement
-- repeats the index's predicate when the model has at most 640 dimensions. Restated from
-- supabase/schemas/05_hybrid_search.sql; re-runnable.
set local check_function_bodies = off;

/*
_near_duplicates(chunk_ids bigint[], kb_ids uuid[], tenant uuid, min_cosine double precision,
  per_chunk integer default 3) -> table (of_chunk_id bigint, chunk_id bigint, distance double precision)

Purpose: for each given chunk, its per_chunk nearest chunks of other documents in these knowledge
  bases of the tenant (same embedding model, not among chunk_ids) whose cosine similarity exceeds
  min_cosine. Nearest first, then the threshold (the same rows as filtering first: the order is by
  distance). Scopes above retrieval.exact_scan_max_rows use the model's partial HNSW index
  (vector_cosine_ops <-> <=>, typed cast, hnsw.iterative_scan relaxed_order); smaller ones are
  scanned exactly, from the covering index chunks_scope_vectors_idx when the model has at most
  640 dimensions.
Parameters: min_cosine in [-1, 1] (answer_evidence passes retrieval.dedupe_threshold); per_chunk >= 1.
Returns: of_chunk_id (the given chunk), chunk_id, distance (cosine distance, 1 - similarity).
Errors: none (chunks the caller cannot see are left out, RLS).
Example: select * from hipocampo_private._near_duplicates(array[12], array[kb], tenant, 0.97);
*/
create or replace function hipocampo_private._near_duplicates(
    chunk_ids bigint[], kb_ids uuid[], tenant uuid, min_cosine double precision, per_chunk integer default 3
)
returns table (of_chunk_id bigint, chunk_id bigint, distance double precision)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record;
    dims integer;
    scope_rows bigint;
    exact_max bigint := (hipocampo.effective_config(_near_duplicates.tenant) -> 'retrieval'
                         ->> 'exact_scan_max_rows')::bigint;
    cast_to text;
    covered text;
begin
    for c in
        select ch.id, ch.document_id, ch.embedding, ch.embedding_model
        from hipocampo_private.chunks as ch
        where ch.id = any(_near_duplicates.chunk_ids)
    loop
        select e.dims into dims from hipocampo_private.embedding_models as e where e.name = c.embedding_model;
        select coalesce(sum(st.chunk_count), 0) into scope_rows from hipocampo_private.kb_text_stats as st
        where st.kb_id = any(_near_duplicates.kb_ids) and st.embedding_model = c.embedding_model;
        cast_to := '';
        covered := '';
        if scope_rows > exact_max then
            cast_to := format('::extensions.vector(%s)', dims);
            perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
        elsif dims <= 640 then
            -- The exact scan reads the covering index chunks_scope_vectors_idx (index-only), as
            -- hybrid_search's does: its predicate, repeated, lets the planner use it.
            covered := 'and extensions.vector_dims(c2.embedding) <= 640 ';
        end if;
        return query execute format(
            'select $1, y.id, y.distance from ('
            'select c2.id, c2.embedding%1$s operator(extensions.<=>) $2 as distance '
            'from hipocampo_private.chunks as c2 '
            'where c2.tenant_id = $3 and c2.kb_id = any($4) and c2.embedding_model = $5 '
            'and c2.document_id <> $6 and c2.id <> all($7) %2$s'
            'order by c2.embedding%1$s operator(extensions.<=>) $2 limit $8'
            ') as y where y.distance < 1 - $9 order by y.distance',
            cast_to, covered
        )
        using c.id, c.embedding, _near_duplicates.tenant, _near_duplicates.kb_ids, c.embedding_model,
              c.document_id, _near_duplicates.chunk_ids, _near_duplicates.per_chunk, _near_duplicates.min_cosine;
    end loop;
end;
$$;
