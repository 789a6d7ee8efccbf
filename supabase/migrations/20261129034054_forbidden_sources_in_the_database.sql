-- forbidden sources in the database.
-- issue 57 §6: the forbidden-sources check on the database's write path (ingest_document and ingest_documents), over the PII normalizer's text, pieces joined and base64 decoded; detect-secrets' token rules in the database; passwords in a sentence, PEM bodies, U:/A: transcripts, statements with BRL or as CSV. The PII normalizer keeps º ª and m² as written
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._forbidden_items(k hipocampo_private.knowledge_bases, items jsonb)
returns jsonb
language plpgsql
stable
set search_path to ''
as $function$
declare
    cfg jsonb := hipocampo_private._require_config(
        hipocampo.effective_config(k.tenant_id, k.id) -> 'forbidden_sources', 'forbidden_sources',
        array['credential_patterns', 'transcript_min_turns', 'ledger_min_lines', 'biometric_min_payload_chars']
    );
begin
    return coalesce((
        select jsonb_agg(jsonb_build_object('i', f.i, 'kind', f.found[1], 'reason', f.found[2], 'action', f.action)
            order by f.i)
        from (
            select x.i, x.found, coalesce(cfg -> 'by_source_type' -> x.source_type ->> x.found[1],
                cfg ->> x.found[1], 'refuse') as action
            from (
                select (e.ordinality - 1)::integer as i, coalesce(e.value -> 'document' ->> 'source_type', 'other') as source_type,
                    hipocampo_private._forbidden_kind((
                        select string_agg(c.value ->> 'content', E'\n' order by (c.value ->> 'chunk_index')::integer)
                        from jsonb_array_elements(e.value -> 'chunks') as c
                    ), cfg) as found
                from jsonb_array_elements(items) with ordinality as e
                where not exists (
                    select 1 from hipocampo_private.documents as d
                    where d.kb_id = k.id and d.source_uri = e.value -> 'document' ->> 'source_uri'
                        and d.content_hash = e.value -> 'document' ->> 'content_hash' and d.status <> 'quarantined'
                )
            ) as x
            where x.found is not null
        ) as f
        where f.action <> 'allow'
    ), '[]'::jsonb);
end;
$function$;

create or replace function hipocampo_private._forbidden_views(content text)
returns text[]
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
declare
    normal text := hipocampo_private._pii_normalize(content);
    piece constant text := '(?:[A-Za-z0-9+/=]*[_-][A-Za-z0-9_+/=-]*|[A-Za-z_+/=-]*[0-9][A-Za-z0-9_+/=-]*|[A-Z0-9_+/=-]{2,})';
    decoded text;
    joined text;
begin
    select coalesce(string_agg(convert_from(b.bytes, 'UTF8'), E'\n'), '') into decoded
    from (
        select decode(t.token || repeat('=', (4 - char_length(t.token) % 4) % 4), 'base64') as bytes
        from (
            select distinct rtrim(m[1], '=') as token
            from regexp_matches(normal, '([A-Za-z0-9+/]{16,}={0,2})', 'g') as m
        ) as t
        where char_length(t.token) <= 4096 and char_length(t.token) % 4 <> 1
    ) as b
    where encode(b.bytes, 'hex') ~ '^(0a|0d|09|[2-6][0-9a-f]|7[0-9a-e])+$';
    -- runs of token-like pieces (with a digit, a "_" or "-", or in capitals) split by spaces, line
    -- breaks or a hyphen at a line's end, joined: prose between them is not read again
    select coalesce(string_agg(regexp_replace(m[1], '-[ \t]*\r?\n[ \t]*|\s+', '', 'g'), E'\n'), '') into joined
    from regexp_matches(normal, '(' || piece || '(?:(?:-[ \t]*\r?\n[ \t]*|\s+)' || piece || ')+)', 'g') as m;
    return array[normal, joined, decoded];
end;
$function$;

create or replace function hipocampo_private._own_credential_rules()
returns table (name text, pattern text, ignore_case boolean)
language sql
immutable parallel safe
set search_path to ''
as $function$
    select r.name, r.pattern, r.ignore_case
    from (values
        ('password in a sentence',
            '\m(senha|password|passwd|pin|c[oó]digo de acesso)( (d[aoe]s?|of|for|to) [^\n.:;]{1,40}?)? '
            || '(é|eh|e|is|was|era|:|=) *["“'']?[^ \n"”'']*[0-9#@$%&*!?_+=][^ \n"”'']*', true),
        ('private key END line', '-----END [A-Z ]*PRIVATE KEY[A-Z ]*-----', false),
        ('encoded key body (PEM lines)', '(^|\n)[A-Za-z0-9+/]{64}\r?\n[A-Za-z0-9+/]{64}\r?\n[A-Za-z0-9+/]{64}\r?\n', false),
        ('OpenAI project key', 'sk-(proj|svcacct|admin)-[A-Za-z0-9_-]{20,}', false),
        -- detect-secrets' Artifactory rule with a digit required ("APARTAMENTO" has its form)
        ('Artifactory token', '(?:\s|=|:|"|^)(?=AKC[a-zA-Z0-9]{10,}(?:\s|"|$)|AP[0-9A-F][a-zA-Z0-9]{8,}(?:\s|"|$))[a-zA-Z]*[0-9]',
            false)
    ) as r (name, pattern, ignore_case)
$function$;

create or replace function hipocampo_private._quarantine(k hipocampo_private.knowledge_bases, source_uri text, title text, source_type text, kind text, reason text, content_hash text)
returns uuid
language plpgsql
set search_path to ''
as $function$
declare
    doc_id uuid;
begin
    insert into hipocampo_private.documents as d (
        tenant_id, kb_id, source_type, title, source_uri, content_hash, status, chunk_count, quarantine
    )
    values (
        k.tenant_id, k.id, _quarantine.source_type, _quarantine.title, _quarantine.source_uri,
        _quarantine.content_hash, 'quarantined', 0, jsonb_build_object('kind', kind, 'reason', reason, 'at', now())
    )
    on conflict on constraint documents_kb_source_uri_key do update set
        source_type = excluded.source_type, title = excluded.title, content_hash = excluded.content_hash,
        status = 'quarantined', chunk_count = 0, quarantine = excluded.quarantine, text_measures = null,
        updated_at = now()
    returning d.id into doc_id;
    delete from hipocampo_private.chunks as c where c.document_id = doc_id;
    return doc_id;
end;
$function$;

create or replace function hipocampo_private._secret_rules()
returns table (name text, pattern text, ignore_case boolean)
language sql
immutable parallel safe
set search_path to ''
as $function$
    select r.name, r.pattern, r.ignore_case
    from (values
-- detect-secrets rules: begin (python -m tools.secret_rules)
        ('AWSKeyDetector', '(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}', false),
        ('AWSKeyDetector', 'aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?[\''\"]([0-9a-zA-Z/+]{40})[\''\"]', true),
        ('AzureStorageKeyDetector', 'AccountKey=[a-zA-Z0-9+\/=]{88}', false),
        ('BasicAuthDetector', '://[^:/\?\#\[\]@!\$\&''\(\)\*\+,;=\s]+:([^:/\?\#\[\]@!\$\&''\(\)\*\+,;=\s]+)@', false),
        ('CloudantDetector', '(?:^|\W)(?:\[|)(?:"|\''|)(?:cloudant|cl|clou)(?:_|-|)(?:api|)(?:key|pwd|pw|password|pass|token)(?:"|\''|)(?:\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:"|\''|)([0-9a-f]{64})(?:"|\''|)', true),
        ('CloudantDetector', '(?:^|\W)(?:\[|)(?:"|\''|)(?:cloudant|cl|clou)(?:_|-|)(?:api|)(?:key|pwd|pw|password|pass|token)(?:"|\''|)(?:\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:"|\''|)([a-z]{24})(?:"|\''|)', true),
        ('CloudantDetector', '(?:https?\:\/\/)[\w\-]+\:([0-9a-f]{64})\@[\w\-]+\.cloudant\.com', true),
        ('CloudantDetector', '(?:https?\:\/\/)[\w\-]+\:([a-z]{24})\@[\w\-]+\.cloudant\.com', true),
        ('DiscordBotTokenDetector', '[MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}', false),
        ('GitHubTokenDetector', '(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}', false),
        ('GitLabTokenDetector', '(glpat|gldt|glft|glsoat|glrt)-[A-Za-z0-9_\-]{20,50}(?!\w)', false),
        ('GitLabTokenDetector', 'GR1348941[A-Za-z0-9_\-]{20,50}(?!\w)', false),
        ('GitLabTokenDetector', 'glcbt-([0-9a-fA-F]{2}_)?[A-Za-z0-9_\-]{20,50}(?!\w)', false),
        ('GitLabTokenDetector', 'glimt-[A-Za-z0-9_\-]{25}(?!\w)', false),
        ('GitLabTokenDetector', 'glptt-[A-Za-z0-9_\-]{40}(?!\w)', false),
        ('GitLabTokenDetector', 'glagent-[A-Za-z0-9_\-]{50,}(?!\w)', false),
        ('GitLabTokenDetector', 'gloas-[A-Za-z0-9_\-]{64}(?!\w)', false),
        ('IbmCloudIamDetector', '(?:^|\W)(?:\[|)(?:"|\''|)(?:ibm(?:_|-|)cloud(?:_|-|)iam|cloud(?:_|-|)iam|ibm(?:_|-|)cloud|ibm(?:_|-|)iam|ibm|iam|cloud|)(?:_|-|)(?:api|)(?:_|-|)(?:key|pwd|password|pass|token)(?:"|\''|)(?:\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:"|\''|)([a-zA-Z0-9_\-]{44}(?![a-zA-Z0-9_\-]))(?:"|\''|)', true),
        ('IbmCosHmacDetector', '(?:^|\W)(?:\[|)(?:"|\''|)(?:(?:ibm)?[-_]?cos[-_]?(?:hmac)?|)(?:_|-|)(?:secret[-_]?(?:access)?[-_]?key)(?:"|\''|)(?:\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:"|\''|)([a-f0-9]{48}(?![a-f0-9]))(?:"|\''|)', true),
        ('JwtTokenDetector', 'eyJ[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+\.?[A-Za-z0-9_.+/=-]*?', false),
        ('MailchimpDetector', '[0-9a-z]{32}-us[0-9]{1,2}', false),
        ('NpmDetector', '\/\/.+\/:_authToken=\s*((npm_.+)|([A-Fa-f0-9-]{36})).*', false),
        ('OpenAIDetector', 'sk-[A-Za-z0-9_-]*[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}', false),
        ('PrivateKeyDetector', 'BEGIN DSA PRIVATE KEY', false),
        ('PrivateKeyDetector', 'BEGIN EC PRIVATE KEY', false),
        ('PrivateKeyDetector', 'BEGIN OPENSSH PRIVATE KEY', false),
        ('PrivateKeyDetector', 'BEGIN PGP PRIVATE KEY BLOCK', false),
        ('PrivateKeyDetector', 'BEGIN PRIVATE KEY', false),
        ('PrivateKeyDetector', 'BEGIN RSA PRIVATE KEY', false),
        ('PrivateKeyDetector', 'BEGIN SSH2 ENCRYPTED PRIVATE KEY', false),
        ('PrivateKeyDetector', 'PuTTY-User-Key-File-2', false),
        ('PypiTokenDetector', 'pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{70,}', false),
        ('PypiTokenDetector', 'pypi-AgENdGVzdC5weXBpLm9yZw[A-Za-z0-9_-]{70,}', false),
        ('SendGridDetector', 'SG\.[a-zA-Z0-9_-]{22}\.[a-zA-Z0-9_-]{43}', false),
        ('SlackDetector', 'xox(?:a|b|p|o|s|r)-(?:\d+-)+[a-z0-9]+', true),
        ('SlackDetector', 'https://hooks\.slack\.com/services/T[a-zA-Z0-9_]+/B[a-zA-Z0-9_]+/[a-zA-Z0-9_]+', true),
        ('SoftlayerDetector', '(?:^|\W)(?:\[|)(?:"|\''|)(?:softlayer|sl)(?:_|-|)(?:api|)(?:_|-|)(?:key|pwd|password|pass|token)(?:"|\''|)(?:\]|)(?: *)(?:=|:|:=|=>| +|::)(?: *)(?:"|\''|)([a-z0-9]{64})(?:"|\''|)', true),
        ('SoftlayerDetector', '(?:http|https)://api.softlayer.com/soap/(?:v3|v3.1)/([a-z0-9]{64})', true),
        ('SquareOAuthDetector', 'sq0csp-[0-9A-Za-z\\\-_]{43}', false),
        ('StripeDetector', '(?:r|s)k_live_[0-9a-zA-Z]{24}', false),
        ('TelegramBotTokenDetector', '\d{8,10}:[0-9A-Za-z_-]{35}', false),
        ('TwilioKeyDetector', 'AC[a-z0-9]{32}', false),
        ('TwilioKeyDetector', 'SK[a-z0-9]{32}', false)
    ) as r (name, pattern, ignore_case)
-- detect-secrets rules: end
$function$;

create or replace function hipocampo_private._write_checked_documents(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    state jsonb;  -- [{i, doc_id, old_hash, status}]: one element per item, in order
begin
    state := hipocampo_private._document_states(k, items, _write_checked_documents.embedding_model);
    if not jsonb_path_exists(state, '$[*] ? (@.status != "unchanged")') then
        -- Nothing to write: every document is stored with this model's chunks.
        return (
            select jsonb_agg(jsonb_build_object(
                'document_id', s.doc_id, 'status', s.status, 'chunks', 0, 'skipped', 0) order by s.i)
            from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        );
    end if;
    if jsonb_path_exists(state, '$[*] ? (@.status == "embedded" || @.status == "replaced")') then
        perform hipocampo_private._replace_documents(items, state, _write_checked_documents.embedding_model);
    end if;
    state := hipocampo_private._insert_documents(k, items, state);
    return hipocampo_private._insert_chunks(k, items, state, _write_checked_documents.embedding_model);
exception
    when insufficient_privilege then
        raise exception 'only tenant admins can ingest documents' using errcode = '42501';
    when check_violation then
        raise exception 'invalid document: %', sqlerrm using errcode = '23514';
    when invalid_text_representation or invalid_datetime_format or datetime_field_overflow
        or numeric_value_out_of_range then
        raise exception 'invalid document field: %', sqlerrm using errcode = '22023';
end;
$function$;

create or replace function hipocampo.quarantine_document(kb_id uuid, source_uri text, title text, source_type text, kind text, reason text, content_hash text)
returns uuid
language plpgsql
set search_path to ''
as $function$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(quarantine_document.kb_id);
    doc_id uuid;
begin
    if kind is null or kind not in ('credentials', 'transcript', 'financial_statement', 'biometric') then
        raise exception 'kind must be one of credentials, transcript, financial_statement, biometric (got %)',
            coalesce(kind, 'null') using errcode = '22023';
    end if;
    if char_length(coalesce(reason, '')) not between 1 and 500 then
        raise exception 'reason must have 1 to 500 characters' using errcode = '22023';
    end if;
    if char_length(coalesce(content_hash, '')) not between 1 and 128 then
        raise exception 'content_hash must have 1 to 128 characters' using errcode = '22023';
    end if;
    if char_length(coalesce(title, '')) not between 1 and 500 or coalesce(source_uri, '') = '' or source_type is null then
        raise exception 'title (1 to 500 characters), source_uri and source_type are required' using errcode = '22023';
    end if;
    if octet_length(source_uri) > 2048 then  -- as ingest_document: the unique index's row limit
        raise exception 'source_uri is % bytes; the limit is 2048', octet_length(source_uri) using errcode = '22001';
    end if;
    doc_id := hipocampo_private._quarantine(k, quarantine_document.source_uri, quarantine_document.title,
        quarantine_document.source_type, kind, reason, quarantine_document.content_hash);
    return doc_id;
end;
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
    exact text;
    folded text;
    hit record;
begin
    select '(' || string_agg(r.pattern, ')|(') filter (where not r.ignore_case) || ')',
        '(' || string_agg(r.pattern, ')|(') filter (where r.ignore_case) || ')'
    into exact, folded
    from (select * from hipocampo_private._secret_rules() union all select * from hipocampo_private._own_credential_rules()) as r;
    for v in 1 .. 3 loop
        continue when views[v] = '' or not (views[v] ~ exact or views[v] ~* folded);
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

create or replace function hipocampo_private._financial_statement_found(content text, cfg jsonb)
returns text
language plpgsql
stable
set search_path to ''
as $function$
declare
    head text := pg_catalog.lower(extensions.unaccent(pg_catalog.left(content, 2000)));
    title text := pg_catalog.substring(head, '\m(extrato|fatura|holerite|contracheque|demonstrativo de pagamento|'
        || 'informe de rendimentos|bank statement|account statement|payslip|pay stub)\M');
    lines integer;
begin
    if title is null then
        return null;
    end if;
    lines := pg_catalog.regexp_count(content,
        '([0-9]{1,3}(\.[0-9]{3})*,[0-9]{2}|[0-9]{1,3}(,[0-9]{3})*\.[0-9]{2})[ \t]*([cCdD+-])?[ \t]*'
        -- then a currency code, or the rest of a CSV row (at most three short fields)
        || '(brl|r\$|usd|eur|reais)?[ \t]*([;,\t|][^;,\t|\n]{0,40}){0,3}$', 1, 'in');
    if lines < (cfg ->> 'ledger_min_lines')::integer then
        return null;
    end if;
    return pg_catalog.format('an individual financial statement (%s): %s lines of amounts', title, lines);
end;
$function$;

create or replace function hipocampo_private._forbidden_kind(content text, cfg jsonb)
returns text[]
language plpgsql
stable
set search_path to ''
as $function$
declare
    reason text;
begin
    if content is null then
        return null;
    end if;
    reason := hipocampo_private._credential_found(content, cfg);
    if reason is not null then
        return array['credentials', reason];
    end if;
    -- (the other kinds read the text as the PII normalizer gives it: "Ｕｓｕáｒｉｏ:" is a label)
    content := hipocampo_private._pii_normalize(content);
    reason := hipocampo_private._transcript_found(content, cfg);
    if reason is not null then
        return array['transcript', reason];
    end if;
    reason := hipocampo_private._financial_statement_found(content, cfg);
    if reason is not null then
        return array['financial_statement', reason];
    end if;
    reason := hipocampo_private._biometric_found(content, cfg);
    if reason is not null then
        return array['biometric', reason];
    end if;
    return null;
end;
$function$;

create or replace function hipocampo_private._pii_normalize(input text)
returns text
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
declare
    format_chars constant text := '[' || '\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e'
        || '\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438'
        || '\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f' || ']';
    marks constant text := hipocampo_private._pii_marks();
    -- the digit 0 of each script whose digits NFKC keeps (Python's unicodedata, Unicode 14)
    zeros constant integer [] := ('{' || '1632,1776,1984,2406,2534,2662,2790,2918,3046,3174,3302,3430,3558,3664,3792,3872,4160,4240,'
        || '6112,6160,6470,6608,6784,6800,6992,7088,7232,7248,42528,43216,43264,43472,43504,43600,'
        || '44016,66720,68912,69734,69872,69942,70096,70384,70736,70864,71248,71360,71472,71904,72016,'
        || '72784,73040,73120,92768,92864,93008,123200,123632,125264' || '}')::integer [];
    other_digits constant text := '[' || '\u0660-\u0669\u06f0-\u06f9\u07c0-\u07c9\u0966-\u096f\u09e6-\u09ef\u0a66-\u0a6f\u0ae6-\u0aef'
        || '\u0b66-\u0b6f\u0be6-\u0bef\u0c66-\u0c6f\u0ce6-\u0cef\u0d66-\u0d6f\u0de6-\u0def\u0e50-\u0e59'
        || '\u0ed0-\u0ed9\u0f20-\u0f29\u1040-\u1049\u1090-\u1099\u17e0-\u17e9\u1810-\u1819\u1946-\u194f'
        || '\u19d0-\u19d9\u1a80-\u1a89\u1a90-\u1a99\u1b50-\u1b59\u1bb0-\u1bb9\u1c40-\u1c49\u1c50-\u1c59'
        || '\ua620-\ua629\ua8d0-\ua8d9\ua900-\ua909\ua9d0-\ua9d9\ua9f0-\ua9f9\uaa50-\uaa59\uabf0-\uabf9'
        || '\U000104a0-\U000104a9\U00010d30-\U00010d39\U00011066-\U0001106f\U000110f0-\U000110f9'
        || '\U00011136-\U0001113f\U000111d0-\U000111d9\U000112f0-\U000112f9\U00011450-\U00011459'
        || '\U000114d0-\U000114d9\U00011650-\U00011659\U000116c0-\U000116c9\U00011730-\U00011739'
        || '\U000118e0-\U000118e9\U00011950-\U00011959\U00011c50-\U00011c59\U00011d50-\U00011d59'
        || '\U00011da0-\U00011da9\U00016a60-\U00016a69\U00016ac0-\U00016ac9\U00016b50-\U00016b59'
        || '\U0001e140-\U0001e149\U0001e2f0-\U0001e2f9\U0001e950-\U0001e959' || ']';
    s text := input;
begin
    if s is null then
        return null;
    end if;
    if s ~ '&#?[0-9A-Za-z]+;' then
        s := hipocampo_private._pii_entities(s);
    end if;
    s := hipocampo_private._pii_percent(s);
    if s ~ '<!--' then
        s := regexp_replace(s, '<!--.*?-->', '', 'g');
    end if;
    if s ~ '[^\u0001-\u007f]' then
        -- (what Portuguese writes with compatibility characters and a text with PII keeps: the
        -- ordinals º ª, and ² ³ after a letter, as in m² and cm³, pass NFKC in private-use stand-ins)
        s := regexp_replace(regexp_replace(translate(s, 'ºª', U&'\E000\E001'),
            '(?<=[[:alpha:]])²', U&'\E002', 'g'), '(?<=[[:alpha:]])³', U&'\E003', 'g');
        s := translate(normalize(s, nfkc), U&'\E000\E001\E002\E003', 'ºª²³');
        s := regexp_replace(s, format_chars, '', 'g');
        s := regexp_replace(s, marks, '', 'g');
        if s ~ other_digits then
            s := translate(s,
                (select string_agg(chr(z + d), '' order by z, d) from unnest(zeros) as z, generate_series(0, 9) as d),
                repeat('0123456789', cardinality(zeros)));
        end if;
    end if;
    return s;
end;
$function$;

create or replace function hipocampo_private._transcript_found(content text, cfg jsonb)
returns text
language plpgsql
stable
set search_path to ''
as $function$
declare
    plain text := pg_catalog.lower(extensions.unaccent(content));
    opening constant text := '^[ \t>#*_-]*';
    closing constant text := '[ \t*_]*(\([^)\n]{0,40}\))?[ \t*_]*:';
    assistant integer;
    users integer;
begin
    assistant := pg_catalog.regexp_count(plain, opening
        || '(assistente( [a-z]+)?|assistant|ia|ai|a|bot|chatbot|chatgpt|gpt(-?[0-9][a-z0-9.]*)?|claude|gemini|copilot|llm)'
        || closing, 1, 'n');
    if assistant < 2 then
        return null;
    end if;
    users := pg_catalog.regexp_count(plain, opening || '(usuari[oa]|user|u|voce|you|eu|human[oa]?)' || closing, 1, 'n');
    if users < 1 or assistant + users < (cfg ->> 'transcript_min_turns')::integer then
        return null;
    end if;
    return pg_catalog.format('a conversation with an AI assistant: %s turns', assistant + users);
end;
$function$;

create or replace function hipocampo_private._write_documents(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    held jsonb := hipocampo_private._forbidden_items(k, items);
    refused record;
    clean jsonb;
    written jsonb;
    quarantined jsonb := '{}';  -- position in items -> result
    h record;
    doc jsonb;
begin
    if held = '[]'::jsonb then
        return hipocampo_private._write_checked_documents(k, items, _write_documents.embedding_model);
    end if;
    select * into refused from jsonb_to_recordset(held) as x (i integer, kind text, reason text, action text)
    where x.action = 'refuse' order by x.i limit 1;
    if found then
        raise exception 'document % is of a forbidden kind (%): %; forbidden_sources refuses it',
            items -> refused.i -> 'document' ->> 'source_uri', refused.kind, refused.reason using errcode = '22023';
    end if;
    begin
        for h in select * from jsonb_to_recordset(held) as x (i integer, kind text, reason text) loop
            doc := items -> h.i -> 'document';
            quarantined := quarantined || jsonb_build_object(h.i::text, jsonb_build_object(
                'document_id', hipocampo_private._quarantine(k, doc ->> 'source_uri', doc ->> 'title',
                    coalesce(doc ->> 'source_type', 'other'), h.kind, h.reason, doc ->> 'content_hash'),
                'status', 'quarantined', 'chunks', 0, 'skipped', jsonb_array_length(items -> h.i -> 'chunks'),
                'quarantine', jsonb_build_object('kind', h.kind, 'reason', h.reason)));
        end loop;
    exception when insufficient_privilege then
        raise exception 'only tenant admins can ingest documents' using errcode = '42501';
    end;
    select jsonb_agg(e.value order by e.ordinality) into clean
    from jsonb_array_elements(items) with ordinality as e
    where not quarantined ? (e.ordinality - 1)::text;
    written := case when clean is null then '[]'::jsonb
        else hipocampo_private._write_checked_documents(k, clean, _write_documents.embedding_model) end;
    -- the results in the order of items: a quarantined item's, else the next written one's
    return (
        select jsonb_agg(coalesce(quarantined -> (e.i)::text,
            written -> (e.i - (select count(*) from jsonb_object_keys(quarantined) as q where q::integer < e.i))::integer)
            order by e.i)
        from generate_series(0, jsonb_array_length(items) - 1) as e (i)
    );
end;
$function$;

revoke execute on function hipocampo_private._forbidden_items(k hipocampo_private.knowledge_bases, items jsonb) from public;
revoke execute on function hipocampo_private._forbidden_views(content text) from public;
revoke execute on function hipocampo_private._own_credential_rules() from public;
revoke execute on function hipocampo_private._quarantine(k hipocampo_private.knowledge_bases, source_uri text, title text, source_type text, kind text, reason text, content_hash text) from public;
revoke execute on function hipocampo_private._secret_rules() from public;
revoke execute on function hipocampo_private._write_checked_documents(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text) from public;
grant execute on function hipocampo_private._forbidden_items(k hipocampo_private.knowledge_bases, items jsonb) to authenticated;
grant execute on function hipocampo_private._forbidden_items(k hipocampo_private.knowledge_bases, items jsonb) to service_role;
grant execute on function hipocampo_private._forbidden_views(content text) to authenticated;
grant execute on function hipocampo_private._forbidden_views(content text) to service_role;
grant execute on function hipocampo_private._own_credential_rules() to authenticated;
grant execute on function hipocampo_private._own_credential_rules() to service_role;
grant execute on function hipocampo_private._quarantine(k hipocampo_private.knowledge_bases, source_uri text, title text, source_type text, kind text, reason text, content_hash text) to authenticated;
grant execute on function hipocampo_private._quarantine(k hipocampo_private.knowledge_bases, source_uri text, title text, source_type text, kind text, reason text, content_hash text) to service_role;
grant execute on function hipocampo_private._secret_rules() to authenticated;
grant execute on function hipocampo_private._secret_rules() to service_role;
grant execute on function hipocampo_private._write_checked_documents(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text) to authenticated;
grant execute on function hipocampo_private._write_checked_documents(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text) to service_role;
