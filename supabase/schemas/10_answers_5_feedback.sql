-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- Feedback on answers (issue 59 §5): a user marks a reply useful or not (by its trace id, with an
-- optional comment and the question it answered); admins read it per knowledge base and turn a
-- marked question into a judged question of kb eval with the right document. Feedback is the
-- user's data (export_user_data, erase_user); a judged question made from it is the tenant's.

create table hipocampo_private.answer_feedback (
    trace_id uuid primary key references hipocampo_private.answer_audit (trace_id) on delete cascade,
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    -- Who marked it (null: service_role naming no user); erase_user deletes the user's rows.
    user_id uuid,
    useful boolean not null,
    comment text,
    -- The question, scrubbed of PII; only when the caller sent the one the answer's hash matches.
    question text,
    -- From the answer's audit row: what was searched, what answered, the documents cited.
    kb_ids uuid[] not null default '{}',
    answer_source text not null,
    cited_document_ids uuid[] not null default '{}',
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint answer_feedback_comment_length check (char_length(comment) between 1 and 1000),
    constraint answer_feedback_question_length check (char_length(question) between 1 and 2000)
);

alter table hipocampo_private.answer_feedback enable row level security;

-- RLS filters on tenant_id (and user_id); the summary reads a tenant's newest first.
create index answer_feedback_tenant_created_idx on hipocampo_private.answer_feedback (tenant_id, created_at);

create index answer_feedback_tenant_user_idx on hipocampo_private.answer_feedback (tenant_id, user_id);

create policy "members read their own feedback and admins their tenant's"
on hipocampo_private.answer_feedback
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (user_id = (select auth.uid()) or (select hipocampo_private.current_tenant_role()) = 'admin')
);

create table hipocampo_private.judged_questions (
    -- An opaque id (_opaque_id), as every id a user can see: no shared sequence tells one tenant
    -- how many rows the others wrote.
    id bigint primary key default hipocampo_private._opaque_id(),
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    kb_id uuid not null references hipocampo_private.knowledge_bases (id) on delete cascade,
    question text not null,
    -- The source_uri of each document that answers it, as kb eval's judged files name them.
    relevant_uris text[] not null,
    -- The feedback it was made from (no foreign key: the user's feedback may be erased).
    from_trace_id uuid,
    created_at timestamptz not null default now(),
    constraint judged_questions_question_length check (char_length(question) between 1 and 2000),
    constraint judged_questions_relevant_count check (cardinality(relevant_uris) between 1 and 20),
    constraint judged_questions_kb_question_key unique (kb_id, question)
);

alter table hipocampo_private.judged_questions enable row level security;

-- RLS filters on tenant_id; kb eval reads one knowledge base's (the unique key's kb_id first).
create index judged_questions_tenant_idx on hipocampo_private.judged_questions (tenant_id);

create policy "admins can read the judged questions of their tenant"
on hipocampo_private.judged_questions
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "admins can add judged questions to their tenant"
on hipocampo_private.judged_questions
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "admins can change the judged questions of their tenant"
on hipocampo_private.judged_questions
for update
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
)
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

create policy "admins can delete the judged questions of their tenant"
on hipocampo_private.judged_questions
for delete
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

/*
record_feedback(trace_id uuid, useful boolean, comment text default null, question text default null,
  user_id uuid default null, tenant_id uuid default null) -> uuid

Purpose: a user's verdict on one reply (answer, passages or refusal), by the trace id every
  surface returns: useful or not, an optional comment, and optionally the question it answered
  (kept, scrubbed of PII, only when its sha256 is the one the answer's audit row holds, so
  feedback cannot attach another question to an answer). Marking again replaces the verdict and
  the comment (a question once given stays). The answer's knowledge bases, source and cited
  documents are copied from its audit row.
Parameters: trace_id - a reply of the caller's tenant, asked by the caller (service_role: any of the
  tenant's); useful - true / false; comment - 1..1,000 characters or null; question - 1..2,000
  characters or null; user_id, tenant_id - service_role only (a user is the JWT's).
Returns: the trace id.
Errors: 42501 as _resolve_tenant; 22023 "useful is required (true or false)"; 22023 "comment must
  be 1..1000 characters (got n)"; 22023 "question must be 1..2000 characters (got n)"; P0002
  "unknown answer: …" (no such reply in the tenant, or another user's); 22023 "question is not the
  one this answer was asked".
Example: select hipocampo.record_feedback('…'::uuid, false, 'citou o artigo errado', 'posso fazer mudança no domingo?');
*/
-- definer because the answer audit is readable by admins only and feedback rows are written by this function alone.
create or replace function hipocampo.record_feedback(
    trace_id uuid, useful boolean, comment text default null, question text default null,
    user_id uuid default null, tenant_id uuid default null
)
returns uuid
language plpgsql
security definer
set search_path = ''
set jit = off
as $$
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
$$;

/*
feedback_summary(kb_id uuid default null, weeks integer default 12, tenant_id uuid default null) -> jsonb

Purpose: what a tenant's users said of its replies (issue 59 §5), for its admins: per week, how
  many replies were marked useful and not, and the share useful; the replies marked not useful
  that carry their question, newest first (the worst questions), each with its comment, source and
  cited documents, and whether it is already a judged question.
Parameters: kb_id - only feedback on replies that searched this knowledge base (null = all);
  weeks - 1..104, counted back from the current week (weeks start on Monday); tenant_id -
  service_role only.
Returns: {"weeks": [{"week": "2026-11-23", "useful", "not_useful", "share_useful"}] (oldest first,
  weeks without feedback left out; share 0..1), "worst": [{"trace_id", "question", "comment",
  "answer_source", "created_at", "kb_ids", "judged", "cited": [{"document_id", "title",
  "source_uri", "kb_id"}]}] (at most 20)}.
Errors: 42501 as _resolve_tenant (before any other work); 42501 "only tenant admins can read the
  tenant's feedback"; 22023 "weeks must lie in [1, 104] (got …)".
Example: select hipocampo.feedback_summary(kb, 8);
*/
create or replace function hipocampo.feedback_summary(
    kb_id uuid default null, weeks integer default 12, tenant_id uuid default null
)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
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
$$;

/*
judge_feedback(trace_id uuid, document_ids uuid[], tenant_id uuid default null) -> bigint

Purpose: an admin's one click on a reply marked not useful: its question becomes a judged
  question of the documents' knowledge base (kb eval --stored, the hub's evaluation page), with
  these documents as the ones that answer it (their source_uri, as judged files name them). The
  question is the feedback's (scrubbed of PII); judging it again replaces its documents.
Parameters: trace_id - feedback of the tenant that carries its question; document_ids - 1..20
  documents of the tenant, all of one knowledge base; tenant_id - service_role only.
Returns: the judged question's id.
Errors: 42501 as _resolve_tenant (before any other work); 42501 "only tenant admins can judge the
  tenant's questions"; 22023 "document_ids must hold 1..20 documents (got n)"; P0002 "unknown
  feedback: …" (none, or without its question); P0002 "unknown document: …"; 22023 "the documents
  must belong to one knowledge base".
Example: select hipocampo.judge_feedback('…'::uuid, array['…'::uuid]);
*/
create or replace function hipocampo.judge_feedback(trace_id uuid, document_ids uuid[], tenant_id uuid default null)
returns bigint
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
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
$$;

/*
judged_questions(kb_id uuid, tenant_id uuid default null) -> table (id bigint, question text,
  relevant_uris text[], from_trace_id uuid, created_at timestamptz)

Purpose: a knowledge base's judged questions stored from feedback (judge_feedback), in kb eval's
  judged-file terms (question, the relevant documents' source_uri), oldest first.
Parameters: kb_id - a knowledge base of the tenant; tenant_id - service_role only.
Returns: one row per judged question.
Errors: 42501 as _resolve_tenant (before any other work); 42501 "only tenant admins can read the
  tenant's judged questions"; P0002 "unknown knowledge base: …".
Example: select question, relevant_uris from hipocampo.judged_questions(kb);
*/
create or replace function hipocampo.judged_questions(kb_id uuid, tenant_id uuid default null)
returns table (id bigint, question text, relevant_uris text[], from_trace_id uuid, created_at timestamptz)
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
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
$$;

/*
delete_judged_question(id bigint, tenant_id uuid default null) -> boolean

Purpose: remove one judged question of the tenant (an admin's mistake, a question no longer
  relevant).
Parameters: id - from judged_questions; tenant_id - service_role only.
Returns: true when a row was deleted, false when the tenant has no such question.
Errors: 42501 as _resolve_tenant (before any other work); 42501 "only tenant admins can change the
  tenant's judged questions".
Example: select hipocampo.delete_judged_question(12);
*/
create or replace function hipocampo.delete_judged_question(id bigint, tenant_id uuid default null)
returns boolean
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(delete_judged_question.tenant_id);  -- 42501 before any other work
begin
    perform hipocampo_private._require_tenant_admin('change the tenant''s judged questions');
    delete from hipocampo_private.judged_questions as j where j.id = delete_judged_question.id and j.tenant_id = t;
    return found;
end;
$$;

comment on table hipocampo_private.answer_feedback is
'A user''s verdict on one reply (useful or not, comment, the question when its hash matches), by trace id.';

comment on table hipocampo_private.judged_questions is
'Questions judged from feedback: the source_uri of the documents that answer them, per knowledge base.';

comment on function hipocampo.record_feedback(uuid, boolean, text, text, uuid, uuid) is
'A user marks one reply useful or not, by its trace id.';

comment on function hipocampo.feedback_summary(uuid, integer, uuid) is
'Feedback per week and the replies marked not useful, for the tenant''s admins.';

comment on function hipocampo.judge_feedback(uuid, uuid[], uuid) is
'An admin turns a marked question into a judged question of its documents'' knowledge base.';

comment on function hipocampo.judged_questions(uuid, uuid) is 'A knowledge base''s judged questions, for kb eval.';

comment on function hipocampo.delete_judged_question(bigint, uuid) is 'Remove one judged question of the tenant.';
