-- tenant import checks.
-- Issue 57 §2: the database checks an imported tenant's rows, references and configuration before the import commits.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._check_imported_config(tenant_id uuid)
returns void
language plpgsql
stable
set search_path to ''
as $function$
declare
    item record;
begin
    for item in
        select 'settings' as place, s.key as section, s.value as patch
        from hipocampo_private.settings as x cross join lateral jsonb_each(x.config) as s
        where x.tenant_id = _check_imported_config.tenant_id
        union all
        select 'knowledge base ' || b.name, s.key, s.value
        from hipocampo_private.knowledge_bases as b cross join lateral jsonb_each(b.overrides) as s
        where b.tenant_id = _check_imported_config.tenant_id
        union all
        select 'agent binding ' || g.name, 'rag', g.rag_overrides
        from hipocampo_private.agent_bindings as g where g.tenant_id = _check_imported_config.tenant_id
    loop
        perform hipocampo_private._check_config_patch(item.section, item.patch);
        perform hipocampo_private._refuse_operator_keys('imported ' || item.place, item.section, item.patch);
    end loop;
    for item in
        select m.key as model, s.key as section, s.value as patch
        from (
            select x.tuning from hipocampo_private.settings as x where x.tenant_id = _check_imported_config.tenant_id
            union all
            select b.tuning from hipocampo_private.knowledge_bases as b
            where b.tenant_id = _check_imported_config.tenant_id
        ) as t
        cross join lateral jsonb_each(t.tuning) as m
        cross join lateral jsonb_each(m.value) as s
    loop
        perform hipocampo_private._tuning_after('{}'::jsonb, item.model, item.section, item.patch,
            hipocampo_private._tuned_keys());
        perform hipocampo_private._refuse_operator_keys('imported tuning', item.section, item.patch);
    end loop;
end;
$function$;

create or replace function hipocampo_private._check_imported_tenant(tenant_id uuid, written jsonb, before jsonb)
returns void
language plpgsql
stable
set search_path to ''
as $function$
declare
    now_held jsonb := hipocampo_private._tenant_row_counts(_check_imported_tenant.tenant_id);
    t record;
    fault text;
begin
    for t in select * from hipocampo_private._tenant_tables() where not derived order by ord loop
        if coalesce((now_held ->> t.name)::bigint, 0) - coalesce((before ->> t.name)::bigint, 0)
            <> coalesce((written ->> t.name)::bigint, 0) then
            raise exception 'imported %: % rows name another tenant than %', t.name,
                coalesce((written ->> t.name)::bigint, 0) - coalesce((now_held ->> t.name)::bigint, 0)
                + coalesce((before ->> t.name)::bigint, 0), tenant_id
                using errcode = '42501';
        end if;
    end loop;
    fault := hipocampo_private._imported_reference_fault(_check_imported_tenant.tenant_id);
    if fault is not null then
        raise exception 'imported rows leave the tenant: %', fault using errcode = '42501';
    end if;
    perform hipocampo_private._check_imported_config(_check_imported_tenant.tenant_id);
end;
$function$;

create or replace function hipocampo_private._imported_reference_fault(tenant_id uuid)
returns text
language sql
stable
set search_path to ''
as $function$
    with
    kbs as (select b.id from hipocampo_private.knowledge_bases as b where b.tenant_id = _imported_reference_fault.tenant_id),
    foreign_memories as (
        select m.id from hipocampo_private.memories as m where m.tenant_id <> _imported_reference_fault.tenant_id
        union all
        select s.id from hipocampo_private.memory_staging as s where s.tenant_id <> _imported_reference_fault.tenant_id
    ),
    faults as (
        select 'chunks: chunk ' || c.id || ' names knowledge base ' || c.kb_id || ', not its document''s' as fault
        from hipocampo_private.chunks as c
        inner join hipocampo_private.documents as d on d.id = c.document_id
        where c.tenant_id = _imported_reference_fault.tenant_id and c.kb_id <> d.kb_id
        union all
        select 'chunk_access: chunk ' || a.chunk_id || ' is not the tenant''s'
        from hipocampo_private.chunk_access as a
        where a.tenant_id = _imported_reference_fault.tenant_id and not exists (
            select 1 from hipocampo_private.chunks as c
            where c.id = a.chunk_id and c.tenant_id = _imported_reference_fault.tenant_id
        )
        union all
        select 'agent_bindings: ' || g.name || ' names knowledge base ' || k.id || ', not the tenant''s'
        from hipocampo_private.agent_bindings as g cross join lateral unnest(g.kb_ids) as k (id)
        where g.tenant_id = _imported_reference_fault.tenant_id and k.id not in (select kbs.id from kbs)
        union all
        select 'memories: ' || m.id || ' supersedes another tenant''s memory'
        from hipocampo_private.memories as m
        where m.tenant_id = _imported_reference_fault.tenant_id and m.supersedes in (select f.id from foreign_memories as f)
        union all
        select 'memory_staging: ' || s.id || ' supersedes another tenant''s memory'
        from hipocampo_private.memory_staging as s
        where s.tenant_id = _imported_reference_fault.tenant_id and s.supersedes in (select f.id from foreign_memories as f)
        union all
        select 'memory_events: event ' || e.id || ' names another tenant''s memory'
        from hipocampo_private.memory_events as e
        where e.tenant_id = _imported_reference_fault.tenant_id and e.memory_id in (select f.id from foreign_memories as f)
        union all
        select 'conversation_summaries: through another tenant''s message ' || s.through_message_id
        from hipocampo_private.conversation_summaries as s
        inner join hipocampo_private.messages as m on m.id = s.through_message_id
        where s.tenant_id = _imported_reference_fault.tenant_id and m.tenant_id <> s.tenant_id
        union all
        select 'answer_audit: names another tenant''s knowledge base or chunk'
        from hipocampo_private.answer_audit as a
        where a.tenant_id = _imported_reference_fault.tenant_id and (
            exists (
                select 1 from hipocampo_private.knowledge_bases as b
                where b.id = any(a.kb_ids) and b.tenant_id <> a.tenant_id
            )
            or exists (
                select 1 from hipocampo_private.chunks as c
                where c.id = any(a.evidence_chunk_ids) and c.tenant_id <> a.tenant_id
            )
        )
        union all
        select 'read_queue: read ' || q.id || ' names another tenant''s chunk or memory'
        from hipocampo_private.read_queue as q
        where q.tenant_id = _imported_reference_fault.tenant_id and (
            exists (
                select 1 from hipocampo_private.chunks as c
                where c.id = any(q.chunk_ids) and c.tenant_id <> q.tenant_id
            )
            or exists (select 1 from foreign_memories as f where f.id = any(q.memory_ids))
        )
    )
    select f.fault from faults as f limit 1
$function$;

create or replace function hipocampo_private._refuse_operator_keys(place text, section text, patch jsonb)
returns void
language plpgsql
stable
set search_path to ''
as $function$
declare
    found text;
begin
    select k.key into found
    from jsonb_object_keys(case when jsonb_typeof(patch) = 'object' then patch else '{}'::jsonb end) as k (key)
    where k.key like '%\_secret' or exists (
        select 1 from hipocampo_private.settings as s
        where s.tenant_id is null and coalesce(s.config #> array[section, 'operator_only'], '[]'::jsonb) ? k.key
    )
    order by k.key limit 1;
    if found is not null then
        raise exception '%: %.% is the operator''s to set: set it on the target after the import', place, section, found
            using errcode = '42501';
    end if;
end;
$function$;

create or replace function hipocampo_private._tenant_row_counts(tenant_id uuid)
returns jsonb
language plpgsql
stable
set search_path to ''
as $function$
declare
    t record;
    n bigint;
    out jsonb := '{}';
begin
    for t in select * from hipocampo_private._tenant_tables() order by ord loop
        execute format('select count(*) from hipocampo_private.%I as x where x.%I = $1', t.name, t.tenant_column)
            into n using _tenant_row_counts.tenant_id;
        out := out || jsonb_build_object(t.name, n);
    end loop;
    return out;
end;
$function$;

revoke execute on function hipocampo_private._check_imported_config(tenant_id uuid) from public;
revoke execute on function hipocampo_private._check_imported_tenant(tenant_id uuid, written jsonb, before jsonb) from public;
revoke execute on function hipocampo_private._imported_reference_fault(tenant_id uuid) from public;
revoke execute on function hipocampo_private._refuse_operator_keys(place text, section text, patch jsonb) from public;
revoke execute on function hipocampo_private._tenant_row_counts(tenant_id uuid) from public;
