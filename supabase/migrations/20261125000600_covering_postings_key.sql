-- The postings' primary key includes tf and chunk_length (issue 18 §4), so the BM25 leg reads a
-- term's postings by an index-only scan instead of visiting the heap for each one (SciFact, 5,183
-- chunks: hybrid_search p50 13.4 -> 9.4 ms; docs/BENCHMARKS.md §Covering postings). The key is
-- rebuilt once (an exclusive lock on kb_postings for the time of the build: about a second per
-- million postings here); a database whose key already includes them is left as it is.
-- Restated from supabase/schemas/03_knowledge_bases.sql.
do $$
begin
    if exists (
        select 1 from pg_catalog.pg_index as i
        where i.indexrelid = 'hipocampo_private.kb_postings_pkey'::regclass and i.indnatts = i.indnkeyatts
    ) then
        alter table hipocampo_private.kb_postings
        drop constraint kb_postings_pkey,
        add constraint kb_postings_pkey primary key (tenant_id, kb_id, lexeme, chunk_id) include (tf, chunk_length);
    end if;
end;
$$;
