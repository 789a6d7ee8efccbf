-- One caller model for every RPC. Until now _resolve_tenant decided "may this caller name any
-- tenant?" from current_user, which inside a security definer function is the owner: a signed-in
-- user whose JWT named no tenant they belong to could pass tenant_id => <another tenant> to the
-- definer RPCs (set_tenant_config, cache_get, cache_put, record_answer, take_rate_limit), and
-- _require_admin did nothing when no tenant resolved. _memory_actor took the user_id argument
-- whenever auth.uid() was null, so a JWT with role authenticated and no sub could export or erase
-- any user (export_user_data, erase_user). The definer helpers that write (_touch_chunks,
-- _touch_memories, _memory_event, _log_access) wrote into whatever tenant they were given.
--
-- Now hipocampo_private._caller() resolves the caller once, from the request (the JWT claims that
-- PostgREST, the edge functions and the Python client set with `set local role`), never from
-- current_user; _resolve_tenant, _memory_actor, _data_subject and _require_admin are restated on
-- it, so every RPC that goes through them (all that take tenant_id or user_id) follows it, and
-- each definer helper checks the tenant (and user) it writes for. The UPDATE policies of memories
-- and memory_staging check the new row as their USING clause checks the old one (a member could
-- move their own memory to tenant_shared, which every member reads).

/*
_caller() -> record (kind text, tenant_id uuid, user_id uuid, tenant_role text)

Purpose: who is calling, from the request alone: the role and claims in request.jwt.claims
  (auth.role(), auth.uid(), auth.jwt()) and the role the request switched to (`set local role`,
  read as current_setting('role'), which a security definer function does not change). Never
  current_user, which inside a definer function is the owner.
  The role is the database role the request switched to, else the JWT's role claim; when both
  are there they must agree.
  - kind 'service': that role is service_role, or a direct connection that set neither a role
    nor claims (the owner: migrations, psql, pg_cron jobs; anon and authenticated cannot log in).
  - kind 'user': that role is authenticated, with a uuid `sub`, a tenant claim
    (app_metadata.tenant_id, else tenant_id) and a live membership of sub in that tenant;
    tenant_role is 'admin' or 'member'.
Returns: one record; tenant_id, user_id and tenant_role are null for 'service'.
Errors: 42501, before any other work, for every other caller:
  "not allowed: the JWT role … does not match the database role …" (claims forged on a
  connection that switched to another role); "not allowed: role … may not call this" (anon, a
  JWT without a role); "no user: the JWT has no subject (sub)" / "… sub is not a uuid";
  "no tenant: the JWT claims name no tenant" / "… is not a uuid"; "no tenant: the JWT claims
  name no tenant this user belongs to" (never a member, or the membership was removed).
Example: select kind, tenant_id from hipocampo_private._caller();
*/
-- definer because memberships is under RLS and the caller must be resolved the same way from
-- invoker and definer RPCs; it reads only the request's settings and the caller's membership.
create function hipocampo_private._caller(
    out kind text, out tenant_id uuid, out user_id uuid, out tenant_role text
)
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
    claims jsonb := (select auth.jwt());
    claim_role text := claims ->> 'role';
    db_role text := current_setting('role');
    sub_text text := claims ->> 'sub';
    tenant_text text := coalesce(claims -> 'app_metadata' ->> 'tenant_id', claims ->> 'tenant_id');
    uuid_format constant text := '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
begin
    if db_role <> 'none' then
        if claim_role is not null and claim_role <> db_role then
            raise exception 'not allowed: the JWT role % does not match the database role %', claim_role, db_role
                using errcode = '42501';
        end if;
        claim_role := db_role;
    end if;
    if claim_role = 'service_role' or (claim_role is null and db_role = 'none') then
        kind := 'service';
        return;
    end if;
    if claim_role is distinct from 'authenticated' then
        raise exception 'not allowed: role % may not call this', coalesce(claim_role, '(none)')
            using errcode = '42501';
    end if;
    if sub_text is null or sub_text = '' then
        raise exception 'no user: the JWT has no subject (sub)' using errcode = '42501';
    end if;
    if sub_text !~ uuid_format then
        raise exception 'no user: the JWT sub is not a uuid' using errcode = '42501';
    end if;
    if tenant_text is null or tenant_text = '' then
        raise exception 'no tenant: the JWT claims name no tenant'
            using errcode = '42501', hint = 'set app_metadata.tenant_id in the JWT';
    end if;
    if tenant_text !~ uuid_format then
        raise exception 'no tenant: the JWT tenant claim is not a uuid' using errcode = '42501';
    end if;
    select m.tenant_id, m.user_id, m.role into _caller.tenant_id, _caller.user_id, _caller.tenant_role
    from hipocampo_private.memberships as m
    where m.tenant_id = tenant_text::uuid and m.user_id = sub_text::uuid;
    if not found then
        raise exception 'no tenant: the JWT claims name no tenant this user belongs to'
            using errcode = '42501';
    end if;
    kind := 'user';
end;
$$;

/*
_resolve_tenant(requested uuid) -> uuid

Purpose: the tenant a call acts on, by _caller(): a user acts on the tenant of their claims
  (requested may repeat it); service_role must name one. Every RPC that takes tenant_id calls it.
Parameters: requested - the RPC's tenant_id argument (null for a user: their tenant).
Returns: the tenant id.
Errors: 42501 as _caller; 42501 "tenant mismatch: the JWT claims name another tenant" when a user
  names another tenant; 42501 "no tenant: service_role must pass tenant_id" when service_role names
  none.
Example: select hipocampo_private._resolve_tenant(null);
*/
create or replace function hipocampo_private._resolve_tenant(requested uuid)
returns uuid
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
begin
    if c.kind = 'service' then
        if requested is null then
            raise exception 'no tenant: service_role must pass tenant_id' using errcode = '42501';
        end if;
        return requested;
    end if;
    if requested is not null and requested <> c.tenant_id then
        raise exception 'tenant mismatch: the JWT claims name another tenant' using errcode = '42501';
    end if;
    return c.tenant_id;
end;
$$;

/*
_memory_actor(user_id uuid, tenant_id uuid) -> record (actor_tenant uuid, actor_user uuid)

Purpose: who a memory, conversation or session call acts for, by _caller(): a user acts for
  themselves in their tenant (user_id / tenant_id may repeat them); service_role names both.
Errors: 42501 as _resolve_tenant; 42501 "user mismatch: the JWT names another user" when a user
  names another user; 42501 "no user: service_role must pass user_id".
Example: select actor_tenant, actor_user from hipocampo_private._memory_actor(null, null);
*/
create or replace function hipocampo_private._memory_actor(
    user_id uuid, tenant_id uuid, out actor_tenant uuid, out actor_user uuid
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
begin
    actor_tenant := hipocampo_private._resolve_tenant(_memory_actor.tenant_id);
    if c.kind = 'service' then
        if _memory_actor.user_id is null then
            raise exception 'no user: service_role must pass user_id' using errcode = '42501';
        end if;
        actor_user := _memory_actor.user_id;
        return;
    end if;
    if _memory_actor.user_id is not null and _memory_actor.user_id <> c.user_id then
        raise exception 'user mismatch: the JWT names another user' using errcode = '42501';
    end if;
    actor_user := c.user_id;
end;
$$;

/*
_data_subject(user_id uuid, tenant_id uuid) -> record (actor_tenant uuid, actor_user uuid)

Purpose: whose data an export or erasure is about: exactly _memory_actor's answer (a user is
  their own data subject; service_role names the user and tenant).
Errors: as _memory_actor.
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
_require_admin() -> void

Purpose: only an admin of the caller's tenant or service_role passes (fails closed: a caller
  _caller() does not resolve is refused).
Errors: 42501 as _caller; 42501 "only tenant admins can change the tenant's configuration".
Example: perform hipocampo_private._require_admin();
*/
create or replace function hipocampo_private._require_admin()
returns void
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
begin
    if c.kind <> 'service' and c.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can change the tenant''s configuration' using errcode = '42501';
    end if;
end;
$$;

/*
_touch_chunks(ids bigint[], tenant_id uuid) -> void

Purpose: set last_accessed_at of the chunks just read (at most once every 5 minutes per chunk),
  only the given tenant's, which must be the caller's (service_role: any).
Errors: 42501 as _resolve_tenant.
Example: perform hipocampo_private._touch_chunks(array[1, 2], t);
*/
-- definer because members may read chunks but are granted no update on them.
create or replace function hipocampo_private._touch_chunks(ids bigint[], tenant_id uuid)
returns void
language plpgsql
security definer
set search_path = ''
as $$
begin
    perform hipocampo_private._resolve_tenant(_touch_chunks.tenant_id);
    update hipocampo_private.chunks as c
    set last_accessed_at = now()
    where c.id = any(_touch_chunks.ids)
      -- "is not distinct from" (tenant_id is never null) is no index condition: the tenant is
      -- checked on the rows found by primary key.
      and c.tenant_id is not distinct from _touch_chunks.tenant_id
      and (c.last_accessed_at is null or c.last_accessed_at < now() - interval '5 minutes');
end;
$$;

/*
_touch_memories(ids uuid[], tenant_id uuid) -> void

Purpose: access_count + 1 and last_accessed_at = now() for memories (either tier) just read, only
  the given tenant's, which must be the caller's (service_role: any).
Errors: 42501 as _resolve_tenant.
Example: perform hipocampo_private._touch_memories(array[m], t);
*/
-- definer because reading a shared memory must count as an access although only admins may update it.
create or replace function hipocampo_private._touch_memories(ids uuid[], tenant_id uuid)
returns void
language plpgsql
security definer
set search_path = ''
as $$
begin
    perform hipocampo_private._resolve_tenant(_touch_memories.tenant_id);
    update hipocampo_private.memories as m
    set access_count = m.access_count + 1, last_accessed_at = now()
    where m.id = any(_touch_memories.ids) and m.tenant_id = _touch_memories.tenant_id;
    update hipocampo_private.memory_staging as s
    set access_count = s.access_count + 1, last_accessed_at = now()
    where s.id = any(_touch_memories.ids) and s.tenant_id = _touch_memories.tenant_id;
end;
$$;

/*
_memory_event(tenant_id uuid, user_id uuid, memory_id uuid, event text, reason text, detail jsonb) -> void

Purpose: append one row to the memory event log. A user appends events of their own tenant about
  themselves only; service_role any.
Errors: 42501 as _memory_actor.
Example: perform hipocampo_private._memory_event(t, u, null, 'memory.consent', null, '{}');
*/
-- definer because callers append events but may never change or delete them.
create or replace function hipocampo_private._memory_event(
    tenant_id uuid, user_id uuid, memory_id uuid, event text, reason text, detail jsonb
)
returns void
language plpgsql
security definer
set search_path = ''
as $$
begin
    if (hipocampo_private._caller()).kind <> 'service' then
        perform hipocampo_private._memory_actor(_memory_event.user_id, _memory_event.tenant_id);
    end if;
    insert into hipocampo_private.memory_events (tenant_id, user_id, memory_id, event, reason, detail)
    values (
        _memory_event.tenant_id, _memory_event.user_id, _memory_event.memory_id,
        _memory_event.event, _memory_event.reason, coalesce(_memory_event.detail, '{}'::jsonb)
    );
end;
$$;

/*
_log_access(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision) -> void

Purpose: append one row to the data-access log (caller and role taken from the request) for the
  given tenant, which must be the caller's (service_role: any).
Errors: 42501 as _resolve_tenant.
Example: perform hipocampo_private._log_access(t, 'hybrid_search', 5, 'ab12…', 3.2);
*/
-- definer because callers may append to the access log but never read or change it.
create or replace function hipocampo_private._log_access(
    tenant_id uuid,
    rpc text,
    rows_returned integer,
    query_hash text,
    latency_ms double precision
)
returns void
language plpgsql
security definer
set search_path = ''
as $$
begin
    perform hipocampo_private._resolve_tenant(_log_access.tenant_id);
    insert into hipocampo_private.data_access_log
        (caller, caller_role, tenant_id, rpc, rows_returned, query_hash, latency_ms)
    values (
        (select auth.uid()),
        coalesce((select auth.role()), nullif(current_setting('role'), 'none'), session_user::text),
        _log_access.tenant_id,
        _log_access.rpc,
        _log_access.rows_returned,
        _log_access.query_hash,
        _log_access.latency_ms
    );
end;
$$;

/*
cache_get(question text, kb_ids uuid[], agent text default null, tenant_id uuid default null) -> jsonb

Purpose: the cached answer to a question over these knowledge bases, when one is live. The caller
  is resolved first (before, as a sql function with the check in its WHERE clause, an empty
  cache answered null to any caller).
Parameters: question as asked (normalised here); kb_ids - the knowledge bases searched (null:
  all); agent - agent binding name or null; tenant_id - service_role only.
Returns: the answer json, or null.
Errors: 42501 as _resolve_tenant.
Example: select hipocampo.cache_get('Qual o prazo?', array[kb]);
*/
-- definer because clients may not read the cache table directly (it is shared by the tenant's users).
create or replace function hipocampo.cache_get(
    question text, kb_ids uuid[], agent text default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(cache_get.tenant_id);
begin
    return (
        select c.answer from hipocampo_private.answer_cache as c
        where c.tenant_id = t
          and c.kb_key = hipocampo_private._cache_scope(cache_get.kb_ids)
          and c.agent = coalesce(cache_get.agent, '')
          and c.question_key = hipocampo.normalize_question(cache_get.question)
          and c.expires_at > now()
    );
end;
$$;

-- The UPDATE policies' WITH CHECK mirrors USING: the row after the update must still be the
-- member's own personal memory, or a shared one written by an admin.
drop policy "users update their personal memories, admins shared ones" on hipocampo_private.memories;

create policy "users update their personal memories, admins shared ones"
on hipocampo_private.memories
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
)
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
);

drop policy "users update their staged memories, admins shared ones" on hipocampo_private.memory_staging;

create policy "users update their staged memories, admins shared ones"
on hipocampo_private.memory_staging
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
)
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (
        (scope = 'personal' and user_id = (select auth.uid()))
        or (scope = 'tenant_shared' and (select hipocampo_private.current_tenant_role()) = 'admin')
    )
);

grant execute on function hipocampo_private._caller() to authenticated, service_role;

comment on function hipocampo_private._caller() is
'The caller of an RPC, from the request''s role and JWT claims (never current_user): service, user, or 42501.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
