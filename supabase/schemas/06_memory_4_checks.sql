-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- What a memory may hold: personal data, the value's shape and size, who may write it; the
-- memories still waiting for an embedding.
/*
_pii_problem(content text, cfg jsonb, what text) -> text[]

Purpose: the gate's data check of one text: personal data (any kind the scrubber replaces), a
  kind that never becomes a memory (memory.forbidden_kinds: the first kind, by name, one of whose
  patterns matches the lower-case, unaccented text), or the tenant's sensitive data
  (memory.sensitive_patterns over the same text).
Parameters: content - the text; cfg - the memory config; what - how the message names it
  ('memory text', 'memory value').
Returns: null, or [reason, message] with reason personal_data | credentials | financial_data |
  health_data | opinion_about_person | user_classification | sensitive_data.
Errors: none of its own.
Example: select hipocampo_private._pii_problem('CPF 529 982 247 25', cfg, 'memory value');
  -- {personal_data,"memory value carries personal data (CPF)"}
*/
create or replace function hipocampo_private._pii_problem(content text, cfg jsonb, what text)
returns text[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
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
$$;

/*
_memory_value_problem(value jsonb, cfg jsonb) -> text[]

Purpose: the gate's checks of a memory's value: present, at most memory.value_max_bytes bytes as
  JSON text, nesting at most memory.value_max_depth levels (a scalar is level 0, the members of
  an object or array level 1), and no personal or sensitive data in any string or number leaf
  (a number read as its digits), any object key, or the leaves read together (a CPF split across
  fields or written as an array of digits).
Returns: null, or [reason, message] with reason invalid_value | too_long, or one of
  _pii_problem's.
Errors: none of its own.
Example: select hipocampo_private._memory_value_problem('{"cpf": "529.982.247-25"}', cfg);
  -- {personal_data,"memory value carries personal data (CPF)"}
*/
create or replace function hipocampo_private._memory_value_problem(value jsonb, cfg jsonb)
returns text[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    max_bytes integer := (cfg ->> 'value_max_bytes')::integer;
    max_depth integer := (cfg ->> 'value_max_depth')::integer;
    size integer;
    strings text;
begin
    if value is null then
        return array['invalid_value', 'a memory needs a value'];
    end if;
    size := octet_length(value::text);
    if size > max_bytes then
        return array['too_long', format('memory value is %s bytes; the limit is %s (memory.value_max_bytes)',
            size, max_bytes)];
    end if;
    if jsonb_path_exists(value, format('strict $.**{%s}', max_depth + 1)::jsonpath) then
        return array['invalid_value', format('memory value nests deeper than %s levels (memory.value_max_depth)',
            max_depth)];
    end if;
    -- Leaves (numbers read as digit strings) and keys joined by a separator no number or e-mail
    -- runs across, then the leaves again read together (issue 44 §3: a CPF as a JSON number,
    -- split across fields or as an array of digits).
    select string_agg(s, ' ; ') || ' ; ' || coalesce(string_agg(s, '') filter (where leaf), '') into strings from (
        select x #>> '{}' as s, true as leaf
        from jsonb_path_query(value, 'strict $.** ? (@.type() == "string" || @.type() == "number")') as x
        union all
        select x #>> '{}', false
        from jsonb_path_query(value, 'strict $.** ? (@.type() == "object").keyvalue().key') as x
    ) as leaves;
    if strings is null then
        return null;
    end if;
    return hipocampo_private._pii_problem(strings, cfg, 'memory value');
end;
$$;

/*
_memory_write_allowed(tenant_id uuid, user_id uuid, description text, value jsonb,
  token_count integer) -> boolean

Purpose: the gate as a row check, for the INSERT policies of memories and memory_staging: the
  user has consented (memory_consents), and the description and value pass
  _memory_text_problem and _memory_value_problem under the tenant's memory config. A direct
  INSERT as authenticated passes only what remember would store.
Returns: true when the row would pass the gate.
Errors: 55000 as _memory_config; 42501 as effective_config.
*/
create or replace function hipocampo_private._memory_write_allowed(
    tenant_id uuid, user_id uuid, description text, value jsonb, token_count integer
)
returns boolean
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    cfg jsonb;
begin
    if not hipocampo_private._has_consent(_memory_write_allowed.tenant_id, _memory_write_allowed.user_id) then
        return false;
    end if;
    cfg := hipocampo_private._memory_config(
        hipocampo.effective_config(_memory_write_allowed.tenant_id) -> 'memory');
    return hipocampo_private._memory_text_problem(description, token_count, cfg) is null
        and hipocampo_private._memory_value_problem(value, cfg) is null;
end;
$$;

create policy "users write personal memories the gate passes, admins shared ones"
on hipocampo_private.memories
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
    and (scope = 'personal' or (select hipocampo_private.current_tenant_role()) = 'admin')
    and hipocampo_private._memory_write_allowed(tenant_id, user_id, description, value, token_count)
);

create policy "users stage personal memories the gate passes, admins shared ones"
on hipocampo_private.memory_staging
for insert
to authenticated
with check (
    tenant_id = (select hipocampo_private.current_tenant_id())
    and user_id = (select auth.uid())
    and (scope = 'personal' or (select hipocampo_private.current_tenant_role()) = 'admin')
    and hipocampo_private._memory_write_allowed(tenant_id, user_id, description, value, token_count)
);

/*
memories_without_embedding(keys text[] default null, user_id uuid default null,
  tenant_id uuid default null) -> table (id uuid, key text, description text)

Purpose: the user's active personal memories stored without a vector (written in SQL, e.g. by
  seed_profile), optionally only these keys, for the client to embed (set_memory_embeddings).
Returns: one row per memory, by key.
Errors: 42501 as _memory_actor.
Example: select * from hipocampo.memories_without_embedding();
*/
create or replace function hipocampo.memories_without_embedding(
    keys text[] default null, user_id uuid default null, tenant_id uuid default null
)
returns table (id uuid, key text, description text)
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
declare
    a record := hipocampo_private._memory_actor(memories_without_embedding.user_id,
        memories_without_embedding.tenant_id);
begin
    return query
    select m.id, m.key, m.description
    from hipocampo_private.memories as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.scope = 'personal'
      and m.status = 'active' and m.embedding is null
      and (memories_without_embedding.keys is null or m.key = any(memories_without_embedding.keys))
    order by m.key;
end;
$$;

comment on function hipocampo.memories_without_embedding(text[], uuid, uuid) is
'The user''s active personal memories stored without a vector.';
