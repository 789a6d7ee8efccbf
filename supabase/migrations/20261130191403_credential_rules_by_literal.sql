-- credential rules by literal.
-- A text the credential screen lets through compiled the three expressions of all 48 rules (~30 ms), evicted again by ingestion's other checks before the next such text: the expressions are now built from the rules whose literal the text holds (_credential_rule_literals).
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._credential_rule_literals()
returns table (name text, literal text, folded boolean)
language sql
immutable parallel safe
set search_path to ''
as $function$
    select r.name, l.literal, r.folded
    from (values
        ('AWSKeyDetector', array['A3T', 'ABIA', 'ACCA', 'AKIA', 'ASIA'], false),
        ('AWSKeyDetector', array['aws'], true),
        ('AzureStorageKeyDetector', array['AccountKey='], false),
        ('BasicAuthDetector', array['://'], false),
        ('CloudantDetector', array['key', 'pw', 'pass', 'token', 'cloudant'], true),
        ('DiscordBotTokenDetector', array['.'], false),
        ('GitHubTokenDetector', array['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_'], false),
        ('GitLabTokenDetector', array['glpat-', 'gldt-', 'glft-', 'glsoat-', 'glrt-', 'GR1348941', 'glcbt-',
            'glimt-', 'glptt-', 'glagent-', 'gloas-'], false),
        ('IbmCloudIamDetector', array['key', 'pw', 'pass', 'token'], true),
        ('IbmCosHmacDetector', array['secret'], true),
        ('JwtTokenDetector', array['eyJ'], false),
        ('MailchimpDetector', array['-us'], false),
        ('NpmDetector', array['/:_authToken='], false),
        ('OpenAIDetector', array['T3BlbkFJ'], false),
        ('PrivateKeyDetector', array['PRIVATE KEY', 'PuTTY-User-Key-File-2'], false),
        ('PypiTokenDetector', array['pypi-AgE'], false),
        ('SendGridDetector', array['SG.'], false),
        ('SlackDetector', array['xox', 'hooks.slack.com/services/'], true),
        ('SoftlayerDetector', array['key', 'pw', 'pass', 'token', 'softlayer'], true),
        ('SquareOAuthDetector', array['sq0csp-'], false),
        ('StripeDetector', array['k_live_'], false),
        ('TelegramBotTokenDetector', array[':'], false),
        ('TwilioKeyDetector', array['AC', 'SK'], false),
        ('password in a sentence', array['senha', 'passw', 'pin', 'digo de acesso'], true),
        ('private key END line', array['PRIVATE KEY'], false),
        ('encoded key body (PEM lines)', array[E'\n'], false),
        ('OpenAI project key', array['sk-proj-', 'sk-svcacct-', 'sk-admin-'], false),
        ('Artifactory token', array['AKC', 'AP'], false)
    ) as r (name, literals, folded)
    cross join lateral unnest(r.literals) as l (literal)
$function$;

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
    lowered text;
    hit record;
begin
    for v in 1 .. 3 loop
        continue when views[v] = '' or not (views[v] ~ run_marked or views[v] ~ literal
                or views[v] ~* literal_folded or (views[v] ~ run and views[v] ~* named_folded));
        -- After the screen, the rules whose literal the view holds (_credential_rule_literals), as
        -- three expressions: the case-sensitive ones without lookaround, the ones with it, the
        -- case-insensitive ones (the rules one by one would overflow the session's cache of 32
        -- compiled expressions in a batch; lookaround told by strpos, not by one more expression).
        lowered := translate(views[v], 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz');
        select '(' || string_agg(r.pattern, ')|(') filter (where not r.ignore_case and not r.around) || ')',
            '(' || string_agg(r.pattern, ')|(') filter (where not r.ignore_case and r.around) || ')',
            '(' || string_agg(r.pattern, ')|(') filter (where r.ignore_case) || ')'
        into plain, around, folded
        from (
            select x.name, x.pattern, x.ignore_case,
                strpos(x.pattern, '(?=') + strpos(x.pattern, '(?!') + strpos(x.pattern, '(?<') > 0 as around
            from (select * from hipocampo_private._secret_rules()
                union all select * from hipocampo_private._own_credential_rules()) as x
        ) as r
        where exists (
            select 1 from hipocampo_private._credential_rule_literals() as l
            where l.name = r.name
                and strpos(case when l.folded then lowered else views[v] end, l.literal) > 0
        );
        continue when not (coalesce(views[v] ~ plain, false) or coalesce(views[v] ~ around, false)
            or coalesce(views[v] ~* folded, false));
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

revoke execute on function hipocampo_private._credential_rule_literals() from public;
grant execute on function hipocampo_private._credential_rule_literals() to authenticated;
grant execute on function hipocampo_private._credential_rule_literals() to service_role;
