-- Profile facts findable by meaning: seed_profile writes a Portuguese sentence per key as the
-- memory's description (was "key: value"; same signature), and set_memory_embeddings lets a
-- client embed memories written without a vector (seed_profile cannot embed in SQL).

/*
seed_profile(profile jsonb, source_ref text default 'onboarding', user_id uuid default null,
  tenant_id uuid default null) -> jsonb

Purpose: write the onboarding profile as memories (source profile_seed, confidence 1) through
  the gate: user.name, user.preferred_language, user.timezone, user.locale, user.role_title,
  user.communication_style (identity_profile); tenant.name, tenant.segment,
  tenant.business_model (tenant_business); tenant.primary_goals (goals_kpis); prefs.no_emojis,
  prefs.no_tech_terms, prefs.short_answers, prefs.channels_enabled (preference).
  Idempotent (unchanged values write nothing); any other key is refused, so free conversation is
  never stored. Each memory's description is a Portuguese sentence ("Cargo do usuário: síndica";
  yes/no for booleans), so that semantic recall finds profile facts by meaning.
Returns: {"<key>": "<status of remember>", …}.
Errors: 22023 "unknown profile keys: …"; 22023 on a source_ref other than onboarding | profile.
Example: select hipocampo.seed_profile('{"user.name": "Ana", "prefs.short_answers": true}');
*/
create or replace function hipocampo.seed_profile(
    profile jsonb, source_ref text default 'onboarding', user_id uuid default null, tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    allowed constant jsonb := '{
        "user.name": "identity_profile", "user.preferred_language": "identity_profile",
        "user.timezone": "identity_profile", "user.locale": "identity_profile",
        "user.role_title": "identity_profile", "user.communication_style": "identity_profile",
        "tenant.name": "tenant_business", "tenant.segment": "tenant_business",
        "tenant.business_model": "tenant_business", "tenant.primary_goals": "goals_kpis",
        "prefs.no_emojis": "preference", "prefs.no_tech_terms": "preference",
        "prefs.short_answers": "preference", "prefs.channels_enabled": "preference"
    }';
    -- What each key means, in the users' language: the description that gets embedded.
    labels constant jsonb := '{
        "user.name": "Nome do usuário", "user.preferred_language": "Idioma preferido do usuário",
        "user.timezone": "Fuso horário do usuário", "user.locale": "Localidade (formato de datas e números) do usuário",
        "user.role_title": "Cargo do usuário", "user.communication_style": "Estilo de comunicação preferido",
        "tenant.name": "Nome da empresa ou organização", "tenant.segment": "Segmento de atuação da empresa",
        "tenant.business_model": "Modelo de negócio da empresa", "tenant.primary_goals": "Objetivos principais da empresa",
        "prefs.no_emojis": "Prefere respostas sem emojis", "prefs.no_tech_terms": "Prefere evitar termos técnicos",
        "prefs.short_answers": "Prefere respostas curtas", "prefs.channels_enabled": "Canais de atendimento habilitados"
    }';
    unknown text;
    item record;
    result jsonb := '{}'::jsonb;
    r jsonb;
begin
    if profile is null or jsonb_typeof(profile) <> 'object' then
        raise exception 'profile must be a json object' using errcode = '22023';
    end if;
    if source_ref not in ('onboarding', 'profile') then
        raise exception 'source_ref must be onboarding or profile (got %)', source_ref using errcode = '22023';
    end if;
    select string_agg(k, ', ' order by k) into unknown from jsonb_object_keys(profile) as k
    where not allowed ? k;
    if unknown is not null then
        raise exception 'unknown profile keys: %', unknown using errcode = '22023',
            hint = 'seed_profile stores only the onboarding keys; use remember for anything else';
    end if;
    for item in select e.key, e.value from jsonb_each(profile) as e order by e.key loop
        r := hipocampo.remember(
            key => item.key, value => item.value,
            description => (labels ->> item.key) || ': ' || case jsonb_typeof(item.value)
                when 'boolean' then case when item.value = 'true'::jsonb then 'sim' else 'não' end
                when 'array' then (select string_agg(x, ', ') from jsonb_array_elements_text(item.value) as x)
                else coalesce(item.value #>> '{}', item.value::text) end,
            category => allowed ->> item.key, confidence => 1.0, source => 'profile_seed',
            source_ref => seed_profile.source_ref,
            tags => array[split_part(item.key, '.', 1), replace(split_part(item.key, '.', 2), '.', '_')],
            user_id => seed_profile.user_id, tenant_id => seed_profile.tenant_id
        );
        result := result || jsonb_build_object(item.key, r ->> 'status');
    end loop;
    return result;
end;
$$;

/*
set_memory_embeddings(items jsonb) -> integer

Purpose: give memories that have no embedding one (of the active model): the profile seed and
  any write made without a vector. Memories that already have an embedding are left alone.
Parameters: items - [{"memory_id": uuid, "embedding": [floats]}]; RLS decides which rows the
  caller may update (own personal memories; admins the tenant's shared ones).
Returns: the number of memories updated.
Errors: 22000 wrong dimensions; 22023 items is not a json array.
Example: select hipocampo.set_memory_embeddings('[{"memory_id": "…", "embedding": [0.1, …]}]');
*/
create function hipocampo.set_memory_embeddings(items jsonb)
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    item jsonb;
    v extensions.vector;
    model text;
    n integer := 0;
    one integer;
begin
    if items is null or jsonb_typeof(items) <> 'array' then
        raise exception 'items must be a json array' using errcode = '22023';
    end if;
    for item in select x from jsonb_array_elements(items) as x loop
        v := (item ->> 'embedding')::extensions.vector;
        model := hipocampo_private._active_model(v, 'embedding');
        update hipocampo_private.memories as m
        set embedding = v, embedding_model = model, updated_at = now()
        where m.id = (item ->> 'memory_id')::uuid and m.embedding is null;
        get diagnostics one = row_count;
        n := n + one;
    end loop;
    return n;
end;
$$;

grant execute on function hipocampo.set_memory_embeddings(jsonb) to authenticated, service_role;

comment on function hipocampo.set_memory_embeddings(jsonb) is
'Embed memories written without a vector (e.g. the profile seed).';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
