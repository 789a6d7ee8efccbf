-- Sessions keep a copy of their last messages and the pending confirmations' payloads in
-- sessions.data (session_add_message, add_pending_confirmation), written from the arguments, so
-- 004200's message trigger did not reach them: a CPF said in a session stayed verbatim in the
-- session row. A BEFORE trigger scrubs every string of sessions.data under the same switch
-- (conversations.scrub_pii, default true).

/*
_scrub_session() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of sessions: every string of data scrubbed when the
  row's tenant has conversations.scrub_pii (default true).
*/
create function hipocampo_private._scrub_session()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if coalesce((hipocampo.effective_config(new.tenant_id) -> 'conversations' ->> 'scrub_pii')::boolean, true) then
        new.data := hipocampo_private._pii_scrub_jsonb(new.data);
    end if;
    return new;
end;
$$;

create trigger sessions_scrub_pii
before insert or update of data on hipocampo_private.sessions
for each row execute function hipocampo_private._scrub_session();

grant execute on function hipocampo_private._scrub_session() to authenticated, service_role;

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
