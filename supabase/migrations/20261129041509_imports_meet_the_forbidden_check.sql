-- imports meet the forbidden check.
-- issue 57 §6: an import runs the forbidden-sources check on the documents it brings (refused, nothing imported)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._imported_forbidden(tenant_id uuid)
returns text
language sql
stable
set search_path to ''
as $function$
    select format('document %s is of a forbidden kind (%s): %s', f.source_uri, f.found[1], f.found[2])
    from (
        select d.source_uri, d.source_type, d.created_at, d.id, cfg.section,
            hipocampo_private._forbidden_kind((
                select string_agg(c.content, E'\n' order by c.chunk_index)
                from (
                    select distinct on (x.chunk_index) x.chunk_index, x.content
                    from hipocampo_private.chunks as x
                    where x.document_id = d.id
                    order by x.chunk_index, x.embedding_model
                ) as c
            ), cfg.section) as found
        from hipocampo_private.documents as d
        cross join lateral (
            select hipocampo_private._require_config(
                hipocampo.effective_config(d.tenant_id, d.kb_id) -> 'forbidden_sources', 'forbidden_sources',
                array['credential_patterns', 'transcript_min_turns', 'ledger_min_lines', 'biometric_min_payload_chars']
            ) as section
        ) as cfg
        where d.tenant_id = _imported_forbidden.tenant_id and d.status <> 'quarantined'
    ) as f
    where f.found is not null
        and coalesce(f.section -> 'by_source_type' -> f.source_type ->> f.found[1], f.section ->> f.found[1], 'refuse')
        <> 'allow'
    order by f.created_at, f.id
    limit 1
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
    fault := hipocampo_private._imported_forbidden(_check_imported_tenant.tenant_id);
    if fault is not null then
        raise exception 'imported %; nothing imported', fault using errcode = '22023';
    end if;
end;
$function$;

revoke execute on function hipocampo_private._imported_forbidden(tenant_id uuid) from public;
