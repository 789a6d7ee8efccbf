-- Chunks in the embedding queue (issue 20 §4): after a switch to another embedding model, the
-- chunks whose content has no chunk of the active model are listed by rows_to_embed('chunks') (the
-- text ingestion embeds: title, newline, content) and set_row_embeddings('chunks') adds the active
-- model's row beside the source row, so the embed edge function and hipocampo worker complete a
-- switch without re-reading the source files. One kind check for the four functions
-- (_embedding_kind); the view embedding_queue counts chunks too. Restated from
-- supabase/schemas/03_knowledge_bases.sql, 11_observability.sql and 13_grants.sql; re-runnable.
set local check_function_bodies = off;

alter table hipocampo_private.embedding_failures
drop constraint if exists embedding_failures_kind_check;

alter table hipocampo_private.embedding_failures
add constraint embedding_failures_kind_check check (kind in ('chunks', 'memories', 'memory_staging', 'messages'));


/*
_embedding_kind(kind text) -> text

Purpose: the kind of row the embedding backfill handles, checked (rows_to_embed,
  set_row_embeddings, record_embedding_failure, requeue_embedding_failures).
Parameters: kind - chunks | memories | memory_staging | messages.
Returns: kind.
Errors: 22023 "kind must be chunks, memories, memory_staging or messages".
Example: perform hipocampo_private._embedding_kind(kind);
*/
create or replace function hipocampo_private._embedding_kind(kind text)
returns text
language plpgsql
immutable
security invoker
set search_path = ''
as $$
begin
    if kind is null or kind not in ('chunks', 'memories', 'memory_staging', 'messages') then
        raise exception 'kind must be chunks, memories, memory_staging or messages' using errcode = '22023';
    end if;
    return kind;
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
  1..1000"; 55000 "no embedding model is active".
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
  array"; 22000 "embedding has N dimensions; model M expects D"; 55000 "no embedding model is active".
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
end;
$$;

/*
record_embedding_failure(kind text, row_ids text[], error text) -> jsonb

Purpose: the retry bookkeeping of the embedding backfill (issue 20 §4): rows rows_to_embed listed
  whose vectors could not be computed (the provider failed) are retried after
  maintenance.embedding_retry_seconds * 2^(attempts - 1), at most
  maintenance.embedding_retry_max_seconds, and dead-lettered (no longer listed) after
  maintenance.embedding_max_attempts failures, keeping the last error. A row embedded later
  (set_row_embeddings) leaves the table.
Parameters: kind chunks | memories | memory_staging | messages; row_ids - the rows' ids as rows_to_embed
  gave them; error - what failed (up to 2,000 characters kept).
Returns: {"retrying": n, "dead": n} after this failure.
Errors: 42501 for any role but service_role (no EXECUTE); 22023 "kind must be chunks, memories,
  memory_staging or messages"; 55000 "maintenance config is incomplete: …".
Example: select hipocampo.record_embedding_failure('messages', array['42'], 'HTTP 503 from the provider');
*/
create or replace function hipocampo.record_embedding_failure(kind text, row_ids text[], error text)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    m jsonb := (select s.config -> 'maintenance' from hipocampo_private.settings as s where s.tenant_id is null);
    max_attempts integer := (m ->> 'embedding_max_attempts')::integer;
    base double precision := (m ->> 'embedding_retry_seconds')::double precision;
    cap double precision := (m ->> 'embedding_retry_max_seconds')::double precision;
    result jsonb;
begin
    perform hipocampo_private._embedding_kind(kind);
    if max_attempts is null or base is null or cap is null then
        raise exception 'maintenance config is incomplete: embedding_max_attempts, embedding_retry_seconds, embedding_retry_max_seconds (seed it from config.toml: hipocampo db migrate)'
            using errcode = '55000';
    end if;
    with failed as (
        insert into hipocampo_private.embedding_failures as f
            (kind, row_id, attempts, last_error, next_attempt_at, dead)
        select record_embedding_failure.kind, r, 1, left(coalesce(error, 'unknown error'), 2000),
            now() + make_interval(secs => least(base, cap)), max_attempts <= 1
        from (select distinct unnest(row_ids) as r) as ids
        where r is not null
        on conflict on constraint embedding_failures_pkey do update
        set attempts = f.attempts + 1,
            last_error = excluded.last_error,
            next_attempt_at = now() + make_interval(secs => least(base * power(2, f.attempts), cap)),
            dead = f.attempts + 1 >= max_attempts,
            updated_at = now()
        returning f.dead
    )
    select jsonb_build_object(
        'retrying', count(*) filter (where not failed.dead), 'dead', count(*) filter (where failed.dead)
    ) into result
    from failed;
    return result;
end;
$$;

/*
requeue_embedding_failures(kind text default null) -> integer

Purpose: give dead-lettered rows (and those waiting for a retry) back to the backfill at once,
  e.g. after the provider is fixed: their failure records are deleted, so rows_to_embed lists them
  again.
Parameters: kind - chunks | memories | memory_staging | messages, or null for all.
Returns: the number of rows requeued.
Errors: 42501 for any role but service_role (no EXECUTE); 22023 on an unknown kind.
Example: select hipocampo.requeue_embedding_failures('messages');
*/
create or replace function hipocampo.requeue_embedding_failures(kind text default null)
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    n integer;
begin
    if kind is not null then
        perform hipocampo_private._embedding_kind(kind);
    end if;
    delete from hipocampo_private.embedding_failures as f
    where requeue_embedding_failures.kind is null or f.kind = requeue_embedding_failures.kind;
    get diagnostics n = row_count;
    return n;
end;
$$;

comment on function hipocampo.rows_to_embed(text, integer, text) is
'Chunks, active and staged memories and messages without an embedding of the active model (locked for the caller''s transaction): the work list after a model switch.';
comment on function hipocampo.set_row_embeddings(text, jsonb) is
'Store embeddings of the active model for rows rows_to_embed listed (a chunk gets a row of the active model; a message''s tokens are cleared with its old embedding).';

create or replace view hipocampo.embedding_queue
with (security_invoker = true)
as
with active_model as (
    select e.name
    from hipocampo_private.embedding_models as e
    where e.active
),

pending as (
    select
        'chunks' as kind,
        c.id::text as row_id
    from hipocampo_private.chunks as c
    where
        c.embedding_model is distinct from (select a.name from active_model as a)
        and c.id = (
            select min(o.id) from hipocampo_private.chunks as o
            where o.tenant_id = c.tenant_id and o.content_hash = c.content_hash
        )
        and not exists (
            select 1 from hipocampo_private.chunks as n
            where
                n.tenant_id = c.tenant_id
                and n.content_hash = c.content_hash
                and n.embedding_model = (select a.name from active_model as a)
        )
    union all
    select
        'memories' as kind,
        m.id::text as row_id
    from hipocampo_private.memories as m
    where
        m.status = 'active'
        and m.embedding_model is distinct from (select a.name from active_model as a)
    union all
    select
        'memory_staging' as kind,
        s.id::text as row_id
    from hipocampo_private.memory_staging as s
    where s.embedding_model is distinct from (select a.name from active_model as a)
    union all
    select
        'messages' as kind,
        g.id::text as row_id
    from hipocampo_private.messages as g
    where g.embedding_model is distinct from (select a.name from active_model as a)
),

waiting as (
    select
        p.kind,
        count(*) as waiting
    from pending as p
    group by p.kind
),

failures as (
    select
        f.kind,
        count(*) filter (where not f.dead) as retrying,
        count(*) filter (where f.dead) as dead
    from hipocampo_private.embedding_failures as f
    group by f.kind
),

last_dead as (
    select distinct on (f.kind)
        f.kind,
        f.last_error
    from hipocampo_private.embedding_failures as f
    where f.dead
    order by f.kind asc, f.updated_at desc
)

select
    k.kind,
    coalesce(w.waiting, 0) as waiting,
    coalesce(x.retrying, 0) as retrying,
    coalesce(x.dead, 0) as dead,
    d.last_error as last_dead_letter_error
from (values ('chunks'), ('memories'), ('memory_staging'), ('messages')) as k (kind)
left join waiting as w on k.kind = w.kind
left join failures as x on k.kind = x.kind
left join last_dead as d on k.kind = d.kind;


revoke execute on function hipocampo_private._embedding_kind(text) from public;
grant execute on function hipocampo_private._embedding_kind(kind text) to service_role;
