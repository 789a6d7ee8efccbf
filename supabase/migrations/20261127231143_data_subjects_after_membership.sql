-- data subjects after membership.
-- Issue 44 §5: a tenant admin serves a former member's LGPD request (export, inspect, erase) while the tenant holds their data; an admin may not erase another admin.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._holds_data_in(tenant_id uuid, user_id uuid)
returns boolean
language sql
stable
set search_path to ''
as $function$
    select exists (select 1 from hipocampo_private.memberships as x where x.tenant_id = $1 and x.user_id = $2)
        or exists (select 1 from hipocampo_private.memories as x where x.tenant_id = $1 and x.user_id = $2)
        or exists (select 1 from hipocampo_private.memory_staging as x where x.tenant_id = $1 and x.user_id = $2)
        or exists (select 1 from hipocampo_private.messages as x where x.tenant_id = $1 and x.user_id = $2)
        or exists (select 1 from hipocampo_private.conversation_summaries as x where x.tenant_id = $1 and x.user_id = $2)
        or exists (select 1 from hipocampo_private.sessions as x where x.tenant_id = $1 and x.user_id = $2)
        or exists (select 1 from hipocampo_private.memory_consents as x where x.tenant_id = $1 and x.user_id = $2)
$function$;

-- definer because erasure deletes the user's audit events, which no client role may delete.
create or replace function hipocampo.erase_user(user_id uuid default null::uuid, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
security definer
set search_path to ''
as $function$
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
    values (a.actor_tenant, null, ref, 'user.erased', who.reason, counts || who.detail);
    return counts || jsonb_build_object('user_ref', ref);
end;
$function$;

create or replace function hipocampo_private._data_subject(user_id uuid, tenant_id uuid, out actor_tenant uuid, out actor_user uuid)
returns record
language plpgsql
stable
set search_path to ''
as $function$
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
$function$;

revoke execute on function hipocampo_private._holds_data_in(tenant_id uuid, user_id uuid) from public;
grant execute on function hipocampo_private._holds_data_in(tenant_id uuid, user_id uuid) to authenticated;
grant execute on function hipocampo_private._holds_data_in(tenant_id uuid, user_id uuid) to service_role;
