-- out of range arguments are 22023.
-- Issue 47 §1, one SQLSTATE per kind: promote_memory's intensity (23514) and set_document_metadata's trust_score (22003) out of range are 22023, as every other argument.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo.promote_memory(staging_id uuid, intensity numeric, override boolean default false)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    s hipocampo_private.memory_staging;
    cfg jsonb;
    r jsonb;
    level numeric := round(promote_memory.intensity, 1);
begin
    if level is null then
        raise exception 'intensity is required (0..10)' using errcode = '22004';
    end if;
    if level < 0 or level > 10 then
        raise exception 'intensity must be 0..10 (got %)', level using errcode = '22023';
    end if;
    select * into s from hipocampo_private.memory_staging as x where x.id = promote_memory.staging_id for update;
    if s.id is null then
        raise exception 'unknown staged memory: %', staging_id using errcode = 'P0002';
    end if;
    cfg := hipocampo_private._memory_config(hipocampo.effective_config(s.tenant_id) -> 'memory');
    if not coalesce(override, false)
        and level < (cfg ->> 'staging_below_intensity')::numeric then
        update hipocampo_private.memory_staging as x set intensity = level, updated_at = now()
        where x.id = s.id;
        return jsonb_build_object('status', 'kept', 'memory_id', s.id, 'intensity', level);
    end if;
    r := hipocampo_private._remember(
        s.key, s.value, s.description, s.category, s.embedding, s.scope, s.confidence, s.source, s.source_ref,
        s.conversation_id, s.tags, s.emotion, level, s.life_domain, s.pinned or coalesce(override, false),
        s.token_count, null, case when (select auth.uid()) is null then s.user_id end, s.tenant_id, 'long_term'
    );
    if r ->> 'status' = 'rejected' then
        return r;
    end if;
    delete from hipocampo_private.memory_staging as x where x.id = s.id;
    perform hipocampo_private._memory_event(s.tenant_id, coalesce((select auth.uid()), s.user_id),
        (r ->> 'memory_id')::uuid, 'memory.promoted', case when override then 'override' else 'intensity' end,
        jsonb_build_object('staging_id', s.id, 'key', s.key, 'intensity', level, 'result', r ->> 'status'));
    return r || jsonb_build_object('promoted_from', s.id);
end;
$function$;

create or replace function hipocampo.set_document_metadata(document_id uuid, metadata jsonb)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    allowed constant text[] := array[
        'source_type', 'doc_type', 'author', 'published_at', 'version', 'trust_score',
        'data_classification', 'expires_at'
    ];
    bad text;
    before hipocampo_private.documents;
    d hipocampo_private.documents;
begin
    if gate.kind <> 'service' and gate.tenant_role is distinct from 'admin' then
        raise exception 'only tenant admins can change documents' using errcode = '42501';
    end if;
    if metadata is null or jsonb_typeof(metadata) <> 'object' then
        raise exception 'metadata must be a json object' using errcode = '22023';
    end if;
    select string_agg(e.key, ', ' order by e.key) into bad from jsonb_object_keys(metadata) as e (key)
    where e.key <> all(allowed);
    if bad is not null then
        raise exception 'unknown document field %; one of %', bad, array_to_string(allowed, ', ')
            using errcode = '22023';
    end if;
    select string_agg(e.key, ', ' order by e.key) into bad from jsonb_each(metadata) as e
    where e.key in ('source_type', 'trust_score', 'data_classification') and jsonb_typeof(e.value) = 'null';
    if bad is not null then
        raise exception '% must not be null', bad using errcode = '22023';
    end if;
    if jsonb_typeof(metadata -> 'trust_score') = 'number'
        and (metadata ->> 'trust_score')::numeric not between 0 and 1 then
        raise exception 'trust_score must lie in [0, 1] (got %)', metadata ->> 'trust_score' using errcode = '22023';
    end if;
    select * into before from hipocampo_private.documents as x where x.id = set_document_metadata.document_id;
    update hipocampo_private.documents as x set
        source_type = coalesce(metadata ->> 'source_type', x.source_type),
        doc_type = case when metadata ? 'doc_type' then metadata ->> 'doc_type' else x.doc_type end,
        author = case when metadata ? 'author' then metadata ->> 'author' else x.author end,
        published_at = case
            when metadata ? 'published_at' then (metadata ->> 'published_at')::timestamptz else x.published_at
        end,
        version = case when metadata ? 'version' then metadata ->> 'version' else x.version end,
        trust_score = coalesce((metadata ->> 'trust_score')::real, x.trust_score),
        data_classification = coalesce(metadata ->> 'data_classification', x.data_classification),
        expires_at = case
            when metadata ? 'expires_at' then (metadata ->> 'expires_at')::timestamptz else x.expires_at
        end,
        updated_at = now()
    where x.id = set_document_metadata.document_id
    returning * into d;
    if d.id is null then
        raise exception 'unknown document: %', document_id using errcode = 'P0002';
    end if;
    if d.expires_at is distinct from before.expires_at then
        update hipocampo_private.chunks as c set expires_at = d.expires_at where c.document_id = d.id;
    end if;
    return jsonb_build_object(
        'document_id', d.id, 'source_type', d.source_type, 'trust_score', d.trust_score,
        'expires_at', d.expires_at,
        'updated', coalesce((
            select jsonb_agg(x.key order by x.key)
            from jsonb_each(to_jsonb(d)) as x
            where x.key = any(allowed) and x.value is distinct from to_jsonb(before) -> x.key
        ), '[]'::jsonb)
    );
exception
    when insufficient_privilege then
        raise exception 'only tenant admins can change documents' using errcode = '42501';
    when check_violation then
        raise exception 'invalid document: %', sqlerrm using errcode = '23514';
    when invalid_text_representation or invalid_datetime_format or datetime_field_overflow
        or invalid_time_zone_displacement_value then
        raise exception 'invalid document field: %', sqlerrm using errcode = '22023';
end;
$function$;
