-- search model by text stats.
-- _search_model returns a model no chunk of the scope lacks by kb_text_stats without scanning the chunks (every search and ask in a database that has known two models scanned the scope)
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
        -- No chunk of the scope has another model (kb_text_stats counts the chunks per knowledge
        -- base and model, kept by the chunks' triggers): nothing to probe. The usual case, one
        -- model's chunks, in a database that has known two models (a scan of the scope before).
        if not exists (
            select 1 from hipocampo_private.kb_text_stats as st
            where st.tenant_id = _search_model.tenant_id and st.kb_id = any(scope)
              and st.embedding_model <> candidate and st.chunk_count > 0
        ) then
            return candidate;
        end if;
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
