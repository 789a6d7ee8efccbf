-- chunk access comment.
-- the table's comment says who writes it now
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

comment on table hipocampo_private.chunk_access is 'When a search last returned each chunk (drain_read_queue writes it from the searches'' records; embedding_stats reads it).';
