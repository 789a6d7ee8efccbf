-- A chunk's contextual header is now its document's title and its heading path ("Regulamento
-- Interno › Capítulo III – Dos animais", issue 48 §1: markdown is structure, an article a chunk),
-- stored as metadata.title and embedded before the content at ingestion; the embedding backfill
-- embeds the same text (metadata.title, else the document's title), so a model switch re-embeds
-- what ingestion embedded. Restated from supabase/schemas/03_knowledge_bases.sql (its docblock
-- lives there); re-runnable.

create or replace function hipocampo.rows_to_embed(kind text, batch_size integer default 100, after_id text default null)
returns table (row_id text, content text)
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
    model text;
begin
    perform hipocampo_private._embedding_kind(kind);
    if batch_size is null or batch_size not between 1 and 1000 then
        raise exception 'batch_size must be 1..1000' using errcode = '22023';
    end if;
    -- A chunk's or message's cursor is a number, a memory's a uuid.
    begin
        if kind in ('chunks', 'messages') then
            perform rows_to_embed.after_id::bigint;
        else
            perform rows_to_embed.after_id::uuid;
        end if;
    exception when invalid_text_representation or numeric_value_out_of_range then
        raise exception 'after_id of % must be an id as rows_to_embed gives it (got %)', kind, after_id
            using errcode = '22023';
    end;
    select e.name into model from hipocampo_private.embedding_models as e where e.active;
    if model is null then
        raise exception 'no embedding model is active' using errcode = '55000';
    end if;
    if kind = 'chunks' then
        return query
        -- The contextual header ingestion embedded (the title and the chunk's heading path).
        select c.id::text, coalesce(c.metadata ->> 'title', d.title) || E'\n' || c.content
        from hipocampo_private.chunks as c
        inner join hipocampo_private.documents as d on d.id = c.document_id
        where c.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or c.id > rows_to_embed.after_id::bigint)
          -- One source row per content: the oldest, of whichever model.
          and c.id = (
              select min(o.id) from hipocampo_private.chunks as o
              where o.tenant_id = c.tenant_id and o.content_hash = c.content_hash
          )
          and not exists (
              select 1 from hipocampo_private.chunks as n
              where n.tenant_id = c.tenant_id and n.content_hash = c.content_hash and n.embedding_model = model
          )
          and not exists (
              select 1 from hipocampo_private.embedding_failures as f
              where f.kind = 'chunks' and f.row_id = c.id::text and (f.dead or f.next_attempt_at > now())
          )
        order by c.id
        limit batch_size
        for update of c skip locked;
    elsif kind = 'memories' then
        return query
        select m.id::text, m.description from hipocampo_private.memories as m
        where m.status = 'active' and m.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or m.id > rows_to_embed.after_id::uuid)
          and not exists (
              select 1 from hipocampo_private.embedding_failures as f
              where f.kind = 'memories' and f.row_id = m.id::text and (f.dead or f.next_attempt_at > now())
          )
        order by m.id
        limit batch_size
        for update of m skip locked;
    elsif kind = 'memory_staging' then
        return query
        select s.id::text, s.description from hipocampo_private.memory_staging as s
        where s.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or s.id > rows_to_embed.after_id::uuid)
          and not exists (
              select 1 from hipocampo_private.embedding_failures as f
              where f.kind = 'memory_staging' and f.row_id = s.id::text and (f.dead or f.next_attempt_at > now())
          )
        order by s.id
        limit batch_size
        for update of s skip locked;
    else
        return query
        select m.id::text, m.content from hipocampo_private.messages as m
        where m.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or m.id > rows_to_embed.after_id::bigint)
          and not exists (
              select 1 from hipocampo_private.embedding_failures as f
              where f.kind = 'messages' and f.row_id = m.id::text and (f.dead or f.next_attempt_at > now())
          )
        order by m.id
        limit batch_size
        for update of m skip locked;
    end if;
end;
$$;
