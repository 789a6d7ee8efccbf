-- Backfill of the messages' tokens for search_history's late-interaction re-rank (migration
-- 003500). Messages stored before 003500, through the edge functions (no token model in Deno) or
-- by a client without a token model have an embedding but no tokens; in a history that mixes them
-- with messages that have tokens they rank at the tokens' minimum among the re-rank's candidates.
-- A worker with the token model lists them here and stores their tokens with set_message_tokens
-- (`hipocampo db backfill-tokens`, `hipocampo worker --backfill-tokens`).

-- The messages still to backfill, in id order, whatever the size of the table (the policies'
-- columns are indexed in 001400; this one serves only the backfill's scan).
create index messages_without_tokens_idx on hipocampo_private.messages (id)
where token_bits is null and embedding is not null;

/*
messages_without_tokens(batch_size integer default 100, filter_tenant_id uuid default null,
  after_message_id bigint default 0) -> table (message_id bigint, tenant_id uuid, content text, context text[])

Purpose: the oldest messages that have an embedding of the active model and no tokens, each with
  the context its tokens are read after (as Memory.add_messages reads them): the previous
  conversations.token_context_messages messages of its conversation (its tenant's config), oldest
  first. The listed messages stay locked (for update skip locked) until the caller's transaction
  ends: store their tokens in the same transaction; concurrent workers take other messages.
Parameters: batch_size 1..1000 messages; filter_tenant_id - only that tenant's messages (null: every
  tenant's); after_message_id - only messages with a greater id (a caller's cursor: a message whose
  tokens it could not compute is not listed to it again).
Returns: at most batch_size rows, by message id; none when every message of the active model has
  its tokens (or no model is active).
Errors: 22023 "batch_size must be 1..1000"; 55000 "conversations config is incomplete: seed it from
  config.toml (hipocampo db migrate)" (token_context_messages missing for a listed message's tenant).
Example: select message_id, content, context from hipocampo.messages_without_tokens(100, null, 0);
*/
create function hipocampo.messages_without_tokens(
    batch_size integer default 100, filter_tenant_id uuid default null, after_message_id bigint default 0
)
returns table (message_id bigint, tenant_id uuid, content text, context text[])
language plpgsql
volatile
security invoker
set search_path = ''
as $$
declare
    model text;
begin
    if batch_size is null or batch_size not between 1 and 1000 then
        raise exception 'batch_size must be 1..1000' using errcode = '22023';
    end if;
    select e.name into model from hipocampo_private.embedding_models as e where e.active;
    return query
    with batch as materialized (
        select m.id, m.tenant_id, m.user_id, m.conversation_id, m.content
        from hipocampo_private.messages as m
        where m.token_bits is null and m.embedding is not null and m.embedding_model = model
          and m.id > coalesce(messages_without_tokens.after_message_id, 0)
          and (messages_without_tokens.filter_tenant_id is null or m.tenant_id = messages_without_tokens.filter_tenant_id)
        order by m.id
        limit batch_size
        for update of m skip locked
    ),
    context_size as materialized (
        select t.tenant_id, (hipocampo_private._require_config(
            hipocampo.effective_config(t.tenant_id) -> 'conversations', 'conversations',
            array['token_context_messages']
        ) ->> 'token_context_messages')::integer as n
        from (select distinct b.tenant_id from batch as b) as t
    )
    select b.id, b.tenant_id, b.content, array(
        select p.content from (
            select x.id, x.content from hipocampo_private.messages as x
            where x.tenant_id = b.tenant_id and x.user_id = b.user_id
              and x.conversation_id = b.conversation_id and x.id < b.id
            order by x.id desc
            limit greatest(cs.n, 0)
        ) as p
        order by p.id
    )
    from batch as b
    inner join context_size as cs on cs.tenant_id = b.tenant_id
    order by b.id;
end;
$$;

revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;

grant execute on function hipocampo.messages_without_tokens(integer, uuid, bigint) to service_role;

comment on function hipocampo.messages_without_tokens(integer, uuid, bigint) is
'Messages with an embedding of the active model and no tokens, each with its previous messages (locked for the caller''s transaction): the token backfill''s work list.';
