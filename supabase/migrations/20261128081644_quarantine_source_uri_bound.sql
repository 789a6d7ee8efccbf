-- quarantine source uri bound.
-- quarantine_document bounds source_uri at 2,048 bytes as ingest_document does (the fuzzer's 54000 from the unique index's row limit)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

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
    if octet_length(source_uri) > 2048 then  -- as ingest_document: the unique index's row limit
        raise exception 'source_uri is % bytes; the limit is 2048', octet_length(source_uri) using errcode = '22001';
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
