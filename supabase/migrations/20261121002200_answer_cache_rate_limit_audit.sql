-- The answer cache (per tenant + knowledge bases + normalised question, TTL rag.cache_ttl_seconds,
-- invalidated by any change to those knowledge bases), the token-bucket rate limit (per tenant
-- and user, and per client IP for the HTTP API), and the audit row of every answer call.

create table hipocampo_private.answer_cache (
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    -- Sorted, distinct knowledge base ids, joined by ',' (part of the key), and as an array.
    kb_key text not null,
    kb_ids uuid[] not null,
    agent text not null default '',
    question_key text not null,
    answer jsonb not null,
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    primary key (tenant_id, kb_key, agent, question_key),
    constraint answer_cache_answer_is_object check (jsonb_typeof(answer) = 'object')
);

-- Invalidation finds the entries of one knowledge base.
create index answer_cache_kb_ids_idx on hipocampo_private.answer_cache using gin (kb_ids);
create index answer_cache_expires_at_idx on hipocampo_private.answer_cache (expires_at);

alter table hipocampo_private.answer_cache enable row level security;
-- No client role reads or writes the cache directly: cache_get / cache_put are the only paths.
grant all on hipocampo_private.answer_cache to service_role;

create table hipocampo_private.rate_limit_buckets (
    bucket text primary key,
    tokens double precision not null,
    capacity double precision not null,
    updated_at timestamptz not null default now()
);

alter table hipocampo_private.rate_limit_buckets enable row level security;
grant all on hipocampo_private.rate_limit_buckets to service_role;

create table hipocampo_private.answer_audit (
    trace_id uuid primary key,
    tenant_id uuid not null references hipocampo_private.tenants (id) on delete cascade,
    -- Pseudonymous: sha256(tenant:user) (see _user_ref), so erasing a user leaves no identity here.
    user_ref text,
    agent text,
    kb_ids uuid[] not null default '{}',
    question_sha256 text not null,
    answer_source text not null,
    reason text,
    confidence real,
    candidates integer not null default 0,
    filtered integer not null default 0,
    evidence_chunk_ids bigint[] not null default '{}',
    timings_ms jsonb not null default '{}'::jsonb,
    latency_ms real not null,
    created_at timestamptz not null default now(),
    constraint answer_audit_source_check check (answer_source in ('CACHE', 'LLM', 'EXTRACTIVE', 'REFUSAL')),
    constraint answer_audit_timings_is_object check (jsonb_typeof(timings_ms) = 'object')
);

-- RLS filters on tenant_id; the views group by tenant and period.
create index answer_audit_tenant_created_idx on hipocampo_private.answer_audit (tenant_id, created_at);

alter table hipocampo_private.answer_audit enable row level security;
grant select on hipocampo_private.answer_audit to authenticated;
grant all on hipocampo_private.answer_audit to service_role;

create policy "admins can read the answer audit of their tenant"
on hipocampo_private.answer_audit
for select
to authenticated
using (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and (select hipocampo_private.current_tenant_role()) = 'admin'
);

/*
normalize_question(question text) -> text

Purpose: the cache key of a question: lower case, unaccented, punctuation removed, whitespace
  collapsed ("Qual é o prazo?" and "qual e o  prazo" share one key).
Example: select hipocampo.normalize_question('  Qual é o PRAZO? '); -- 'qual e o prazo'
*/
create function hipocampo.normalize_question(question text)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
    select btrim(regexp_replace(lower(extensions.unaccent(coalesce(question, ''))), '[^[:alnum:]]+', ' ', 'g'))
$$;

/*
_cache_scope(kb_ids uuid[]) -> text

Purpose: the knowledge-base part of a cache key: distinct ids, sorted, joined by ','.
*/
create function hipocampo_private._cache_scope(kb_ids uuid[])
returns text
language sql
immutable
security invoker
set search_path = ''
as $$
    select string_agg(distinct k::text, ',' order by k::text) from pg_catalog.unnest(kb_ids) as k
$$;

/*
cache_get(question text, kb_ids uuid[], agent text default null, tenant_id uuid default null) -> jsonb

Purpose: the cached answer to a question over these knowledge bases, when one is live.
Parameters: question as asked (normalised here); kb_ids; agent binding name or null.
Returns: the answer json, or null.
Errors: 42501 as _resolve_tenant.
Example: select hipocampo.cache_get('Qual o prazo?', array[kb]);
*/
-- definer because clients may not read the cache table directly (it is shared by the tenant's users).
create function hipocampo.cache_get(
    question text, kb_ids uuid[], agent text default null, tenant_id uuid default null
)
returns jsonb
language sql
stable
security definer
set search_path = ''
as $$
    select c.answer from hipocampo_private.answer_cache as c
    where c.tenant_id = hipocampo_private._resolve_tenant(cache_get.tenant_id)
      and c.kb_key = hipocampo_private._cache_scope(cache_get.kb_ids)
      and c.agent = coalesce(cache_get.agent, '')
      and c.question_key = hipocampo.normalize_question(cache_get.question)
      and c.expires_at > now()
$$;

/*
cache_put(question text, kb_ids uuid[], answer jsonb, agent text default null, tenant_id uuid default null)
  -> boolean

Purpose: cache an answer for rag.cache_ttl_seconds (0 = never cache). Only answers whose cited
  chunks all belong to these knowledge bases of the tenant are accepted (a client cannot plant
  answers citing anything else).
Parameters: answer - {"answer", "confidence", "sources": [{"chunk_id", …}], …}.
Returns: true when cached.
Errors: 22023 "answer must be a json object with sources"; 22023 "cited chunk … is not in these
  knowledge bases"; 42501 as _resolve_tenant.
Example: select hipocampo.cache_put('Qual o prazo?', array[kb], '{"answer": "…", "sources": []}');
*/
-- definer because the cache is written for the whole tenant and no client role may write it directly.
create function hipocampo.cache_put(
    question text, kb_ids uuid[], answer jsonb, agent text default null, tenant_id uuid default null
)
returns boolean
language plpgsql
security definer
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(cache_put.tenant_id);
    ttl integer := (hipocampo.rag_config(null, null, t) ->> 'cache_ttl_seconds')::integer;
    bad bigint;
begin
    if answer is null or jsonb_typeof(answer) <> 'object' or jsonb_typeof(answer -> 'sources') <> 'array' then
        raise exception 'answer must be a json object with sources' using errcode = '22023';
    end if;
    select (s ->> 'chunk_id')::bigint into bad
    from jsonb_array_elements(answer -> 'sources') as s
    where not exists (
        select 1 from hipocampo_private.chunks as c
        where c.id = (s ->> 'chunk_id')::bigint and c.tenant_id = t and c.kb_id = any(cache_put.kb_ids)
    )
    limit 1;
    if found then
        raise exception 'cited chunk % is not in these knowledge bases', bad using errcode = '22023';
    end if;
    if coalesce(ttl, 0) <= 0 then
        return false;
    end if;
    insert into hipocampo_private.answer_cache as c (
        tenant_id, kb_key, kb_ids, agent, question_key, answer, expires_at
    ) values (
        t, hipocampo_private._cache_scope(cache_put.kb_ids), cache_put.kb_ids, coalesce(cache_put.agent, ''),
        hipocampo.normalize_question(cache_put.question), answer, now() + make_interval(secs => ttl)
    )
    on conflict on constraint answer_cache_pkey do update
    set answer = excluded.answer, created_at = now(), expires_at = excluded.expires_at;
    return true;
end;
$$;

/*
_invalidate_answer_cache() -> trigger

Purpose: any change to a knowledge base (its documents: ingest, delete, status or trust change;
  its overrides) drops the cached answers over it; expired entries go at the same time.
  Statement-level, over the transition tables.
*/
-- definer because the writer of a document (an admin, the ingestion) may not write the cache table.
create function hipocampo_private._invalidate_answer_cache()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
    changed uuid[];
begin
    if tg_table_name = 'knowledge_bases' then
        select array_agg(n.id) into changed from new_rows as n;
    elsif tg_op = 'INSERT' then
        select array_agg(distinct n.kb_id) into changed from new_rows as n;
    elsif tg_op = 'DELETE' then
        select array_agg(distinct o.kb_id) into changed from old_rows as o;
    else
        select array_agg(distinct x.kb_id) into changed from (
            select n.kb_id from new_rows as n union all select o.kb_id from old_rows as o
        ) as x;
    end if;
    delete from hipocampo_private.answer_cache as c where c.kb_ids && changed or c.expires_at <= now();
    return null;
end;
$$;

/*
set_document_status(document_id uuid, status text default null, trust_score real default null) -> jsonb

Purpose: mark a document superseded / archived / active again, or change its trust (0..1): how an
  admin resolves conflicting sources. Retrieval reads active documents only; the change drops the
  cached answers of its knowledge base (trigger below).
Parameters: status 'active' | 'superseded' | 'archived' (null = unchanged); trust_score 0..1
  (null = unchanged).
Returns: {"document_id", "status", "trust_score"}.
Errors: P0002 "unknown document: …" (also another tenant's, RLS); 23514 bad status or trust;
  42501 not an admin (RLS: the row is not updatable).
Example: select hipocampo.set_document_status(doc, 'superseded');
*/
create function hipocampo.set_document_status(
    document_id uuid, status text default null, trust_score real default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    d hipocampo_private.documents;
begin
    perform hipocampo_private._require_admin();
    update hipocampo_private.documents as x
    set status = coalesce(set_document_status.status, x.status),
        trust_score = coalesce(set_document_status.trust_score, x.trust_score),
        updated_at = now()
    where x.id = set_document_status.document_id
    returning * into d;
    if d.id is null then
        raise exception 'unknown document: %', document_id using errcode = 'P0002';
    end if;
    return jsonb_build_object('document_id', d.id, 'status', d.status, 'trust_score', d.trust_score);
end;
$$;

create trigger documents_invalidate_answer_cache_on_insert
after insert on hipocampo_private.documents
referencing new table as new_rows
for each statement execute function hipocampo_private._invalidate_answer_cache();

create trigger documents_invalidate_answer_cache_on_update
after update on hipocampo_private.documents
referencing new table as new_rows old table as old_rows
for each statement execute function hipocampo_private._invalidate_answer_cache();

create trigger documents_invalidate_answer_cache_on_delete
after delete on hipocampo_private.documents
referencing old table as old_rows
for each statement execute function hipocampo_private._invalidate_answer_cache();

create trigger knowledge_bases_invalidate_answer_cache
after update on hipocampo_private.knowledge_bases
referencing new table as new_rows old table as old_rows
for each statement execute function hipocampo_private._invalidate_answer_cache();

/*
_take_token(bucket text, per_minute double precision, cost double precision) -> jsonb

Purpose: one token-bucket step: capacity per_minute, refilled continuously at per_minute / 60
  tokens per second; takes `cost` tokens when available.
Returns: {"allowed", "remaining", "limit", "retry_after_ms"}.
*/
create function hipocampo_private._take_token(bucket text, per_minute double precision, cost double precision)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    b hipocampo_private.rate_limit_buckets;
    level double precision;
begin
    insert into hipocampo_private.rate_limit_buckets as r (bucket, tokens, capacity)
    values (_take_token.bucket, per_minute, per_minute)
    on conflict on constraint rate_limit_buckets_pkey do nothing;
    select * into b from hipocampo_private.rate_limit_buckets as r where r.bucket = _take_token.bucket for update;
    level := least(per_minute, b.tokens + extract(epoch from (clock_timestamp() - b.updated_at)) * per_minute / 60);
    if level >= cost then
        update hipocampo_private.rate_limit_buckets as r
        set tokens = level - cost, capacity = per_minute, updated_at = clock_timestamp()
        where r.bucket = b.bucket;
        return jsonb_build_object('allowed', true, 'remaining', floor(level - cost), 'limit', per_minute,
            'retry_after_ms', 0);
    end if;
    update hipocampo_private.rate_limit_buckets as r
    set tokens = level, capacity = per_minute, updated_at = clock_timestamp()
    where r.bucket = b.bucket;
    return jsonb_build_object('allowed', false, 'remaining', 0, 'limit', per_minute,
        'retry_after_ms', ceil((cost - level) * 60000 / per_minute));
end;
$$;

/*
take_rate_limit(cost double precision default 1, user_id uuid default null, tenant_id uuid default null)
  -> jsonb

Purpose: the per tenant and user token bucket of the answer API (rag.rate_limit_per_minute of the
  tenant). Usable from RPCs and HTTP; the bucket key comes from the JWT (a user cannot spend
  another's). service_role names the user, or without one spends the tenant's service bucket.
Parameters: cost - tokens this call spends (> 0); user_id / tenant_id only for service_role.
Returns: {"allowed", "remaining", "limit", "retry_after_ms"}.
Errors: 22023 "cost must be positive"; 42501 as _resolve_tenant.
Example: select hipocampo.take_rate_limit();
*/
-- definer because the buckets table is not writable by client roles.
create function hipocampo.take_rate_limit(
    cost double precision default 1, user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
security definer
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(take_rate_limit.tenant_id);
    u uuid := coalesce((select auth.uid()), take_rate_limit.user_id);
begin
    if cost is null or cost <= 0 then
        raise exception 'cost must be positive' using errcode = '22023';
    end if;
    return hipocampo_private._take_token(
        'user:' || t || ':' || coalesce(u::text, 'service'),
        (hipocampo.rag_config(null, null, t) ->> 'rate_limit_per_minute')::double precision,
        cost
    );
end;
$$;

/*
take_ip_rate_limit(ip inet) -> jsonb

Purpose: the per client IP token bucket of the HTTP API (rag.ip_rate_limit_per_minute of the
  global config), taken before authentication. service_role only.
Returns: as take_rate_limit.
Errors: 22023 "ip is required".
Example: select hipocampo.take_ip_rate_limit('203.0.113.7');
*/
create function hipocampo.take_ip_rate_limit(ip inet)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if ip is null then
        raise exception 'ip is required' using errcode = '22023';
    end if;
    return hipocampo_private._take_token(
        'ip:' || host(ip),
        (select (s.config -> 'rag' ->> 'ip_rate_limit_per_minute')::double precision
         from hipocampo_private.settings as s where s.tenant_id is null),
        1
    );
end;
$$;

/*
record_answer(trace_id uuid, question text, answer_source text, reason text, confidence real,
  candidates integer, filtered integer, evidence_chunk_ids bigint[], timings_ms jsonb,
  latency_ms real, kb_ids uuid[], agent text default null, user_id uuid default null,
  tenant_id uuid default null) -> uuid

Purpose: the audit row of one answer call (also refusals and cache hits). The question is kept
  only as its sha256 and the user as the pseudonymous user_ref.
Returns: the trace id.
Errors: 23514 unknown answer_source; 23505 duplicate trace id; 42501 as _resolve_tenant.
Example: select hipocampo.record_answer(gen_random_uuid(), 'q', 'REFUSAL', 'low_confidence', 0.2,
  4, 3, '{}', '{}', 12.5, array[kb]);
*/
-- definer because audit rows are append-only for clients: no client role may write the table.
create function hipocampo.record_answer(
    trace_id uuid, question text, answer_source text, reason text, confidence real,
    candidates integer, filtered integer, evidence_chunk_ids bigint[], timings_ms jsonb,
    latency_ms real, kb_ids uuid[], agent text default null, user_id uuid default null,
    tenant_id uuid default null
)
returns uuid
language plpgsql
security definer
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(record_answer.tenant_id);
    u uuid := coalesce((select auth.uid()), record_answer.user_id);
begin
    insert into hipocampo_private.answer_audit (
        trace_id, tenant_id, user_ref, agent, kb_ids, question_sha256, answer_source, reason, confidence,
        candidates, filtered, evidence_chunk_ids, timings_ms, latency_ms
    ) values (
        record_answer.trace_id, t,
        case when u is not null then hipocampo_private._user_ref(t, u) end,
        record_answer.agent, coalesce(record_answer.kb_ids, '{}'),
        encode(sha256(convert_to(coalesce(question, ''), 'UTF8')), 'hex'),
        record_answer.answer_source, record_answer.reason, record_answer.confidence,
        coalesce(record_answer.candidates, 0), coalesce(record_answer.filtered, 0),
        coalesce(record_answer.evidence_chunk_ids, '{}'), coalesce(record_answer.timings_ms, '{}'::jsonb),
        record_answer.latency_ms
    );
    return record_answer.trace_id;
end;
$$;

grant execute on function hipocampo.normalize_question(text) to authenticated, service_role;
grant execute on function hipocampo.set_document_status(uuid, text, real) to authenticated, service_role;
grant execute on function hipocampo_private._cache_scope(uuid[]) to authenticated, service_role;
grant execute on function hipocampo.cache_get(text, uuid[], text, uuid) to authenticated, service_role;
grant execute on function hipocampo.cache_put(text, uuid[], jsonb, text, uuid) to authenticated, service_role;
grant execute on function hipocampo_private._take_token(text, double precision, double precision) to service_role;
grant execute on function hipocampo.take_rate_limit(double precision, uuid, uuid) to authenticated, service_role;
grant execute on function hipocampo.take_ip_rate_limit(inet) to service_role;
grant execute on function hipocampo.record_answer(
    uuid, text, text, text, real, integer, integer, bigint[], jsonb, real, uuid[], text, uuid, uuid
) to authenticated, service_role;

comment on function hipocampo.normalize_question(text) is 'The cache key of a question.';
comment on function hipocampo.set_document_status(uuid, text, real) is
'Mark a document superseded / archived / active, or change its trust.';
comment on function hipocampo.cache_get(text, uuid[], text, uuid) is 'A live cached answer, or null.';
comment on function hipocampo.cache_put(text, uuid[], jsonb, text, uuid) is
'Cache an answer (rag.cache_ttl_seconds); dropped when its knowledge bases change.';
comment on function hipocampo.take_rate_limit(double precision, uuid, uuid) is
'Token bucket per tenant and user (rag.rate_limit_per_minute).';
comment on function hipocampo.take_ip_rate_limit(inet) is 'Token bucket per client IP for the HTTP API.';
comment on function hipocampo.record_answer(
    uuid, text, text, text, real, integer, integer, bigint[], jsonb, real, uuid[], text, uuid, uuid
) is 'The audit row of one answer call (question as sha256, user pseudonymous).';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
