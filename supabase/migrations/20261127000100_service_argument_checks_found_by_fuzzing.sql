-- Arguments the RPC fuzzer (tests/sql/test_fuzz_rpcs.py, now over the service_role RPCs of
-- tenancy, the model switch and the backfills too) found answered by a raw engine error instead
-- of a documented SQLSTATE:
-- - create_tenant: a null name or slug was a not-null violation (23502); now 23514, as a bad one.
-- - add_member: a null tenant_id or user_id was 23502, now 22023; a null role 23502, now 23514 as
--   an unknown one.
-- - register_embedding_model: a null name, provider or dims was 23502; now 23514, as bad values.
-- - rows_to_embed: an after_id that is not the kind's id (a number for chunks and messages, a uuid
--   for memories) was 22P02 from the cast; now 22023 naming it.
-- - set_row_embeddings, set_chunk_sentences, set_memory_embeddings: an item whose id is not of
--   the kind's type, or whose embedding is not a vector, was 22P02 (or 22003 for a number out of
--   range); now 22023 "invalid item <id>: …".
-- Restated from supabase/schemas/01_tenancy_and_callers.sql, 03_knowledge_bases.sql and
-- 06_memory.sql; re-runnable.

/*
create_tenant(name text, slug text, admin_user_id uuid default null) -> uuid

Purpose: create a tenant, its (empty) config row and optionally its first admin.
Parameters: name - 1..200 characters; slug - ^[a-z0-9][a-z0-9_-]{0,62}$, unique;
  admin_user_id - auth user made admin of the new tenant (optional).
Returns: the new tenant id.
Errors: 23505 "tenant slug already exists"; 23514 on a bad name or slug (null included: "a tenant
  needs a name of 1..200 characters and a slug matching ^[a-z0-9][a-z0-9_-]{0,62}$").
Example: select hipocampo.create_tenant('Condomínio Sol', 'sol', '…uuid…');
*/
create or replace function hipocampo.create_tenant(name text, slug text, admin_user_id uuid default null)
returns uuid
language plpgsql
security invoker
set search_path = ''
as $$
declare
    new_id uuid;
begin
    if create_tenant.name is null or create_tenant.slug is null then
        raise exception 'a tenant needs a name of 1..200 characters and a slug matching ^[a-z0-9][a-z0-9_-]{0,62}$'
            using errcode = '23514';
    end if;
    begin
        insert into hipocampo_private.tenants (name, slug)
        values (create_tenant.name, create_tenant.slug)
        returning id into new_id;
    exception when unique_violation then
        raise exception 'tenant slug already exists: %', create_tenant.slug
            using errcode = '23505';
    end;
    insert into hipocampo_private.settings (tenant_id, config) values (new_id, '{}'::jsonb);
    if admin_user_id is not null then
        insert into hipocampo_private.memberships (tenant_id, user_id, role)
        values (new_id, admin_user_id, 'admin');
    end if;
    return new_id;
end;
$$;

/*
add_member(tenant_id uuid, user_id uuid, role text default 'member') -> void

Purpose: add (or change the role of) a member of a tenant.
Parameters: tenant_id - existing tenant; user_id - auth user; role - 'admin' | 'member'.
Returns: nothing.
Errors: 22023 "tenant_id and user_id are required"; 23514 on an unknown role (null included: "role
  must be admin or member"); 23503 "unknown tenant" when the tenant does not exist.
Example: select hipocampo.add_member('…tenant…', '…user…', 'member');
*/
create or replace function hipocampo.add_member(tenant_id uuid, user_id uuid, role text default 'member')
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if add_member.tenant_id is null or add_member.user_id is null then
        raise exception 'tenant_id and user_id are required' using errcode = '22023';
    end if;
    if add_member.role is null then
        raise exception 'role must be admin or member' using errcode = '23514';
    end if;
    insert into hipocampo_private.memberships (tenant_id, user_id, role)
    values (add_member.tenant_id, add_member.user_id, add_member.role)
    on conflict on constraint memberships_pkey do update set role = excluded.role;
exception when foreign_key_violation then
    raise exception 'unknown tenant: %', add_member.tenant_id using errcode = '23503';
end;
$$;

/*
register_embedding_model(name text, provider text, dims integer, activate boolean default false) -> text

Purpose: add an embedding model to the registry beside the existing ones and create its
  partial HNSW index. Never changes the dims of a registered model.
Parameters: name; provider 'local' | 'openai' | 'azure'; dims 1..2000; activate - make it the default.
Returns: the HNSW index name.
Errors: 22023 "model … is registered with … dimensions" on a dims change; 23514 on bad values (null
  included: "an embedding model needs a name, a provider (local | openai | azure) and dims
  1..2000").
Example: select hipocampo.register_embedding_model('all-MiniLM-L6-v2', 'local', 384, true);
*/
create or replace function hipocampo.register_embedding_model(
    name text, provider text, dims integer, activate boolean default false
)
returns text
language plpgsql
security invoker
set search_path = ''
as $$
declare
    existing integer;
begin
    if register_embedding_model.name is null or register_embedding_model.provider is null
        or register_embedding_model.dims is null then
        raise exception 'an embedding model needs a name, a provider (local | openai | azure) and dims 1..2000'
            using errcode = '23514';
    end if;
    select e.dims into existing from hipocampo_private.embedding_models as e
    where e.name = register_embedding_model.name;
    if existing is not null and existing <> register_embedding_model.dims then
        raise exception 'model % is registered with % dimensions, not %',
            register_embedding_model.name, existing, register_embedding_model.dims
            using errcode = '22023';
    end if;
    insert into hipocampo_private.embedding_models (name, provider, dims)
    values (register_embedding_model.name, register_embedding_model.provider,
            register_embedding_model.dims)
    on conflict on constraint embedding_models_pkey do nothing;
    if activate then
        perform hipocampo.activate_embedding_model(register_embedding_model.name);
    end if;
    return hipocampo_private._ensure_model_index(register_embedding_model.name);
end;
$$;

/*
rows_to_embed(kind text, batch_size integer default 100, after_id text default null)
  -> table (row_id text, content text)

Purpose: rows that search cannot read with the active model - no embedding, or one of another
  model: chunks whose content has no chunk of the active model ('chunks', one per content hash
  of a tenant, with the text ingestion embeds: the document's title, a newline, the content),
  active memories ('memories') and staged memories ('memory_staging') with their description,
  messages ('messages') with their content. The listed rows stay locked (for update
  skip locked) until the caller's transaction ends: store their vectors with set_row_embeddings
  in the same transaction; concurrent workers take other rows, and a worker that dies leaves its
  rows to the next (its transaction rolls back). Rows whose embedding failed wait for their retry
  time and dead-lettered ones are left out (record_embedding_failure).
Parameters: kind chunks | memories | memory_staging | messages; batch_size 1..1000 rows;
  after_id - only rows with a greater id (a caller's cursor: a chunk's or message's number, a
  memory's uuid, as text).
Returns: at most batch_size rows by id: row_id (the id as text) and the text to embed.
Errors: 22023 "kind must be chunks, memories, memory_staging or messages"; 22023 "batch_size must be
  1..1000"; 22023 "after_id of <kind> must be an id as rows_to_embed gives it (got …)"; 55000 "no
  embedding model is active".
Example: select row_id, content from hipocampo.rows_to_embed('messages', 100);
*/
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
        select c.id::text, d.title || E'\n' || c.content
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

/*
set_row_embeddings(kind text, items jsonb) -> integer

Purpose: store embeddings of the active model for rows rows_to_embed listed. A chunk gets a new
  row of the active model beside its source row (as ingestion adds a model's chunks: postings
  and statistics by the chunks triggers); a chunk of that content already there is kept. A
  memory or message that already has an embedding of the active model keeps it (a repeated
  call changes nothing). A stored row
  leaves the retry bookkeeping (embedding_failures). A message's
  tokens belong to its embedding's model, so they are cleared with it (the token backfill,
  messages_without_tokens, lists the message again).
Parameters: kind as rows_to_embed; items - [{"id": "<a chunk's or message's number, or a uuid>", "embedding":
  [floats]}].
Returns: the number of rows updated.
Errors: 22023 "kind must be chunks, memories, memory_staging or messages"; 22023 "items must be a json
  array"; 22023 "invalid item <id>: …" (an id of the wrong kind, an embedding that is not a
  vector); 22000 "embedding has N dimensions; model M expects D"; 55000 "no embedding model is
  active".
Example: select hipocampo.set_row_embeddings('messages', '[{"id": "42", "embedding": [0.1, …]}]');
*/
create or replace function hipocampo.set_row_embeddings(kind text, items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    item jsonb;
    v extensions.vector;
    model text;
    n integer := 0;
    one integer;
begin
    perform hipocampo_private._embedding_kind(kind);
    if items is null or jsonb_typeof(items) <> 'array' then
        raise exception 'items must be a json array' using errcode = '22023';
    end if;
    if not exists (select 1 from hipocampo_private.embedding_models as e where e.active) then
        raise exception 'no embedding model is active' using errcode = '55000';
    end if;
    for item in select x from jsonb_array_elements(items) as x loop
        v := (item ->> 'embedding')::extensions.vector;
        model := hipocampo_private._active_model(v, 'embedding');
        if kind = 'chunks' then
            insert into hipocampo_private.chunks (
                tenant_id, kb_id, document_id, chunk_index, content, token_count, metadata, content_hash,
                ts_config, embedding, embedding_model, expires_at
            )
            select o.tenant_id, o.kb_id, o.document_id, o.chunk_index, o.content, o.token_count, o.metadata,
                o.content_hash, o.ts_config, v, model, o.expires_at
            from hipocampo_private.chunks as o
            where o.id = (item ->> 'id')::bigint
            on conflict on constraint chunks_tenant_hash_model_key do nothing;
        elsif kind = 'memories' then
            update hipocampo_private.memories as m set embedding = v, embedding_model = model
            where m.id = (item ->> 'id')::uuid and m.embedding_model is distinct from model;
        elsif kind = 'memory_staging' then
            update hipocampo_private.memory_staging as s set embedding = v, embedding_model = model
            where s.id = (item ->> 'id')::uuid and s.embedding_model is distinct from model;
        else
            update hipocampo_private.messages as m
            set embedding = v, embedding_model = model, token_ids = null, token_bits = null
            where m.id = (item ->> 'id')::bigint and m.embedding_model is distinct from model;
        end if;
        get diagnostics one = row_count;
        n := n + one;
        -- Embedded now (or already): no longer a failure waiting for its retry.
        delete from hipocampo_private.embedding_failures as f
        where f.kind = set_row_embeddings.kind and f.row_id = item ->> 'id';
    end loop;
    return n;
exception when invalid_text_representation or numeric_value_out_of_range then
    raise exception 'invalid item %: %', item ->> 'id', sqlerrm using errcode = '22023';
end;
$$;

/*
set_chunk_sentences(items jsonb) -> integer

Purpose: store the sentence embeddings of chunks chunks_without_sentences listed (the chunk's
  sentences embedded by its own model as passages, what ingestion sends as
  chunks[i].sentence_embeddings); a chunk's earlier ones are replaced.
Parameters: items - [{"id": "<chunk id>", "sentence_embeddings": [1..64 embeddings, each a json
  array of numbers or pgvector's text form, with the dimensions of the chunk's model]}].
Returns: the number of chunks updated (an id of no chunk counts 0).
Errors: 42501 for any role but service_role (no EXECUTE); 22023 "items must be a json array";
  22023 "sentence_embeddings of chunk <id> must be a json array of 1 to 64 embeddings"; 22023
  "invalid item <id>: …" (an id that is not a number, a sentence embedding that is not a
  vector); 22000 "a sentence embedding of chunk <id> has n dimensions; its model expects d".
Example: select hipocampo.set_chunk_sentences('[{"id": "42", "sentence_embeddings": ["[0.1,…]"]}]');
*/
create or replace function hipocampo.set_chunk_sentences(items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    item jsonb;
    vs extensions.vector [];
    dims integer;
    bad integer;
    n integer := 0;
    one integer;
begin
    if items is null or jsonb_typeof(items) <> 'array' then
        raise exception 'items must be a json array' using errcode = '22023';
    end if;
    for item in select x from jsonb_array_elements(items) as x loop
        if jsonb_typeof(item -> 'sentence_embeddings') is distinct from 'array'
            or jsonb_array_length(item -> 'sentence_embeddings') not between 1 and 64 then
            raise exception 'sentence_embeddings of chunk % must be a json array of 1 to 64 embeddings',
                item ->> 'id' using errcode = '22023';
        end if;
        vs := array(
            select (v.value #>> '{}')::extensions.vector
            from jsonb_array_elements(item -> 'sentence_embeddings') with ordinality as v
            order by v.ordinality
        );
        select extensions.vector_dims(c.embedding) into dims
        from hipocampo_private.chunks as c where c.id = (item ->> 'id')::bigint;
        select extensions.vector_dims(v) into bad from unnest(vs) as v
        where extensions.vector_dims(v) is distinct from dims
        limit 1;
        if dims is not null and bad is not null then
            raise exception 'a sentence embedding of chunk % has % dimensions; its model expects %',
                item ->> 'id', bad, dims using errcode = '22000';
        end if;
        update hipocampo_private.chunks as c set sentence_embeddings = vs
        where c.id = (item ->> 'id')::bigint;
        get diagnostics one = row_count;
        n := n + one;
    end loop;
    return n;
exception when invalid_text_representation or numeric_value_out_of_range then
    raise exception 'invalid item %: %', item ->> 'id', sqlerrm using errcode = '22023';
end;
$$;

/*
set_memory_embeddings(items jsonb) -> integer

Purpose: give memories that have no embedding one (of the active model): the profile seed and
  any write made without a vector. Memories that already have an embedding are left alone.
Parameters: items - [{"memory_id": uuid, "embedding": [floats]}]; RLS decides which rows the
  caller may update (own personal memories; admins the tenant's shared ones).
Returns: the number of memories updated.
Errors: 42501 as _caller (before any other work); 22000 wrong dimensions; 22023 items is not a json
  array; 22023 "invalid item <memory_id>: …" (a memory_id that is not a uuid, an embedding that is
  not a vector).
Example: select hipocampo.set_memory_embeddings('[{"memory_id": "…", "embedding": [0.1, …]}]');
*/
create or replace function hipocampo.set_memory_embeddings(items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    item jsonb;
    v extensions.vector;
    model text;
    n integer := 0;
    one integer;
begin
    if items is null or jsonb_typeof(items) <> 'array' then
        raise exception 'items must be a json array' using errcode = '22023';
    end if;
    for item in select x from jsonb_array_elements(items) as x loop
        v := (item ->> 'embedding')::extensions.vector;
        model := hipocampo_private._active_model(v, 'embedding');
        update hipocampo_private.memories as m
        set embedding = v, embedding_model = model, updated_at = now()
        where m.id = (item ->> 'memory_id')::uuid and m.embedding is null;
        get diagnostics one = row_count;
        n := n + one;
    end loop;
    return n;
exception when invalid_text_representation or numeric_value_out_of_range then
    raise exception 'invalid item %: %', item ->> 'memory_id', sqlerrm using errcode = '22023';
end;
$$;
