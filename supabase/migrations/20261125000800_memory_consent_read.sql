-- hipocampo.memory_consent (issue 18 §2): whether the user has consented to long-term memory, so
-- the Python client reads it before computing a memory's embedding and, without consent, sends the
-- write without one (the gate refuses it and records the attempt; no model is loaded). Restated
-- from supabase/schemas/06_memory.sql and 13_grants.sql; re-runnable.
set local check_function_bodies = off;

/*
memory_consent(user_id uuid default null, tenant_id uuid default null) -> boolean

Purpose: whether the user has consented to long-term memory (LGPD art. 7 I), read before any
  work a refused write would waste: the Python client asks it before computing a memory's
  embedding, and without consent sends the write without one, so the gate refuses it (and records
  the attempt) without a model being loaded.
Parameters: user_id / tenant_id only for service_role (users read their own).
Returns: true when granted; false when revoked or never given.
Errors: 42501 as _memory_actor.
Example: select hipocampo.memory_consent();
*/
create or replace function hipocampo.memory_consent(user_id uuid default null, tenant_id uuid default null)
returns boolean
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(memory_consent.user_id, memory_consent.tenant_id);
begin
    return coalesce((
        select mc.granted from hipocampo_private.memory_consents as mc
        where mc.tenant_id = a.actor_tenant and mc.user_id = a.actor_user
    ), false);
end;
$$;

comment on function hipocampo.memory_consent(uuid, uuid) is
'Whether the user has consented to long-term memory (read before a write computes its embedding).';
revoke execute on function hipocampo.memory_consent(uuid, uuid) from public;
grant execute on function hipocampo.memory_consent(user_id uuid, tenant_id uuid) to authenticated, service_role;
