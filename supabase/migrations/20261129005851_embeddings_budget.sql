-- embeddings budget.
-- Issue 57 §7: serve's POST /v1/embeddings takes a caller's input characters from a per-minute budget, not one token per request.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo.take_embedding_budget(caller text, characters integer)
returns jsonb
language plpgsql
set search_path to ''
as $function$
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
$function$;

revoke execute on function hipocampo.take_embedding_budget(caller text, characters integer) from public;
grant execute on function hipocampo.take_embedding_budget(caller text, characters integer) to service_role;
comment on function hipocampo.take_embedding_budget(pg_catalog.text, integer) is 'Characters per caller and minute for serve''s POST /v1/embeddings (a token bucket by input size).';
