-- An index for memories.supersedes, the foreign key to memories (on delete set null): without it
-- every deleted memory (erase_user, the memory purge, a tenant's deletion) scanned the whole
-- table for the rows pointing at it, quadratic in the memories deleted (deleting a benchmark's
-- 100,000 memories ran for minutes). Restated from supabase/schemas/06_memory.sql; re-runnable.
create index if not exists memories_supersedes_idx on hipocampo_private.memories (supersedes)
where supersedes is not null;

-- memory_staging copies the indexes of memories (create table … like … including indexes), so a
-- database built from the schema files has this one too.
create index if not exists memory_staging_supersedes_idx on hipocampo_private.memory_staging (supersedes)
where supersedes is not null;
