-- Leave room on memory pages so that the access-count update of every search
-- (hipocampo_private._touch_memories: access_count, last_accessed_at, no indexed column) can be a
-- HOT update: with full pages it writes a new tuple into every index, the HNSW one included.
-- Applies to pages written from now on.

alter table hipocampo_private.memories set (fillfactor = 80);
alter table hipocampo_private.memory_staging set (fillfactor = 80);
