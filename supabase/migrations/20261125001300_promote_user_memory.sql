-- promote_user_memory (issue 21, the hub's memory inspector): a tenant admin promotes a member's
-- staged memory through the member's own write path (promote_memory: the gate, consent, one active
-- value per key), with the request's claims naming the member for that call only, after checking
-- the caller; the member's memory.promoted row names the admin (reason tenant_admin, pseudonym).
-- Restated from supabase/schemas/09_user_data_rights.sql and 13_grants.sql; re-runnable.
set local check_function_bodies = off;

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

comment on function hipocampo.promote_user_memory(uuid, numeric, boolean, uuid) is
'Promote a member''s staged memory (tenant admins; the member''s own write path and gate), audited in the member''s log.';

revoke execute on function hipocampo.promote_user_memory(uuid, numeric, boolean, uuid) from public;
grant execute on function hipocampo.promote_user_memory(staging_id uuid, intensity numeric, override boolean, tenant_id uuid) to authenticated, service_role;
