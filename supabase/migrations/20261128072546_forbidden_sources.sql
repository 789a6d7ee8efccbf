-- forbidden sources.
-- issue 45 §4: files of a forbidden kind (credentials, AI transcripts, individual financial statements, biometric records) refused or quarantined at ingestion; memories refused by forbidden kind
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

alter table hipocampo_private.documents drop constraint "documents_status_check";

drop function if exists hipocampo.get_document(document_id uuid, tenant_id uuid);

drop function if exists hipocampo.list_documents(kb_id uuid, after_source_uri text, max_rows integer);

alter table hipocampo_private.documents add column quarantine jsonb;

alter table hipocampo_private.documents add constraint documents_quarantine_reason check (((status = 'quarantined'::text) = (quarantine is not null))) not valid;

alter table hipocampo_private.documents validate constraint "documents_quarantine_reason";

alter table hipocampo_private.documents add constraint documents_status_check check ((status = any(array['active'::text, 'superseded'::text, 'archived'::text, 'quarantined'::text]))) not valid;

alter table hipocampo_private.documents validate constraint "documents_status_check";

set check_function_bodies = off;

create or replace function hipocampo.forbidden_content(texts text[], kb_id uuid)
returns table (n integer, kind text, reason text)
language plpgsql
stable
set search_path to ''
as $function$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(forbidden_content.kb_id);
    cfg jsonb := hipocampo_private._require_config(
        hipocampo.effective_config(k.tenant_id, k.id) -> 'forbidden_sources', 'forbidden_sources',
        array['credential_patterns', 'transcript_min_turns', 'ledger_min_lines', 'biometric_min_payload_chars']
    );
begin
    if coalesce(pg_catalog.cardinality(texts), 0) > 64
        or (select coalesce(sum(pg_catalog.char_length(t)), 0) from unnest(texts) as t) > 33554432 then
        raise exception 'at most 64 texts and 33554432 characters per call' using errcode = '22023';
    end if;
    return query
    select f.n::integer, f.found[1], f.found[2]
    from (
        select t.n, hipocampo_private._forbidden_kind(t.content, cfg) as found
        from unnest(texts) with ordinality as t (content, n)
    ) as f
    where f.found is not null
    order by f.n;
end;
$function$;

create or replace function hipocampo.quarantine_document(kb_id uuid, source_uri text, title text, source_type text, kind text, reason text, content_hash text)
returns uuid
language plpgsql
set search_path to ''
as $function$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(quarantine_document.kb_id);
    doc_id uuid;
begin
    if kind is null or kind not in ('credentials', 'transcript', 'financial_statement', 'biometric') then
        raise exception 'kind must be one of credentials, transcript, financial_statement, biometric (got %)',
            coalesce(kind, 'null') using errcode = '22023';
    end if;
    if char_length(coalesce(reason, '')) not between 1 and 500 then
        raise exception 'reason must have 1 to 500 characters' using errcode = '22023';
    end if;
    if char_length(coalesce(content_hash, '')) not between 1 and 128 then
        raise exception 'content_hash must have 1 to 128 characters' using errcode = '22023';
    end if;
    if char_length(coalesce(title, '')) not between 1 and 500 or coalesce(source_uri, '') = '' or source_type is null then
        raise exception 'title (1 to 500 characters), source_uri and source_type are required' using errcode = '22023';
    end if;
    insert into hipocampo_private.documents as d (
        tenant_id, kb_id, source_type, title, source_uri, content_hash, status, chunk_count, quarantine
    )
    values (
        k.tenant_id, k.id, quarantine_document.source_type, quarantine_document.title,
        quarantine_document.source_uri, quarantine_document.content_hash, 'quarantined', 0,
        jsonb_build_object('kind', kind, 'reason', reason, 'at', now())
    )
    on conflict on constraint documents_kb_source_uri_key do update set
        source_type = excluded.source_type, title = excluded.title, content_hash = excluded.content_hash,
        status = 'quarantined', chunk_count = 0, quarantine = excluded.quarantine, text_measures = null,
        updated_at = now()
    returning d.id into doc_id;
    delete from hipocampo_private.chunks as c where c.document_id = doc_id;
    return doc_id;
end;
$function$;

create or replace function hipocampo_private._biometric_found(content text, cfg jsonb)
returns text
language plpgsql
stable
set search_path to ''
as $function$
declare
    word text := pg_catalog.substring(pg_catalog.lower(extensions.unaccent(content)),
        '\m(biometri[a-z]*|impressao digital|impressoes digitais|template biometrico|minucias|reconhecimento facial|'
        || 'iris|fingerprint|face template|faceprint)\M');
    payload record;
begin
    if word is null then
        return null;
    end if;
    select t.run, pg_catalog.strpos(content, t.run) as pos into payload
    from pg_catalog.regexp_split_to_table(content, '[^A-Za-z0-9+/=_-]+') as t (run)
    where pg_catalog.char_length(t.run) >= (cfg ->> 'biometric_min_payload_chars')::integer
    limit 1;
    if payload.run is null then
        return null;
    end if;
    return pg_catalog.format('a biometric record (%s): an encoded template of %s characters on line %s',
        word, pg_catalog.char_length(payload.run), hipocampo_private._line_of(content, payload.pos));
end;
$function$;

create or replace function hipocampo_private._clear_quarantine()
returns trigger
language plpgsql
set search_path to ''
as $function$
begin
    if old.status = 'quarantined' and new.status = 'quarantined'
        and new.content_hash is distinct from old.content_hash
        and new.quarantine is not distinct from old.quarantine then
        new.status := 'active';
    end if;
    if new.status <> 'quarantined' then
        new.quarantine := null;
    end if;
    return new;
end;
$function$;

create or replace function hipocampo_private._credential_found(content text, cfg jsonb)
returns text
language sql
stable
set search_path to ''
as $function$
    select pg_catalog.format('a credential (forbidden_sources.credential_patterns[%s]) on line %s',
        p.n, hipocampo_private._line_of(content, pg_catalog.regexp_instr(content, p.pattern, 1, 1, 0, 'i')))
    from pg_catalog.jsonb_array_elements_text(cfg -> 'credential_patterns') with ordinality as p (pattern, n)
    where content ~* p.pattern
    order by p.n
    limit 1
$function$;

create or replace function hipocampo_private._financial_statement_found(content text, cfg jsonb)
returns text
language plpgsql
stable
set search_path to ''
as $function$
declare
    head text := pg_catalog.lower(extensions.unaccent(pg_catalog.left(content, 2000)));
    title text := pg_catalog.substring(head, '\m(extrato|fatura|holerite|contracheque|demonstrativo de pagamento|'
        || 'informe de rendimentos|bank statement|account statement|payslip|pay stub)\M');
    lines integer;
begin
    if title is null then
        return null;
    end if;
    lines := pg_catalog.regexp_count(content,
        '([0-9]{1,3}(\.[0-9]{3})*,[0-9]{2}|[0-9]{1,3}(,[0-9]{3})*\.[0-9]{2})[ \t]*([cCdD+-])?[ \t]*$', 1, 'n');
    if lines < (cfg ->> 'ledger_min_lines')::integer then
        return null;
    end if;
    return pg_catalog.format('an individual financial statement (%s): %s lines of amounts', title, lines);
end;
$function$;

create or replace function hipocampo_private._forbidden_kind(content text, cfg jsonb)
returns text[]
language plpgsql
stable
set search_path to ''
as $function$
declare
    reason text;
begin
    if content is null then
        return null;
    end if;
    reason := hipocampo_private._credential_found(content, cfg);
    if reason is not null then
        return array['credentials', reason];
    end if;
    reason := hipocampo_private._transcript_found(content, cfg);
    if reason is not null then
        return array['transcript', reason];
    end if;
    reason := hipocampo_private._financial_statement_found(content, cfg);
    if reason is not null then
        return array['financial_statement', reason];
    end if;
    reason := hipocampo_private._biometric_found(content, cfg);
    if reason is not null then
        return array['biometric', reason];
    end if;
    return null;
end;
$function$;

create or replace function hipocampo_private._line_of(content text, pos integer)
returns integer
language sql
immutable parallel safe
set search_path to ''
as $function$
    select case when coalesce(pos, 0) > 0 then 1 + pg_catalog.regexp_count(pg_catalog.left(content, pos - 1), E'\n') end
$function$;

create or replace function hipocampo_private._transcript_found(content text, cfg jsonb)
returns text
language plpgsql
stable
set search_path to ''
as $function$
declare
    plain text := pg_catalog.lower(extensions.unaccent(content));
    opening constant text := '^[ \t>#*_-]*';
    closing constant text := '[ \t*_]*(\([^)\n]{0,40}\))?[ \t*_]*:';
    assistant integer;
    users integer;
begin
    assistant := pg_catalog.regexp_count(plain, opening
        || '(assistente( [a-z]+)?|assistant|ia|ai|bot|chatbot|chatgpt|gpt(-?[0-9][a-z0-9.]*)?|claude|gemini|copilot|llm)'
        || closing, 1, 'n');
    if assistant < 2 then
        return null;
    end if;
    users := pg_catalog.regexp_count(plain, opening || '(usuari[oa]|user|voce|you|eu|human[oa]?)' || closing, 1, 'n');
    if users < 1 or assistant + users < (cfg ->> 'transcript_min_turns')::integer then
        return null;
    end if;
    return pg_catalog.format('a conversation with an AI assistant: %s turns', assistant + users);
end;
$function$;

create or replace function hipocampo.get_document(document_id uuid, tenant_id uuid default null::uuid)
returns table (id uuid, kb_id uuid, kb_name text, title text, source_uri text, source_type text, doc_type text, status text, trust_score real, chunk_count integer, content_hash text, published_at timestamp with time zone, expires_at timestamp with time zone, created_at timestamp with time zone, updated_at timestamp with time zone, pii_replacements integer, quarantine jsonb)
language plpgsql
stable
set search_path to ''
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(get_document.tenant_id);  -- 42501 before any other work
begin
    return query
    select d.id, d.kb_id, k.name, d.title, d.source_uri, d.source_type, d.doc_type, d.status, d.trust_score,
        d.chunk_count, d.content_hash, d.published_at, d.expires_at, d.created_at, d.updated_at,
        d.pii_replacements, d.quarantine
    from hipocampo_private.documents as d
    inner join hipocampo_private.knowledge_bases as k on d.kb_id = k.id
    where d.id = get_document.document_id and d.tenant_id = t;
end;
$function$;

create or replace function hipocampo.list_documents(kb_id uuid, after_source_uri text default null::text, max_rows integer default null::integer)
returns table (id uuid, title text, source_uri text, source_type text, doc_type text, status text, trust_score real, chunk_count integer, content_hash text, published_at timestamp with time zone, expires_at timestamp with time zone, created_at timestamp with time zone, updated_at timestamp with time zone, pii_replacements integer, quarantine jsonb)
language plpgsql
stable
set search_path to ''
as $function$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(list_documents.kb_id);
begin
    if list_documents.max_rows is not null and list_documents.max_rows not between 1 and 10000 then
        raise exception 'max_rows must lie in [1, 10000]: %', list_documents.max_rows using errcode = '22023';
    end if;
    return query
    select d.id, d.title, d.source_uri, d.source_type, d.doc_type, d.status, d.trust_score, d.chunk_count,
        d.content_hash, d.published_at, d.expires_at, d.created_at, d.updated_at, d.pii_replacements, d.quarantine
    from hipocampo_private.documents as d
    where d.kb_id = k.id
        and (list_documents.after_source_uri is null or d.source_uri > list_documents.after_source_uri)
    order by d.source_uri
    limit list_documents.max_rows;
end;
$function$;

create or replace function hipocampo_private._check_config_patch(section text, patch jsonb)
returns void
language plpgsql
stable
set search_path to ''
as $function$
declare
    global_section jsonb;
    item record;
    bounds jsonb;
begin
    if patch is null or jsonb_typeof(patch) <> 'object' then
        raise exception 'patch must be a json object' using errcode = '22023';
    end if;
    -- The keys a tenant may override: the global row's, and the active model's calibrated ones
    -- with their ranges.
    select s.config -> _check_config_patch.section
        || coalesce(hipocampo_private._calibration() -> _check_config_patch.section, '{}'::jsonb)
        || coalesce((
            select jsonb_object_agg(k.key || '_range', hipocampo_private._calibrated_range(k.key))
            from jsonb_array_elements_text(hipocampo_private._calibrated_keys() -> _check_config_patch.section) as k (key)
        ), '{}'::jsonb)
        into global_section
    from hipocampo_private.settings as s where s.tenant_id is null;
    if global_section is null or jsonb_typeof(global_section) <> 'object' then
        raise exception 'unknown section: %', section using errcode = '22023';
    end if;
    for item in select e.key, e.value from jsonb_each(patch) as e loop
        perform hipocampo_private._refuse_config_secret(section, item.key, item.value);
        if not global_section ? item.key or item.key like '%\_range' or item.key like '%\_max\_items'
            or item.key like '%\_max\_length' or item.key like '%\_regex' or item.key like '%\_values' or item.key like '%\_keys'
            or item.key in ('tenant_locked', 'operator_only') then
            raise exception 'unknown key %.%', section, item.key using errcode = '22023';
        end if;
        if coalesce(global_section -> 'tenant_locked', '[]'::jsonb) ? item.key then
            raise exception '%.% is fixed and cannot be changed per tenant', section, item.key
                using errcode = '22023';
        end if;
        if (item.key like '%\_secret' or coalesce(global_section -> 'operator_only', '[]'::jsonb) ? item.key)
            and (select c.kind from hipocampo_private._caller() as c) <> 'service' then
            if item.key like '%\_secret' then
                raise exception '%.% names a secret of the server: only the operator (service_role) sets it',
                    section, item.key using errcode = '42501';
            end if;
            raise exception '%.% is the operator''s to set (service_role): it is in %.operator_only',
                section, item.key, section using errcode = '42501';
        end if;
        continue when jsonb_typeof(item.value) = 'null';
        if jsonb_typeof(item.value) <> jsonb_typeof(global_section -> item.key) then
            raise exception '%.% must be a %', section, item.key, jsonb_typeof(global_section -> item.key)
                using errcode = '22023';
        end if;
        if section = 'chunking' and jsonb_typeof(item.value) = 'object' and exists (
            select 1 from jsonb_object_keys(global_section -> item.key) as k (name) where not item.value ? k.name
        ) then
            raise exception 'chunking.% must give every key of the rule: % (got %)', item.key,
                (
                    select string_agg(k.name, ', ' order by k.name)
                    from jsonb_object_keys(global_section -> item.key) as k (name)
                ),
                item.value using errcode = '22023';
        end if;
        if jsonb_typeof(item.value) = 'array' and (global_section ->> (item.key || '_max_items'))::integer
            < jsonb_array_length(item.value) then
            raise exception '%.% must have at most % items', section, item.key,
                global_section ->> (item.key || '_max_items') using errcode = '22023';
        end if;
        perform hipocampo_private._check_config_text(section, item.key, item.value, global_section);
        bounds := global_section -> (item.key || '_range');
        -- A range bounds a number, or each element of an array of numbers, or each value of an
        -- object of numbers (retrieval.default_trust).
        if bounds is not null and exists (
            select 1
            from jsonb_array_elements(
                case jsonb_typeof(item.value)
                    when 'array' then item.value
                    when 'object' then (select coalesce(jsonb_agg(v.value), '[]'::jsonb) from jsonb_each(item.value) as v)
                    else jsonb_build_array(item.value)
                end
            ) as e
            where jsonb_typeof(e) <> 'number'
               or (e #>> '{}')::numeric < (bounds ->> 0)::numeric
               or (e #>> '{}')::numeric > (bounds ->> 1)::numeric
        ) then
            raise exception '%.% must lie in [%, %] (got %)', section, item.key, bounds ->> 0, bounds ->> 1,
                item.value using errcode = '22003';
        end if;
    end loop;
end;
$function$;

create or replace function hipocampo_private._check_config_text(section text, key text, value jsonb, global_section jsonb)
returns void
language plpgsql
immutable
set search_path to ''
as $function$
declare
    texts text[] := array(
        select e #>> '{}'
        from jsonb_array_elements(case when jsonb_typeof(value) = 'array' then value else jsonb_build_array(value) end) as e
        where jsonb_typeof(e) = 'string'
    );
    max_length integer := (global_section ->> (key || '_max_length'))::integer;
    pattern text;
    allowed jsonb := global_section -> (key || '_values');
    names jsonb := global_section -> (key || '_keys');
    other text;
begin
    if names is not null then
        select x #>> '{}' into other
        from jsonb_path_query(value, 'strict $.** ? (@.type() == "object").keyvalue().key') as x
        where not names ? (x #>> '{}')
        limit 1;
        if other is not null then
            raise exception '%.% may name only % (got %)', section, key,
                (select string_agg(a, ', ') from jsonb_array_elements_text(names) as a), other
                using errcode = '22023';
        end if;
    end if;
    if allowed is not null then
        select x #>> '{}' into other
        from jsonb_path_query(value, 'strict $.** ? (@.type() == "string")') as x
        where not allowed ? (x #>> '{}')
        limit 1;
        if other is not null then
            raise exception '%.% must be one of % (got %)', section, key,
                (select string_agg(a, ', ') from jsonb_array_elements_text(allowed) as a), other
                using errcode = '22023';
        end if;
    end if;
    if max_length is not null and exists (select 1 from unnest(texts) as t where char_length(t) > max_length) then
        raise exception '%.% must be at most % characters (each, for a list)', section, key, max_length
            using errcode = '22001';
    end if;
    if coalesce((global_section ->> (key || '_regex'))::boolean, false) then
        foreach pattern in array texts loop
            begin
                perform '' ~* pattern;
            exception when invalid_regular_expression then
                raise exception '%.%: % is not a valid regular expression: %', section, key, pattern, sqlerrm
                    using errcode = '22023';
            end;
        end loop;
    end if;
end;
$function$;

create or replace function hipocampo_private._memory_config(section_config jsonb)
returns jsonb
language sql
immutable
set search_path to ''
as $function$
    select hipocampo_private._require_config(section_config, 'memory', array[
        'min_chars', 'max_tokens', 'noise', 'forbidden_kinds', 'sensitive_patterns', 'min_confidence', 'min_confidence_inferred',
        'max_active_per_user', 'duplicate_cosine', 'staging_below_intensity', 'staging_ttl_days',
        'context_threshold', 'answer_threshold', 'pinned_bonus', 'mmr_lambda', 'match_count',
        'decay_days', 'decay_step', 'deactivate_below', 'value_max_bytes', 'value_max_depth'
    ])
$function$;

create or replace function hipocampo_private._pii_problem(content text, cfg jsonb, what text)
returns text[]
language plpgsql
stable
set search_path to ''
as $function$
declare
    found jsonb := (hipocampo_private._pii_scrub(content)).counts;
    plain text := lower(extensions.unaccent(content));
    pattern text;
    kind text;
begin
    if found <> '{}'::jsonb then
        return array['personal_data', format('%s carries personal data (%s)', what, (
            select string_agg(case k when 'EMAIL' then 'e-mail' when 'TELEFONE' then 'phone number'
                when 'CARTAO' then 'card number' else k end, ', ' order by k)
            from jsonb_object_keys(found) as k))];
    end if;
    select f.key into kind
    from jsonb_each(cfg -> 'forbidden_kinds') as f, jsonb_array_elements_text(f.value) as p (pattern)
    where plain ~* p.pattern
    order by f.key
    limit 1;
    if kind is not null then
        return array[kind, format('%s is of a kind never stored as a memory: %s (memory.forbidden_kinds)',
            what, replace(kind, '_', ' '))];
    end if;
    for pattern in select jsonb_array_elements_text(cfg -> 'sensitive_patterns') loop
        if plain ~* pattern then
            return array['sensitive_data', format('%s carries sensitive data (memory.sensitive_patterns)', what)];
        end if;
    end loop;
    return null;
end;
$function$;

create trigger documents_clear_quarantine before update on hipocampo_private.documents for each row execute function hipocampo_private._clear_quarantine();

revoke execute on function hipocampo.forbidden_content(texts text[], kb_id uuid) from public;
revoke execute on function hipocampo.get_document(document_id uuid, tenant_id uuid) from public;
revoke execute on function hipocampo.list_documents(kb_id uuid, after_source_uri text, max_rows integer) from public;
revoke execute on function hipocampo.quarantine_document(kb_id uuid, source_uri text, title text, source_type text, kind text, reason text, content_hash text) from public;
revoke execute on function hipocampo_private._biometric_found(content text, cfg jsonb) from public;
revoke execute on function hipocampo_private._clear_quarantine() from public;
revoke execute on function hipocampo_private._credential_found(content text, cfg jsonb) from public;
revoke execute on function hipocampo_private._financial_statement_found(content text, cfg jsonb) from public;
revoke execute on function hipocampo_private._forbidden_kind(content text, cfg jsonb) from public;
revoke execute on function hipocampo_private._line_of(content text, pos integer) from public;
revoke execute on function hipocampo_private._transcript_found(content text, cfg jsonb) from public;
grant execute on function hipocampo.forbidden_content(texts text[], kb_id uuid) to authenticated;
grant execute on function hipocampo.forbidden_content(texts text[], kb_id uuid) to service_role;
grant execute on function hipocampo.get_document(document_id uuid, tenant_id uuid) to authenticated;
grant execute on function hipocampo.get_document(document_id uuid, tenant_id uuid) to service_role;
grant execute on function hipocampo.list_documents(kb_id uuid, after_source_uri text, max_rows integer) to authenticated;
grant execute on function hipocampo.list_documents(kb_id uuid, after_source_uri text, max_rows integer) to service_role;
grant execute on function hipocampo.quarantine_document(kb_id uuid, source_uri text, title text, source_type text, kind text, reason text, content_hash text) to authenticated;
grant execute on function hipocampo.quarantine_document(kb_id uuid, source_uri text, title text, source_type text, kind text, reason text, content_hash text) to service_role;
grant execute on function hipocampo_private._biometric_found(content text, cfg jsonb) to authenticated;
grant execute on function hipocampo_private._biometric_found(content text, cfg jsonb) to service_role;
grant execute on function hipocampo_private._clear_quarantine() to authenticated;
grant execute on function hipocampo_private._clear_quarantine() to service_role;
grant execute on function hipocampo_private._credential_found(content text, cfg jsonb) to authenticated;
grant execute on function hipocampo_private._credential_found(content text, cfg jsonb) to service_role;
grant execute on function hipocampo_private._financial_statement_found(content text, cfg jsonb) to authenticated;
grant execute on function hipocampo_private._financial_statement_found(content text, cfg jsonb) to service_role;
grant execute on function hipocampo_private._forbidden_kind(content text, cfg jsonb) to authenticated;
grant execute on function hipocampo_private._forbidden_kind(content text, cfg jsonb) to service_role;
grant execute on function hipocampo_private._line_of(content text, pos integer) to authenticated;
grant execute on function hipocampo_private._line_of(content text, pos integer) to service_role;
grant execute on function hipocampo_private._transcript_found(content text, cfg jsonb) to authenticated;
grant execute on function hipocampo_private._transcript_found(content text, cfg jsonb) to service_role;
comment on function hipocampo.forbidden_content(pg_catalog.text[], pg_catalog.uuid) is 'Which of these texts are of a forbidden kind (credentials, transcript, financial statement, biometric), and why.';
comment on function hipocampo.get_document(pg_catalog.uuid, pg_catalog.uuid) is 'One document of the tenant by id, with its knowledge base.';
comment on function hipocampo.list_documents(pg_catalog.uuid, pg_catalog.text, integer) is 'The documents of a knowledge base by source_uri, a keyset page at a time (after_source_uri, max_rows).';
comment on function hipocampo.quarantine_document(pg_catalog.uuid, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.text) is 'Keep a file out of a knowledge base with its reason (status quarantined, no text, no chunks).';
