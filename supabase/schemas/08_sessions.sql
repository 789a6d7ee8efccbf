-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- Session context in Postgres (Supabase has no Redis): last N messages, summary, tools used and
-- pending confirmations, with an inactivity TTL renewed by activity, an absolute maximum, and a
-- cap on concurrent sessions per user. Expired sessions are unreadable (RLS) and purged.
-- Durations come from the config section `sessions` (tenant-configurable within bounds).
create table hipocampo_private.sessions (
    id uuid primary key default gen_random_uuid(),
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    user_id uuid not null,
    conversation_id uuid not null,
    -- {"messages": [last N], "summary": text | null, "tools_used": [text]}
    data jsonb not null default '{"messages": [], "summary": null, "tools_used": []}'::jsonb,
    -- [{"id", "action", "payload", "expires_at"}]
    pending_confirmations jsonb not null default '[]'::jsonb,
    created_at timestamptz not null default now(),
    last_activity_at timestamptz not null default now(),
    -- Effective expiry: least(last activity + inactivity TTL, absolute_expires_at).
    expires_at timestamptz not null,
    absolute_expires_at timestamptz not null,
    constraint sessions_data_is_object check (jsonb_typeof(data) = 'object'),
    constraint sessions_pending_is_array check (jsonb_typeof(pending_confirmations) = 'array'),
    constraint sessions_expiry_order check (expires_at <= absolute_expires_at)
);

alter table hipocampo_private.sessions enable row level security;

-- RLS filters on (tenant_id, user_id) and expiry; the purge scans expires_at.
create index sessions_tenant_user_idx on hipocampo_private.sessions (tenant_id, user_id, expires_at);

create index sessions_expires_at_idx on hipocampo_private.sessions (expires_at);

create policy "users read their own live sessions"
on hipocampo_private.sessions
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
    and expires_at > now()
);

create policy "users open their own sessions"
on hipocampo_private.sessions
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
);

create policy "users update their own live sessions"
on hipocampo_private.sessions
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
    and expires_at > now()
)
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
);

create policy "users close their own sessions"
on hipocampo_private.sessions
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
);

comment on table hipocampo_private.sessions is
'Session context (last messages, summary, tools, pending confirmations) with TTLs; expired rows are unreadable.';

/*
_session(session_id uuid, renew boolean) -> hipocampo_private.sessions

Purpose: the caller's live session, locked; renewed (last_activity_at = now(), expires_at =
  least(now() + sessions.inactivity_ttl_minutes, absolute_expires_at)) when renew. The sessions
  config is read from the config rows only.
Errors: 42501 as _caller (before any other work); P0002 "unknown or expired session"; 55000 "sessions config is incomplete: …".
Returns: the sessions row (locked for update when renew).
Example: select (hipocampo_private._session(s, false)).id;
*/
create or replace function hipocampo_private._session(session_id uuid, renew boolean)
returns hipocampo_private.sessions
language plpgsql
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    s hipocampo_private.sessions;
    cfg jsonb;
begin
    -- Locked only to renew it: a read without renewal must run in a read-only transaction (a replica).
    if renew then
        select * into s from hipocampo_private.sessions as x
        where x.id = _session.session_id and x.expires_at > now()
          and ((select auth.uid()) is null or x.user_id = (select auth.uid()))
        for update;
    else
        select * into s from hipocampo_private.sessions as x
        where x.id = _session.session_id and x.expires_at > now()
          and ((select auth.uid()) is null or x.user_id = (select auth.uid()));
    end if;
    if s.id is null then
        raise exception 'unknown or expired session: %', session_id using errcode = 'P0002';
    end if;
    if renew then
        cfg := hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions');
        update hipocampo_private.sessions as x
        set last_activity_at = now(),
            expires_at = least(
                now() + make_interval(mins => (cfg ->> 'inactivity_ttl_minutes')::integer),
                x.absolute_expires_at
            )
        where x.id = s.id
        returning * into s;
    end if;
    return s;
end;
$$;

/*
_session_view(s hipocampo_private.sessions) -> jsonb

Purpose: a session as the API returns it; expired pending confirmations left out.
Returns: {"session_id", "conversation_id", "messages", "summary", "pending", "expires_at", …}.
Errors: none of its own.
*/
create or replace function hipocampo_private._session_view(s hipocampo_private.sessions)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    select jsonb_build_object(
        'session_id', s.id, 'conversation_id', s.conversation_id,
        'messages', coalesce(s.data -> 'messages', '[]'::jsonb),
        'summary', s.data -> 'summary',
        'tools_used', coalesce(s.data -> 'tools_used', '[]'::jsonb),
        'pending_confirmations', coalesce((
            select jsonb_agg(p order by p ->> 'expires_at')
            from jsonb_array_elements(s.pending_confirmations) as p
            where (p ->> 'expires_at')::timestamptz > now()
        ), '[]'::jsonb),
        'created_at', s.created_at, 'last_activity_at', s.last_activity_at,
        'expires_at', s.expires_at, 'absolute_expires_at', s.absolute_expires_at
    )
$$;

/*
open_session(conversation_id uuid default null, user_id uuid default null, tenant_id uuid default null)
  -> jsonb

Purpose: open a session for the caller. Expires after sessions.inactivity_ttl_minutes without
  activity (renewed by activity) and at the latest sessions.absolute_max_minutes after opening.
  A user has at most sessions.max_concurrent live sessions: opening one more closes the least
  recently active ones (listed in "evicted").
Parameters: conversation_id (default: a new one); user_id / tenant_id only for service_role.
Returns: the session (see get_session) plus {"evicted": [session ids]}.
Errors: 42501 as _memory_actor; 55000 "sessions config is incomplete: …" (not seeded from
  config.toml).
Example: select hipocampo.open_session();
*/
create or replace function hipocampo.open_session(
    conversation_id uuid default null, user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    a record := hipocampo_private._memory_actor(open_session.user_id, open_session.tenant_id);
    cfg jsonb := hipocampo_private._sessions_config(hipocampo.effective_config(a.actor_tenant) -> 'sessions');
    max_live integer := (cfg ->> 'max_concurrent')::integer;
    absolute timestamptz := now() + make_interval(mins => (cfg ->> 'absolute_max_minutes')::integer);
    s hipocampo_private.sessions;
    evicted uuid [];
begin
    -- One opener per user at a time, so the cap holds under concurrency.
    perform pg_advisory_xact_lock(hashtextextended('session/' || a.actor_tenant::text || '/' || a.actor_user::text, 0));
    with doomed as (
        select x.id from hipocampo_private.sessions as x
        where x.tenant_id = a.actor_tenant and x.user_id = a.actor_user and x.expires_at > now()
        order by x.last_activity_at desc, x.created_at desc
        offset greatest(max_live - 1, 0)
    ), gone as (
        delete from hipocampo_private.sessions as x using doomed as d where x.id = d.id returning x.id
    )
    select coalesce(array_agg(g.id), '{}') into evicted from gone as g;
    insert into hipocampo_private.sessions (
        tenant_id, user_id, conversation_id, expires_at, absolute_expires_at
    ) values (
        a.actor_tenant, a.actor_user, coalesce(open_session.conversation_id, gen_random_uuid()),
        least(now() + make_interval(mins => (cfg ->> 'inactivity_ttl_minutes')::integer), absolute),
        absolute
    ) returning * into s;
    return hipocampo_private._session_view(s) || jsonb_build_object('evicted', to_jsonb(evicted));
end;
$$;

/*
get_session(session_id uuid, renew boolean default true) -> jsonb

Purpose: read a live session (reading is activity: renews the TTL unless renew is false).
Returns: {"session_id", "conversation_id", "messages": [last N], "summary", "tools_used",
  "pending_confirmations": [live ones], "created_at", "last_activity_at", "expires_at",
  "absolute_expires_at"}.
Errors: P0002 "unknown or expired session".
Example: select hipocampo.get_session('…');
*/
create or replace function hipocampo.get_session(session_id uuid, renew boolean default true)
returns jsonb
language sql
security invoker
set search_path = ''
set jit = off
as $$
    select hipocampo_private._session_view(hipocampo_private._session(session_id, renew))
$$;

/*
session_add_message(session_id uuid, role text, content text, modality text default 'chat',
  attachments jsonb default '[]', embedding vector default null, metadata jsonb default '{}') -> bigint

Purpose: add a message to the session's conversation history (hipocampo.add_message) and to the
  session's last sessions.last_messages messages (kept in sessions.data, scrubbed like the
  message); renews the session.
Returns: the message id.
Errors: 42501 as _caller; P0002 "unknown or expired session"; as add_message; 55000 "sessions
  config is incomplete: …".
Example: select hipocampo.session_add_message('…', 'user', 'Oi, preciso da segunda via');
*/
create or replace function hipocampo.session_add_message(
    session_id uuid,
    role text,
    content text,
    modality text default 'chat',
    attachments jsonb default '[]'::jsonb,
    embedding extensions.vector default null,
    metadata jsonb default '{}'::jsonb
)
returns bigint
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    s hipocampo_private.sessions := hipocampo_private._session(session_add_message.session_id, true);
    keep integer := (
        hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions') ->> 'last_messages'
    )::integer;
    message_id bigint;
begin
    message_id := hipocampo.add_message(
        s.conversation_id, role, content, modality, attachments, embedding, metadata,
        user_id => s.user_id, tenant_id => s.tenant_id
    );
    update hipocampo_private.sessions as x
    set data = jsonb_set(x.data, '{messages}', coalesce((
        select jsonb_agg(m.value order by m.ord)
        from (
            select e.value, e.ord from jsonb_array_elements(
                coalesce(x.data -> 'messages', '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
                    'id', message_id, 'role', session_add_message.role, 'content', session_add_message.content,
                    'modality', coalesce(session_add_message.modality, 'chat'), 'created_at', now()
                ))
            ) with ordinality as e (value, ord)
            order by e.ord desc
            limit keep
        ) as m
    ), '[]'::jsonb))
    where x.id = s.id;
    return message_id;
end;
$$;

/*
_check_text_length(label text, value text, cfg jsonb, key text) -> void

Purpose: a text a caller stores in a session within its bound: at most cfg ->> key characters.
Parameters: label - the argument's name in the message; value - the text (null passes); cfg - a
  config section; key - the key of the bound in it (e.g. 'summary_max_chars').
Errors: 22001 "<label> is N characters; the limit is M (sessions.<key>)".
Returns: nothing.
Example: perform hipocampo_private._check_text_length('summary', s, cfg, 'summary_max_chars');
*/
create or replace function hipocampo_private._check_text_length(label text, value text, cfg jsonb, key text)
returns void
language plpgsql
immutable
security invoker
set search_path = ''
as $$
begin
    if char_length(value) > (cfg ->> key)::integer then
        raise exception '% is % characters; the limit is % (sessions.%)', label, char_length(value), cfg ->> key, key
            using errcode = '22001';
    end if;
end;
$$;

/*
update_session(session_id uuid, summary text default null, tool text default null) -> jsonb

Purpose: set the session's summary and/or record a tool used (each tool listed once); renews.
Parameters: summary - at most sessions.summary_max_chars (8,000) characters; tool - at most
  sessions.tool_max_chars (200).
Returns: the session (see get_session).
Errors: P0002 "unknown or expired session"; 22001 "summary is N characters; the limit is M
  (sessions.summary_max_chars)" / "tool is N characters; …"; 55000 "sessions config is incomplete".
Example: select hipocampo.update_session('…', tool => 'hybrid_search');
*/
create or replace function hipocampo.update_session(session_id uuid, summary text default null, tool text default null)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    s hipocampo_private.sessions := hipocampo_private._session(update_session.session_id, true);
    cfg jsonb := hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions');
begin
    perform hipocampo_private._check_text_length('summary', update_session.summary, cfg, 'summary_max_chars');
    perform hipocampo_private._check_text_length('tool', update_session.tool, cfg, 'tool_max_chars');
    update hipocampo_private.sessions as x
    set data = x.data
        || case when update_session.summary is null then '{}'::jsonb
                else jsonb_build_object('summary', update_session.summary) end
        || case when update_session.tool is null
                  or coalesce(x.data -> 'tools_used', '[]'::jsonb) ? update_session.tool then '{}'::jsonb
                else jsonb_build_object('tools_used',
                    coalesce(x.data -> 'tools_used', '[]'::jsonb) || to_jsonb(update_session.tool)) end
    where x.id = s.id
    returning * into s;
    return hipocampo_private._session_view(s);
end;
$$;

/*
add_pending_confirmation(session_id uuid, action text, payload jsonb default '{}') -> jsonb

Purpose: park an action awaiting the user's confirmation ("confirma o envio?"). It expires after
  sessions.pending_confirmation_minutes (5, fixed: tenants cannot change it); renews the session.
Parameters: action - 1..sessions.action_max_chars (200) characters; payload - json of at most
  sessions.payload_max_bytes (16,384) bytes; a session holds at most sessions.max_pending (20)
  live confirmations.
Returns: {"id", "action", "payload", "expires_at"}.
Errors: 42501 as _caller; P0002 "unknown or expired session"; 22023 empty action; 22001 "action is
  N characters; …" / "payload is N bytes as json; the limit is M (sessions.payload_max_bytes)";
  22023 "a session holds at most N pending confirmations (sessions.max_pending)"; 55000 "sessions
  config is incomplete: …".
Example: select hipocampo.add_pending_confirmation('…', 'send_invoice', '{"invoice": 12}');
*/
create or replace function hipocampo.add_pending_confirmation(session_id uuid, action text, payload jsonb default '{}'::jsonb)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    s hipocampo_private.sessions := hipocampo_private._session(add_pending_confirmation.session_id, true);
    cfg jsonb := hipocampo_private._sessions_config(hipocampo.effective_config(s.tenant_id) -> 'sessions');
    item jsonb;
begin
    if action is null or btrim(action) = '' then
        raise exception 'a pending confirmation needs an action' using errcode = '22023';
    end if;
    perform hipocampo_private._check_text_length('action', action, cfg, 'action_max_chars');
    if octet_length(coalesce(payload, '{}'::jsonb)::text) > (cfg ->> 'payload_max_bytes')::integer then
        raise exception 'payload is % bytes as json; the limit is % (sessions.payload_max_bytes)',
            octet_length(payload::text), cfg ->> 'payload_max_bytes' using errcode = '22001';
    end if;
    if (
        select count(*) from jsonb_array_elements(s.pending_confirmations) as p
        where (p ->> 'expires_at')::timestamptz > now()
    ) >= (cfg ->> 'max_pending')::integer then
        raise exception 'a session holds at most % pending confirmations (sessions.max_pending)', cfg ->> 'max_pending'
            using errcode = '22023';
    end if;
    item := jsonb_build_object(
        'id', gen_random_uuid(), 'action', action, 'payload', coalesce(payload, '{}'::jsonb),
        'expires_at', now() + make_interval(mins => (cfg ->> 'pending_confirmation_minutes')::integer)
    );
    update hipocampo_private.sessions as x
    set pending_confirmations = coalesce((
        select jsonb_agg(p) from jsonb_array_elements(x.pending_confirmations) as p
        where (p ->> 'expires_at')::timestamptz > now()
    ), '[]'::jsonb) || jsonb_build_array(item)
    where x.id = s.id;
    return item;
end;
$$;

/*
resolve_pending_confirmation(session_id uuid, confirmation_id uuid) -> jsonb

Purpose: take a pending confirmation out of the session (the user answered); renews the session.
Returns: the confirmation {"id", "action", "payload", "expires_at"}.
Errors: P0002 "unknown or expired session"; P0002 "unknown or expired confirmation" (past its
  5 minutes: the action must be asked again).
Example: select hipocampo.resolve_pending_confirmation('…', '…');
*/
create or replace function hipocampo.resolve_pending_confirmation(session_id uuid, confirmation_id uuid)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    s hipocampo_private.sessions := hipocampo_private._session(resolve_pending_confirmation.session_id, true);
    item jsonb;
begin
    select p into item from jsonb_array_elements(s.pending_confirmations) as p
    where p ->> 'id' = confirmation_id::text and (p ->> 'expires_at')::timestamptz > now();
    update hipocampo_private.sessions as x
    set pending_confirmations = coalesce((
        select jsonb_agg(p) from jsonb_array_elements(x.pending_confirmations) as p
        where (p ->> 'expires_at')::timestamptz > now() and p ->> 'id' <> confirmation_id::text
    ), '[]'::jsonb)
    where x.id = s.id;
    if item is null then
        raise exception 'unknown or expired confirmation: %', confirmation_id using errcode = 'P0002',
            hint = 'pending confirmations expire after sessions.pending_confirmation_minutes; ask again';
    end if;
    return item;
end;
$$;

/*
close_session(session_id uuid) -> boolean

Purpose: end a session now (its conversation history stays).
Returns: true when a session was closed.
Example: select hipocampo.close_session('…');
Errors: 42501 as _caller (before any other work).
*/
create or replace function hipocampo.close_session(session_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    n integer;
begin
    delete from hipocampo_private.sessions as x
    where x.id = close_session.session_id
      and ((select auth.uid()) is null or x.user_id = (select auth.uid()));
    get diagnostics n = row_count;
    return n > 0;
end;
$$;

/*
purge_sessions(now timestamptz default now()) -> integer

Purpose: delete expired sessions (inactivity TTL or absolute maximum passed). Scheduled every
  5 minutes with pg_cron where it exists; locally `hipocampo worker`.
Returns: the number of sessions deleted.
Errors: 42501 for any role but service_role (no EXECUTE).
Example: select hipocampo.purge_sessions();
*/
create or replace function hipocampo.purge_sessions(now timestamptz default now())
returns integer
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    n integer;
begin
    delete from hipocampo_private.sessions as x where x.expires_at <= purge_sessions.now;
    get diagnostics n = row_count;
    return n;
end;
$$;

comment on function hipocampo.open_session(uuid, uuid, uuid) is
'Open a session (inactivity TTL, absolute maximum, at most N live per user).';

comment on function hipocampo.get_session(uuid, boolean) is 'Read (and renew) a live session.';

comment on function hipocampo.session_add_message(uuid, text, text, text, jsonb, extensions.vector, jsonb) is
'Add a message to the session and its conversation history; renews the session.';

comment on function hipocampo.update_session(uuid, text, text) is 'Set a session''s summary or record a tool used.';

comment on function hipocampo.add_pending_confirmation(uuid, text, jsonb) is
'Park an action awaiting confirmation (expires after 5 minutes).';

comment on function hipocampo.resolve_pending_confirmation(uuid, uuid) is
'Take an answered pending confirmation out of the session.';

comment on function hipocampo.close_session(uuid) is 'End a session now.';

comment on function hipocampo.purge_sessions(timestamptz) is 'Delete expired sessions.';

/*
_scrub_session() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of sessions: every string of data scrubbed when the
  row's tenant has conversations.scrub_pii (default true).
Returns: NEW, scrubbed or unchanged.
Errors: 42501 as effective_config.
*/
create or replace function hipocampo_private._scrub_session()
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
