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
_data_subject(user_id uuid, tenant_id uuid) -> record (actor_tenant uuid, actor_user uuid)

Purpose: whose data an export or erasure is about: exactly _memory_actor's answer (a user is
  their own data subject; service_role names the user and tenant).
Errors: as _memory_actor.
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
    a record := hipocampo_private._memory_actor(_data_subject.user_id, _data_subject.tenant_id);
begin
    actor_tenant := a.actor_tenant;
    actor_user := a.actor_user;
end;
$$;

/*
export_user_data(user_id uuid default null, tenant_id uuid default null) -> jsonb

Purpose: everything hipocampo holds about one user in one tenant, as JSON (LGPD art. 18 II/V):
  consent, memories (with history), staged memories, messages, conversation summaries, live
  sessions and memory events. Embeddings and the messages' token_ids / token_bits (derived from
  their content) are left out. Audited (user.exported).
Parameters: user_id / tenant_id only for service_role (users export themselves).
Returns: {"format": "hipocampo.user_export.v1", "exported_at", "tenant_id", "user_id", "consent",
  "memories": [...], "staged_memories": [...], "messages": [...], "conversation_summaries": [...],
  "sessions": [...], "events": [...]}.
Errors: 42501 as _data_subject (no tenant / no user / user mismatch).
Example: select hipocampo.export_user_data();
*/
-- definer because a user's export includes their own audit events and sessions in every state, beyond what RLS shows.
create or replace function hipocampo.export_user_data(user_id uuid default null, tenant_id uuid default null)
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
  memories, messages, conversation summaries, sessions, consent, memory events, the user's
  rate-limit bucket and their membership are deleted; tenant_shared memories the user wrote stay
  (tenant knowledge) with the author replaced by a pseudonym; the access log and ingestion jobs
  keep their rows without the user. No raw user id remains in any table
  (tests/sql/test_erasure_scan.py). One audit record remains: event user.erased with user_id
  null and user_ref = the keyed HMAC of tenant:user (_user_ref), with the counts. All or nothing.
Parameters: user_id / tenant_id only for service_role (users erase themselves).
Returns: {"user_ref", "memories", "shared_memories_pseudonymised", "staged_memories", "messages",
  "conversation_summaries", "sessions", "events", "memberships"} (rows affected).
Errors: 42501 as _data_subject (no tenant / no user / user mismatch).
Example: select hipocampo.erase_user('…'::uuid, '…'::uuid);  -- as service_role
*/
-- definer because erasure deletes the user's audit events, which no client role may delete.
create or replace function hipocampo.erase_user(user_id uuid default null, tenant_id uuid default null)
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
    values (a.actor_tenant, null, ref, 'user.erased',
        case when (select auth.uid()) is null then 'service_role' else 'data_subject' end, counts);
    return counts || jsonb_build_object('user_ref', ref);
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
