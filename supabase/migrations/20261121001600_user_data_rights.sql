-- Data-subject rights (LGPD art. 18): export everything hipocampo holds about a user, and erase it,
-- leaving only a pseudonymous audit record.

/*
_user_ref(tenant_id uuid, user_id uuid) -> text

Purpose: the pseudonym of a user in audit records: sha256 of tenant and user ids (hex). It
  identifies nobody by itself; whoever still holds the user id can recompute it.
*/
create function hipocampo_private._user_ref(tenant_id uuid, user_id uuid)
returns text
language sql
immutable
security invoker
set search_path = ''
as $$
    select encode(sha256(convert_to(tenant_id::text || ':' || user_id::text, 'UTF8')), 'hex')
$$;

/*
_data_subject(user_id uuid, tenant_id uuid) -> record (actor_tenant uuid, actor_user uuid)

Purpose: whose data an export or erasure is about: the caller (JWT user in the JWT tenant), or
  the user named by a caller that bypasses RLS (service_role).
Errors: 42501 "user mismatch" when a user names another user; 42501 no tenant (also for a
  signed-in user whose JWT names no tenant they belong to) / no user.
*/
create function hipocampo_private._data_subject(
    user_id uuid, tenant_id uuid, out actor_tenant uuid, out actor_user uuid
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(_data_subject.user_id, _data_subject.tenant_id);
begin
    -- Inside a definer the owner bypasses RLS: a signed-in user must still be a member of the tenant.
    if (select auth.uid()) is not null and hipocampo_private.current_tenant_id() is null then
        raise exception 'no tenant: the JWT claims name no tenant this user belongs to' using errcode = '42501';
    end if;
    actor_tenant := a.actor_tenant;
    actor_user := a.actor_user;
end;
$$;

/*
export_user_data(user_id uuid default null, tenant_id uuid default null) -> jsonb

Purpose: everything hipocampo holds about one user in one tenant, as JSON (LGPD art. 18 II/V):
  consent, memories (with history), staged memories, messages, conversation summaries, live
  sessions and memory events. Audited (user.exported).
Parameters: user_id / tenant_id only for service_role (users export themselves).
Returns: {"format": "hipocampo.user_export.v1", "exported_at", "tenant_id", "user_id", "consent",
  "memories": [...], "staged_memories": [...], "messages": [...], "conversation_summaries": [...],
  "sessions": [...], "events": [...]} — embeddings left out.
Errors: 42501 no tenant / no user / user mismatch.
Example: select hipocampo.export_user_data();
*/
-- definer because a user's export includes their own audit events and sessions in every state, beyond what RLS shows.
create function hipocampo.export_user_data(user_id uuid default null, tenant_id uuid default null)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
    a record := hipocampo_private._data_subject(export_user_data.user_id, export_user_data.tenant_id);
    result jsonb;
begin
    result := jsonb_build_object(
        'format', 'hipocampo.user_export.v1',
        'exported_at', now(),
        'tenant_id', a.actor_tenant,
        'user_id', a.actor_user,
        'consent', (
            select to_jsonb(c) from hipocampo_private.memory_consents as c
            where c.tenant_id = a.actor_tenant and c.user_id = a.actor_user
        ),
        'memories', coalesce((
            select jsonb_agg(to_jsonb(m) - 'embedding' - 'emotional_embedding' order by m.key, m.valid_from, m.valid_to nulls last)
            from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
        ), '[]'::jsonb),
        'staged_memories', coalesce((
            select jsonb_agg(to_jsonb(s) - 'embedding' - 'emotional_embedding' order by s.key)
            from hipocampo_private.memory_staging as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'messages', coalesce((
            select jsonb_agg(to_jsonb(m) - 'embedding' - 'fts' - 'fts_length' - 'ts_config' order by m.id)
            from hipocampo_private.messages as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
        ), '[]'::jsonb),
        'conversation_summaries', coalesce((
            select jsonb_agg(to_jsonb(s) order by s.conversation_id)
            from hipocampo_private.conversation_summaries as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'sessions', coalesce((
            select jsonb_agg(to_jsonb(s) order by s.created_at)
            from hipocampo_private.sessions as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'events', coalesce((
            select jsonb_agg(to_jsonb(e) order by e.id)
            from hipocampo_private.memory_events as e
            where e.tenant_id = a.actor_tenant and e.user_id = a.actor_user
        ), '[]'::jsonb)
    );
    perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, null, 'user.exported', null,
        jsonb_build_object('memories', jsonb_array_length(result -> 'memories'),
            'messages', jsonb_array_length(result -> 'messages')));
    return result;
end;
$$;

/*
erase_user(user_id uuid default null, tenant_id uuid default null) -> jsonb

Purpose: erase a user from a tenant (LGPD art. 18 VI): personal memories (with history), staged
  memories, messages, conversation summaries, sessions, consent and memory events are deleted;
  tenant_shared memories the user wrote stay (tenant knowledge) with the author replaced by a
  pseudonym; the access log keeps its rows without the caller. One audit record remains:
  event user.erased with user_id null and user_ref = sha256(tenant:user), with the counts.
  All or nothing (one transaction).
Parameters: user_id / tenant_id only for service_role (users erase themselves).
Returns: {"user_ref", "memories", "staged_memories", "messages", "conversation_summaries",
  "sessions", "events"} (rows deleted).
Errors: 42501 no tenant / no user / user mismatch.
Example: select hipocampo.erase_user('…'::uuid, '…'::uuid);  -- as service_role
*/
-- definer because erasure deletes the user's audit events, which no client role may delete.
create function hipocampo.erase_user(user_id uuid default null, tenant_id uuid default null)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
    a record := hipocampo_private._data_subject(erase_user.user_id, erase_user.tenant_id);
    ref text := hipocampo_private._user_ref(a.actor_tenant, a.actor_user);
    pseudonym uuid := md5(hipocampo_private._user_ref(a.actor_tenant, a.actor_user))::uuid;
    counts jsonb := '{}'::jsonb;
    n integer;
begin
    delete from hipocampo_private.memories as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.scope = 'personal';
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('memories', n);
    update hipocampo_private.memories as m set user_id = pseudonym
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('shared_memories_pseudonymised', n);
    delete from hipocampo_private.memory_staging as s
    where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('staged_memories', n);
    delete from hipocampo_private.messages as m where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('messages', n);
    delete from hipocampo_private.conversation_summaries as s
    where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('conversation_summaries', n);
    delete from hipocampo_private.sessions as s where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('sessions', n);
    delete from hipocampo_private.memory_consents as c
    where c.tenant_id = a.actor_tenant and c.user_id = a.actor_user;
    delete from hipocampo_private.memory_events as e
    where e.tenant_id = a.actor_tenant and e.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('events', n);
    update hipocampo_private.data_access_log as l set caller = null
    where l.tenant_id = a.actor_tenant and l.caller = a.actor_user;
    insert into hipocampo_private.memory_events (tenant_id, user_id, user_ref, event, reason, detail)
    values (a.actor_tenant, null, ref, 'user.erased',
        case when (select auth.uid()) is null then 'service_role' else 'data_subject' end, counts);
    return counts || jsonb_build_object('user_ref', ref);
end;
$$;

grant execute on function hipocampo_private._user_ref(uuid, uuid) to authenticated, service_role;
grant execute on function hipocampo_private._data_subject(uuid, uuid) to authenticated, service_role;
grant execute on function hipocampo.export_user_data(uuid, uuid) to authenticated, service_role;
grant execute on function hipocampo.erase_user(uuid, uuid) to authenticated, service_role;

comment on function hipocampo.export_user_data(uuid, uuid) is
'Everything hipocampo holds about a user, as JSON (LGPD art. 18).';
comment on function hipocampo.erase_user(uuid, uuid) is
'Erase a user''s memories, staging, messages, sessions and events; one pseudonymous audit record remains.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
