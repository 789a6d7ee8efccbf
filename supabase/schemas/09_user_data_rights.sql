-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

/*
_user_ref(tenant_id uuid, user_id uuid) -> text

Purpose: the pseudonym of a user in audit records and rate-limit buckets: _pseudonym(tenant:user),
  a keyed HMAC that whoever holds the user id but not the key cannot recompute. Called by the definer RPCs
  (record_answer, erase_user, take_rate_limit) and service_role; not by clients.
Returns: 64 hex characters.
Errors: 55000 as _pseudonym; 42501 for clients (no EXECUTE).
*/
create or replace function hipocampo_private._user_ref(tenant_id uuid, user_id uuid)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
    select hipocampo_private._pseudonym(tenant_id::text || ':' || user_id::text)
$$;

/*
_holds_data_in(tenant_id uuid, user_id uuid) -> boolean

Purpose: whether a user is a data subject of a tenant: a member, or a former member of whom the
  tenant still holds memories, staged memories, messages, conversation summaries, sessions or a
  consent record (issue 44 §5: an LGPD request of a removed member must be servable by the
  tenant's admin, not only by the operator).
Parameters: tenant_id, user_id.
Returns: true or false.
Errors: none.
Example: select hipocampo_private._holds_data_in(t, u);
*/
create or replace function hipocampo_private._holds_data_in(tenant_id uuid, user_id uuid)
returns boolean
language sql
stable
security invoker
set search_path = ''
as $$
    select exists (select 1 from hipocampo_private.memberships as x where x.tenant_id = $1 and x.user_id = $2)
        or exists (select 1 from hipocampo_private.memories as x where x.tenant_id = $1 and x.user_id = $2)
        or exists (select 1 from hipocampo_private.memory_staging as x where x.tenant_id = $1 and x.user_id = $2)
        or exists (select 1 from hipocampo_private.messages as x where x.tenant_id = $1 and x.user_id = $2)
        or exists (select 1 from hipocampo_private.conversation_summaries as x where x.tenant_id = $1 and x.user_id = $2)
        or exists (select 1 from hipocampo_private.sessions as x where x.tenant_id = $1 and x.user_id = $2)
        or exists (select 1 from hipocampo_private.memory_consents as x where x.tenant_id = $1 and x.user_id = $2)
$$;

/*
_data_subject(user_id uuid, tenant_id uuid) -> record (actor_tenant uuid, actor_user uuid)

Purpose: whose data an export, an erasure or an inspection is about: a user is their own data
  subject; service_role names the user and tenant; a tenant admin may name a member of their own
  tenant, or a former member whose data the tenant still holds (_holds_data_in: the controller
  answering for a data subject, LGPD art. 18, also after the membership ended; the hub's memory
  inspector).
  The callers audit who acted (memory_events reason tenant_admin, with the admin's pseudonym).
Errors: 42501 as _memory_actor (no tenant / no user / another tenant); 42501 "only tenant admins
  can act on another user's data" (a member naming someone else); P0002 "unknown user: … is not a
  member of this tenant and holds no data in it" (an admin naming someone who is neither).
Returns: (actor_tenant, actor_user).
Example: select actor_user from hipocampo_private._data_subject(null, null);
*/
create or replace function hipocampo_private._data_subject(
    user_id uuid, tenant_id uuid, out actor_tenant uuid, out actor_user uuid
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
    a record;
begin
    if c.kind = 'user' and _data_subject.user_id is not null and _data_subject.user_id <> c.user_id then
        actor_tenant := hipocampo_private._resolve_tenant(_data_subject.tenant_id);
        if c.tenant_role is distinct from 'admin' then
            raise exception 'only tenant admins can act on another user''s data' using errcode = '42501';
        end if;
        -- Called by definer RPCs (as the owner, so every row is visible).
        if not hipocampo_private._holds_data_in(actor_tenant, _data_subject.user_id) then
            raise exception 'unknown user: % is not a member of this tenant and holds no data in it',
                _data_subject.user_id using errcode = 'P0002';
        end if;
        actor_user := _data_subject.user_id;
        return;
    end if;
    a := hipocampo_private._memory_actor(_data_subject.user_id, _data_subject.tenant_id);
    actor_tenant := a.actor_tenant;
    actor_user := a.actor_user;
end;
$$;

/*
export_user_data(user_id uuid default null, tenant_id uuid default null) -> jsonb

Purpose: everything hipocampo holds about one user in one tenant, as JSON (LGPD art. 18 II/V):
  consent, memories (with history), staged memories, messages, conversation summaries, live
  sessions, memory events and feedback on replies. Embeddings and the messages' token_ids / token_bits (derived from
  their content) are left out. Audited (user.exported, reason data_subject | tenant_admin |
  service_role).
Parameters: user_id - service_role, or a tenant admin naming a member of their tenant (users export
  themselves); tenant_id - service_role only.
Returns: {"format": "hipocampo.user_export.v1", "exported_at", "tenant_id", "user_id", "consent",
  "memories": [...], "staged_memories": [...], "messages": [...], "conversation_summaries": [...],
  "sessions": [...], "events": [...], "feedback": [...]}.
Errors: 42501 / P0002 as _data_subject (no tenant / no user / a member naming another user / an
  admin naming a non-member).
Example: select hipocampo.export_user_data();
*/
-- definer because a user's export includes their own audit events and sessions in every state, beyond what RLS shows.
create or replace function hipocampo.export_user_data(user_id uuid default null, tenant_id uuid default null)
returns jsonb
language plpgsql
security definer
set search_path = ''
set jit = off
as $$
declare
    a record := hipocampo_private._data_subject(export_user_data.user_id, export_user_data.tenant_id);
    who record := hipocampo_private._acting_for(a.actor_tenant, a.actor_user);
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
            select jsonb_agg(to_jsonb(m) - 'embedding' order by m.key, m.valid_from, m.valid_to nulls last)
            from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
        ), '[]'::jsonb),
        'staged_memories', coalesce((
            select jsonb_agg(to_jsonb(s) - 'embedding' order by s.key)
            from hipocampo_private.memory_staging as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'messages', coalesce((
            select jsonb_agg(
                to_jsonb(m) - 'embedding' - 'fts' - 'fts_length' - 'ts_config' - 'token_ids' - 'token_bits'
                order by m.id
            )
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
        ), '[]'::jsonb),
        'feedback', coalesce((
            select jsonb_agg(to_jsonb(f) order by f.created_at, f.trace_id)
            from hipocampo_private.answer_feedback as f
            where f.tenant_id = a.actor_tenant and f.user_id = a.actor_user
        ), '[]'::jsonb)
    );
    perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, null, 'user.exported', who.reason,
        who.detail || jsonb_build_object('memories', jsonb_array_length(result -> 'memories'),
            'messages', jsonb_array_length(result -> 'messages')));
    return result;
end;
$$;

/*
erase_user(user_id uuid default null, tenant_id uuid default null) -> jsonb

Purpose: erase a user from a tenant (LGPD art. 18 VI): personal memories (with history), staged
  memories, messages, conversation summaries, sessions, feedback on replies (a judged question an
  admin made from it is the tenant's and stays), consent, memory events, the user's
  rate-limit bucket and their membership are deleted; tenant_shared memories the user wrote stay
  (tenant knowledge) with the author replaced by a pseudonym; the access log and ingestion jobs
  keep their rows without the user. No raw user id remains in any table
  (tests/sql/test_erasure_scan.py). One audit record remains: event user.erased with user_id
  null and user_ref = the keyed HMAC of tenant:user (_user_ref), with the counts. All or nothing.
Parameters: user_id - service_role, or a tenant admin naming a member or former member of their
  tenant (users erase themselves); tenant_id - service_role only. The user.erased record's reason
  says which (data_subject | tenant_admin, with the admin's pseudonym | service_role). Erasure
  removes the membership, so a tenant admin may not erase another admin (who erases themselves,
  or is erased by the operator): one admin cannot lock the others out.
Returns: {"user_ref", "memories", "shared_memories_pseudonymised", "staged_memories", "messages",
  "conversation_summaries", "sessions", "feedback", "events", "memberships"} (rows affected).
Errors: 42501 / P0002 as _data_subject (no tenant / no user / a member naming another user / an
  admin naming someone who is neither a member nor holds data in the tenant); 42501 "an admin's
  data is erased by that admin or by the operator (service_role)".
Example: select hipocampo.erase_user('…'::uuid, '…'::uuid);  -- as service_role
*/
-- definer because erasure deletes the user's audit events, which no client role may delete.
create or replace function hipocampo.erase_user(user_id uuid default null, tenant_id uuid default null)
returns jsonb
language plpgsql
security definer
set search_path = ''
set jit = off
as $$
declare
    a record := hipocampo_private._data_subject(erase_user.user_id, erase_user.tenant_id);
    ref text := hipocampo_private._user_ref(a.actor_tenant, a.actor_user);
    pseudonym uuid := md5(hipocampo_private._user_ref(a.actor_tenant, a.actor_user))::uuid;
    -- Before the membership goes: a user erasing themselves is no caller afterwards.
    who record := hipocampo_private._acting_for(a.actor_tenant, a.actor_user);
    counts jsonb := '{}'::jsonb;
    n integer;
begin
    if who.reason = 'tenant_admin' and exists (
        select 1 from hipocampo_private.memberships as m
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.role = 'admin'
    ) then
        raise exception 'an admin''s data is erased by that admin or by the operator (service_role)'
            using errcode = '42501';
    end if;
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
    delete from hipocampo_private.answer_feedback as f where f.tenant_id = a.actor_tenant and f.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('feedback', n);
    delete from hipocampo_private.memory_consents as c
    where c.tenant_id = a.actor_tenant and c.user_id = a.actor_user;
    delete from hipocampo_private.memory_events as e
    where e.tenant_id = a.actor_tenant and e.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('events', n);
    update hipocampo_private.data_access_log as l set caller = null
    where l.tenant_id = a.actor_tenant and l.caller = a.actor_user;
    update hipocampo_private.read_queue as q set caller = null
    where q.tenant_id = a.actor_tenant and q.caller = a.actor_user;
    update hipocampo_private.ingestion_jobs as j set created_by = null
    where j.tenant_id = a.actor_tenant and j.created_by = a.actor_user;
    -- The user's rate-limit bucket (keyed by the pseudonym; by the raw id in older databases).
    delete from hipocampo_private.rate_limit_buckets as r
    where r.bucket in ('user:' || a.actor_tenant || ':' || ref, 'user:' || a.actor_tenant || ':' || a.actor_user);
    delete from hipocampo_private.memberships as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('memberships', n);
    insert into hipocampo_private.memory_events (tenant_id, user_id, user_ref, event, reason, detail)
    values (a.actor_tenant, null, ref, 'user.erased', who.reason, counts || who.detail);
    return counts || jsonb_build_object('user_ref', ref);
end;
$$;

/*
_acting_for(tenant_id uuid, user_id uuid) -> record (reason text, detail jsonb)

Purpose: how an audit row names who acted on a data subject's rows: reason 'data_subject' (the
  user themselves), 'tenant_admin' (an admin of the tenant, named in detail.by by their pseudonym
  _user_ref, so the admin's own erasure leaves no raw id here) or 'service_role'.
Returns: (reason, detail) - detail is {} or {"by": pseudonym}.
Errors: 42501 as _caller; 55000 as _user_ref.
Example: select reason from hipocampo_private._acting_for(t, u);
*/
create or replace function hipocampo_private._acting_for(
    tenant_id uuid, user_id uuid, out reason text, out detail jsonb
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
begin
    detail := '{}'::jsonb;
    if c.kind = 'service' then
        reason := 'service_role';
    elsif c.user_id = _acting_for.user_id then
        reason := 'data_subject';
    else
        reason := 'tenant_admin';
        detail := jsonb_build_object('by', hipocampo_private._user_ref(_acting_for.tenant_id, c.user_id));
    end if;
end;
$$;

/*
_user_memory(memory_id uuid, tenant_id uuid) -> hipocampo_private.memories

Purpose: an active memory a data-subject call may act on, locked for update: in the caller's
  tenant, and the caller's own unless the caller is a tenant admin or service_role (then
  _data_subject checks that its owner is a member of the tenant).
Returns: the memories row, or a row of nulls when there is none such.
Errors: 42501 as _resolve_tenant; 42501 / P0002 as _data_subject.
Example: m := hipocampo_private._user_memory(id, null);
*/
create or replace function hipocampo_private._user_memory(memory_id uuid, tenant_id uuid)
returns hipocampo_private.memories
language plpgsql
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
    t uuid := hipocampo_private._resolve_tenant(_user_memory.tenant_id);
    m hipocampo_private.memories;
begin
    select * into m from hipocampo_private.memories as x
    where x.id = _user_memory.memory_id and x.tenant_id = t and x.status = 'active'
      and (c.kind = 'service' or c.tenant_role = 'admin' or x.user_id = c.user_id)
    for update;
    if m.id is not null then
        perform hipocampo_private._data_subject(m.user_id, t);
    end if;
    return m;
end;
$$;

/*
forget_user_memory(memory_id uuid, tenant_id uuid default null) -> boolean

Purpose: forget_memory for the hub's memory inspector: a tenant admin forgets a member's memory
  (soft delete, status deleted; the row stays for audit until erased), audited as
  memory.forgotten in the member's log with reason tenant_admin and the admin's pseudonym.
Parameters: memory_id; tenant_id - service_role only.
Returns: true when an active memory was forgotten; false when there is none such (a member asking
  about someone else's memory gets false too).
Errors: 42501 as _resolve_tenant; 42501 / P0002 as _data_subject.
Example: select hipocampo.forget_user_memory('…');
*/
-- definer because a member's personal memories are visible to their owner only (RLS); a tenant
-- admin changes them through these audited calls only.
create or replace function hipocampo.forget_user_memory(memory_id uuid, tenant_id uuid default null)
returns boolean
language plpgsql
security definer
set search_path = ''
set jit = off
as $$
declare
    m hipocampo_private.memories := hipocampo_private._user_memory(
        forget_user_memory.memory_id, forget_user_memory.tenant_id
    );
    who record;
begin
    if m.id is null then
        return false;
    end if;
    who := hipocampo_private._acting_for(m.tenant_id, m.user_id);
    update hipocampo_private.memories as x
    set status = 'deleted', valid_to = now(), updated_at = now()
    where x.id = m.id;
    perform hipocampo_private._memory_event(m.tenant_id, m.user_id, m.id, 'memory.forgotten', who.reason,
        who.detail || jsonb_build_object('key', m.key));
    return true;
end;
$$;

/*
correct_user_memory(memory_id uuid, value jsonb, description text, embedding vector default null,
  tenant_id uuid default null) -> jsonb

Purpose: correct_memory for the hub's memory inspector: a tenant admin corrects a member's memory
  (the old row deprecated, a new one supersedes it), audited as memory.corrected in the member's
  log with reason tenant_admin and the admin's pseudonym.
Parameters: as correct_memory; embedding of the active model for the new description (null keeps
  the old vector); tenant_id - service_role only.
Returns: {"status": "corrected", "memory_id": new id, "superseded": old id}.
Errors: 42501 as _resolve_tenant; 42501 / P0002 as _data_subject; P0002 "unknown memory: …" (none
  such, or not active); 23514 "the correction does not pass the memory gate …" (no consent, or the
  description or value fails the gate); 55000 as _memory_config.
Example: select hipocampo.correct_user_memory('…', '"Ana Paula"', 'O nome do usuário é Ana Paula');
*/
-- definer because a member's personal memories are visible to their owner only (RLS); a tenant
-- admin changes them through these audited calls only.
create or replace function hipocampo.correct_user_memory(
    memory_id uuid, value jsonb, description text, embedding extensions.vector default null,
    tenant_id uuid default null
)
returns jsonb
language plpgsql
security definer
set search_path = ''
set jit = off
as $$
declare
    m hipocampo_private.memories := hipocampo_private._user_memory(
        correct_user_memory.memory_id, correct_user_memory.tenant_id
    );
    who record;
begin
    if m.id is null then
        raise exception 'unknown memory: %', correct_user_memory.memory_id using errcode = 'P0002';
    end if;
    -- The memory gate the INSERT policy applies to the owner's own corrections.
    if not hipocampo_private._memory_write_allowed(
        m.tenant_id, m.user_id, correct_user_memory.description, correct_user_memory.value,
        ceil(char_length(correct_user_memory.description) / 4.0)::integer
    ) then
        raise exception 'the correction does not pass the memory gate (consent, length, personal or sensitive data)'
            using errcode = '23514';
    end if;
    who := hipocampo_private._acting_for(m.tenant_id, m.user_id);
    return hipocampo_private._correct_memory(
        m, correct_user_memory.value, correct_user_memory.description, correct_user_memory.embedding,
        m.user_id, who.reason, who.detail
    );
end;
$$;

/*
promote_user_memory(staging_id uuid, intensity numeric, override boolean default false,
  tenant_id uuid default null) -> jsonb

Purpose: promote_memory for the hub's memory inspector: a tenant admin promotes a member's staged
  memory to long-term memory. The promotion itself runs the member's own write path
  (promote_memory: the gate, consent, one active value per key, the member's events) with the
  request's claims naming the member for the length of that call only, after the caller was
  checked: an admin of the member's tenant (or the member, or service_role), and a staged memory
  of that member in that tenant. The claims are restored before it returns (and by the rollback
  of any error). The member's memory.promoted row gets reason tenant_admin and the admin's
  pseudonym (detail.promotion keeps intensity | override).
Parameters: as promote_memory; tenant_id - service_role only.
Returns: promote_memory's result ({"status": "created" | "updated" | "kept" | "rejected" …,
  "memory_id", "promoted_from"}).
Errors: 42501 as _resolve_tenant; 42501 / P0002 as _data_subject; P0002 "unknown staged memory:
  …" (none such, or a member asking about someone else's); as promote_memory (22004, 23514).
Example: select hipocampo.promote_user_memory('…', 8);
*/
-- definer because a member's staged memories are visible to their owner only (RLS); a tenant
-- admin promotes them through this audited call only.
create or replace function hipocampo.promote_user_memory(
    staging_id uuid, intensity numeric, override boolean default false, tenant_id uuid default null
)
returns jsonb
language plpgsql
security definer
set search_path = ''
set jit = off
as $$
declare
    c record := hipocampo_private._caller();
    t uuid := hipocampo_private._resolve_tenant(promote_user_memory.tenant_id);
    s hipocampo_private.memory_staging;
    who record;
    claims text := current_setting('request.jwt.claims', true);
    r jsonb;
begin
    select * into s from hipocampo_private.memory_staging as x
    where x.id = promote_user_memory.staging_id and x.tenant_id = t
      and (c.kind = 'service' or c.tenant_role = 'admin' or x.user_id = c.user_id);
    if s.id is null then
        raise exception 'unknown staged memory: %', promote_user_memory.staging_id using errcode = 'P0002';
    end if;
    perform hipocampo_private._data_subject(s.user_id, t);
    who := hipocampo_private._acting_for(t, s.user_id);
    if c.kind = 'service' or who.reason = 'data_subject' then
        return hipocampo.promote_memory(
            promote_user_memory.staging_id, promote_user_memory.intensity, promote_user_memory.override
        );
    end if;
    perform set_config('request.jwt.claims', (coalesce(claims, '{}')::jsonb || jsonb_build_object(
        'sub', s.user_id, 'app_metadata', jsonb_build_object('tenant_id', t)
    ))::text, true);
    r := hipocampo.promote_memory(
        promote_user_memory.staging_id, promote_user_memory.intensity, promote_user_memory.override
    );
    perform set_config('request.jwt.claims', claims, true);
    -- The member's memory.promoted row (just written by promote_memory) names who promoted.
    update hipocampo_private.memory_events as e
    set reason = who.reason, detail = e.detail || who.detail || jsonb_build_object('promotion', e.reason)
    where e.tenant_id = t and e.user_id = s.user_id and e.event = 'memory.promoted'
      and e.detail ->> 'staging_id' = s.id::text;
    return r;
end;
$$;

/*
_source_message(tenant_id uuid, user_id uuid, source_ref text) -> jsonb

Purpose: the message a memory was taken from (source_ref 'message:<id>', written by
  _propose_memories), for the memory inspector: {"id", "conversation_id", "created_at",
  "content" (its first 300 characters)}, when it is the same user's message in the same tenant.
Returns: the message, or null (another kind of source_ref, or the message was deleted).
Errors: none.
Example: select hipocampo_private._source_message(t, u, 'message:42');
*/
create or replace function hipocampo_private._source_message(tenant_id uuid, user_id uuid, source_ref text)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    select jsonb_build_object(
        'id', m.id, 'conversation_id', m.conversation_id, 'created_at', m.created_at, 'content', left(m.content, 300)
    )
    from hipocampo_private.messages as m
    where _source_message.source_ref ~ '^message:[0-9]{1,18}$'
      and m.id = substr(_source_message.source_ref, 9)::bigint
      and m.tenant_id = _source_message.tenant_id and m.user_id = _source_message.user_id
$$;

/*
inspect_user_memory(user_id uuid default null, key text default null, history_limit integer
  default 100, tenant_id uuid default null) -> jsonb

Purpose: what the memory holds about one user, for the hub's memory inspector: consent, active
  memories, staged memories, the history of one key (its supersedes chain, every status) and the
  user's newest memory events. A tenant admin may inspect a member of their tenant; every call
  appends a memory.inspected event to the user's own log (reason tenant_admin with the admin's
  pseudonym, data_subject or service_role), which the user's export shows. Counts as no access
  (no access_count change).
Parameters: user_id - null = the caller; key - a memory key whose history to include (null =
  none); history_limit - 1..1000 newest events; tenant_id - service_role only.
Returns: {"tenant_id", "user_id", "consent": bool, "memories": [...], "staged": [...],
  "history": [...], "events": [...]}; memory rows without their embeddings, newest first; a
  memory taken from a message carries it as "source_message" (_source_message).
Errors: 42501 / P0002 as _data_subject (a member naming another user; an admin naming a
  non-member; another tenant); 22023 "history_limit must lie in [1, 1000] (got …)".
Example: select hipocampo.inspect_user_memory('…'::uuid, key => 'user.name');
*/
-- definer because a member's personal memories are visible to their owner only (RLS); a tenant
-- admin reads them through this audited call only.
create or replace function hipocampo.inspect_user_memory(
    user_id uuid default null, key text default null, history_limit integer default 100, tenant_id uuid default null
)
returns jsonb
language plpgsql
security definer
set search_path = ''
set jit = off
as $$
declare
    a record := hipocampo_private._data_subject(inspect_user_memory.user_id, inspect_user_memory.tenant_id);
    who record := hipocampo_private._acting_for(a.actor_tenant, a.actor_user);
    result jsonb;
begin
    if inspect_user_memory.history_limit is null or inspect_user_memory.history_limit not between 1 and 1000 then
        raise exception 'history_limit must lie in [1, 1000] (got %)',
            coalesce(inspect_user_memory.history_limit::text, 'null') using errcode = '22023';
    end if;
    result := jsonb_build_object(
        'tenant_id', a.actor_tenant,
        'user_id', a.actor_user,
        'consent', hipocampo_private._has_consent(a.actor_tenant, a.actor_user),
        'memories', coalesce((
            select jsonb_agg(
                (to_jsonb(m) - 'embedding') || jsonb_build_object(
                    'source_message', hipocampo_private._source_message(m.tenant_id, m.user_id, m.source_ref)
                ) order by m.updated_at desc, m.key
            )
            from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.status = 'active'
        ), '[]'::jsonb),
        'staged', coalesce((
            select jsonb_agg(
                (to_jsonb(s) - 'embedding') || jsonb_build_object(
                    'source_message', hipocampo_private._source_message(s.tenant_id, s.user_id, s.source_ref)
                ) order by s.expires_at, s.key
            )
            from hipocampo_private.memory_staging as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'history', coalesce((
            select jsonb_agg(to_jsonb(m) - 'embedding' order by m.valid_from desc)
            from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.key = inspect_user_memory.key
        ), '[]'::jsonb),
        'events', coalesce((
            select jsonb_agg(to_jsonb(e) order by e.id desc)
            from (
                select x.* from hipocampo_private.memory_events as x
                where x.tenant_id = a.actor_tenant and x.user_id = a.actor_user
                order by x.id desc
                limit inspect_user_memory.history_limit
            ) as e
        ), '[]'::jsonb)
    );
    insert into hipocampo_private.memory_events (tenant_id, user_id, event, reason, detail)
    values (a.actor_tenant, a.actor_user, 'memory.inspected', who.reason,
        who.detail || jsonb_build_object(
            'key', inspect_user_memory.key, 'memories', jsonb_array_length(result -> 'memories')
        ));
    return result;
end;
$$;

comment on function hipocampo.export_user_data(uuid, uuid) is
'Everything hipocampo holds about a user, as JSON (LGPD art. 18).';

comment on function hipocampo.erase_user(uuid, uuid) is
'Erase a user''s memories, staging, messages, sessions and events; one pseudonymous audit record remains.';

create table hipocampo_private.project_secrets (
    name text primary key,
    value bytea not null,
    created_at timestamptz not null default now(),
    constraint project_secrets_value_length check (octet_length(value) >= 32)
);

alter table hipocampo_private.project_secrets enable row level security;

comment on table hipocampo_private.project_secrets is
'Per-project keys (user_ref_key: the HMAC key of audit pseudonyms). Readable by service_role only.';

/*
_hmac_sha256(key bytea, message bytea) -> bytea

Purpose: HMAC-SHA256 (RFC 2104): sha256((K xor opad) || sha256((K xor ipad) || message)), the
  key zero-padded to the 64-byte block (hashed first when longer).
Returns: 32 bytes.
Errors: none (a pure function).
Example: select encode(hipocampo_private._hmac_sha256('key', 'The quick brown fox jumps over the lazy dog'), 'hex');
  -- f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8
*/
create or replace function hipocampo_private._hmac_sha256(key bytea, message bytea)
returns bytea
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    k bytea := case when octet_length(key) > 64 then sha256(key) else key end;
    inner_key bytea;
    outer_key bytea;
begin
    k := k || decode(repeat('00', 64 - octet_length(k)), 'hex');
    inner_key := k;
    outer_key := k;
    for i in 0 .. 63 loop
        inner_key := set_byte(inner_key, i, get_byte(k, i) # 54);  -- 0x36
        outer_key := set_byte(outer_key, i, get_byte(k, i) # 92);  -- 0x5c
    end loop;
    return sha256(outer_key || sha256(inner_key || message));
end;
$$;

/*
_pseudonym(value text) -> text

Purpose: the keyed pseudonym of an identifier: hex HMAC-SHA256 of value under the project's
  user_ref_key. Without the key (service_role alone reads it) the identifier cannot be
  recovered or re-derived from the pseudonym.
Errors: 55000 "the project has no user_ref_key" (the row was deleted).
Returns: 64 hex characters.
*/
-- definer because it reads project_secrets, which only service_role may read; not executable by
-- clients (a client could otherwise compute anyone's pseudonym).
create or replace function hipocampo_private._pseudonym(value text)
returns text
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
    key bytea := (select s.value from hipocampo_private.project_secrets as s where s.name = 'user_ref_key');
begin
    if key is null then
        raise exception 'the project has no user_ref_key' using errcode = '55000';
    end if;
    return encode(hipocampo_private._hmac_sha256(key, convert_to(value, 'UTF8')), 'hex');
end;
$$;

comment on function hipocampo.inspect_user_memory(uuid, text, integer, uuid) is
'What the memory holds about one user (consent, memories, staged, a key''s history, events); a tenant admin may inspect a member; audited as memory.inspected in the user''s log.';

comment on function hipocampo.forget_user_memory(uuid, uuid) is
'Forget a member''s memory (tenant admins; soft delete), audited in the member''s log.';

comment on function hipocampo.correct_user_memory(uuid, jsonb, text, extensions.vector, uuid) is
'Correct a member''s memory (tenant admins; through the memory gate), audited in the member''s log.';

comment on function hipocampo.promote_user_memory(uuid, numeric, boolean, uuid) is
'Promote a member''s staged memory (tenant admins; the member''s own write path and gate), audited in the member''s log.';
