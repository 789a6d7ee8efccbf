-- Messages are scrubbed before storage by default (issue 16 §1.4, §2 "PII"): add_message and
-- session_add_message stored CPF and card numbers verbatim. A BEFORE trigger runs the one
-- scrubber (_pii_scrub, 004000) on a message's content and on every string of its attachments
-- and metadata, and on conversation summaries, whoever writes them (RPC, edge function, direct
-- INSERT), when the tenant's conversations.scrub_pii is true: the default in config.toml, and
-- what a missing key means. A tenant that must keep messages verbatim (e.g. a support desk
-- that records the customer's CPF by design) sets it to false with set_tenant_config.

/*
_scrub_message() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of messages: content, attachments and metadata scrubbed
  when the row's tenant has conversations.scrub_pii (default true).
*/
create function hipocampo_private._scrub_message()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if coalesce((hipocampo.effective_config(new.tenant_id) -> 'conversations' ->> 'scrub_pii')::boolean, true) then
        new.content := (hipocampo_private._pii_scrub(new.content)).text;
        new.attachments := hipocampo_private._pii_scrub_jsonb(new.attachments);
        new.metadata := hipocampo_private._pii_scrub_jsonb(new.metadata);
    end if;
    return new;
end;
$$;

/*
_scrub_summary() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of conversation_summaries: the summary scrubbed like the
  messages it summarises (conversations.scrub_pii, default true).
*/
create function hipocampo_private._scrub_summary()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if coalesce((hipocampo.effective_config(new.tenant_id) -> 'conversations' ->> 'scrub_pii')::boolean, true) then
        new.summary := (hipocampo_private._pii_scrub(new.summary)).text;
    end if;
    return new;
end;
$$;

create trigger messages_scrub_pii
before insert or update of content, attachments, metadata on hipocampo_private.messages
for each row execute function hipocampo_private._scrub_message();

create trigger conversation_summaries_scrub_pii
before insert or update of summary on hipocampo_private.conversation_summaries
for each row execute function hipocampo_private._scrub_summary();

grant execute on function hipocampo_private._scrub_message() to authenticated, service_role;
grant execute on function hipocampo_private._scrub_summary() to authenticated, service_role;

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
