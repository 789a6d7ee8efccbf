-- A model switch carries memories and history along. Documents are re-ingested into new chunk
-- rows (migration 000400's rule); memories, staged memories and messages had no way to get an
-- embedding of the new model: after activate_embedding_model they dropped out of memory search
-- and the dense leg of history search, and drop_embedding_model failed on their foreign keys
-- (23503). rows_to_embed lists what search cannot read with the active model (also messages
-- stored through the edge functions without a vector), set_row_embeddings stores the new vectors
-- (`hipocampo db embed-missing`, `hipocampo worker --embed-missing`, which also run 003600's token
-- backfill: the commands its header names were folded into these), and drop_embedding_model says
-- what still needs them.

/*
rows_to_embed(kind text, batch_size integer default 100, after_id text default null)
  -> table (row_id text, content text)

Purpose: rows that search cannot read with the active model - no embedding, or one of another
  model: active memories ('memories') and staged memories ('memory_staging') with their
  description, messages ('messages') with their content. The listed rows stay locked (for update
  skip locked) until the caller's transaction ends: store their vectors with set_row_embeddings
  in the same transaction; concurrent workers take other rows.
Parameters: kind memories | memory_staging | messages; batch_size 1..1000 rows; after_id - only
  rows with a greater id (a caller's cursor: a memory's uuid, a message's number, as text).
Returns: at most batch_size rows by id: row_id (the id as text) and the text to embed.
Errors: 22023 "kind must be memories, memory_staging or messages"; 22023 "batch_size must be
  1..1000"; 55000 "no embedding model is active".
Example: select row_id, content from hipocampo.rows_to_embed('messages', 100);
*/
create function hipocampo.rows_to_embed(kind text, batch_size integer default 100, after_id text default null)
returns table (row_id text, content text)
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
    model text;
begin
    if kind is null or kind not in ('memories', 'memory_staging', 'messages') then
        raise exception 'kind must be memories, memory_staging or messages' using errcode = '22023';
    end if;
    if batch_size is null or batch_size not between 1 and 1000 then
        raise exception 'batch_size must be 1..1000' using errcode = '22023';
    end if;
    select e.name into model from hipocampo_private.embedding_models as e where e.active;
    if model is null then
        raise exception 'no embedding model is active' using errcode = '55000';
    end if;
    if kind = 'memories' then
        return query
        select m.id::text, m.description from hipocampo_private.memories as m
        where m.status = 'active' and m.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or m.id > rows_to_embed.after_id::uuid)
        order by m.id
        limit batch_size
        for update of m skip locked;
    elsif kind = 'memory_staging' then
        return query
        select s.id::text, s.description from hipocampo_private.memory_staging as s
        where s.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or s.id > rows_to_embed.after_id::uuid)
        order by s.id
        limit batch_size
        for update of s skip locked;
    else
        return query
        select m.id::text, m.content from hipocampo_private.messages as m
        where m.embedding_model is distinct from model
          and (rows_to_embed.after_id is null or m.id > rows_to_embed.after_id::bigint)
        order by m.id
        limit batch_size
        for update of m skip locked;
    end if;
end;
$$;

/*
set_row_embeddings(kind text, items jsonb) -> integer

Purpose: store embeddings of the active model for rows rows_to_embed listed. A row that already
  has an embedding of the active model keeps it (a repeated call changes nothing). A message's
  tokens belong to its embedding's model, so they are cleared with it (the token backfill,
  messages_without_tokens, lists the message again).
Parameters: kind as rows_to_embed; items - [{"id": "<uuid, or a message's number>", "embedding":
  [floats]}].
Returns: the number of rows updated.
Errors: 22023 "kind must be memories, memory_staging or messages"; 22023 "items must be a json
  array"; 22000 "embedding has N dimensions; model M expects D"; 55000 "no embedding model is active".
Example: select hipocampo.set_row_embeddings('messages', '[{"id": "42", "embedding": [0.1, …]}]');
*/
create function hipocampo.set_row_embeddings(kind text, items jsonb)
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
    if kind is null or kind not in ('memories', 'memory_staging', 'messages') then
        raise exception 'kind must be memories, memory_staging or messages' using errcode = '22023';
    end if;
    if items is null or jsonb_typeof(items) <> 'array' then
        raise exception 'items must be a json array' using errcode = '22023';
    end if;
    if not exists (select 1 from hipocampo_private.embedding_models as e where e.active) then
        raise exception 'no embedding model is active' using errcode = '55000';
    end if;
    for item in select x from jsonb_array_elements(items) as x loop
        v := (item ->> 'embedding')::extensions.vector;
        model := hipocampo_private._active_model(v, 'embedding');
        if kind = 'memories' then
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
    end loop;
    return n;
end;
$$;

/*
drop_embedding_model(name text) -> bigint

Purpose: after a confirmed switch, delete an inactive model's chunk rows (embeddings) and its
  registry row. Memories that are no longer active (deprecated, deleted, expired: history no
  search reads) lose their vectors of that model; active and staged memories and messages must
  have been given the active model's first (rows_to_embed / set_row_embeddings).
Returns: number of chunk rows deleted.
Errors: P0002 "unknown embedding model"; 55000 "model … is active" for the active model; 55000
  "model <name> still embeds N active memories, N staged memories and N messages: embed them with
  the active model first (hipocampo db embed-missing)".
Example: select hipocampo.drop_embedding_model('old-model');
*/
create or replace function hipocampo.drop_embedding_model(name text)
returns bigint
language plpgsql
security invoker
set search_path = ''
as $$
declare
    is_active boolean;
    n bigint;
    n_memories bigint;
    n_staged bigint;
    n_messages bigint;
begin
    select e.active into is_active from hipocampo_private.embedding_models as e
    where e.name = drop_embedding_model.name;
    if is_active is null then
        raise exception 'unknown embedding model: %', drop_embedding_model.name
            using errcode = 'P0002';
    end if;
    if is_active then
        raise exception 'model % is active; activate another model first',
            drop_embedding_model.name using errcode = '55000';
    end if;
    select count(*) into n_memories from hipocampo_private.memories as m
    where m.embedding_model = drop_embedding_model.name and m.status = 'active';
    select count(*) into n_staged from hipocampo_private.memory_staging as s
    where s.embedding_model = drop_embedding_model.name;
    select count(*) into n_messages from hipocampo_private.messages as m
    where m.embedding_model = drop_embedding_model.name;
    if n_memories + n_staged + n_messages > 0 then
        raise exception 'model % still embeds % active memories, % staged memories and % messages: embed them with the active model first (hipocampo db embed-missing)',
            drop_embedding_model.name, n_memories, n_staged, n_messages using errcode = '55000';
    end if;
    update hipocampo_private.memories as m set embedding = null, embedding_model = null
    where m.embedding_model = drop_embedding_model.name;
    delete from hipocampo_private.chunks as c where c.embedding_model = drop_embedding_model.name;
    get diagnostics n = row_count;
    delete from hipocampo_private.kb_term_stats as s
    where s.embedding_model = drop_embedding_model.name;
    delete from hipocampo_private.kb_text_stats as s
    where s.embedding_model = drop_embedding_model.name;
    delete from hipocampo_private.embedding_models as e
    where e.name = drop_embedding_model.name;
    return n;
end;
$$;

revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;

grant execute on function hipocampo.rows_to_embed(text, integer, text) to service_role;
grant execute on function hipocampo.set_row_embeddings(text, jsonb) to service_role;

comment on function hipocampo.rows_to_embed(text, integer, text) is
'Active and staged memories and messages without an embedding of the active model (locked for the caller''s transaction): the work list after a model switch.';
comment on function hipocampo.set_row_embeddings(text, jsonb) is
'Store embeddings of the active model for rows rows_to_embed listed (a message''s tokens are cleared with its old embedding).';
