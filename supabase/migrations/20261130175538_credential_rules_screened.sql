-- credential rules screened.
-- the credential check screens a view with small expressions one of which every rule's match satisfies before its three large ones, so prose does not compile them during ingestion
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._credential_found(content text, cfg jsonb)
returns text
language plpgsql
stable
set search_path to ''
as $function$
declare
    views text[] := hipocampo_private._forbidden_views(content);
    how constant text[] := array['on line %s', 'written split or spaced', 'in base64'];
    -- The screen (every rule's match satisfies one of its parts; see the purpose above): a run of
    -- 20 token characters holding a capital, a digit or one of _+=\ ...
    token constant text := '[-A-Za-z0-9_+/=\\]';
    run_marked constant text := '(?<!' || token || ')(?=' || token || '{20})[-a-z/]*[A-Z0-9_+=\\]';
    -- ... the literal of a rule whose token can be shorter or all small letters, "-" and "/" ...
    literal constant text := '://[^/@\s]*@|eyJ|_authToken|PRIVATE KEY|PuTTY-User-Key-File-2|A(KC|P)[A-Za-z]*[0-9]'
        || '|[0-9]{8}:|[a-z/]{64}';
    literal_folded constant text := 'xox|hooks\.slack\.com|\m(senha|password|passwd|pin|c[oó]digo de acesso) ';
    -- ... or any run of 20 with a word of the rules whose value follows a name (key, token, …)
    run constant text := token || '{20}';
    named_folded constant text := 'aws|pw|key|pass|token|secret|softlayer|gl(pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-'
        || '|sk-(proj|svcacct|admin)-|-us[0-9]';
    plain text;
    around text;
    folded text;
    hit record;
begin
    -- (after the screen, three expressions: the case-sensitive rules without lookaround, the ones
    -- with it, the case-insensitive ones; one expression of them all costs a third more, and the
    -- rules one by one overflow PostgreSQL's cache of 32 compiled expressions in a batch; the three
    -- are compiled again whenever a session's other expressions have pushed them out of it.
    -- Lookaround is told by strpos, not by one more expression in that cache)
    select '(' || string_agg(r.pattern, ')|(') filter (where not r.ignore_case and not r.around) || ')',
        '(' || string_agg(r.pattern, ')|(') filter (where not r.ignore_case and r.around) || ')',
        '(' || string_agg(r.pattern, ')|(') filter (where r.ignore_case) || ')'
    into plain, around, folded
    from (
        select x.pattern, x.ignore_case,
            strpos(x.pattern, '(?=') + strpos(x.pattern, '(?!') + strpos(x.pattern, '(?<') > 0 as around
        from (select * from hipocampo_private._secret_rules()
            union all select * from hipocampo_private._own_credential_rules()) as x
    ) as r;
    for v in 1 .. 3 loop
        continue when views[v] = '' or not (views[v] ~ run_marked or views[v] ~ literal
                or views[v] ~* literal_folded or (views[v] ~ run and views[v] ~* named_folded))
            or not (views[v] ~ plain or views[v] ~ around or views[v] ~* folded);
        -- (Artifactory's prefix, AP and a hex digit, is read in the text as written only: joined
        -- pieces such as "APARTAMENTO 302" have its form)
        select r.name, case when r.ignore_case then regexp_instr(views[v], r.pattern, 1, 1, 0, 'i')
            else regexp_instr(views[v], r.pattern) end as pos
        into hit
        from (select *, 1 as o from hipocampo_private._secret_rules()
            union all select *, 2 from hipocampo_private._own_credential_rules()) as r
        where case when r.ignore_case then views[v] ~* r.pattern else views[v] ~ r.pattern end
            and (v = 1 or r.name <> 'Artifactory token')
        order by r.o
        limit 1;
        continue when not found;
        return format('a credential (%s) ', hit.name)
            || format(how[v], hipocampo_private._line_of(views[1], hit.pos));
    end loop;
    return (
        select pg_catalog.format('a credential (forbidden_sources.credential_patterns[%s]) on line %s',
            p.n, hipocampo_private._line_of(views[1], pg_catalog.regexp_instr(views[1], p.pattern, 1, 1, 0, 'i')))
        from pg_catalog.jsonb_array_elements_text(cfg -> 'credential_patterns') with ordinality as p (pattern, n)
        where views[1] ~* p.pattern
        order by p.n
        limit 1
    );
end;
$function$;
