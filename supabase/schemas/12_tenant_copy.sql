-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- A tenant copied to another database (issue 46 §3): the tables that hold a tenant, in the order
-- they can be written, and a digest of the tenant's rows that two databases can compare. `hipocampo
-- tenant export` / `import` (py_client/hipocampo/db/tenant_copy.py) share this list and this check.

/*
_tenant_tables() -> table (ord integer, name text, tenant_column text, reassigned text[], derived boolean)

Purpose: every table of hipocampo_private that holds a tenant's rows, in an order in which they can
  be written (a table after the ones it references), with the column naming the tenant
  (tenants: id), the columns a copy leaves to the target (reassigned: identities nothing
  references, numbered again by the target) and whether the table is derived (kb_postings,
  kb_term_stats, kb_text_stats: rebuilt by the chunks' triggers when the chunks are written, so
  copied by rebuilding and checked by the digest). Left out: answer_cache (a copy starts with an
  empty cache), rate_limit_buckets and embedding_failures (transient), tenant_moves (the source's
  record of its moves), and the global tables (embedding_models, model_calibrations,
  project_secrets, the global settings row).
Returns: one row per table, ord ascending.
Errors: none.
Example: select name from hipocampo_private._tenant_tables() order by ord;
*/
create or replace function hipocampo_private._tenant_tables()
returns table (ord integer, name text, tenant_column text, reassigned text[], derived boolean)
language sql
immutable
security invoker
set search_path = ''
as $$
    select * from (values
        (1, 'tenants', 'id', '{}'::text[], false),
        (2, 'settings', 'tenant_id', '{id}', false),
        (3, 'memberships', 'tenant_id', '{}', false),
        (4, 'memory_consents', 'tenant_id', '{}', false),
        (5, 'knowledge_bases', 'tenant_id', '{}', false),
        (6, 'agent_bindings', 'tenant_id', '{}', false),
        (7, 'documents', 'tenant_id', '{}', false),
        (8, 'chunks', 'tenant_id', '{}', false),
        (9, 'kb_postings', 'tenant_id', '{}', true),
        (10, 'kb_term_stats', 'tenant_id', '{}', true),
        (11, 'kb_text_stats', 'tenant_id', '{}', true),
        (12, 'chunk_access', 'tenant_id', '{}', false),
        (13, 'ingestion_jobs', 'tenant_id', '{}', false),
        (14, 'memories', 'tenant_id', '{}', false),
        (15, 'memory_staging', 'tenant_id', '{}', false),
        (16, 'memory_events', 'tenant_id', '{id}', false),
        (17, 'messages', 'tenant_id', '{}', false),
        (18, 'conversation_summaries', 'tenant_id', '{}', false),
        (19, 'sessions', 'tenant_id', '{}', false),
        (20, 'answer_audit', 'tenant_id', '{}', false),
        (21, 'answer_feedback', 'tenant_id', '{}', false),
        (22, 'judged_questions', 'tenant_id', '{id}', false),
        (23, 'data_access_log', 'tenant_id', '{id}', false),
        (24, 'read_queue', 'tenant_id', '{id}', false)
    ) as t (ord, name, tenant_column, reassigned, derived);
$$;

/*
tenant_digest(tenant_id uuid) -> jsonb

Purpose: what a tenant holds, table by table, in a form two databases can compare after a copy:
  the row count and the md5 of the tenant's rows (each row as jsonb without its reassigned
  columns, the rows sorted), for every table of _tenant_tables(). Timestamps are rendered in UTC,
  so two servers in other time zones agree.
Parameters: tenant_id - the tenant (it need not exist: every count is then 0).
Run as: service_role (it reads every table).
Returns: {"<table>": {"rows": n, "md5": "<32 hex>"}, …}.
Errors: 42501 "only service_role may digest a tenant".
Example: select hipocampo.tenant_digest('…') -> 'chunks';
*/
create or replace function hipocampo.tenant_digest(tenant_id uuid)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
set timezone to 'UTC'
set jit = off
as $$
declare
    t record;
    n bigint;
    digest text;
    out jsonb := '{}';
begin
    if (hipocampo_private._caller()).kind <> 'service' then
        raise exception 'only service_role may digest a tenant' using errcode = '42501';
    end if;
    for t in select * from hipocampo_private._tenant_tables() order by ord loop
        execute format(
            'select count(*), md5(coalesce(string_agg(r, '','' order by r), '''')) from ('
            'select (to_jsonb(x) - %L::text[])::text as r from hipocampo_private.%I as x where x.%I = $1) as rows',
            t.reassigned, t.name, t.tenant_column
        ) into n, digest using tenant_digest.tenant_id;
        out := out || jsonb_build_object(t.name, jsonb_build_object('rows', n, 'md5', digest));
    end loop;
    return out;
end;
$$;

comment on function hipocampo.tenant_digest(uuid) is
'Row counts and md5 of a tenant''s rows per table: the check of a tenant copied to another database.';

-- The online move (`hipocampo tenant move`): on the source, the tenants being moved. While a
-- row's frozen_at is set, the move's triggers (_refuse_moving_tenant, created on the tenant tables
-- for the move and dropped after it) refuse the tenant's writes; moved_at is the cut-over.
create table hipocampo_private.tenant_moves (
    tenant_id uuid primary key,
    target text not null,
    started_at timestamptz not null default now(),
    frozen_at timestamptz,
    moved_at timestamptz
);

-- No policy: the operator's table (the move runs as the database owner).
alter table hipocampo_private.tenant_moves enable row level security;

comment on table hipocampo_private.tenant_moves is
'Tenants moved (or being moved) to another database: target (host and database, no secret), freeze and cut-over times.';

/*
_refuse_moving_tenant() -> trigger

Purpose: the freeze of a tenant move: a row trigger (before insert, update or delete) that the
  move creates on each tenant table with the tenant column as its argument, refusing any write of
  a row of a tenant whose tenant_moves row is frozen. Other tenants' writes pass. Each write holds
  the tenant's advisory lock shared until it commits; the freeze takes it exclusively, so no write
  that passed the check commits after the freeze (the move's position after the freeze covers it).
Errors: 55000 "tenant … is moving to another database: retry in a moment".
Returns: the row, unchanged.
Example: create trigger hipocampo_moving before insert or update or delete on hipocampo_private.chunks
  for each row execute function hipocampo_private._refuse_moving_tenant('tenant_id');
*/
-- definer because a member's write must read the move table, which no client role reads.
create or replace function hipocampo_private._refuse_moving_tenant()
returns trigger
language plpgsql
security definer
set search_path = ''
as $$
declare
    t uuid;
begin
    execute format('select ($1).%I', tg_argv[0]) into t using coalesce(new, old);
    -- Held until this write commits: the freeze takes it exclusively, so it waits for this write.
    perform pg_catalog.pg_advisory_xact_lock_shared(pg_catalog.hashtextextended(t::text, 0));
    if exists (
        select 1 from hipocampo_private.tenant_moves as m where m.tenant_id = t and m.frozen_at is not null
    ) then
        raise exception 'tenant % is moving to another database: retry in a moment', t using errcode = '55000';
    end if;
    return coalesce(new, old);
end;
$$;

-- An imported tenant trusts nothing of its file (issue 57 §2): `hipocampo tenant import` writes
-- the file's rows and, in the same transaction, has the database check them; any fault rolls the
-- whole import back.

/*
_tenant_row_counts(tenant_id uuid) -> jsonb

Purpose: how many rows of each table of _tenant_tables() (derived ones included) carry the tenant
  in their tenant column: the import takes it before and after writing the file's rows.
Parameters: tenant_id - the tenant.
Returns: {"<table>": n, …}.
Errors: none.
Example: select hipocampo_private._tenant_row_counts('…') -> 'chunks';
*/
create or replace function hipocampo_private._tenant_row_counts(tenant_id uuid)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
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
$$;

/*
_imported_reference_fault(tenant_id uuid) -> text

Purpose: the first reference of the tenant's rows that leaves the tenant, or null: a chunk whose
  knowledge base is not its document's; a chunk_access row of a chunk not the tenant's; an agent
  binding's knowledge base not the tenant's; a memory superseding, a memory event, an answer
  audit row or a queued read naming a memory, chunk or knowledge base of another tenant; feedback
  on another tenant's answer or naming its knowledge base or document; a judged question of
  another tenant's knowledge base; a conversation summary through another tenant's message. (documents, chunks and ingestion jobs
  reference their knowledge base and document with the tenant in the foreign key already.)
Parameters: tenant_id - the imported tenant.
Returns: a sentence naming the table and the reference, or null.
Errors: none.
Example: select hipocampo_private._imported_reference_fault('…');
*/
create or replace function hipocampo_private._imported_reference_fault(tenant_id uuid)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
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
        select 'answer_feedback: ' || f.trace_id || ' names another tenant''s answer, knowledge base or document'
        from hipocampo_private.answer_feedback as f
        where f.tenant_id = _imported_reference_fault.tenant_id and (
            exists (
                select 1 from hipocampo_private.answer_audit as a
                where a.trace_id = f.trace_id and a.tenant_id <> f.tenant_id
            )
            or exists (select 1 from unnest(f.kb_ids) as k (id) where k.id not in (select kbs.id from kbs))
            or exists (
                select 1 from hipocampo_private.documents as d
                where d.id = any(f.cited_document_ids) and d.tenant_id <> f.tenant_id
            )
        )
        union all
        select 'judged_questions: ' || j.question || ' names another tenant''s knowledge base'
        from hipocampo_private.judged_questions as j
        where j.tenant_id = _imported_reference_fault.tenant_id and j.kb_id not in (select kbs.id from kbs)
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
$$;

/*
_check_imported_config(tenant_id uuid) -> void

Purpose: the tenant's imported configuration passes the checks a tenant admin's write passes
  (set_tenant_config, the knowledge-base and agent-binding triggers): every section of
  settings.config and knowledge_bases.overrides and every agent binding's rag_overrides passes
  _check_config_patch (known keys, types, ranges, no secret), every tuning entry _tuning_after;
  and no imported value sets an operator's key (a *_secret name or a section's operator_only key):
  those are set on the target by its operator, never by a file.
Parameters: tenant_id - the imported tenant.
Returns: nothing.
Errors: 42501 "imported <where>: <section>.<key> is the operator's to set: set it on the target
  after the import"; 22023 / 22003 as _check_config_patch; P0002 / 22023 as _tuning_after.
Example: perform hipocampo_private._check_imported_config('…');
*/
create or replace function hipocampo_private._check_imported_config(tenant_id uuid)
returns void
language plpgsql
stable
security invoker
set search_path = ''
as $$
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
$$;

/*
_refuse_operator_keys(place text, section text, patch jsonb) -> void

Purpose: refuse a patch that sets one of the operator's keys: a *_secret (the name of a server
  secret) or a key of the global section's operator_only list (provider, chat model, …).
Parameters: place - what is being written, for the message; section, patch - as _check_config_patch.
Returns: nothing.
Errors: 42501 "<place>: <section>.<key> is the operator's to set: set it on the target after the import".
Example: perform hipocampo_private._refuse_operator_keys('imported settings', 'rag', '{"top_k": 4}');
*/
create or replace function hipocampo_private._refuse_operator_keys(place text, section text, patch jsonb)
returns void
language plpgsql
stable
security invoker
set search_path = ''
as $$
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
$$;

/*
_check_imported_tenant(tenant_id uuid, written jsonb, before jsonb) -> void

Purpose: what `hipocampo tenant import` asks of the rows it wrote, before it commits: every row
  written carries the tenant (per table, the rows of the tenant now minus `before` equal the rows
  `written`), no reference leaves the tenant (_imported_reference_fault), and the configuration
  passes a tenant admin's checks (_check_imported_config).
Parameters: tenant_id - the manifest's tenant; written - {"<table>": rows the import wrote};
  before - _tenant_row_counts(tenant_id) taken before writing.
Returns: nothing.
Errors: 42501 "imported <table>: n rows name another tenant" / "imported rows leave the tenant:
  <fault>"; 42501 / 22023 / 22003 / P0002 as _check_imported_config.
Example: perform hipocampo_private._check_imported_tenant(t, '{"chunks": 2}', '{}');
*/
create or replace function hipocampo_private._check_imported_tenant(tenant_id uuid, written jsonb, before jsonb)
returns void
language plpgsql
stable
security invoker
set search_path = ''
as $$
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
$$;

/*
_imported_forbidden(tenant_id uuid) -> text

Purpose: the forbidden-sources check on an import (issue 57 §6: every write path): each
  imported document that is not quarantined, its text (its chunks of one model, in order)
  through _forbidden_kind under its knowledge base's forbidden_sources config; a kind the config
  does not allow for the document's source type refuses the import (a file cannot be partly
  imported, so nothing is quarantined here).
Parameters: tenant_id - the imported tenant.
Returns: null, or "document <source_uri> is of a forbidden kind (<kind>): <reason>" for the
  first such document.
Errors: 55000 a knowledge base's forbidden_sources config is incomplete (_require_config).
Example: select hipocampo_private._imported_forbidden('…');
*/
create or replace function hipocampo_private._imported_forbidden(tenant_id uuid)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
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
$$;
