-- search model per model.
-- _search_model checks one model at a time, the active one first, so each chunk of the scope without a row of it is one index probe; as one statement over every model the plan hashed the whole chunks_tenant_hash_model_key index (every tenant's chunks) on every search of a database with two models registered
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._search_model(tenant_id uuid, kb_ids uuid[])
returns text
language plpgsql
stable
set search_path to ''
as $function$
declare
    active text;
    candidate text;
    scope uuid[] := _search_model.kb_ids;
begin
    select e.name into active from hipocampo_private.embedding_models as e where e.active;
    if active is null or (select count(*) from hipocampo_private.embedding_models) = 1 then
        return active;
    end if;
    if scope is null then
        scope := array(select k.id from hipocampo_private.knowledge_bases as k where k.tenant_id = _search_model.tenant_id);
    end if;
    -- One model at a time, the active one first: with the model a constant, each chunk of the
    -- scope without a row of it is one probe of chunks_tenant_hash_model_key (as one statement
    -- over every model, the plan hashed that whole index, every chunk of every tenant, per search).
    for candidate in
        select m.name from hipocampo_private.embedding_models as m
        where m.active or m.activated_at is not null
        order by m.active desc, m.activated_at desc, m.name
    loop
        if not exists (
            select 1 from hipocampo_private.chunks as c
            where c.tenant_id = _search_model.tenant_id
              and c.kb_id = any(scope)
              and c.embedding_model <> candidate
              and not exists (
                  select 1 from hipocampo_private.chunks as n
                  where n.tenant_id = c.tenant_id and n.content_hash = c.content_hash and n.embedding_model = candidate
              )
        ) then
            return candidate;
        end if;
    end loop;
    return active;
end;
$function$;
