-- Calibration belongs to the embedding model (issue 22 §2): the config keys that depend on a
-- model's cosine scale (retrieval.min_similarity, dense_weight, dedupe_threshold;
-- memory.context_threshold, answer_threshold, duplicate_cosine; conversations.dense_weight) move
-- from the global config row to hipocampo_private.model_calibrations, one row per model, seeded
-- from config.toml's [calibration."<model>"] tables. effective_config merges the active model's
-- between the global row and the tenant's; hybrid_search takes the calibration of the model it
-- searches; activating or searching with a model that has none is refused with 55000. A database
-- migrated before keeps its behaviour: the active model is given the values its global row held.
-- Restated from supabase/schemas/02_config.sql, 03_knowledge_bases.sql, 05_hybrid_search.sql,
-- 06_memory.sql and 13_grants.sql; re-runnable, as every migration after the baseline.
set local check_function_bodies = off;

-- Calibration belongs to the embedding model (issue 22 §2): the thresholds and weights that
-- depend on a model's score distribution are kept per model, seeded from config.toml's
-- [calibration."<model>".<section>] tables, and merged between the global row and the tenant's
-- (global <- the model's calibration <- tenant <- knowledge base).
create table if not exists hipocampo_private.model_calibrations (
    embedding_model text primary key,
    config jsonb not null,
    source text not null,
    updated_at timestamptz not null default now(),
    constraint model_calibrations_model_format check (embedding_model ~ '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$'),
    constraint model_calibrations_config_is_object check (jsonb_typeof(config) = 'object'),
    constraint model_calibrations_source_check check (source in ('config.toml', 'set_model_calibration'))
);

alter table hipocampo_private.model_calibrations enable row level security;

drop policy if exists "authenticated users can read the model calibrations"
on hipocampo_private.model_calibrations;

create policy "authenticated users can read the model calibrations"
on hipocampo_private.model_calibrations
for select
to authenticated
using (true);

comment on table hipocampo_private.model_calibrations is
'Per embedding model: the config keys that depend on its score distribution (seeded from config.toml [calibration."<model>"]).';

/*
_calibrated_keys() -> jsonb

Purpose: which config keys belong to an embedding model's calibration rather than to the global
  row: the cosine thresholds and the dense weights of fusion (issue 22 §2). Every calibration
  holds all of them; the global row holds none of them.
Returns: {section: [key, …]}.
Errors: none.
Example: select hipocampo_private._calibrated_keys() -> 'memory';
*/
create or replace function hipocampo_private._calibrated_keys()
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
    select '{
        "retrieval": ["min_similarity", "dense_weight", "dedupe_threshold"],
        "memory": ["context_threshold", "answer_threshold", "duplicate_cosine"],
        "conversations": ["dense_weight"]
    }'::jsonb
$$;

/*
_check_calibration(model text, calibration jsonb) -> jsonb

Purpose: validate one model's calibration: an object of the sections of _calibrated_keys(), each
  holding every key listed there and no other, each a number: weights (keys ending in _weight)
  in [0, 100], thresholds (cosines) in [-1, 1].
Parameters: model - the embedding model's name (for the messages); calibration - jsonb.
Returns: the calibration unchanged.
Errors: 22023 "calibration of <model> must be a json object of sections" / "unknown calibration
  key <section>.<key> (calibrated keys: …)" / "calibration of <model> lacks <section>.<key>" /
  "<section>.<key> must be a number"; 22003 "<section>.<key> must lie in [lo, hi] (got v)".
Example: select hipocampo_private._check_calibration('m', '{"retrieval": {…}, …}');
*/
create or replace function hipocampo_private._check_calibration(model text, calibration jsonb)
returns jsonb
language plpgsql
immutable
security invoker
set search_path = ''
as $$
declare
    keys jsonb := hipocampo_private._calibrated_keys();
    item record;
    lo numeric;
    hi numeric;
begin
    if calibration is null or jsonb_typeof(calibration) <> 'object' or exists (
        select 1 from jsonb_each(calibration) as s where jsonb_typeof(s.value) <> 'object'
    ) then
        raise exception 'calibration of % must be a json object of sections', model using errcode = '22023';
    end if;
    for item in
        select s.key as section, k.key, k.value
        from jsonb_each(calibration) as s cross join lateral jsonb_each(s.value) as k
    loop
        if not coalesce(keys -> item.section ? item.key, false) then
            raise exception 'unknown calibration key %.% (calibrated keys: %)', item.section, item.key,
                (select string_agg(s.key || '.' || k, ', ')
                 from jsonb_each(keys) as s cross join lateral jsonb_array_elements_text(s.value) as k)
                using errcode = '22023';
        end if;
        if jsonb_typeof(item.value) <> 'number' then
            raise exception '%.% must be a number', item.section, item.key using errcode = '22023';
        end if;
        if item.key like '%\_weight' then
            lo := 0;
            hi := 100;
        else
            lo := -1;
            hi := 1;
        end if;
        if (item.value #>> '{}')::numeric not between lo and hi then
            raise exception '%.% must lie in [%, %] (got %)', item.section, item.key, lo, hi, item.value
                using errcode = '22003';
        end if;
    end loop;
    for item in
        select s.key as section, k as key
        from jsonb_each(keys) as s cross join lateral jsonb_array_elements_text(s.value) as k
        where calibration #> array[s.key, k] is null
    loop
        raise exception 'calibration of % lacks %.%', model, item.section, item.key using errcode = '22023';
    end loop;
    return calibration;
end;
$$;

/*
_calibration(model text default null, required boolean default false) -> jsonb

Purpose: an embedding model's calibration (model_calibrations.config): the one lookup of it, for
  effective_config, _config_section, _check_config_patch, run_memory_maintenance,
  activate_embedding_model and hybrid_search.
Parameters: model - the model's name, null = the active model; required - raise when it has none.
Returns: {section: {key: value}}, or null when the model has none (and required is false).
Errors: 55000 "embedding model <m> has no calibration: run hipocampo calibrate --model <m> --write"
  when required.
Example: select hipocampo_private._calibration() -> 'memory' ->> 'context_threshold';
*/
create or replace function hipocampo_private._calibration(model text default null, required boolean default false)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    m text := coalesce(
        _calibration.model, (select e.name from hipocampo_private.embedding_models as e where e.active)
    );
    cal jsonb;
begin
    select c.config into cal from hipocampo_private.model_calibrations as c where c.embedding_model = m;
    if cal is null and required then
        raise exception 'embedding model % has no calibration: run hipocampo calibrate --model % --write', m, m
            using errcode = '55000';
    end if;
    return cal;
end;
$$;

/*
set_model_calibration(model text, calibration jsonb) -> jsonb

Purpose: store an embedding model's calibration (what `hipocampo calibrate --model <m> --write`
  applies at once, beside writing it to config.toml, which seeds it again on every `hipocampo db
  migrate`). The model need not be registered yet: a model is calibrated before it is activated.
Parameters: model - the model's name (the registry's name format); calibration - {section: {key:
  number}} with every key of _calibrated_keys(): retrieval.min_similarity, dense_weight,
  dedupe_threshold; memory.context_threshold, answer_threshold, duplicate_cosine;
  conversations.dense_weight. Thresholds are cosines in [-1, 1], weights in [0, 100].
Returns: the stored calibration.
Errors: 42501 for any role but service_role (no EXECUTE); 22023 / 22003 as _check_calibration;
  23514 on a malformed model name.
Example: select hipocampo.set_model_calibration('multilingual-e5-small',
  '{"retrieval": {"min_similarity": 0.82, "dense_weight": 1.0, "dedupe_threshold": 0.97}, …}');
*/
create or replace function hipocampo.set_model_calibration(model text, calibration jsonb)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._check_calibration(set_model_calibration.model, set_model_calibration.calibration);
    insert into hipocampo_private.model_calibrations (embedding_model, config, source)
    values (set_model_calibration.model, set_model_calibration.calibration, 'set_model_calibration')
    on conflict (embedding_model) do update
    set config = excluded.config, source = excluded.source, updated_at = now();
    return set_model_calibration.calibration;
end;
$$;

comment on function hipocampo.set_model_calibration(text, jsonb) is
'Store an embedding model''s calibration (its cosine thresholds and dense weights); service_role.';

/*
seed_default_config(defaults jsonb) -> void

Purpose: replace the global config row with the versioned defaults from config.toml, and store
  the embedding models' calibrations it holds (its "calibration" object: {model: {section: {key:
  number}}}, see _check_calibration) in model_calibrations. A model config.toml does not name
  keeps the calibration it has (set_model_calibration).
Parameters: defaults - a jsonb object (sections retrieval, chunking, embedding, …, calibration).
Returns: nothing.
Errors: 22023 "defaults must be a json object" when it is not an object; 22023 "<section>.<key>
  belongs to an embedding model's calibration: set it in [calibration.\"<model>\".<section>]"
  when a section of the global row holds a calibrated key; 22023 / 22003 as _check_calibration.
Example: select hipocampo_private.seed_default_config('{"retrieval": {"match_count": 5}}');
*/
create or replace function hipocampo_private.seed_default_config(defaults jsonb)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
declare
    calibrations jsonb;
    misplaced text;
    item record;
begin
    if defaults is null or jsonb_typeof(defaults) <> 'object' then
        raise exception 'defaults must be a json object' using errcode = '22023';
    end if;
    calibrations := coalesce(defaults -> 'calibration', '{}'::jsonb);
    if jsonb_typeof(calibrations) <> 'object' then
        raise exception 'calibration must be a json object of models' using errcode = '22023';
    end if;
    select s.key || '.' || k into misplaced
    from jsonb_each(hipocampo_private._calibrated_keys()) as s
    cross join lateral jsonb_array_elements_text(s.value) as k
    where defaults #> array[s.key, k] is not null
    limit 1;
    if misplaced is not null then
        raise exception '% belongs to an embedding model''s calibration: set it in [calibration."<model>".%]',
            misplaced, split_part(misplaced, '.', 1) using errcode = '22023';
    end if;
    for item in select c.key, c.value from jsonb_each(calibrations) as c loop
        perform hipocampo_private._check_calibration(item.key, item.value);
        insert into hipocampo_private.model_calibrations (embedding_model, config, source)
        values (item.key, item.value, 'config.toml')
        on conflict (embedding_model) do update
        set config = excluded.config, source = excluded.source, updated_at = now();
    end loop;
    insert into hipocampo_private.settings (tenant_id, config)
    values (null, defaults - 'calibration')
    on conflict (coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid))
    do update set config = excluded.config, updated_at = now();
end;
$$;

/*
_check_config_patch(section text, patch jsonb) -> void

Purpose: validate a patch of one config section against the global row (with the active
  embedding model's calibrated keys): known keys only, same json type, within `<key>_range` (a `<key>_range` also bounds each element of an array of
  numbers, and `<key>_max_items` caps an array's length), never `tenant_locked` keys; secrets
  only by name (keys ending in `_secret` hold a name such as OPENAI_API_KEY; no key may be called
  api_key/password/secret and no value may look like a key or a JWT).
Errors: 22023 "patch must be a json object" / "unknown section …" / "unknown key …" / "… is fixed
  and cannot be changed per tenant" / "… must be a …" / "secrets are never stored: …" / "… must
  have at most N items"; 22003 "… must lie in [lo, hi]" (also for an array element that is not a
  number or lies outside the range).
Returns: nothing; it raises on the first problem.
Example: select hipocampo_private._check_config_patch('conversations', '{"context_weights_after": [0.4]}');
*/
create or replace function hipocampo_private._check_config_patch(section text, patch jsonb)
returns void
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    global_section jsonb;
    item record;
    bounds jsonb;
begin
    if patch is null or jsonb_typeof(patch) <> 'object' then
        raise exception 'patch must be a json object' using errcode = '22023';
    end if;
    -- The keys a tenant may override: the global row's, and the active model's calibrated ones.
    select s.config -> _check_config_patch.section
        || coalesce(hipocampo_private._calibration() -> _check_config_patch.section, '{}'::jsonb)
        into global_section
    from hipocampo_private.settings as s where s.tenant_id is null;
    if global_section is null or jsonb_typeof(global_section) <> 'object' then
        raise exception 'unknown section: %', section using errcode = '22023';
    end if;
    for item in select e.key, e.value from jsonb_each(patch) as e loop
        if item.key in ('api_key', 'apikey', 'password', 'secret', 'token')
            or (jsonb_typeof(item.value) = 'string'
                and (item.value #>> '{}') ~ '^(sk-[A-Za-z0-9_-]{8,}|eyJ[A-Za-z0-9_-]{10,}\.)') then
            raise exception 'secrets are never stored: give the name of the secret in a *_secret key (%.%)',
                section, item.key using errcode = '22023';
        end if;
        if item.key like '%\_secret' and jsonb_typeof(item.value) = 'string'
            and (item.value #>> '{}') !~ '^[A-Za-z_][A-Za-z0-9_]{0,127}$' then
            raise exception 'secrets are never stored: %.% must be the name of a secret (letters, digits, _)',
                section, item.key using errcode = '22023';
        end if;
        if not global_section ? item.key or item.key like '%\_range' or item.key like '%\_max\_items'
            or item.key = 'tenant_locked' then
            raise exception 'unknown key %.%', section, item.key using errcode = '22023';
        end if;
        if coalesce(global_section -> 'tenant_locked', '[]'::jsonb) ? item.key then
            raise exception '%.% is fixed and cannot be changed per tenant', section, item.key
                using errcode = '22023';
        end if;
        continue when jsonb_typeof(item.value) = 'null';
        if jsonb_typeof(item.value) <> jsonb_typeof(global_section -> item.key) then
            raise exception '%.% must be a %', section, item.key, jsonb_typeof(global_section -> item.key)
                using errcode = '22023';
        end if;
        if jsonb_typeof(item.value) = 'array' and (global_section ->> (item.key || '_max_items'))::integer
            < jsonb_array_length(item.value) then
            raise exception '%.% must have at most % items', section, item.key,
                global_section ->> (item.key || '_max_items') using errcode = '22023';
        end if;
        bounds := global_section -> (item.key || '_range');
        -- A range bounds a number, or each element of an array of numbers.
        if bounds is not null and exists (
            select 1
            from jsonb_array_elements(
                case when jsonb_typeof(item.value) = 'array' then item.value else jsonb_build_array(item.value) end
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
$$;

/*
effective_config(tenant_id uuid default null, kb_id uuid default null) -> jsonb

Purpose: the configuration in force: the global row, overridden per section by the active
  embedding model's calibration (model_calibrations: its cosine thresholds and dense weights),
  then by the tenant's row, then by the knowledge base's overrides.
Parameters: tenant_id - null = the caller's tenant; kb_id - optional knowledge base.
Returns: a jsonb object with sections retrieval, chunking, embedding, memory, ….
Errors: 42501 as _resolve_tenant.
Example: select hipocampo.effective_config() -> 'retrieval' ->> 'min_similarity';
*/
create or replace function hipocampo.effective_config(tenant_id uuid default null, kb_id uuid default null)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(effective_config.tenant_id);
    cfg jsonb;
    layer jsonb;
    section text;
begin
    select s.config into cfg from hipocampo_private.settings as s where s.tenant_id is null;
    cfg := coalesce(cfg, '{}'::jsonb);
    for layer in
        select x.config from (
            select 1 as ord, hipocampo_private._calibration() as config
            union all
            select 2, s.config from hipocampo_private.settings as s where s.tenant_id = t
            union all
            select 3, k.overrides from hipocampo_private.knowledge_bases as k
            where k.id = effective_config.kb_id and k.tenant_id = t
        ) as x
        order by x.ord
    loop
        for section in select jsonb_object_keys(layer) loop
            if jsonb_typeof(layer -> section) = 'object' then
                cfg := jsonb_set(
                    cfg, array[section],
                    coalesce(cfg -> section, '{}'::jsonb) || (layer -> section)
                );
            else
                cfg := jsonb_set(cfg, array[section], layer -> section);
            end if;
        end loop;
    end loop;
    return cfg;
end;
$$;

drop function if exists hipocampo_private._config_section(uuid, uuid, text);

/*
_config_section(tenant_id uuid, kb_id uuid, section text, model text) -> jsonb

Purpose: one section of effective_config for a tenant already resolved by the caller and a given
  embedding model: the global row's keys, overridden by the model's calibration, by the tenant
  row's, by the knowledge base's overrides (when kb_id is given and belongs to the tenant) -
  effective_config's precedence, without resolving the caller again nor merging the other
  sections, and with the calibration of the model searched rather than the active one (a
  knowledge base searched by name with another model takes that model's thresholds). Granted to
  nobody: for definer functions that have resolved the tenant (hybrid_search).
Parameters: tenant_id - the resolved tenant; kb_id - a knowledge base of it, or null; section -
  e.g. 'retrieval'; model - an embedding model's name.
Returns: the section as a jsonb object ({} when no row has it).
Errors: none.
Example: select hipocampo_private._config_section(t, kb, 'retrieval', 'all-MiniLM-L6-v2');
*/
create or replace function hipocampo_private._config_section(tenant_id uuid, kb_id uuid, section text, model text)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    select coalesce((select g.config -> section from hipocampo_private.settings as g where g.tenant_id is null), '{}')
        || coalesce(hipocampo_private._calibration(_config_section.model) -> section, '{}')
        || coalesce((
            select s.config -> section from hipocampo_private.settings as s
            where s.tenant_id = _config_section.tenant_id
        ), '{}')
        || coalesce((
            select k.overrides -> section from hipocampo_private.knowledge_bases as k
            where k.id = _config_section.kb_id and k.tenant_id = _config_section.tenant_id
        ), '{}')
$$;

/*
activate_embedding_model(name text) -> void

Purpose: confirm the switch to a registered model: it becomes the default of retrieval, and its
  calibration (model_calibrations) the thresholds in force (effective_config).
Returns: nothing.
Errors: 42501 for any role but service_role (no EXECUTE); P0002 "unknown embedding model"; 55000
  "embedding model <name> has no calibration: run hipocampo calibrate --model <name> --write".
Example: select hipocampo.activate_embedding_model('text-embedding-3-small');
*/
create or replace function hipocampo.activate_embedding_model(name text)
returns void
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if not exists (
        select 1 from hipocampo_private.embedding_models as e
        where e.name = activate_embedding_model.name
    ) then
        raise exception 'unknown embedding model: %', activate_embedding_model.name
            using errcode = 'P0002';
    end if;
    perform hipocampo_private._calibration(activate_embedding_model.name, true);
    update hipocampo_private.embedding_models as e set active = false
    where e.active and e.name <> activate_embedding_model.name;
    update hipocampo_private.embedding_models as e set active = true
    where e.name = activate_embedding_model.name;
end;
$$;

/*
hybrid_search(query_text text, query_embedding vector, kb_ids uuid[] default null,
  source_types text[] default null, metadata_filter jsonb default null,
  match_count integer default null, min_similarity double precision default null,
  fusion text default null, dense_weight double precision default null,
  lexical_weight double precision default null, rerank text default null,
  mmr_lambda double precision default null, embedding_model text default null,
  tenant_id uuid default null) -> setof record

Purpose: the hybrid retrieval RPC (PostgREST: POST /rpc/hybrid_search with named arguments).
  Every null argument takes its value from the config rows (hipocampo.effective_config,
  section retrieval), with the calibration of the model searched (min_similarity, dense_weight,
  dedupe_threshold: model_calibrations).
Parameters:
  query_text       1..retrieval.max_query_chars (2,000) characters.
  query_embedding  the query vector, dims of the model (L2-normalised).
  kb_ids           knowledge bases to search (null = all of the tenant's).
  source_types     filter on documents.source_type (null = any).
  metadata_filter  jsonb containment filter on chunks.metadata, e.g. {"article": "Art. 5"}.
  match_count      rows returned, 1..100 (retrieval.match_count, 5).
  min_similarity   cosine similarity floor of the dense leg, -1..1 (retrieval.min_similarity,
                   0.25, calibrated per model).
  fusion           'score' (z-score weighted sum) | 'rrf' (reciprocal rank, k = rrf_k).
  dense_weight, lexical_weight  weights of the two legs, 0..100, not both 0.
  rerank           'none' | 'trust_recency' (similarity*0.6 + trust*0.4 + freshness*0.2, seed 004).
  mmr_lambda       0..1; 1 = relevance only, 0.5 = seed MMR.
  embedding_model  null = the active model.
  tenant_id        only for service_role; others use their JWT tenant.
Returns: chunk_id, document_id, kb_id, chunk_index, content, metadata, title, source_uri,
  source_type, author, published_at, trust_score, dense_score (cosine similarity or null),
  lexical_score (BM25 or null), fused_score, final_score, rank (1-based).
Errors:
  42501 as _resolve_tenant;
  22023 "query_text must be 1..2000 characters" (empty, blank or too long);
  22023 "query_embedding is required"; 22000 "query_embedding has n dimensions; model m expects d";
  22023 "match_count must be 1..100 (got n)", and on an out-of-range min_similarity, mmr_lambda,
  weight, fusion or rerank; P0002 "unknown knowledge base: …"; P0002 "unknown embedding model: …";
  55000 "embedding model m has no calibration: run hipocampo calibrate --model m --write";
  55000 "retrieval config is incomplete: …" (a config row without a key config.toml seeds).
Example:
  select rank, title, final_score from hipocampo.hybrid_search(
    query_text => 'prazo para trancamento de matrícula',
    query_embedding => '[0.01, …]'::extensions.vector,
    kb_ids => array['…']::uuid[], match_count => 5);
Side effects: last_accessed_at of the returned chunks (at most once every 5 minutes), one
  data_access_log row.
*/
-- definer because under RLS every statement re-resolved the caller's membership (a definer call
-- per table read, about a fifth of a 250-chunk search; docs/BENCHMARKS.md §Hybrid search on a
-- small knowledge base): the tenant is resolved once above, by _resolve_tenant from the request,
-- and every statement below reads only that tenant's rows (tenant_id = t, or ids those returned).
create or replace function hipocampo.hybrid_search(
    query_text text,
    query_embedding extensions.vector,
    kb_ids uuid[] default null,
    source_types text[] default null,
    metadata_filter jsonb default null,
    match_count integer default null,
    min_similarity double precision default null,
    fusion text default null,
    dense_weight double precision default null,
    lexical_weight double precision default null,
    rerank text default null,
    mmr_lambda double precision default null,
    embedding_model text default null,
    tenant_id uuid default null
)
returns table (
    chunk_id bigint,
    document_id uuid,
    kb_id uuid,
    chunk_index integer,
    content text,
    metadata jsonb,
    title text,
    source_uri text,
    source_type text,
    author text,
    published_at timestamptz,
    trust_score real,
    dense_score double precision,
    lexical_score double precision,
    fused_score double precision,
    final_score double precision,
    rank integer
)
language plpgsql
security definer
set search_path = ''
as $$
declare
    started timestamptz := clock_timestamp();
    t uuid := hipocampo_private._resolve_tenant(hybrid_search.tenant_id);
    r jsonb;
    model text;
    dims integer;
    scope uuid [];
    scope_rows bigint;
    k integer;
    n_cand integer;
    min_sim double precision;
    fuse text;
    w_dense double precision;
    w_lex double precision;
    rrf_k double precision;
    rr text;
    lambda double precision;
    dup double precision;
    k1 double precision;
    b double precision;
    half_life double precision;
    exact_max bigint;
    dense_sql text;
    d_ids bigint [];
    d_sims double precision [];
    t_kb uuid [];
    t_lex text [];
    t_idf double precision [];
    t_avg double precision [];
    s_ids bigint [];
    s_scores double precision [];
    l_ids bigint [];
    l_scores double precision [];
    lim integer;
    f_ids bigint [];
    f_sim double precision [];
    f_score double precision [];
    f_fused double precision [];
    f_final double precision [];
    f_emb extensions.vector [];
    c_rel double precision [];
    sel_pos integer [] := '{}';
    n integer;
    s double precision;
    i integer;
    pass integer;
    above bigint;
begin
    if query_text is null or btrim(query_text) = '' then
        raise exception 'query_text must be 1..2000 characters (got an empty query)'
            using errcode = '22023';
    end if;
    if query_embedding is null then
        raise exception 'query_embedding is required' using errcode = '22023';
    end if;

    -- The model and the scope.
    if hybrid_search.embedding_model is null then
        select e.name, e.dims into model, dims from hipocampo_private.embedding_models as e
        where e.active;
    else
        select e.name, e.dims into model, dims from hipocampo_private.embedding_models as e
        where e.name = hybrid_search.embedding_model;
    end if;
    if model is null then
        raise exception 'unknown embedding model: %',
            coalesce(hybrid_search.embedding_model, '(no active model)') using errcode = 'P0002';
    end if;
    if extensions.vector_dims(query_embedding) <> dims then
        raise exception 'query_embedding has % dimensions; model % expects %',
            extensions.vector_dims(query_embedding), model, dims using errcode = '22000';
    end if;

    select array_agg(kb.id) into scope from hipocampo_private.knowledge_bases as kb
    where kb.tenant_id = t and (hybrid_search.kb_ids is null or kb.id = any(hybrid_search.kb_ids));
    if hybrid_search.kb_ids is not null
        and coalesce(cardinality(scope), 0) < cardinality(array(select distinct unnest(hybrid_search.kb_ids))) then
        raise exception 'unknown knowledge base: %',
            (select string_agg(x::text, ', ') from unnest(hybrid_search.kb_ids) as x
             where x <> all(coalesce(scope, '{}'))) using errcode = 'P0002';
    end if;
    scope := coalesce(scope, '{}');

    -- Parameters: argument, else KB override (single KB), else tenant row, else global row
    -- (seeded from config.toml: no values of its own here).
    -- The thresholds of the model searched (issue 22 §2): its calibration, under the tenant's and
    -- the knowledge base's overrides.
    perform hipocampo_private._calibration(model, true);
    r := hipocampo_private._config_section(
        t, case when cardinality(scope) = 1 then scope[1] end, 'retrieval', model
    );
    if exists (
        select 1 from unnest(array[
            'max_query_chars', 'match_count', 'min_similarity', 'fusion', 'dense_weight',
            'lexical_weight', 'rrf_k', 'rerank', 'mmr_lambda', 'dedupe_threshold', 'bm25_k1', 'bm25_b',
            'freshness_half_life_days', 'exact_scan_max_rows', 'candidate_multiplier', 'min_candidates',
            'hnsw_ef_search'
        ]) as key
        where r -> key is null or r -> key = 'null'::jsonb
    ) then
        raise exception 'retrieval config is incomplete: seed it from config.toml (hipocampo db migrate)'
            using errcode = '55000';
    end if;
    if char_length(query_text) > (r ->> 'max_query_chars')::integer then
        raise exception 'query_text must be 1..% characters (got %)',
            (r ->> 'max_query_chars')::integer, char_length(query_text)
            using errcode = '22023';
    end if;
    k := coalesce(hybrid_search.match_count, (r ->> 'match_count')::integer);
    min_sim := coalesce(hybrid_search.min_similarity, (r ->> 'min_similarity')::double precision);
    fuse := coalesce(hybrid_search.fusion, r ->> 'fusion');
    w_dense := coalesce(hybrid_search.dense_weight, (r ->> 'dense_weight')::double precision);
    w_lex := coalesce(hybrid_search.lexical_weight, (r ->> 'lexical_weight')::double precision);
    rrf_k := (r ->> 'rrf_k')::double precision;
    rr := coalesce(hybrid_search.rerank, r ->> 'rerank');
    lambda := coalesce(hybrid_search.mmr_lambda, (r ->> 'mmr_lambda')::double precision);
    dup := (r ->> 'dedupe_threshold')::double precision;
    k1 := (r ->> 'bm25_k1')::double precision;
    b := (r ->> 'bm25_b')::double precision;
    half_life := (r ->> 'freshness_half_life_days')::double precision;
    exact_max := (r ->> 'exact_scan_max_rows')::bigint;

    if k < 1 or k > 100 then
        raise exception 'match_count must be 1..100 (got %)', k using errcode = '22023';
    end if;
    -- After the range check: k * candidate_multiplier overflowed integer for k = -2^31 (22003).
    n_cand := greatest(k * (r ->> 'candidate_multiplier')::integer, (r ->> 'min_candidates')::integer);
    if min_sim < -1 or min_sim > 1 then
        raise exception 'min_similarity must be -1..1 (got %)', min_sim using errcode = '22023';
    end if;
    if lambda < 0 or lambda > 1 then
        raise exception 'mmr_lambda must be 0..1 (got %)', lambda using errcode = '22023';
    end if;
    if w_dense < 0 or w_lex < 0 or w_dense + w_lex = 0 or w_dense > 100 or w_lex > 100 then
        raise exception 'dense_weight and lexical_weight must be 0..100, not both 0'
            using errcode = '22023';
    end if;
    if fuse not in ('score', 'rrf') then
        raise exception 'fusion must be score or rrf (got %)', fuse using errcode = '22023';
    end if;
    if rr not in ('none', 'trust_recency') then
        raise exception 'rerank must be none or trust_recency (got %)', rr using errcode = '22023';
    end if;

    -- Dense leg. Large scopes: the typed cast matches the model's partial HNSW index
    -- (vector_cosine_ops <-> <=>), with pgvector's iterative scan so filters still leave n_cand
    -- rows; the cast names the model's dims, so that statement is dynamic. Small scopes are
    -- scanned exactly by the static statement below (its plan is cached, a dynamic statement is
    -- planned on every call), ordered by the similarity itself: one cosine per chunk, no index.
    -- Nearest chunks first (chunk-level filters only), then document filters on those: the
    -- best 4 * n_cand first, every chunk of the scope only when that leaves fewer than n_cand.
    select coalesce(sum(st.chunk_count), 0) into scope_rows from hipocampo_private.kb_text_stats as st
    where st.kb_id = any(scope) and st.embedding_model = model;
    if scope_rows > exact_max then
        perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
        perform set_config('hnsw.ef_search',
            greatest((r ->> 'hnsw_ef_search')::integer, n_cand)::text, true);
        dense_sql := format(
            'with nn as ('
            'select c.id, c.document_id, 1 - (c.embedding::extensions.vector(%1$s) operator(extensions.<=>) $1) as sim '
            'from hipocampo_private.chunks as c '
            'where c.tenant_id = $2 and c.kb_id = any($3) and c.embedding_model = $4 '
            'and ($6::jsonb is null or c.metadata @> $6) '
            'and (c.expires_at is null or c.expires_at > now()) '
            'order by (c.embedding::extensions.vector(%1$s) operator(extensions.<=>) $1) '
            'limit $9), '
            'ok as (select nn.id, nn.sim from nn '
            'join hipocampo_private.documents as d on d.id = nn.document_id '
            'where d.status = ''active'' and ($5::text[] is null or d.source_type = any($5)) '
            'and nn.sim >= $8 order by nn.sim desc, nn.id limit $7) '
            'select coalesce(array_agg(ok.id order by ok.sim desc, ok.id), ''{}''), '
            'coalesce(array_agg(ok.sim order by ok.sim desc, ok.id), ''{}''), '
            '(select count(*) from nn where nn.sim >= $8) from ok',
            dims
        );
    end if;
    for pass in 1..2 loop
        lim := case when pass = 1 then n_cand * 4 else scope_rows + 1 end;
        if scope_rows > exact_max then
            execute dense_sql
            into d_ids, d_sims, above
            using query_embedding, t, scope, model, hybrid_search.source_types,
                  hybrid_search.metadata_filter, n_cand, min_sim, lim;
        else
            with nn as (
                select c.id, c.document_id, 1 - (c.embedding operator(extensions.<=>) query_embedding) as sim
                from hipocampo_private.chunks as c
                where c.tenant_id = t and c.kb_id = any(scope) and c.embedding_model = model
                  and (hybrid_search.metadata_filter is null or c.metadata @> hybrid_search.metadata_filter)
                  and (c.expires_at is null or c.expires_at > now())
                order by sim desc
                limit lim
            ),
            ok as (
                select nn.id, nn.sim from nn
                inner join hipocampo_private.documents as d on d.id = nn.document_id
                where d.status = 'active'
                  and (hybrid_search.source_types is null or d.source_type = any(hybrid_search.source_types))
                  and nn.sim >= min_sim
                order by nn.sim desc, nn.id
                limit n_cand
            )
            select coalesce(array_agg(ok.id order by ok.sim desc, ok.id), '{}'),
                coalesce(array_agg(ok.sim order by ok.sim desc, ok.id), '{}'),
                (select count(*) from nn where nn.sim >= min_sim)
            into d_ids, d_sims, above
            from ok;
        end if;
        -- Again without the limit only when document filters dropped candidates we need.
        exit when cardinality(d_ids) >= n_cand or lim > scope_rows or above <= cardinality(d_ids);
    end loop;

    -- Lexical leg: Okapi BM25 with OR semantics over the query's stemmed, unaccented lexemes
    -- (the KB's language), read from the inverted index kb_postings: one primary-key range per
    -- term, then arithmetic. idf and the average length come from the per-KB statistics.
    select
        coalesce(array_agg(q.kb_id), '{}'),
        coalesce(array_agg(q.lexeme), '{}'),
        coalesce(array_agg(ln(1 + (st.chunk_count - ts.doc_freq + 0.5) / (ts.doc_freq + 0.5))), '{}'),
        coalesce(array_agg(st.token_total::double precision / greatest(st.chunk_count, 1)), '{}')
    into t_kb, t_lex, t_idf, t_avg
    from (
        select distinct kb.id as kb_id, u.lexeme
        from hipocampo_private.knowledge_bases as kb
        cross join lateral pg_catalog.unnest(
            pg_catalog.to_tsvector(hipocampo_private.text_search_config(kb.language), query_text)
        ) as u
        where kb.id = any(scope)
    ) as q
    inner join hipocampo_private.kb_term_stats as ts
        on ts.kb_id = q.kb_id and ts.embedding_model = model and ts.lexeme = q.lexeme
    inner join hipocampo_private.kb_text_stats as st
        on st.kb_id = q.kb_id and st.embedding_model = model
    where ts.doc_freq > 0;

    select
        coalesce(array_agg(x.chunk_id order by x.score desc, x.chunk_id), '{}'),
        coalesce(array_agg(x.score order by x.score desc, x.chunk_id), '{}')
    into s_ids, s_scores
    from (
        select p.chunk_id,
            sum(tm.idf * p.tf * (k1 + 1) / (p.tf + k1 * (1 - b + b * p.chunk_length / tm.avg_len))) as score
        from unnest(t_kb, t_lex, t_idf, t_avg) as tm (kb_id, lexeme, idf, avg_len)
        -- One primary-key range per term: "offset 0" keeps the planner from flattening the
        -- lateral subquery into a join it may run as a scan of all the tenant's postings.
        cross join lateral (
            select ps.chunk_id, ps.tf, ps.chunk_length
            from hipocampo_private.kb_postings as ps
            where ps.tenant_id = t and ps.kb_id = tm.kb_id and ps.lexeme = tm.lexeme
            offset 0
        ) as p
        group by p.chunk_id
    ) as x;

    -- Filters (model, status, expiry, source type, metadata) are checked on the best 4 * n_cand
    -- first; only when they leave fewer than n_cand is every scored chunk checked.
    for pass in 1..2 loop
        lim := case when pass = 1 then n_cand * 4 else cardinality(s_ids) end;
        select coalesce(array_agg(f.id order by f.ord), '{}'), coalesce(array_agg(f.score order by f.ord), '{}')
        into l_ids, l_scores
        from (
            select u.id, u.score, u.ord
            from unnest(s_ids[1:lim], s_scores[1:lim]) with ordinality as u (id, score, ord)
            inner join hipocampo_private.chunks as c on c.id = u.id
            inner join hipocampo_private.documents as d on d.id = c.document_id
            where c.embedding_model = model
              and (hybrid_search.source_types is null or d.source_type = any(hybrid_search.source_types))
              and (hybrid_search.metadata_filter is null or c.metadata @> hybrid_search.metadata_filter)
              and d.status = 'active'
              and (c.expires_at is null or c.expires_at > now())
            order by u.ord
            limit n_cand
        ) as f;
        exit when cardinality(l_ids) >= n_cand or cardinality(s_ids) <= n_cand * 4;
    end loop;

    -- Fusion over the union of both legs, each candidate chunk read once. Every candidate gets
    -- both signals, so the fusion compares like with like: the BM25 score of a dense-only hit is
    -- the lexical leg's (every chunk of the scope holding a query term was scored there; 0 when
    -- it holds none), the cosine of a lexical-only hit is computed here and counts as a dense
    -- signal at or above min_similarity, as in the dense leg. Then rerank; ranked candidates
    -- into arrays.
    with legs as (
        select coalesce(dl.id, ll.id) as id, dl.sim, ll.score
        from unnest(d_ids, d_sims) as dl (id, sim)
        full outer join unnest(l_ids, l_scores) as ll (id, score) on ll.id = dl.id
    ),
    cand as (
        select lg.id, c.embedding, d.trust_score, d.published_at, c.created_at,
            case
                when lg.sim is not null then lg.sim
                when 1 - (c.embedding operator(extensions.<=>) query_embedding) >= min_sim
                    then 1 - (c.embedding operator(extensions.<=>) query_embedding)
            end as sim,
            coalesce(lg.score, sc.score, 0) as score
        from legs as lg
        inner join hipocampo_private.chunks as c on c.id = lg.id
        inner join hipocampo_private.documents as d on d.id = c.document_id
        left join unnest(s_ids, s_scores) as sc (id, score) on lg.score is null and sc.id = lg.id
    ),
    dense as (
        select cd.id,
            row_number() over (order by cd.sim desc, cd.id) as rk,
            (cd.sim - avg(cd.sim) over ()) / nullif(stddev_pop(cd.sim) over (), 0) as z
        from cand as cd
        where cd.sim is not null
    ),
    lex as (
        select cd.id,
            row_number() over (order by cd.score desc, cd.id) as rk,
            (cd.score - avg(cd.score) over ()) / nullif(stddev_pop(cd.score) over (), 0) as z
        from cand as cd
    ),
    joined as (
        select lex.id,
            case fuse
                when 'rrf' then
                    w_dense * coalesce(1.0 / (rrf_k + dense.rk), 0)
                    + w_lex * coalesce(1.0 / (rrf_k + lex.rk), 0)
                else
                    w_dense * coalesce(dense.z, (select min(dz.z) from dense as dz), 0)
                    + w_lex * coalesce(lex.z, (select min(lz.z) from lex as lz), 0)
            end as fused
        from lex left join dense on dense.id = lex.id
    ),
    scored as (
        select j.id, j.fused,
            (j.fused - min(j.fused) over ()) / nullif(max(j.fused) over () - min(j.fused) over (), 0)
                as fused_unit
        from joined as j
    ),
    ranked as (
        select cd.*, s2.fused,
            case rr
                when 'trust_recency' then
                    coalesce(s2.fused_unit, 1) * 0.6 + cd.trust_score * 0.4
                    + 0.2 * exp(
                        -greatest(extract(epoch from now() - coalesce(cd.published_at, cd.created_at)), 0)
                        / 86400.0 / half_life
                    )
                else s2.fused
            end as final
        from scored as s2
        inner join cand as cd on cd.id = s2.id
    ),
    ordered as (
        select x.*,
            row_number() over (
                order by x.final desc, x.published_at desc nulls last, x.created_at desc, x.id
            ) as pos
        from ranked as x
    )
    select
        array_agg(o.id order by o.pos), array_agg(o.sim order by o.pos), array_agg(o.score order by o.pos),
        array_agg(o.fused order by o.pos), array_agg(o.final order by o.pos),
        array_agg(o.embedding order by o.pos)
    into f_ids, f_sim, f_score, f_fused, f_final, f_emb
    from ordered as o;

    -- MMR (lambda) with near-duplicate removal (cosine > dedupe_threshold), over positions;
    -- relevance on a 0..1 scale for the trade-off.
    if f_ids is not null then
        n := cardinality(f_ids);
        c_rel := f_final;
        s := f_final[1] - f_final[n];
        for i in 1..n loop
            c_rel[i] := case when s > 0 then (f_final[i] - f_final[n]) / s else 1 end;
        end loop;
        sel_pos := hipocampo_private._mmr(f_emb, c_rel, k, lambda, dup);
    end if;

    -- The picked candidates, in pick order, as rows (a plan that does not depend on the arrays'
    -- contents: subscripts in a join condition kept it from being cached).
    return query
    select c.id, c.document_id, c.kb_id, c.chunk_index, c.content, c.metadata,
        d.title, d.source_uri, d.source_type, d.author, d.published_at, d.trust_score,
        o.sim, o.score, o.fused, o.final, o.ord::integer
    from unnest(
        array(select f_ids[x] from unnest(sel_pos) as x), array(select f_sim[x] from unnest(sel_pos) as x),
        array(select f_score[x] from unnest(sel_pos) as x), array(select f_fused[x] from unnest(sel_pos) as x),
        array(select f_final[x] from unnest(sel_pos) as x)
    ) with ordinality as o (id, sim, score, fused, final, ord)
    inner join hipocampo_private.chunks as c on c.id = o.id
    inner join hipocampo_private.documents as d on d.id = c.document_id
    order by o.ord;

    -- Side effects, as the owner (members may not update chunks nor read the log).
    update hipocampo_private.chunks as c
    set last_accessed_at = now()
    where c.id = any(array(select f_ids[x] from unnest(sel_pos) as x))
      and c.tenant_id = t
      and (c.last_accessed_at is null or c.last_accessed_at < now() - interval '5 minutes');
    perform hipocampo_private._write_access_log(
        t, 'hybrid_search', cardinality(sel_pos),
        encode(sha256(convert_to(query_text, 'UTF8')), 'hex'),
        extract(epoch from clock_timestamp() - started) * 1000
    );
end;
$$;

/*
run_memory_maintenance(now timestamptz default now()) -> jsonb

Purpose: decay, expiry and the staging purge, with an explicit clock (tests freeze it).
  Memories not accessed for memory.decay_days lose memory.decay_step confidence, once per
  period; below memory.deactivate_below they expire; explicit_user and pinned memories never
  decay; active memories past expires_at expire; staged memories past expires_at are deleted
  unless pinned. Events memory.decayed / memory.expired / memory.purged are recorded.
  Scheduled with pg_cron (schedule_maintenance) where the extension exists; locally
  `hipocampo worker`.
Returns: {"decayed": n, "deactivated": n, "expired": n, "staging_purged": n}.
Errors: 55000 "memory config is incomplete: …" (not seeded from config.toml).
Example: select hipocampo.run_memory_maintenance('2027-01-01'::timestamptz);
*/
create or replace function hipocampo.run_memory_maintenance(now timestamptz default now())
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    -- The global row with the active embedding model's calibration (issue 22 §2): every key of
    -- the section is checked, although maintenance reads only the decay keys.
    cfg jsonb := hipocampo_private._memory_config(
        (select s.config -> 'memory' from hipocampo_private.settings as s where s.tenant_id is null)
        || coalesce(hipocampo_private._calibration() -> 'memory', '{}'::jsonb)
    );
    period interval := make_interval(days => (cfg ->> 'decay_days')::integer);
    step real := (cfg ->> 'decay_step')::real;
    low real := (cfg ->> 'deactivate_below')::real;
    n_decayed integer;
    n_low integer;
    n_expired integer;
    n_purged integer;
begin
    with decayed as (
        update hipocampo_private.memories as m
        set confidence = greatest(m.confidence - step, 0), last_decayed_at = run_memory_maintenance.now,
            updated_at = run_memory_maintenance.now
        where m.status = 'active' and not m.pinned and m.source <> 'explicit_user'
          and run_memory_maintenance.now - greatest(
              coalesce(m.last_accessed_at, m.created_at), coalesce(m.last_decayed_at, '-infinity')
          ) >= period
        returning m.id, m.tenant_id, m.user_id, m.confidence
    ), logged as (
        insert into hipocampo_private.memory_events (at, tenant_id, user_id, memory_id, event, detail)
        select run_memory_maintenance.now, d.tenant_id, d.user_id, d.id, 'memory.decayed',
            jsonb_build_object('confidence', d.confidence)
        from decayed as d
    )
    select count(*) into n_decayed from decayed;

    with low_rows as (
        update hipocampo_private.memories as m
        set status = 'expired', valid_to = run_memory_maintenance.now, updated_at = run_memory_maintenance.now
        where m.status = 'active' and m.confidence < low and not m.pinned and m.source <> 'explicit_user'
        returning m.id, m.tenant_id, m.user_id
    ), logged as (
        insert into hipocampo_private.memory_events (at, tenant_id, user_id, memory_id, event, reason)
        select run_memory_maintenance.now, l.tenant_id, l.user_id, l.id, 'memory.expired', 'low_confidence'
        from low_rows as l
    )
    select count(*) into n_low from low_rows;

    with gone as (
        update hipocampo_private.memories as m
        set status = 'expired', valid_to = run_memory_maintenance.now, updated_at = run_memory_maintenance.now
        where m.status = 'active' and m.expires_at <= run_memory_maintenance.now
        returning m.id, m.tenant_id, m.user_id
    ), logged as (
        insert into hipocampo_private.memory_events (at, tenant_id, user_id, memory_id, event, reason)
        select run_memory_maintenance.now, g.tenant_id, g.user_id, g.id, 'memory.expired', 'expires_at'
        from gone as g
    )
    select count(*) into n_expired from gone;

    with purged as (
        delete from hipocampo_private.memory_staging as s
        where s.expires_at <= run_memory_maintenance.now and not s.pinned
        returning s.id, s.tenant_id, s.user_id, s.key
    ), logged as (
        insert into hipocampo_private.memory_events (at, tenant_id, user_id, memory_id, event, reason, detail)
        select run_memory_maintenance.now, p.tenant_id, p.user_id, p.id, 'memory.purged', 'staging_expired',
            jsonb_build_object('key', p.key)
        from purged as p
    )
    select count(*) into n_purged from purged;

    return jsonb_build_object('decayed', n_decayed, 'deactivated', n_low, 'expired', n_expired,
        'staging_purged', n_purged);
end;
$$;

-- A database migrated before: the active model keeps the values its global row held (they came
-- from an earlier seed of config.toml), and the global row gives them up.
do $$
declare
    g jsonb;
    cal jsonb;
begin
    select s.config into g from hipocampo_private.settings as s where s.tenant_id is null;
    if g is null then
        return;
    end if;
    select jsonb_object_agg(s.key, (
        select jsonb_object_agg(k, g #> array[s.key, k]) from jsonb_array_elements_text(s.value) as k
    )) into cal
    from jsonb_each(hipocampo_private._calibrated_keys()) as s;
    if not exists (
        select 1 from jsonb_each(hipocampo_private._calibrated_keys()) as s
        cross join lateral jsonb_array_elements_text(s.value) as k
        where jsonb_typeof(g #> array[s.key, k]) is distinct from 'number'
    ) then
        insert into hipocampo_private.model_calibrations (embedding_model, config, source)
        select e.name, cal, 'config.toml' from hipocampo_private.embedding_models as e where e.active
        on conflict (embedding_model) do nothing;
    end if;
    update hipocampo_private.settings as s
    set config = (
        select coalesce(jsonb_object_agg(
            x.key,
            case when jsonb_typeof(x.value) = 'object' and hipocampo_private._calibrated_keys() ? x.key
                then x.value - array(select jsonb_array_elements_text(hipocampo_private._calibrated_keys() -> x.key))
                else x.value end
        ), '{}'::jsonb)
        from jsonb_each(s.config) as x
    ), updated_at = now()
    where s.tenant_id is null;
end;
$$;

revoke execute on function hipocampo_private._calibrated_keys() from public;
revoke execute on function hipocampo_private._check_calibration(text, jsonb) from public;
revoke execute on function hipocampo_private._calibration(text, boolean) from public;
revoke execute on function hipocampo.set_model_calibration(text, jsonb) from public;
revoke execute on function hipocampo_private._config_section(uuid, uuid, text, text) from public;
grant select on hipocampo_private.model_calibrations to authenticated;
grant all on hipocampo_private.model_calibrations to service_role;
grant execute on function hipocampo_private._calibrated_keys() to service_role;
grant execute on function hipocampo_private._check_calibration(model text, calibration jsonb) to service_role;
grant execute on function hipocampo_private._calibration(model text, required boolean) to authenticated, service_role;
grant execute on function hipocampo.set_model_calibration(model text, calibration jsonb) to service_role;
