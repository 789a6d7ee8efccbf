-- config rules at write time.
-- Issue 44 §5: the config rules hold wherever knowledge_bases and agent_bindings rows are written (triggers), not only in the RPCs; create_knowledge_base names an operator-only key as such; the writing helpers _log_access and _memory_event write what they resolved, bounded.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._changed_keys(before jsonb, after jsonb)
returns jsonb
language plpgsql
immutable
set search_path to ''
as $function$
begin
    if coalesce(jsonb_typeof(before), 'object') <> 'object' or coalesce(jsonb_typeof(after), 'object') <> 'object' then
        raise exception 'a config section must be a json object (got %)',
            left(coalesce(after, before)::text, 80) using errcode = '22023';
    end if;
    return (
        select coalesce(jsonb_object_agg(k.key, coalesce(after -> k.key, 'null'::jsonb)), '{}'::jsonb)
        from (
            select jsonb_object_keys(coalesce(after, '{}'::jsonb)) as key
            union
            select jsonb_object_keys(coalesce(before, '{}'::jsonb))
        ) as k
        where (after -> k.key) is distinct from (before -> k.key)
    );
end;
$function$;

create or replace function hipocampo_private._check_agent_binding_write()
returns trigger
language plpgsql
set search_path to ''
as $function$
declare
    c record := hipocampo_private._caller();
    foreign_kb uuid;
begin
    -- (a row of another tenant is RLS's to refuse, 42501, which runs after this trigger)
    if c.kind = 'service' or new.tenant_id is distinct from c.tenant_id then
        return new;
    end if;
    select k into foreign_kb from unnest(new.kb_ids) as k
    where not exists (select 1 from hipocampo_private.knowledge_bases as b where b.id = k and b.tenant_id = new.tenant_id)
    limit 1;
    if foreign_kb is not null then
        raise exception 'unknown knowledge base: %', foreign_kb using errcode = 'P0002';
    end if;
    perform hipocampo_private._check_config_patch('rag', hipocampo_private._changed_keys(
        case when tg_op = 'UPDATE' then old.rag_overrides end, new.rag_overrides
    ));
    return new;
end;
$function$;

create or replace function hipocampo_private._check_knowledge_base_write()
returns trigger
language plpgsql
set search_path to ''
as $function$
declare
    before_overrides jsonb := case when tg_op = 'UPDATE' then old.overrides else '{}'::jsonb end;
    before_tuning jsonb := case when tg_op = 'UPDATE' then old.tuning else '{}'::jsonb end;
    c record := hipocampo_private._caller();
    item record;
begin
    -- (a row of another tenant is RLS's to refuse, 42501, which runs after this trigger)
    if c.kind = 'service' or new.tenant_id is distinct from c.tenant_id then
        return new;
    end if;
    for item in
        select s.key from (
            select jsonb_object_keys(new.overrides) as key union select jsonb_object_keys(before_overrides)
        ) as s
        where new.overrides -> s.key is distinct from before_overrides -> s.key
    loop
        perform hipocampo_private._check_config_patch(
            item.key, hipocampo_private._changed_keys(before_overrides -> item.key, new.overrides -> item.key)
        );
    end loop;
    for item in
        select m.key as model, s.key as section
        from (select jsonb_object_keys(new.tuning) as key union select jsonb_object_keys(before_tuning)) as m
        cross join lateral (
            select jsonb_object_keys(hipocampo_private._changed_keys(before_tuning -> m.key, new.tuning -> m.key)) as key
        ) as s
    loop
        perform hipocampo_private._tuning_after('{}'::jsonb, item.model, item.section, hipocampo_private._changed_keys(
            before_tuning #> array[item.model, item.section], new.tuning #> array[item.model, item.section]
        ), hipocampo_private._tuned_keys() - 'memory' - 'conversations');
    end loop;
    return new;
end;
$function$;

create or replace function hipocampo.create_knowledge_base(name text, description text default null::text, tags text[] default '{}'::text[], language text default 'portuguese'::text, overrides jsonb default '{}'::jsonb, tenant_id uuid default null::uuid)
returns uuid
language plpgsql
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(create_knowledge_base.tenant_id);
    caller record := hipocampo_private._caller();
    kb uuid;
    section record;
begin
    if caller.kind <> 'service' and caller.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can create knowledge bases' using errcode = '42501';
    end if;
    if create_knowledge_base.name is null then
        raise exception 'a knowledge base needs a name of 1..200 characters' using errcode = '23514';
    end if;
    if jsonb_typeof(coalesce(overrides, '{}')) <> 'object' then
        raise exception 'overrides must be a json object of config sections' using errcode = '22023';
    end if;
    for section in select e.key, e.value from jsonb_each(coalesce(overrides, '{}')) as e loop
        perform hipocampo_private._check_config_patch(section.key, section.value);
    end loop;
    insert into hipocampo_private.knowledge_bases (tenant_id, name, description, tags, language, overrides)
    values (t, create_knowledge_base.name, create_knowledge_base.description,
            coalesce(create_knowledge_base.tags, '{}'), coalesce(create_knowledge_base.language, 'portuguese'),
            jsonb_strip_nulls(coalesce(create_knowledge_base.overrides, '{}')))
    on conflict on constraint knowledge_bases_tenant_name_key do nothing
    returning id into kb;
    if kb is null then
        select k.id into kb from hipocampo_private.knowledge_bases as k
        where k.tenant_id = t and k.name = create_knowledge_base.name;
    end if;
    return kb;
end;
$function$;

-- definer because callers may append to the access log but never read or change it.
create or replace function hipocampo_private._log_access(tenant_id uuid, rpc text, rows_returned integer, query_hash text, latency_ms double precision)
returns void
language plpgsql
security definer
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(_log_access.tenant_id);
begin
    if coalesce(_log_access.rpc, '') !~ '^[a-z_]{1,63}$' then
        raise exception 'access log: rpc must be 1..63 characters of [a-z_]' using errcode = '22023';
    end if;
    if char_length(_log_access.query_hash) > 128 then
        raise exception 'access log: query_hash must be at most 128 characters' using errcode = '22023';
    end if;
    if _log_access.rows_returned < 0 or _log_access.latency_ms < 0 then
        raise exception 'access log: rows_returned and latency_ms must be >= 0' using errcode = '22023';
    end if;
    perform hipocampo_private._write_access_log(
        t, _log_access.rpc, _log_access.rows_returned, _log_access.query_hash, _log_access.latency_ms
    );
end;
$function$;

-- definer because callers append events but may never change or delete them.
create or replace function hipocampo_private._memory_event(tenant_id uuid, user_id uuid, memory_id uuid, event text, reason text, detail jsonb)
returns void
language plpgsql
security definer
set search_path to ''
as $function$
declare
    t uuid := _memory_event.tenant_id;
    u uuid := _memory_event.user_id;
begin
    if (hipocampo_private._caller()).kind <> 'service' then
        select s.actor_tenant, s.actor_user into t, u
        from hipocampo_private._data_subject(_memory_event.user_id, _memory_event.tenant_id) as s;
    end if;
    if _memory_event.event in ('user.erased', 'memory.inspected') then
        raise exception 'memory event: % is written only by its RPC', _memory_event.event using errcode = '22023';
    end if;
    if char_length(_memory_event.reason) > 200 then
        raise exception 'memory event: reason must be at most 200 characters' using errcode = '22023';
    end if;
    if octet_length(_memory_event.detail::text) > 131072 then
        raise exception 'memory event: detail must be at most 131072 bytes' using errcode = '22023';
    end if;
    insert into hipocampo_private.memory_events (tenant_id, user_id, memory_id, event, reason, detail)
    values (t, u, _memory_event.memory_id, _memory_event.event, _memory_event.reason,
            coalesce(_memory_event.detail, '{}'::jsonb));
end;
$function$;

create trigger agent_bindings_check_write before insert or update of kb_ids, rag_overrides on hipocampo_private.agent_bindings for each row execute function hipocampo_private._check_agent_binding_write();

create trigger knowledge_bases_check_write before insert or update of overrides, tuning on hipocampo_private.knowledge_bases for each row execute function hipocampo_private._check_knowledge_base_write();

revoke execute on function hipocampo_private._changed_keys(before jsonb, after jsonb) from public;
revoke execute on function hipocampo_private._check_agent_binding_write() from public;
revoke execute on function hipocampo_private._check_knowledge_base_write() from public;
grant execute on function hipocampo_private._changed_keys(before jsonb, after jsonb) to authenticated;
grant execute on function hipocampo_private._changed_keys(before jsonb, after jsonb) to service_role;
