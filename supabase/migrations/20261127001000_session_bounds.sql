-- What a member stores in a session is bounded (issue 44 §4: a 10 MB summary and a 10 MB
-- confirmation payload were accepted): update_session's summary and tool, and
-- add_pending_confirmation's action, payload and count of live confirmations, by fixed keys of
-- [sessions] (summary_max_chars 8,000, tool_max_chars 200, action_max_chars 200,
-- payload_max_bytes 16,384, max_pending 20; seeded from config.toml), 22001 / 22023. Functions
-- restated from supabase/schemas/02_config.sql and 08_sessions.sql (their docblocks live there);
-- re-runnable.

create or replace function hipocampo_private._sessions_config(section_config jsonb)
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
    select hipocampo_private._require_config(section_config, 'sessions', array[
        'inactivity_ttl_minutes', 'absolute_max_minutes', 'pending_confirmation_minutes', 'max_concurrent',
        'last_messages', 'summary_max_chars', 'tool_max_chars', 'action_max_chars', 'payload_max_bytes',
        'max_pending'
    ])
$$;

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

create or replace function hipocampo.update_session(session_id uuid, summary text default null, tool text default null)
returns jsonb
language plpgsql
security invoker
set search_path = ''
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

create or replace function hipocampo.add_pending_confirmation(session_id uuid, action text, payload jsonb default '{}'::jsonb)
returns jsonb
language plpgsql
security invoker
set search_path = ''
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

revoke execute on function hipocampo_private._check_text_length(text, text, jsonb, text) from public;
grant execute on function hipocampo_private._check_text_length(label text, value text, cfg jsonb, key text)
to authenticated, service_role;
