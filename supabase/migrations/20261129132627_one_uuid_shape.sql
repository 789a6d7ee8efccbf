-- one uuid shape.
-- review: the uuid pattern of the JWT claims, the cache's document ids and the PII scrub is one function
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._uuid_shape()
returns text
language sql
immutable parallel safe
set search_path to ''
as $function$
    select '[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}'::text;
$function$;

create or replace function hipocampo_private._cache_entry_problem(answer jsonb, max_bytes integer)
returns text
language sql
immutable
set search_path to ''
as $function$
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
$function$;

-- definer because memberships is under RLS and the caller must be resolved the same way from
-- invoker and definer RPCs; it reads only the request's settings and the caller's membership.
create or replace function hipocampo_private._caller(out kind text, out tenant_id uuid, out user_id uuid, out tenant_role text)
returns record
language plpgsql
stable
security definer
set search_path to ''
as $function$
declare
    claims jsonb := (select auth.jwt());
    claim_role text := claims ->> 'role';
    db_role text := current_setting('role');
    sub_text text := claims ->> 'sub';
    tenant_text text := coalesce(claims -> 'app_metadata' ->> 'tenant_id', claims ->> 'tenant_id');
    uuid_format constant text := '^' || hipocampo_private._uuid_shape() || '$';
begin
    if db_role <> 'none' then
        if claim_role is not null and claim_role <> db_role then
            raise exception 'not allowed: the JWT role % does not match the database role %', claim_role, db_role
                using errcode = '42501';
        end if;
        claim_role := db_role;
    end if;
    if claim_role = 'service_role' or (claim_role is null and db_role = 'none') then
        kind := 'service';
        return;
    end if;
    if claim_role is distinct from 'authenticated' then
        raise exception 'not allowed: role % may not call this', coalesce(claim_role, '(none)')
            using errcode = '42501';
    end if;
    if sub_text is null or sub_text = '' then
        raise exception 'no user: the JWT has no subject (sub)' using errcode = '42501';
    end if;
    if sub_text !~ uuid_format then
        raise exception 'no user: the JWT sub is not a uuid' using errcode = '42501';
    end if;
    if tenant_text is null or tenant_text = '' then
        raise exception 'no tenant: the JWT claims name no tenant'
            using errcode = '42501', hint = 'set app_metadata.tenant_id in the JWT';
    end if;
    if tenant_text !~ uuid_format then
        raise exception 'no tenant: the JWT tenant claim is not a uuid' using errcode = '42501';
    end if;
    select m.tenant_id, m.user_id, m.role into _caller.tenant_id, _caller.user_id, _caller.tenant_role
    from hipocampo_private.memberships as m
    where m.tenant_id = tenant_text::uuid and m.user_id = sub_text::uuid;
    if not found then
        raise exception 'no tenant: the JWT claims name no tenant this user belongs to'
            using errcode = '42501';
    end if;
    kind := 'user';
end;
$function$;

create or replace function hipocampo_private._pii_scrub(input text, out text text, out counts jsonb)
returns record
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
declare
    uuid_shape constant text := '(?<![0-9A-Za-z])' || hipocampo_private._uuid_shape() || '(?![0-9A-Za-z])';
    aside constant text := 'uuidzqzuuid';  -- letters no step reads (no digit, no O o l I)
    normal text := hipocampo_private._pii_normalize(input);
    ids text [] := '{}';
    pieces text [];
    step record;
    other record;
begin
    if input is null then
        counts := '{}'::jsonb;
        return;
    end if;
    if strpos(normal, aside) = 0 then
        ids := array(select m[1] from regexp_matches(normal, '(' || uuid_shape || ')', 'g') as m);
        normal := regexp_replace(normal, uuid_shape, aside, 'g');
    end if;
    step := hipocampo_private._pii_scrub_spelled(normal);
    text := step.text;
    counts := step.counts;
    step := hipocampo_private._pii_scrub_encoded(text);
    text := step.text;
    counts := hipocampo_private._pii_add(counts, step.counts);
    step := hipocampo_private._pii_find(text);
    -- (only where nine digits or such letters run together, one of them a digit and one a letter)
    if exists (select from regexp_matches(text, '((?<![A-Za-z])[0-9OolI](?:[^0-9A-Za-z\n]{0,3}[0-9OolI]){8,}(?![A-Za-z]))', 'g') as m
        where m[1] ~ '[OolI]' and m[1] ~ '[0-9]') then
        other := hipocampo_private._pii_find(hipocampo_private._pii_letters_as_digits(text));
        if (select coalesce(sum(v::integer), 0) from jsonb_each_text(other.counts) as e (k, v))
            > (select coalesce(sum(v::integer), 0) from jsonb_each_text(step.counts) as e (k, v)) then
            step := other;
        end if;
    end if;
    text := step.text;
    counts := hipocampo_private._pii_add(counts, step.counts);
    if counts = '{}'::jsonb then
        text := input;
        return;
    end if;
    pieces := string_to_array(text, aside);
    if cardinality(ids) > 0 and cardinality(pieces) = cardinality(ids) + 1 then
        text := pieces[1] || (select coalesce(string_agg(u.id || pieces[u.n + 1], '' order by u.n), '')
            from unnest(ids) with ordinality as u (id, n));
    end if;
end;
$function$;

revoke execute on function hipocampo_private._uuid_shape() from public;
grant execute on function hipocampo_private._uuid_shape() to authenticated;
grant execute on function hipocampo_private._uuid_shape() to service_role;
