-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

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

alter table hipocampo_private.answer_cache enable row level security;

-- Invalidation finds the entries of one knowledge base.
create index answer_cache_kb_ids_idx on hipocampo_private.answer_cache using gin (kb_ids);

create index answer_cache_expires_at_idx on hipocampo_private.answer_cache (expires_at);

create table hipocampo_private.rate_limit_buckets (
    bucket text primary key,
    tokens double precision not null,
    capacity double precision not null,
    updated_at timestamptz not null default now()
);

alter table hipocampo_private.rate_limit_buckets enable row level security;

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
    constraint answer_audit_source_check check (
        answer_source in ('CACHE', 'SESSION', 'LLM', 'EXTRACTIVE', 'PASSAGES', 'REFUSAL')
    ),
    constraint answer_audit_timings_is_object check (jsonb_typeof(timings_ms) = 'object')
);

alter table hipocampo_private.answer_audit enable row level security;

-- RLS filters on tenant_id; the views group by tenant and period.
create index answer_audit_tenant_created_idx on hipocampo_private.answer_audit (tenant_id, created_at);

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

Purpose: the cache key of a question: its words (_plain_words: lower case, unaccented,
  punctuation, symbols and emoji removed, whitespace collapsed; letters of any script kept), so
  "Qual é o prazo?" and "qual e o  prazo" share one key and two questions in Japanese do not.
Returns: the normalised text ('' for null).
Errors: none (a pure function).
Example: select hipocampo.normalize_question('  Qual é o PRAZO? '); -- 'qual e o prazo'
*/
create or replace function hipocampo.normalize_question(question text)
returns text
language sql
stable
security invoker
set search_path = ''
set jit = off
as $$
    select hipocampo_private._plain_words(question)
$$;

/*
_cache_scope(kb_ids uuid[]) -> text

Purpose: the knowledge-base part of a cache key: distinct ids, sorted, joined by ','.
Returns: the cache key part of the knowledge bases.
Errors: none (a pure function).
*/
create or replace function hipocampo_private._cache_scope(kb_ids uuid[])
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

Purpose: the cached answer to a question over these knowledge bases, when one is live. The caller
  is resolved first (before, as a sql function with the check in its WHERE clause, an empty
  cache answered null to any caller).
Parameters: question as asked (normalised here); kb_ids - the knowledge bases searched (null:
  all); agent - agent binding name or null; tenant_id - service_role only.
Returns: the answer json, or null.
Errors: 42501 as _resolve_tenant.
Example: select hipocampo.cache_get('Qual o prazo?', array[kb]);
*/
-- definer because clients may not read the cache table directly (it is shared by the tenant's users).
create or replace function hipocampo.cache_get(
    question text, kb_ids uuid[], agent text default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
stable
security definer
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(cache_get.tenant_id);
begin
    return (
        select c.answer from hipocampo_private.answer_cache as c
        where c.tenant_id = t
          and c.kb_key = hipocampo_private._cache_scope(cache_get.kb_ids)
          and c.agent = coalesce(cache_get.agent, '')
          and c.question_key = hipocampo.normalize_question(cache_get.question)
          and c.expires_at > now()
    );
end;
$$;

/*
_cache_entry_problem(answer jsonb, max_bytes integer) -> text

Purpose: what is wrong with an answer offered to the answer cache, or null when nothing is: the
  shape the answer paths build (Orchestrator.ask, the ask edge function) and every reader of the
  cache parses (models.Answer): a non-empty answer text, never a refusal, a confidence >= 0 (a
  support can exceed 1 where the sentence cosine adds to it),
  answer_source EXTRACTIVE or LLM, conflicts as an array, and at most 50 sources, each with n,
  document, document_id, source_uri, chunk_id, excerpt and score of their types; the whole entry
  at most max_bytes bytes as json text.
Parameters: answer - the entry; max_bytes - rag.cache_max_entry_bytes.
Returns: a sentence naming the problem, or null.
Errors: none (a pure function).
Example: select hipocampo_private._cache_entry_problem('{"answer": "x", "sources": []}', 65536); -- null
*/
create or replace function hipocampo_private._cache_entry_problem(answer jsonb, max_bytes integer)
returns text
language sql
immutable
security invoker
set search_path = ''
as $$
    select case
        when answer is null or jsonb_typeof(answer) <> 'object' then 'answer must be a json object with sources'
        when octet_length(answer::text) > max_bytes then format(
            'answer is %s bytes as json; rag.cache_max_entry_bytes is %s', octet_length(answer::text), max_bytes
        )
        when jsonb_typeof(answer -> 'sources') is distinct from 'array' then 'answer must be a json object with sources'
        when jsonb_typeof(answer -> 'answer') is distinct from 'string' or btrim(answer ->> 'answer') = ''
            then 'answer.answer must be a non-empty string'
        when coalesce(answer -> 'refused', 'false'::jsonb) <> 'false'::jsonb then 'a refusal is never cached'
        when coalesce(jsonb_typeof(answer -> 'confidence'), 'number') <> 'number'
            then 'answer.confidence must be a number >= 0'
        when coalesce((answer ->> 'confidence')::double precision, 0) < 0
            then 'answer.confidence must be a number >= 0'
        when coalesce(answer ->> 'answer_source', 'EXTRACTIVE') not in ('EXTRACTIVE', 'LLM')
            then 'answer.answer_source must be EXTRACTIVE or LLM'
        when coalesce(jsonb_typeof(answer -> 'conflicts'), 'array') <> 'array' then 'answer.conflicts must be an array'
        when jsonb_array_length(answer -> 'sources') > 50 then 'answer cites more than 50 sources'
        when exists (
            select 1 from jsonb_array_elements(answer -> 'sources') as s
            where not coalesce(
                jsonb_typeof(s) = 'object'
                and (s ->> 'n') ~ '^\d{1,9}$' and jsonb_typeof(s -> 'n') = 'number'
                and (s ->> 'chunk_id') ~ '^\d{1,18}$' and jsonb_typeof(s -> 'chunk_id') = 'number'
                and jsonb_typeof(s -> 'document') = 'string'
                and (s ->> 'document_id') ~ ('^' || hipocampo_private._uuid_shape() || '$')
                and jsonb_typeof(s -> 'source_uri') = 'string'
                and jsonb_typeof(s -> 'excerpt') = 'string'
                and jsonb_typeof(s -> 'score') = 'number',
                false
            )
        ) then 'each source needs n, document, document_id, source_uri, chunk_id, excerpt and score'
    end
$$;

/*
cache_put(question text, kb_ids uuid[], answer jsonb, agent text default null, tenant_id uuid default null)
  -> boolean

Purpose: cache an answer the caller's answer path computed (Orchestrator.ask, the ask edge
  function), for rag.cache_ttl_seconds of the effective rag config of the call (rag_config(kb,
  agent): the knowledge base's override when kb_ids names exactly one, the agent binding's when
  agent is given, else the tenant's; 0 = never cache). service_role only: every member of the
  tenant reads the entry (cache_get), so no user's token may write one (a member planted answers
  that the tenant's admin was then served); the answer paths write it as service_role with the
  tenant rag_config resolved for the asking user. The entry must have the shape every reader parses
  (_cache_entry_problem) and cite only chunks of these knowledge bases of the tenant.
Parameters: question as asked (normalised here); kb_ids - 1 or more knowledge bases, no null;
  answer - {"answer", "confidence", "sources": [{"n", "document", "document_id", "source_uri",
  "chunk_id", "excerpt", "score", …}], "conflicts", "answer_source"}, at most
  rag.cache_max_entry_bytes (65,536) bytes as json; agent - binding name or null; tenant_id - the
  tenant (required: service_role names it).
Returns: true when cached (false when the TTL is 0).
Errors: 42501 for any role but service_role (no EXECUTE), and as _resolve_tenant (service_role
  without tenant_id); 22023 as _cache_entry_problem (e.g. "answer must be a json object with
  sources", "answer is N bytes as json; rag.cache_max_entry_bytes is M"); 22023 "cited chunk … is
  not in these knowledge bases"; 22023 "kb_ids must name at least one knowledge base (and no
  null)" / "question has no words to cache it by"; P0002 unknown agent binding; P0002 "unknown
  tenant: …".
Example: select hipocampo.cache_put('Qual o prazo?', array[kb], '{"answer": "…", "sources": []}',
  tenant_id => t);
*/
-- definer because the cache is written for the whole tenant and no client role may write it directly.
create or replace function hipocampo.cache_put(
    question text, kb_ids uuid[], answer jsonb, agent text default null, tenant_id uuid default null
)
returns boolean
language plpgsql
security definer
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(cache_put.tenant_id);
    cfg jsonb := hipocampo.rag_config(
        case when cardinality(cache_put.kb_ids) = 1 then cache_put.kb_ids[1] end, cache_put.agent, t
    );
    ttl integer := (cfg ->> 'cache_ttl_seconds')::integer;
    bad text := hipocampo_private._cache_entry_problem(answer, (cfg ->> 'cache_max_entry_bytes')::integer);
begin
    if bad is not null then
        raise exception '%', bad using errcode = '22023';
    end if;
    if coalesce(cardinality(cache_put.kb_ids), 0) = 0 or array_position(cache_put.kb_ids, null) is not null then
        raise exception 'kb_ids must name at least one knowledge base (and no null)' using errcode = '22023';
    end if;
    if coalesce(hipocampo.normalize_question(cache_put.question), '') = '' then
        raise exception 'question has no words to cache it by' using errcode = '22023';
    end if;
    if not exists (select 1 from hipocampo_private.tenants as x where x.id = t) then
        raise exception 'unknown tenant: %', t using errcode = 'P0002';
    end if;
    select s ->> 'chunk_id' into bad
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
Returns: null (a statement trigger).
Errors: none of its own.
*/
-- definer because the writer of a document (an admin, the ingestion) may not write the cache table.
create or replace function hipocampo_private._invalidate_answer_cache()
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
create or replace function hipocampo.set_document_status(
    document_id uuid, status text default null, trust_score real default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
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
Errors: none of its own.
*/
create or replace function hipocampo_private._take_token(bucket text, per_minute double precision, cost double precision)
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

Purpose: the answer API's token buckets: one per tenant and user (rag.rate_limit_per_minute of
  the tenant), keyed by the user's pseudonym (_user_ref), and one per tenant
  (rag.tenant_rate_limit_per_minute, locked for tenants) that all its users and its service
  calls share. Both must allow; a call the tenant bucket refuses gives the user's tokens back.
  The user bucket's key comes from the JWT (a user cannot spend another's); service_role names
  the user, or without one spends the tenant's service bucket.
Parameters: cost - tokens this call spends, (0, 1,000,000]; user_id / tenant_id only for service_role.
Returns: {"allowed", "remaining", "limit", "retry_after_ms", "scope": "user" | "tenant"} (the
  scope of the refusal, or of the smaller remainder when allowed).
Errors: 22023 "cost must lie in (0, 1000000] (got …)"; 42501 as _resolve_tenant; 55000 "rag config is
  incomplete: tenant_rate_limit_per_minute …".
Example: select hipocampo.take_rate_limit();
*/
-- definer because the buckets table is not writable by client roles.
create or replace function hipocampo.take_rate_limit(
    cost double precision default 1, user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
security definer
set search_path = ''
set jit = off
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(take_rate_limit.tenant_id);
    u uuid := coalesce((select auth.uid()), take_rate_limit.user_id);
    cfg jsonb;
    user_bucket text;
    per_user jsonb;
    per_tenant jsonb;
begin
    -- At most a million tokens a call: larger costs overflowed the bucket's arithmetic (22003).
    if cost is null or cost <= 0 or cost > 1e6 or cost = 'nan'::double precision then
        raise exception 'cost must lie in (0, 1000000] (got %)', cost using errcode = '22023';
    end if;
    cfg := hipocampo.rag_config(null, null, t);
    if cfg ->> 'tenant_rate_limit_per_minute' is null then
        raise exception 'rag config is incomplete: tenant_rate_limit_per_minute (seed it from config.toml: hipocampo db migrate)'
            using errcode = '55000';
    end if;
    user_bucket := 'user:' || t || ':' || coalesce(hipocampo_private._user_ref(t, u), 'service');
    per_user := hipocampo_private._take_token(user_bucket, (cfg ->> 'rate_limit_per_minute')::double precision, cost)
        || '{"scope": "user"}'::jsonb;
    if not (per_user ->> 'allowed')::boolean then
        return per_user;
    end if;
    per_tenant := hipocampo_private._take_token('tenant:' || t,
        (cfg ->> 'tenant_rate_limit_per_minute')::double precision, cost) || '{"scope": "tenant"}'::jsonb;
    if not (per_tenant ->> 'allowed')::boolean then
        update hipocampo_private.rate_limit_buckets as r set tokens = least(r.capacity, r.tokens + cost)
        where r.bucket = user_bucket;
        return per_tenant;
    end if;
    return case when (per_tenant ->> 'remaining')::double precision < (per_user ->> 'remaining')::double precision
        then per_tenant else per_user end;
end;
$$;

/*
_client_network(ip inet) -> text

Purpose: what one client is, for the per-address bucket (issue 44 §5): an IPv4 address; an IPv6
  address's /64 (a host picks any address inside its /64, so per-address buckets let it rotate
  without limit); an IPv4-mapped IPv6 address (::ffff:a.b.c.d) as its IPv4 address, so both
  forms share one bucket.
Parameters: ip - the client's address.
Returns: the address or network as text ('203.0.113.7', '2001:db8:1:2::/64').
Errors: none.
Example: select hipocampo_private._client_network('2001:db8:1:2:aaaa::1'); -- '2001:db8:1:2::/64'
*/
create or replace function hipocampo_private._client_network(ip inet)
returns text
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    select case
        when family(ip) = 4 then host(ip)
        when ip <<= '::ffff:0:0/96'::inet then host(substr(host(ip), 8)::inet)
        else pg_catalog.text(network(set_masklen(ip, 64)))
    end
$$;

/*
take_embedding_budget(caller text, characters integer) -> jsonb

Purpose: the budget of `hipocampo serve`'s POST /v1/embeddings by input size (issue 57 §7: one
  request at the allowed maximum, 2,048 texts of 32,768 characters, took about 235 s of CPU for
  one rate-limit token): a token bucket of embedding.api_chars_per_minute characters per caller
  and minute (the global config's, the operator's), from which a request takes its characters,
  keyed by the pseudonym of the caller (_pseudonym: the role and subject of the token; no raw
  identity is stored). service_role only (serve calls it for the caller it verified).
Parameters: caller - the verified caller, e.g. 'authenticated:<sub>' (1..200 characters);
  characters - the request's total input characters, 1..embedding.api_chars_per_minute.
Returns: as take_rate_limit (without scope): {"allowed", "remaining", "limit", "retry_after_ms"}.
Errors: 22023 "caller is required (1..200 characters)"; 22023 "an embeddings request of n
  characters exceeds the budget of m characters a minute (embedding.api_chars_per_minute)".
Example: select hipocampo.take_embedding_budget('authenticated:…', 1200);
*/
create or replace function hipocampo.take_embedding_budget(caller text, characters integer)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
declare
    per_minute integer := (
        select (s.config -> 'embedding' ->> 'api_chars_per_minute')::integer
        from hipocampo_private.settings as s where s.tenant_id is null
    );
begin
    if coalesce(char_length(caller), 0) not between 1 and 200 then
        raise exception 'caller is required (1..200 characters)' using errcode = '22023';
    end if;
    if characters is null or characters < 1 or characters > per_minute then
        raise exception 'an embeddings request of % characters exceeds the budget of % characters a minute '
            '(embedding.api_chars_per_minute)', characters, per_minute using errcode = '22023';
    end if;
    return hipocampo_private._take_token(
        'embed:' || hipocampo_private._pseudonym(caller), per_minute::double precision, characters::double precision
    );
end;
$$;

/*
take_ip_rate_limit(ip inet) -> jsonb

Purpose: the per client address token bucket of the HTTP API (rag.ip_rate_limit_per_minute of
  the global config), taken before authentication, keyed by the pseudonym of the client's network
  (_client_network: an IPv4 address, an IPv6 /64; _pseudonym: no raw address is stored).
  service_role only.
Returns: as take_rate_limit (without scope).
Errors: 22023 "ip is required".
Example: select hipocampo.take_ip_rate_limit('203.0.113.7');
*/
create or replace function hipocampo.take_ip_rate_limit(ip inet)
returns jsonb
language plpgsql
security invoker
set search_path = ''
set jit = off
as $$
begin
    if ip is null then
        raise exception 'ip is required' using errcode = '22023';
    end if;
    return hipocampo_private._take_token(
        'ip:' || hipocampo_private._pseudonym(hipocampo_private._client_network(ip)),
        (select (s.config -> 'rag' ->> 'ip_rate_limit_per_minute')::double precision
         from hipocampo_private.settings as s where s.tenant_id is null),
        1
    );
end;
$$;
