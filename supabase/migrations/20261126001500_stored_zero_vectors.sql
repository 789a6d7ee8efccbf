-- A stored zero embedding is refused (23514, a check per table). Its cosine is NaN, which PostgreSQL
-- orders above every number, so such a chunk, memory or message passed every similarity floor of
-- every search of its tenant (the query side: migration 20261126001400). The checks are not
-- valid: rows stored before are kept as they are. Restated from supabase/schemas/03_knowledge_bases.sql,
-- 06_memory.sql and 07_conversations.sql; re-runnable.

alter table hipocampo_private.chunks drop constraint if exists chunks_embedding_not_zero;
alter table hipocampo_private.chunks add constraint chunks_embedding_not_zero
check (extensions.vector_norm(embedding) <> 0) not valid;

alter table hipocampo_private.memories drop constraint if exists memories_embedding_not_zero;
alter table hipocampo_private.memories add constraint memories_embedding_not_zero
check (extensions.vector_norm(embedding) <> 0) not valid;

alter table hipocampo_private.memory_staging drop constraint if exists memory_staging_embedding_not_zero;
alter table hipocampo_private.memory_staging add constraint memory_staging_embedding_not_zero
check (extensions.vector_norm(embedding) <> 0) not valid;

alter table hipocampo_private.messages drop constraint if exists messages_embedding_not_zero;
alter table hipocampo_private.messages add constraint messages_embedding_not_zero
check (extensions.vector_norm(embedding) <> 0) not valid;
