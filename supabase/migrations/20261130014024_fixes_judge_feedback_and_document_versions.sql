-- fixes judge feedback and document versions.
-- judge_feedback counts the documents it found (two of one source_uri in two knowledge bases were called unknown); document_hashes returns each document's version (a web page's HTTP validator, issue 59 §3)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

drop function if exists hipocampo.document_hashes(kb_id uuid, embedding_model text);

set check_function_bodies = off;

create or replace function hipocampo.document_hashes(kb_id uuid, embedding_model text default null::text)
returns table (document_id uuid, source_uri text, content_hash text, source_type text, trust_score real, expires_at timestamp with time zone, embedded boolean, version text)
language plpgsql
stable
set search_path to ''
set jit to 'off'
as $function$
declare
    model text;
begin
    perform hipocampo_private._caller();
    perform hipocampo_private._kb(document_hashes.kb_id);
    model := coalesce(
        document_hashes.embedding_model,
        (select e.name from hipocampo_private.embedding_models as e where e.active)
    );
    return query
    select d.id, d.source_uri, d.content_hash, d.source_type, d.trust_score, d.expires_at,
        exists (
            select 1 from hipocampo_private.chunks as c
            where c.document_id = d.id and c.embedding_model = model
        ),
        d.version
    from hipocampo_private.documents as d
    where d.kb_id = document_hashes.kb_id;
end;
$function$;

create or replace function hipocampo.judge_feedback(trace_id uuid, document_ids uuid[], tenant_id uuid default null::uuid)
returns bigint
language plpgsql
set search_path to ''
set jit to 'off'
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(judge_feedback.tenant_id);  -- 42501 before any other work
    q text;
    kbs uuid[];
    uris text[];
    found integer;
    judged_id bigint;
begin
    perform hipocampo_private._require_tenant_admin('judge the tenant''s questions');
    if coalesce(cardinality(judge_feedback.document_ids), 0) not between 1 and 20 then
        raise exception 'document_ids must hold 1..20 documents (got %)', coalesce(cardinality(judge_feedback.document_ids), 0)
            using errcode = '22023';
    end if;
    select f.question into q from hipocampo_private.answer_feedback as f
    where f.trace_id = judge_feedback.trace_id and f.tenant_id = t and f.question is not null;
    if q is null then
        raise exception 'unknown feedback: %', judge_feedback.trace_id using errcode = 'P0002';
    end if;
    select array_agg(distinct d.kb_id), array_agg(distinct d.source_uri), count(*) into kbs, uris, found
    from hipocampo_private.documents as d where d.id = any(judge_feedback.document_ids) and d.tenant_id = t;
    if found < (select count(distinct x) from unnest(judge_feedback.document_ids) as x) then
        raise exception 'unknown document: %', (
            select x from unnest(judge_feedback.document_ids) as x
            where not exists (select 1 from hipocampo_private.documents as d where d.id = x and d.tenant_id = t)
            limit 1
        ) using errcode = 'P0002';
    end if;
    if cardinality(kbs) > 1 then
        raise exception 'the documents must belong to one knowledge base' using errcode = '22023';
    end if;
    insert into hipocampo_private.judged_questions as j (tenant_id, kb_id, question, relevant_uris, from_trace_id)
    values (t, kbs[1], q, uris, judge_feedback.trace_id)
    on conflict on constraint judged_questions_kb_question_key do update
    set relevant_uris = excluded.relevant_uris, from_trace_id = excluded.from_trace_id
    returning j.id into judged_id;
    return judged_id;
end;
$function$;

revoke execute on function hipocampo.document_hashes(kb_id uuid, embedding_model text) from public;
grant execute on function hipocampo.document_hashes(kb_id uuid, embedding_model text) to authenticated;
grant execute on function hipocampo.document_hashes(kb_id uuid, embedding_model text) to service_role;
comment on function hipocampo.document_hashes(pg_catalog.uuid, pg_catalog.text) is 'Content hashes, source types, trust and whether the model embeds them, per document of a knowledge base (client-side dedupe and metadata-only updates).';
