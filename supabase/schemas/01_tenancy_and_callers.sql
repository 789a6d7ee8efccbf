-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- Ids that reveal no other tenant's activity (issue 44 §5). A sequence shared by all tenants let a
-- member count every tenant's messages (or memory events, reads, chunks) from the gap between two
-- of their own ids; such an id is now the milliseconds since 2026-01-01 and a keyed permutation of
-- a private counter (_opaque_id), the default of every id a user can see that is not a uuid
-- (messages, memory_events, data_access_log, chunks, settings).
create sequence hipocampo_private.id_counter as bigint;

-- The secret keys of the id permutations, made on first use; nobody but their definer functions
-- reads them.
create table hipocampo_private.id_keys (
    name text primary key,
    key text not null
);

alter table hipocampo_private.id_keys enable row level security;

comment on table hipocampo_private.id_keys is
'Secret keys of the id permutations (_opaque_id): made on first use, read by definer functions only.';

/*
_permuted_low_bits(key text, t bigint, n integer) -> integer

Purpose: a keyed permutation of 0..1023 for each millisecond t: a four-round Feistel network over
  two 5-bit halves whose round function is a keyed hash of (t, round, half). For a given key and t
  it maps n to a distinct value, so ids sharing a millisecond never collide; without the key the
  values reveal nothing of n.
Parameters: key - the secret (id_keys); t - the id's millisecond; n - 0..1023.
Returns: 0..1023.
Errors: none.
Example: select hipocampo_private._permuted_low_bits('k', 1, 5);
*/
create or replace function hipocampo_private._permuted_low_bits(key text, t bigint, n integer)
returns integer
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    l integer := (n >> 5) & 31;
    r integer := n & 31;
    f integer;
begin
    for step in 1..4 loop
        f := (pg_catalog.hashtextextended(key || ':' || t || ':' || step || ':' || r, 0) & 31)::integer;
        select r, l # f into l, r;
    end loop;
    return (l << 5) | r;
end;
$$;

/*
_opaque_id(in_order boolean default false) -> bigint

Purpose: a new id (the default of chunks.id, data_access_log.id, judged_questions.id and
  settings.id; with in_order,
  of messages.id and memory_events.id): in its high 43 bits the milliseconds since 2026-01-01, in
  its low 10 bits _permuted_low_bits of the next value of id_counter. With in_order the session
  waits, when its last such id has this millisecond, for the next one (at most a millisecond), so
  the rows a session writes keep their order. An id stays below 2^53, so JavaScript's numbers
  (supabase-js, the edge functions) hold it exactly, until the year 2304. Ids are in the order of
  time (within a millisecond, in any order) and unique while fewer than 1,024 ids are made in one
  millisecond; the gap between two ids tells the time between them, not how many rows other
  tenants wrote (issue 44 §5). Ids before this scheme (small numbers) stay, all lower.
Parameters: in_order - keep the order of the session's ids (for rows read in that order).
Returns: the id.
Errors: none.
Example: select hipocampo_private._opaque_id(true);
*/
-- definer because the permutation's key (id_keys) is read and made by nobody else.
create or replace function hipocampo_private._opaque_id(in_order boolean default false)
returns bigint
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
    epoch constant timestamptz := timestamptz '2026-01-01 00:00:00+00';
    t bigint := floor(extract(epoch from pg_catalog.clock_timestamp() - epoch) * 1000)::bigint;
    last bigint := case when in_order
        then nullif(pg_catalog.current_setting('hipocampo.last_ordered_id_ms', true), '')::bigint end;
    k text := (select i.key from hipocampo_private.id_keys as i where i.name = 'ids');
begin
    while t <= last loop
        perform pg_catalog.pg_sleep(0.0002);
        t := floor(extract(epoch from pg_catalog.clock_timestamp() - epoch) * 1000)::bigint;
    end loop;
    if in_order then
        perform pg_catalog.set_config('hipocampo.last_ordered_id_ms', t::text, false);
    end if;
    if k is null then
        insert into hipocampo_private.id_keys (name, key) values ('ids', pg_catalog.gen_random_uuid()::text)
        on conflict (name) do nothing;
        k := (select i.key from hipocampo_private.id_keys as i where i.name = 'ids');
    end if;
    return (t << 10) | hipocampo_private._permuted_low_bits(
        k, t, (pg_catalog.nextval('hipocampo_private.id_counter') % 1024)::integer
    );
end;
$$;

-- Tenants, memberships and the caller's tenant.
--
-- The caller's tenant comes from the JWT claims (app_metadata.tenant_id, or a top-level
-- tenant_id claim) and counts only when auth.uid() is a member of it. service_role bypasses
-- RLS and sees every tenant; anon is granted nothing.
create table hipocampo_private.tenants (
    id uuid primary key default gen_random_uuid(),
    name text not null,
    slug text not null unique,
    created_at timestamptz not null default now(),
    constraint tenants_name_length check (char_length(name) between 1 and 200),
    constraint tenants_slug_format check (slug ~ '^[a-z0-9][a-z0-9_-]{0,62}$')
);

alter table hipocampo_private.tenants enable row level security;

create table hipocampo_private.memberships (
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    user_id uuid not null,
    role text not null default 'member',
    created_at timestamptz not null default now(),
    primary key (tenant_id, user_id),
    constraint memberships_role_check check (role in ('admin', 'member'))
);

alter table hipocampo_private.memberships enable row level security;

create index memberships_user_id_idx on hipocampo_private.memberships (user_id);

comment on table hipocampo_private.tenants is 'Tenants (customer organisations).';

comment on table hipocampo_private.memberships is 'Which auth user belongs to which tenant, as admin or member.';

/*
current_tenant_id() -> uuid

Purpose: the tenant of the current request: the tenant named in the JWT claims
  (app_metadata.tenant_id, else tenant_id), provided auth.uid() is a member of it.
Returns: the tenant id, or null when there is no claim, it is not a uuid, or the caller is not a member.
Errors: none.
Example: select hipocampo_private.current_tenant_id();
*/
-- definer because memberships is under RLS and its own policies call this function.
create or replace function hipocampo_private.current_tenant_id()
returns uuid
language sql
stable
security definer
set search_path = ''
as $$
    with claim as (
        select coalesce(
            (select auth.jwt()) -> 'app_metadata' ->> 'tenant_id',
            (select auth.jwt()) ->> 'tenant_id'
        ) as tenant_text
    )
    select m.tenant_id
    from claim
    inner join hipocampo_private.memberships as m
        on m.tenant_id::text = lower(claim.tenant_text)
    where m.user_id = (select auth.uid())
$$;

/*
current_tenant_role() -> text

Purpose: the caller's role ('admin' | 'member') in current_tenant_id().
Returns: the role, or null when the caller has no current tenant.
Errors: none.
Example: select hipocampo_private.current_tenant_role() = 'admin';
*/
-- definer because memberships is under RLS and its own policies call this function.
create or replace function hipocampo_private.current_tenant_role()
returns text
language sql
stable
security definer
set search_path = ''
as $$
    select m.role
    from hipocampo_private.memberships as m
    where
        m.tenant_id = hipocampo_private.current_tenant_id()
        and m.user_id = (select auth.uid())
$$;

create policy "members can read their current tenant"
on hipocampo_private.tenants
for select
to authenticated
using (id = (select hipocampo_private.current_tenant_id()));

create policy "users can read their own memberships"
on hipocampo_private.memberships
for select
to authenticated
using (user_id = (select auth.uid()));

/*
create_tenant(name text, slug text, admin_user_id uuid default null) -> uuid

Purpose: create a tenant, its (empty) config row and optionally its first admin.
Parameters: name - 1..200 characters; slug - ^[a-z0-9][a-z0-9_-]{0,62}$, unique;
  admin_user_id - auth user made admin of the new tenant (optional).
Returns: the new tenant id.
Errors: 23505 "tenant slug already exists"; 23514 on a bad name or slug (null included: "a tenant
  needs a name of 1..200 characters and a slug matching ^[a-z0-9][a-z0-9_-]{0,62}$").
Example: select hipocampo.create_tenant('Condomínio Sol', 'sol', '…uuid…');
*/
create or replace function hipocampo.create_tenant(name text, slug text, admin_user_id uuid default null)
returns uuid
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    new_id uuid;
begin
    if create_tenant.name is null or create_tenant.slug is null then
        raise exception 'a tenant needs a name of 1..200 characters and a slug matching ^[a-z0-9][a-z0-9_-]{0,62}$'
            using errcode = '23514';
    end if;
    begin
        insert into hipocampo_private.tenants (name, slug)
        values (create_tenant.name, create_tenant.slug)
        returning id into new_id;
    exception when unique_violation then
        raise exception 'tenant slug already exists: %', create_tenant.slug
            using errcode = '23505';
    end;
    insert into hipocampo_private.settings (tenant_id, config) values (new_id, '{}'::jsonb);
    if admin_user_id is not null then
        insert into hipocampo_private.memberships (tenant_id, user_id, role)
        values (new_id, admin_user_id, 'admin');
    end if;
    return new_id;
end;
$$;

/*
add_member(tenant_id uuid, user_id uuid, role text default 'member') -> void

Purpose: add (or change the role of) a member of a tenant.
Parameters: tenant_id - existing tenant; user_id - auth user; role - 'admin' | 'member'.
Returns: nothing.
Errors: 22023 "tenant_id and user_id are required"; 23514 on an unknown role (null included: "role
  must be admin or member"); 23503 "unknown tenant" when the tenant does not exist.
Example: select hipocampo.add_member('…tenant…', '…user…', 'member');
*/
create or replace function hipocampo.add_member(tenant_id uuid, user_id uuid, role text default 'member')
returns void
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
begin
    if add_member.tenant_id is null or add_member.user_id is null then
        raise exception 'tenant_id and user_id are required' using errcode = '22023';
    end if;
    if add_member.role is null then
        raise exception 'role must be admin or member' using errcode = '23514';
    end if;
    insert into hipocampo_private.memberships (tenant_id, user_id, role)
    values (add_member.tenant_id, add_member.user_id, add_member.role)
    on conflict on constraint memberships_pkey do update set role = excluded.role;
exception when foreign_key_violation then
    raise exception 'unknown tenant: %', add_member.tenant_id using errcode = '23503';
end;
$$;

/*
list_tenants() -> table (id uuid, name text, slug text, members integer, knowledge_bases integer,
  created_at timestamptz)

Purpose: every tenant of the project with its member and knowledge-base counts (operators; the
  CLI's `tenant list`).
Returns: one row per tenant, by slug.
Errors: 42501 for any role but service_role (no EXECUTE).
Example: select slug, members from hipocampo.list_tenants();
*/
create or replace function hipocampo.list_tenants()
returns table (
    id uuid, name text, slug text, members integer, knowledge_bases integer, created_at timestamptz
)
language sql
stable
security invoker
set search_path = ''
set jit = off
as $$
    select
        t.id, t.name, t.slug,
        (select count(*)::integer from hipocampo_private.memberships as m where m.tenant_id = t.id),
        (select count(*)::integer from hipocampo_private.knowledge_bases as k where k.tenant_id = t.id),
        t.created_at
    from hipocampo_private.tenants as t
    order by t.slug;
$$;

/*
list_members(tenant_id uuid) -> table (user_id uuid, role text, created_at timestamptz)

Purpose: the members of a tenant and their roles (operators; the CLI's `member list`; a tenant
  admin's own tenant in the hub's memory inspector).
Parameters: tenant_id - an existing tenant (a tenant admin: their own).
Returns: one row per member, admins first, then by when they joined.
Errors: 42501 as _resolve_tenant (before any other work; another tenant); 42501 "only tenant
  admins can list the tenant's members"; P0002 "unknown tenant: …".
Example: select * from hipocampo.list_members('…');
*/
-- definer because memberships shows a user their own row only (RLS); a tenant admin lists their
-- tenant's members here.
create or replace function hipocampo.list_members(tenant_id uuid)
returns table (user_id uuid, role text, created_at timestamptz)
language plpgsql
stable
security definer
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(list_members.tenant_id);  -- 42501 before any other work
    c record := hipocampo_private._caller();
begin
    if c.kind <> 'service' and c.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can list the tenant''s members' using errcode = '42501';
    end if;
    if not exists (select 1 from hipocampo_private.tenants as x where x.id = t) then
        raise exception 'unknown tenant: %', t using errcode = 'P0002';
    end if;
    return query
    select m.user_id, m.role, m.created_at from hipocampo_private.memberships as m
    where m.tenant_id = t
    order by m.role, m.created_at, m.user_id;
end;
$$;

/*
remove_member(tenant_id uuid, user_id uuid) -> boolean

Purpose: end a user's membership of a tenant: from the next request on, their JWT no longer
  resolves to the tenant (_caller refuses it). Their data stays (memories, messages, audit);
  erase it with erase_user (LGPD art. 18) before removing them if that is what is asked.
Parameters: tenant_id, user_id.
Returns: true when a membership was removed, false when there was none.
Errors: 42501 for any role but service_role (no EXECUTE).
Example: select hipocampo.remove_member('…tenant…', '…user…');
*/
create or replace function hipocampo.remove_member(tenant_id uuid, user_id uuid)
returns boolean
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
begin
    delete from hipocampo_private.memberships as m
    where m.tenant_id = remove_member.tenant_id and m.user_id = remove_member.user_id;
    return found;
end;
$$;

/*
delete_tenant(tenant_id uuid) -> jsonb

Purpose: delete a tenant and everything it holds, in one transaction: its knowledge bases with
  their documents, chunks, BM25 postings and statistics, its members' memories, messages,
  sessions, cached answers (the foreign keys' cascades), and the rows that outlive what they
  describe and so have no foreign key to the tenant: its config row and its audit
  (memory_events, data_access_log), which a plain `delete from tenants` left behind with its
  users' ids. Nothing of the tenant remains; keep the returned counts as the record of the
  deletion. For offboarding a customer (LGPD art. 16: data kept no longer than the service).
  A tenant of 20,000 chunks takes ~1.4 s (docs/BENCHMARKS.md §deleting a tenant).
Parameters: tenant_id - an existing tenant.
Returns: {"tenant_id", "slug", "knowledge_bases": n, "documents": n, "chunks": n,
  "memories": n, "messages": n, "members": n, "audit_rows": n} (what was deleted).
Errors: 42501 for any role but service_role (no EXECUTE; _caller refuses the rest before any
  work); P0002 "unknown tenant: …".
Example: select hipocampo.delete_tenant('…');
*/
create or replace function hipocampo.delete_tenant(tenant_id uuid)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    tn hipocampo_private.tenants;
    out jsonb;
begin
    if gate.kind <> 'service' then
        raise exception 'only service_role can delete tenants' using errcode = '42501';
    end if;
    select * into tn from hipocampo_private.tenants as x where x.id = delete_tenant.tenant_id for update;
    if tn.id is null then
        raise exception 'unknown tenant: %', delete_tenant.tenant_id using errcode = 'P0002';
    end if;
    out := jsonb_build_object(
        'tenant_id', tn.id, 'slug', tn.slug,
        'knowledge_bases', (select count(*) from hipocampo_private.knowledge_bases as k where k.tenant_id = tn.id),
        'documents', (select count(*) from hipocampo_private.documents as d where d.tenant_id = tn.id),
        'chunks', (select count(*) from hipocampo_private.chunks as c where c.tenant_id = tn.id),
        'memories', (select count(*) from hipocampo_private.memories as m where m.tenant_id = tn.id),
        'messages', (select count(*) from hipocampo_private.messages as g where g.tenant_id = tn.id),
        'members', (select count(*) from hipocampo_private.memberships as b where b.tenant_id = tn.id)
    );
    -- The knowledge bases' cascade deletes each one's chunks in one statement, so the chunks'
    -- delete trigger drops its postings and statistics by key range.
    delete from hipocampo_private.tenants as x where x.id = tn.id;
    delete from hipocampo_private.settings as s where s.tenant_id = tn.id;
    with e as (delete from hipocampo_private.memory_events as e where e.tenant_id = tn.id returning 1),
        l as (delete from hipocampo_private.data_access_log as l where l.tenant_id = tn.id returning 1),
        q as (delete from hipocampo_private.read_queue as q where q.tenant_id = tn.id returning 1)
    select out || jsonb_build_object(
        'audit_rows', (select count(*) from e) + (select count(*) from l) + (select count(*) from q)
    )
    into out;
    return out;
end;
$$;

comment on function hipocampo.create_tenant(text, text, uuid) is
'Create a tenant and optionally its first admin (service_role only).';

comment on function hipocampo.add_member(uuid, uuid, text) is
'Add a user to a tenant as admin or member (service_role only).';

comment on function hipocampo.delete_tenant(uuid) is
'Delete a tenant and everything it holds, in one transaction (service_role only).';

comment on function hipocampo.list_tenants() is
'Every tenant with its member and knowledge-base counts (service_role only).';

comment on function hipocampo.list_members(uuid) is
'The members of a tenant and their roles (service_role; a tenant admin, their own tenant).';

comment on function hipocampo.remove_member(uuid, uuid) is
'End a user''s membership of a tenant; their data stays (service_role only).';

-- One caller model for every RPC. Until now _resolve_tenant decided "may this caller name any
-- tenant?" from current_user, which inside a security definer function is the owner: a signed-in
-- user whose JWT named no tenant they belong to could pass tenant_id => <another tenant> to the
-- definer RPCs (set_tenant_config, cache_get, cache_put, record_answer, take_rate_limit), and
-- _require_admin did nothing when no tenant resolved. _memory_actor took the user_id argument
-- whenever auth.uid() was null, so a JWT with role authenticated and no sub could export or erase
-- any user (export_user_data, erase_user). The definer helpers that write (_touch_chunks,
-- _touch_memories, _memory_event, _log_access; now _record_read) wrote into whatever tenant they were given.
--
-- Now hipocampo_private._caller() resolves the caller once, from the request (the JWT claims that
-- PostgREST, the edge functions and the Python client set with `set local role`), never from
-- current_user; _resolve_tenant, _memory_actor, _data_subject and _require_admin are restated on
-- it, so every RPC that goes through them (all that take tenant_id or user_id) follows it, and
-- each definer helper checks the tenant (and user) it writes for. The UPDATE policies of memories
-- and memory_staging check the new row as their USING clause checks the old one (a member could
-- move their own memory to tenant_shared, which every member reads).
/*
_uuid_shape() -> text

Purpose: the shape of a uuid in text (8-4-4-4-12 hexadecimal digits, either case), unanchored: a
  caller anchors it ('^' || … || '$') or bounds it, so the JWT claims, the cached answers'
  document ids and the PII scrub read one shape.
Returns: a POSIX regular expression.
Errors: none.
Example: select 'c0ffee00-0000-4000-8000-000000000000' ~ ('^' || hipocampo_private._uuid_shape() || '$');
*/
create or replace function hipocampo_private._uuid_shape()
returns text
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    select '[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}'::text;
$$;

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
create or replace function hipocampo_private._caller(
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
    uuid_format constant text := '^' || hipocampo_private._uuid_shape() || '$';
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

comment on function hipocampo_private._caller() is
'The caller of an RPC, from the request''s role and JWT claims (never current_user): service, user, or 42501.';

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
tenant_by_slug(slug text) -> uuid

Purpose: the id of the tenant with this slug, as the caller may see it: any tenant for
  service_role, the caller's own tenant for a member (null for another tenant's slug).
Parameters: slug - the tenant's slug.
Returns: the tenant id, or null.
Errors: 42501 as _caller; 22023 "slug must not be null".
Example: select hipocampo.tenant_by_slug('demo');
*/
create or replace function hipocampo.tenant_by_slug(slug text)
returns uuid
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
declare
    c record := hipocampo_private._caller();
begin
    if tenant_by_slug.slug is null then
        raise exception 'slug must not be null' using errcode = '22023';
    end if;
    return (
        select t.id from hipocampo_private.tenants as t
        where t.slug = tenant_by_slug.slug and (c.kind = 'service' or t.id = c.tenant_id)
    );
end;
$$;

comment on function hipocampo.tenant_by_slug(text) is 'The id of the tenant with this slug, as the caller may see it.';

/*
current_tenant(tenant_id uuid default null) -> table (id uuid, slug text, name text, role text)

Purpose: the tenant a call acts on, as people know it (its slug and name), and the caller's role
  in it: what the hub's header names and whom it lets in (issue 58 §2), in one call. A user's
  tenant comes from their JWT claims (a live membership: _caller); service_role names one.
Parameters: tenant_id - service_role: the tenant (required); a user may repeat their own.
Returns: one row (id, slug, name, role: 'admin' | 'member' for a user, null for service_role);
  none when service_role names a tenant that does not exist.
Errors: 42501 as _resolve_tenant (no caller, no membership, a user naming another tenant,
  service_role naming none).
Example: select * from hipocampo.current_tenant();  -- (…, 'sol', 'Condomínio Sol', 'admin')
*/
create or replace function hipocampo.current_tenant(tenant_id uuid default null)
returns table (id uuid, slug text, name text, role text)
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(current_tenant.tenant_id);  -- 42501 before any other work
    c record := hipocampo_private._caller();
begin
    return query select x.id, x.slug, x.name, c.tenant_role from hipocampo_private.tenants as x where x.id = t;
end;
$$;

comment on function hipocampo.current_tenant(uuid) is 'The caller''s tenant: id, slug, name and the caller''s role in it.';

/*
my_tenants() -> table (id uuid, slug text, name text, role text, current boolean)

Purpose: every tenant the signed-in user belongs to, with their role in each, and which one their
  JWT claims name (current): what a switch of tenant offers (the hub's header, issue 58 §2). A
  token names one tenant; acting in another takes a token that names it (on Supabase, the access
  token hook's tenant claim).
Returns: one row per membership, by name; current true for the claims' tenant.
Errors: 42501 as _caller (no signed-in user: anon, no sub); 42501 "my_tenants lists a signed-in
  user's tenants" for service_role.
Example: select name, role, current from hipocampo.my_tenants();
*/
-- definer because a tenant's row is visible to its own claims only (RLS); a user may read the name of every tenant they belong to.
create or replace function hipocampo.my_tenants()
returns table (id uuid, slug text, name text, role text, current boolean)
language plpgsql
stable
security definer
set search_path = ''
set jit = off
as $$
declare
    c record := hipocampo_private._caller();  -- 42501 before any other work
begin
    if c.kind <> 'user' then
        raise exception 'my_tenants lists a signed-in user''s tenants' using errcode = '42501';
    end if;
    return query
    select t.id, t.slug, t.name, m.role, t.id = c.tenant_id
    from hipocampo_private.memberships as m
    inner join hipocampo_private.tenants as t on t.id = m.tenant_id
    where m.user_id = c.user_id
    order by t.name, t.id;
end;
$$;

comment on function hipocampo.my_tenants() is 'The signed-in user''s tenants, their role in each, and the current one.';

/*
membership_role(user_id uuid default null, tenant_id uuid default null) -> text

Purpose: a user's role in a tenant: admin | member, or null when not a member. A signed-in user
  asks about themselves; service_role names the user and the tenant.
Returns: 'admin' | 'member', or null when the user is not a member.
Errors: 42501 as _memory_actor (no tenant / no user / user mismatch).
Example: select hipocampo.membership_role('…'::uuid, '…'::uuid);  -- as service_role
*/
create or replace function hipocampo.membership_role(user_id uuid default null, tenant_id uuid default null)
returns text
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
declare
    a record := hipocampo_private._memory_actor(membership_role.user_id, membership_role.tenant_id);
begin
    return (
        select m.role from hipocampo_private.memberships as m
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
    );
end;
$$;

comment on function hipocampo.membership_role(uuid, uuid) is 'A user''s role in a tenant (admin | member | null).';
