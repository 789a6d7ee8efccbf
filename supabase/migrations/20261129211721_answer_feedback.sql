-- answer feedback.
-- issue 59 §5: feedback on replies (record_feedback, feedback_summary), judged questions made from it (judge_feedback, judged_questions, delete_judged_question); feedback in the user's export and erasure
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

create table hipocampo_private.answer_feedback (
    trace_id uuid not null,
    tenant_id uuid not null,
    user_id uuid,
    useful boolean not null,
    comment text,
    question text,
    kb_ids uuid[] not null default '{}'::uuid[],
    answer_source text not null,
    cited_document_ids uuid[] not null default '{}'::uuid[],
    created_at timestamp with time zone not null default now(),
    updated_at timestamp with time zone not null default now()
);


alter table hipocampo_private.answer_feedback enable row level security;

create table hipocampo_private.judged_questions (
    id bigint generated always as identity not null,
    tenant_id uuid not null,
    kb_id uuid not null,
    question text not null,
    relevant_uris text[] not null,
    from_trace_id uuid,
    created_at timestamp with time zone not null default now()
);


alter table hipocampo_private.judged_questions enable row level security;

create unique index answer_feedback_pkey on hipocampo_private.answer_feedback using btree (trace_id);

create index answer_feedback_tenant_created_idx on hipocampo_private.answer_feedback using btree (tenant_id, created_at);

create index answer_feedback_tenant_user_idx on hipocampo_private.answer_feedback using btree (tenant_id, user_id);

create unique index judged_questions_kb_question_key on hipocampo_private.judged_questions using btree (kb_id, question);

create unique index judged_questions_pkey on hipocampo_private.judged_questions using btree (id);

create index judged_questions_tenant_idx on hipocampo_private.judged_questions using btree (tenant_id);

alter table hipocampo_private.answer_feedback add constraint answer_feedback_pkey primary key using index answer_feedback_pkey;

alter table hipocampo_private.judged_questions add constraint judged_questions_pkey primary key using index judged_questions_pkey;

alter table hipocampo_private.answer_feedback add constraint answer_feedback_comment_length check (((char_length(comment) >= 1) and (char_length(comment) <= 1000))) not valid;

alter table hipocampo_private.answer_feedback validate constraint "answer_feedback_comment_length";

alter table hipocampo_private.answer_feedback add constraint answer_feedback_question_length check (((char_length(question) >= 1) and (char_length(question) <= 2000))) not valid;

alter table hipocampo_private.answer_feedback validate constraint "answer_feedback_question_length";

alter table hipocampo_private.answer_feedback add constraint answer_feedback_tenant_id_fkey foreign key (tenant_id) references hipocampo_private.tenants (id) on delete cascade not valid;

alter table hipocampo_private.answer_feedback validate constraint "answer_feedback_tenant_id_fkey";

alter table hipocampo_private.answer_feedback add constraint answer_feedback_trace_id_fkey foreign key (trace_id) references hipocampo_private.answer_audit (trace_id) on delete cascade not valid;

alter table hipocampo_private.answer_feedback validate constraint "answer_feedback_trace_id_fkey";

alter table hipocampo_private.judged_questions add constraint judged_questions_kb_id_fkey foreign key (kb_id) references hipocampo_private.knowledge_bases (id) on delete cascade not valid;

alter table hipocampo_private.judged_questions validate constraint "judged_questions_kb_id_fkey";

alter table hipocampo_private.judged_questions add constraint judged_questions_kb_question_key unique using index judged_questions_kb_question_key;

alter table hipocampo_private.judged_questions add constraint judged_questions_question_length check (((char_length(question) >= 1) and (char_length(question) <= 2000))) not valid;

alter table hipocampo_private.judged_questions validate constraint "judged_questions_question_length";

alter table hipocampo_private.judged_questions add constraint judged_questions_relevant_count check (((cardinality(relevant_uris) >= 1) and (cardinality(relevant_uris) <= 20))) not valid;

alter table hipocampo_private.judged_questions validate constraint "judged_questions_relevant_count";

alter table hipocampo_private.judged_questions add constraint judged_questions_tenant_id_fkey foreign key (tenant_id) references hipocampo_private.tenants (id) on delete cascade not valid;

alter table hipocampo_private.judged_questions validate constraint "judged_questions_tenant_id_fkey";

set check_function_bodies = off;

create or replace function hipocampo.delete_judged_question(id bigint, tenant_id uuid default null::uuid)
returns boolean
language plpgsql
set search_path to ''
set jit to 'off'
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(delete_judged_question.tenant_id);  -- 42501 before any other work
begin
    perform hipocampo_private._require_tenant_admin('change the tenant''s judged questions');
    delete from hipocampo_private.judged_questions as j where j.id = delete_judged_question.id and j.tenant_id = t;
    return found;
end;
$function$;

create or replace function hipocampo.feedback_summary(kb_id uuid default null::uuid, weeks integer default 12, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
stable
set search_path to ''
set jit to 'off'
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(feedback_summary.tenant_id);  -- 42501 before any other work
    since timestamptz;
begin
    perform hipocampo_private._require_tenant_admin('read the tenant''s feedback');
    if feedback_summary.weeks is null or feedback_summary.weeks not between 1 and 104 then
        raise exception 'weeks must lie in [1, 104] (got %)', coalesce(feedback_summary.weeks::text, 'null')
            using errcode = '22023';
    end if;
    since := date_trunc('week', now()) - make_interval(weeks => feedback_summary.weeks - 1);
    return jsonb_build_object(
        'weeks', coalesce((
            select jsonb_agg(jsonb_build_object(
                'week', w.week::date, 'useful', w.useful, 'not_useful', w.not_useful,
                'share_useful', round(w.useful::numeric / (w.useful + w.not_useful), 3)
            ) order by w.week)
            from (
                select date_trunc('week', f.created_at) as week,
                    count(*) filter (where f.useful) as useful, count(*) filter (where not f.useful) as not_useful
                from hipocampo_private.answer_feedback as f
                where f.tenant_id = t and f.created_at >= since
                  and (feedback_summary.kb_id is null or feedback_summary.kb_id = any(f.kb_ids))
                group by 1
            ) as w
        ), '[]'::jsonb),
        'worst', coalesce((
            select jsonb_agg(jsonb_build_object(
                'trace_id', f.trace_id, 'question', f.question, 'comment', f.comment,
                'answer_source', f.answer_source, 'created_at', f.created_at, 'kb_ids', f.kb_ids,
                'judged', exists (
                    select 1 from hipocampo_private.judged_questions as j
                    where j.tenant_id = t and j.from_trace_id = f.trace_id
                ),
                'cited', coalesce((
                    select jsonb_agg(jsonb_build_object(
                        'document_id', d.id, 'title', d.title, 'source_uri', d.source_uri, 'kb_id', d.kb_id
                    ) order by d.title, d.id)
                    from hipocampo_private.documents as d
                    where d.id = any(f.cited_document_ids) and d.tenant_id = t
                ), '[]'::jsonb)
            ) order by f.created_at desc, f.trace_id)
            from (
                select x.* from hipocampo_private.answer_feedback as x
                where x.tenant_id = t and not x.useful and x.question is not null and x.created_at >= since
                  and (feedback_summary.kb_id is null or feedback_summary.kb_id = any(x.kb_ids))
                order by x.created_at desc, x.trace_id
                limit 20
            ) as f
        ), '[]'::jsonb)
    );
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
    select array_agg(distinct d.kb_id), array_agg(distinct d.source_uri) into kbs, uris
    from hipocampo_private.documents as d where d.id = any(judge_feedback.document_ids) and d.tenant_id = t;
    if coalesce(cardinality(uris), 0) < (select count(distinct x) from unnest(judge_feedback.document_ids) as x) then
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

create or replace function hipocampo.judged_questions(kb_id uuid, tenant_id uuid default null::uuid)
returns table (id bigint, question text, relevant_uris text[], from_trace_id uuid, created_at timestamp with time zone)
language plpgsql
stable
set search_path to ''
set jit to 'off'
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(judged_questions.tenant_id);  -- 42501 before any other work
begin
    perform hipocampo_private._require_tenant_admin('read the tenant''s judged questions');
    if not exists (
        select 1 from hipocampo_private.knowledge_bases as k where k.id = judged_questions.kb_id and k.tenant_id = t
    ) then
        raise exception 'unknown knowledge base: %', judged_questions.kb_id using errcode = 'P0002';
    end if;
    return query
    select j.id, j.question, j.relevant_uris, j.from_trace_id, j.created_at
    from hipocampo_private.judged_questions as j
    where j.kb_id = judged_questions.kb_id and j.tenant_id = t
    order by j.created_at, j.id;
end;
$function$;

-- definer because the answer audit is readable by admins only and feedback rows are written by this function alone.
create or replace function hipocampo.record_feedback(trace_id uuid, useful boolean, comment text default null::text, question text default null::text, user_id uuid default null::uuid, tenant_id uuid default null::uuid)
returns uuid
language plpgsql
security definer
set search_path to ''
set jit to 'off'
as $function$
declare
    t uuid := hipocampo_private._resolve_tenant(record_feedback.tenant_id);
    caller_user uuid := (select auth.uid());
    u uuid := coalesce(caller_user, record_feedback.user_id);
    a hipocampo_private.answer_audit;
begin
    if record_feedback.useful is null then
        raise exception 'useful is required (true or false)' using errcode = '22023';
    end if;
    if char_length(record_feedback.comment) not between 1 and 1000 then
        raise exception 'comment must be 1..1000 characters (got %)', char_length(record_feedback.comment)
            using errcode = '22023';
    end if;
    if char_length(record_feedback.question) not between 1 and 2000 then
        raise exception 'question must be 1..2000 characters (got %)', char_length(record_feedback.question)
            using errcode = '22023';
    end if;
    select * into a from hipocampo_private.answer_audit as x
    where x.trace_id = record_feedback.trace_id and x.tenant_id = t
      and (caller_user is null or x.user_ref = hipocampo_private._user_ref(t, caller_user));
    if not found then
        raise exception 'unknown answer: %', record_feedback.trace_id using errcode = 'P0002';
    end if;
    if record_feedback.question is not null
        and encode(sha256(convert_to(record_feedback.question, 'UTF8')), 'hex') <> a.question_sha256 then
        raise exception 'question is not the one this answer was asked' using errcode = '22023';
    end if;
    insert into hipocampo_private.answer_feedback as f (
        trace_id, tenant_id, user_id, useful, comment, question, kb_ids, answer_source, cited_document_ids
    ) values (
        a.trace_id, t, u, record_feedback.useful, record_feedback.comment,
        (hipocampo_private._pii_scrub(record_feedback.question)).text, a.kb_ids, a.answer_source,
        coalesce((
            select array_agg(distinct c.document_id) from hipocampo_private.chunks as c
            where c.id = any(a.evidence_chunk_ids)
        ), '{}')
    )
    on conflict on constraint answer_feedback_pkey do update
    set useful = excluded.useful, comment = excluded.comment, question = coalesce(excluded.question, f.question),
        updated_at = now();
    return a.trace_id;
end;
$function$;

-- definer because erasure deletes the user's audit events, which no client role may delete.
create or replace function hipocampo.erase_user(user_id uuid default null::uuid, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
security definer
set search_path to ''
set jit to 'off'
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
    delete from hipocampo_private.answer_feedback as f where f.tenant_id = a.actor_tenant and f.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('feedback', n);
    delete from hipocampo_private.memory_consents as c
    where c.tenant_id = a.actor_tenant and c.user_id = a.actor_user;
    delete from hipocampo_private.memory_events as e
    where e.tenant_id = a.actor_tenant and e.user_id = a.actor_user;
    get diagnostics n = row_count;
    counts := counts || jsonb_build_object('events', n);
    update hipocampo_private.data_access_log as l set caller = null
    where l.tenant_id = a.actor_tenant and l.caller = a.actor_user;
    update hipocampo_private.read_queue as q set caller = null
    where q.tenant_id = a.actor_tenant and q.caller = a.actor_user;
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

-- definer because a user's export includes their own audit events and sessions in every state, beyond what RLS shows.
create or replace function hipocampo.export_user_data(user_id uuid default null::uuid, tenant_id uuid default null::uuid)
returns jsonb
language plpgsql
security definer
set search_path to ''
set jit to 'off'
as $function$
declare
    a record := hipocampo_private._data_subject(export_user_data.user_id, export_user_data.tenant_id);
    who record := hipocampo_private._acting_for(a.actor_tenant, a.actor_user);
    result jsonb;
begin
    result := jsonb_build_object(
        'format', 'hipocampo.user_export.v1',
        'exported_at', now(),
        'tenant_id', a.actor_tenant,
        'user_id', a.actor_user,
        'consent', (
            select to_jsonb(c) from hipocampo_private.memory_consents as c
            where c.tenant_id = a.actor_tenant and c.user_id = a.actor_user
        ),
        'memories', coalesce((
            select jsonb_agg(to_jsonb(m) - 'embedding' order by m.key, m.valid_from, m.valid_to nulls last)
            from hipocampo_private.memories as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
        ), '[]'::jsonb),
        'staged_memories', coalesce((
            select jsonb_agg(to_jsonb(s) - 'embedding' order by s.key)
            from hipocampo_private.memory_staging as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'messages', coalesce((
            select jsonb_agg(
                to_jsonb(m) - 'embedding' - 'fts' - 'fts_length' - 'ts_config' - 'token_ids' - 'token_bits'
                order by m.id
            )
            from hipocampo_private.messages as m
            where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
        ), '[]'::jsonb),
        'conversation_summaries', coalesce((
            select jsonb_agg(to_jsonb(s) order by s.conversation_id)
            from hipocampo_private.conversation_summaries as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'sessions', coalesce((
            select jsonb_agg(to_jsonb(s) order by s.created_at)
            from hipocampo_private.sessions as s
            where s.tenant_id = a.actor_tenant and s.user_id = a.actor_user
        ), '[]'::jsonb),
        'events', coalesce((
            select jsonb_agg(to_jsonb(e) order by e.id)
            from hipocampo_private.memory_events as e
            where e.tenant_id = a.actor_tenant and e.user_id = a.actor_user
        ), '[]'::jsonb),
        'feedback', coalesce((
            select jsonb_agg(to_jsonb(f) order by f.created_at, f.trace_id)
            from hipocampo_private.answer_feedback as f
            where f.tenant_id = a.actor_tenant and f.user_id = a.actor_user
        ), '[]'::jsonb)
    );
    perform hipocampo_private._memory_event(a.actor_tenant, a.actor_user, null, 'user.exported', who.reason,
        who.detail || jsonb_build_object('memories', jsonb_array_length(result -> 'memories'),
            'messages', jsonb_array_length(result -> 'messages')));
    return result;
end;
$function$;

create policy "members read their own feedback and admins their tenant's"
on hipocampo_private.answer_feedback
as permissive
for select
to authenticated
using (((tenant_id = (select hipocampo_private.current_tenant_id() as current_tenant_id)) and ((user_id = (select auth.uid() as uid)) or ((select hipocampo_private.current_tenant_role() as current_tenant_role) = 'admin'::text))));


create policy "admins can add judged questions to their tenant"
on hipocampo_private.judged_questions
as permissive
for insert
to authenticated
with check (((tenant_id = (select hipocampo_private.current_tenant_id() as current_tenant_id)) and ((select hipocampo_private.current_tenant_role() as current_tenant_role) = 'admin'::text)));


create policy "admins can change the judged questions of their tenant"
on hipocampo_private.judged_questions
as permissive
for update
to authenticated
using (((tenant_id = (select hipocampo_private.current_tenant_id() as current_tenant_id)) and ((select hipocampo_private.current_tenant_role() as current_tenant_role) = 'admin'::text)))
with check (((tenant_id = (select hipocampo_private.current_tenant_id() as current_tenant_id)) and ((select hipocampo_private.current_tenant_role() as current_tenant_role) = 'admin'::text)));


create policy "admins can delete the judged questions of their tenant"
on hipocampo_private.judged_questions
as permissive
for delete
to authenticated
using (((tenant_id = (select hipocampo_private.current_tenant_id() as current_tenant_id)) and ((select hipocampo_private.current_tenant_role() as current_tenant_role) = 'admin'::text)));


create policy "admins can read the judged questions of their tenant"
on hipocampo_private.judged_questions
as permissive
for select
to authenticated
using (((tenant_id = (select hipocampo_private.current_tenant_id() as current_tenant_id)) and ((select hipocampo_private.current_tenant_role() as current_tenant_role) = 'admin'::text)));

revoke execute on function hipocampo.delete_judged_question(id bigint, tenant_id uuid) from public;
revoke execute on function hipocampo.feedback_summary(kb_id uuid, weeks integer, tenant_id uuid) from public;
revoke execute on function hipocampo.judge_feedback(trace_id uuid, document_ids uuid[], tenant_id uuid) from public;
revoke execute on function hipocampo.judged_questions(kb_id uuid, tenant_id uuid) from public;
revoke execute on function hipocampo.record_feedback(trace_id uuid, useful boolean, comment text, question text, user_id uuid, tenant_id uuid) from public;
grant execute on function hipocampo.delete_judged_question(id bigint, tenant_id uuid) to authenticated;
grant execute on function hipocampo.delete_judged_question(id bigint, tenant_id uuid) to service_role;
grant execute on function hipocampo.feedback_summary(kb_id uuid, weeks integer, tenant_id uuid) to authenticated;
grant execute on function hipocampo.feedback_summary(kb_id uuid, weeks integer, tenant_id uuid) to service_role;
grant execute on function hipocampo.judge_feedback(trace_id uuid, document_ids uuid[], tenant_id uuid) to authenticated;
grant execute on function hipocampo.judge_feedback(trace_id uuid, document_ids uuid[], tenant_id uuid) to service_role;
grant execute on function hipocampo.judged_questions(kb_id uuid, tenant_id uuid) to authenticated;
grant execute on function hipocampo.judged_questions(kb_id uuid, tenant_id uuid) to service_role;
grant execute on function hipocampo.record_feedback(trace_id uuid, useful boolean, comment text, question text, user_id uuid, tenant_id uuid) to authenticated;
grant execute on function hipocampo.record_feedback(trace_id uuid, useful boolean, comment text, question text, user_id uuid, tenant_id uuid) to service_role;
grant select on table hipocampo_private.answer_feedback to authenticated;
grant all on table hipocampo_private.answer_feedback to service_role;
grant delete on table hipocampo_private.judged_questions to authenticated;
grant insert on table hipocampo_private.judged_questions to authenticated;
grant select on table hipocampo_private.judged_questions to authenticated;
grant update on table hipocampo_private.judged_questions to authenticated;
grant all on table hipocampo_private.judged_questions to service_role;
comment on function hipocampo.delete_judged_question(bigint, pg_catalog.uuid) is 'Remove one judged question of the tenant.';
comment on function hipocampo.feedback_summary(pg_catalog.uuid, integer, pg_catalog.uuid) is 'Feedback per week and the replies marked not useful, for the tenant''s admins.';
comment on function hipocampo.judge_feedback(pg_catalog.uuid, pg_catalog.uuid[], pg_catalog.uuid) is 'An admin turns a marked question into a judged question of its documents'' knowledge base.';
comment on function hipocampo.judged_questions(pg_catalog.uuid, pg_catalog.uuid) is 'A knowledge base''s judged questions, for kb eval.';
comment on function hipocampo.record_feedback(pg_catalog.uuid, boolean, pg_catalog.text, pg_catalog.text, pg_catalog.uuid, pg_catalog.uuid) is 'A user marks one reply useful or not, by its trace id.';
comment on table hipocampo_private.answer_feedback is 'A user''s verdict on one reply (useful or not, comment, the question when its hash matches), by trace id.';
comment on table hipocampo_private.judged_questions is 'Questions judged from feedback: the source_uri of the documents that answer them, per knowledge base.';
