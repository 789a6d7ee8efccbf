-- Forbidden sources (issue 45 §4): what must never enter a knowledge base. The ingestion pipeline
-- detects credentials, chat transcripts, individual financial statements and biometric records
-- (py_client/hipocampo/ingest/forbidden.py, under the config section forbidden_sources) and either
-- refuses the file (nothing stored) or quarantines it here: the document row stays, with its
-- reason and without text or chunks, so the CLI, the hub and `doc show` say why it is not
-- searchable. Writing the file again (its forbidden part removed) makes it an ordinary document.

/*
quarantine_document(kb_id uuid, source_uri text, title text, source_type text, kind text,
  reason text, content_hash text) -> uuid

Purpose: keep a file out of a knowledge base with its reason: the document at (kb_id,
  source_uri) becomes status 'quarantined' with quarantine {kind, reason, at}, and its chunks
  (every model's) are deleted, so search, answers and document_text no longer see any version
  of its text; a file not yet stored gets such a row. Idempotent for the same file.
Parameters: kb_id - a knowledge base of the caller's tenant (admins; service_role any);
  source_uri, title - as ingest_document (at most 2,048 bytes / 500 characters; scrubbed by the
  documents trigger); source_type - one
  of the documents' source types; kind - credentials | transcript | financial_statement |
  biometric; reason - 1..500 characters saying what was found and where (never the secret
  itself); content_hash - the hash of the file's text as loaded (1..128 characters).
Returns: the document's id.
Errors: 42501 as _caller (before any other work); P0002 "unknown knowledge base"; 22023 "kind
  must be one of credentials, transcript, financial_statement, biometric (got …)"; 22023 "reason
  must have 1 to 500 characters"; 22023 "content_hash must have 1 to 128 characters"; 22023
  "title (1 to 500 characters), source_uri and source_type are required"; 22001 "source_uri is n
  bytes; the limit is 2048"; 23514 an unknown
  source_type (documents_source_type_check); 42501 a member, not an admin (RLS).
Example: select hipocampo.quarantine_document(kb, 'file:///docs/chaves.env', 'chaves.env', 'other',
  'credentials', 'an AWS access key on line 3 (detect-secrets AWSKeyDetector)', 'ab12…');
*/
create or replace function hipocampo.quarantine_document(
    kb_id uuid, source_uri text, title text, source_type text, kind text, reason text, content_hash text
)
returns uuid
language plpgsql
volatile
security invoker
set search_path = ''
set jit = off
as $$
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
$$;

comment on function hipocampo.quarantine_document(uuid, text, text, text, text, text, text) is
'Keep a file out of a knowledge base with its reason (status quarantined, no text, no chunks).';

/*
_quarantine(k hipocampo_private.knowledge_bases, source_uri text, title text, source_type text,
  kind text, reason text, content_hash text) -> uuid

Purpose: the write of a quarantine, for quarantine_document and the ingestion write path
  (_write_documents): the document at (k, source_uri) becomes status 'quarantined' with
  quarantine {kind, reason, at} and no chunks (every model's deleted); a file not yet stored gets
  such a row.
Parameters: as quarantine_document's, already checked.
Returns: the document's id.
Errors: none of its own (the documents' policies and checks apply: 42501, 23514).
Example: select hipocampo_private._quarantine(k, 'file:///c.env', 'c.env', 'other', 'credentials', 'a credential …', 'ab12');
*/
create or replace function hipocampo_private._quarantine(
    k hipocampo_private.knowledge_bases, source_uri text, title text, source_type text, kind text, reason text,
    content_hash text
)
returns uuid
language plpgsql
volatile
security invoker
set search_path = ''
as $$
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
$$;

/*
_forbidden_items(k hipocampo_private.knowledge_bases, items jsonb) -> jsonb

Purpose: the forbidden-sources check on the database's write path (issue 57 §6: an admin's
  ingest_document stored what the CLI would quarantine): each item's text (its chunks' contents
  in chunk order, a line each) through _forbidden_kind under the knowledge base's
  forbidden_sources config, and what the config says to do with a document of that kind and
  source type (by_source_type.<type>.<kind>, else <kind>, else refuse; as the Python client's
  action_for). An item whose document is stored with the same content_hash and not quarantined
  is the text already accepted, and is not read again.
Parameters: k - the knowledge base; items - as _write_documents'.
Returns: [{"i" (0-based position in items), "kind", "reason", "action": "refuse" | "quarantine"}]
  for the items found to be of a kind that is not allowed; [] when none.
Errors: 55000 "forbidden_sources config is incomplete: …" (_require_config).
Example: select hipocampo_private._forbidden_items(k, '[{"document": {…}, "chunks": […]}]');
*/
create or replace function hipocampo_private._forbidden_items(k hipocampo_private.knowledge_bases, items jsonb)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
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
$$;

/*
_clear_quarantine() -> trigger

Purpose: BEFORE UPDATE trigger of documents: a quarantined document that the ingestion write path
  writes again (a new content_hash without a new quarantine) is an ordinary document again
  (status active, quarantine null); a document that leaves status 'quarantined' loses its
  quarantine. quarantine_document itself sets both, and passes.
Returns: NEW.
Errors: none of its own.
*/
create or replace function hipocampo_private._clear_quarantine()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    if old.status = 'quarantined' and new.status = 'quarantined'
        and new.content_hash is distinct from old.content_hash
        and new.quarantine is not distinct from old.quarantine then
        new.status := 'active';
    end if;
    if new.status <> 'quarantined' then
        new.quarantine := null;
    end if;
    return new;
end;
$$;

create trigger documents_clear_quarantine
before update on hipocampo_private.documents
for each row execute function hipocampo_private._clear_quarantine();

/*
_line_of(content text, pos integer) -> integer

Purpose: the 1-based line number of character position pos (1-based) in content.
Returns: 1 + the line breaks before pos; null when pos is null or 0 (no match).
Errors: none.
Example: select hipocampo_private._line_of(E'a\nb\nc', 5); -- 3
*/
create or replace function hipocampo_private._line_of(content text, pos integer)
returns integer
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    select case when coalesce(pos, 0) > 0 then 1 + pg_catalog.regexp_count(pg_catalog.left(content, pos - 1), E'\n') end
$$;

/*
_secret_rules() -> table (name text, pattern text, ignore_case boolean)

Purpose: the credential rules of detect-secrets (Yelp's scanner, the version the Python client
  installs), the plugins that know a token by its form: AWS, Azure storage, basic
  auth in URLs, Cloudant, Discord, GitHub, GitLab, IBM Cloud, JWT, Mailchimp, npm, OpenAI, private
  keys, PyPI, SendGrid, Slack, Softlayer, Square, Stripe, Telegram, Twilio. Generated by
  `python -m tools.secret_rules` from the installed package (its entropy, keyword and public-IP
  rules left out, as in the Python client, and its Artifactory rule, which
  _own_credential_rules has with a digit required), each pattern as PostgreSQL reads it; a test
  compares them with the package's.
Returns: one row per pattern: the plugin's name, the regular expression, whether it ignores case.
Errors: none (a pure function).
Example: select name from hipocampo_private._secret_rules() where 'AKIAIOSFODNN7EXAMPLE' ~ pattern;
*/
create or replace function hipocampo_private._secret_rules()
returns table (name text, pattern text, ignore_case boolean)
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
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
$$;

/*
_own_credential_rules() -> table (name text, pattern text, ignore_case boolean)

Purpose: the credentials detect-secrets' token rules do not know by form, written the ways the
  issue 57 §6 probes wrote them: a password said in a sentence ("A senha do wifi da portaria é
  Portaria#2024", "the wifi password is …": a value with a digit or a symbol, so "a senha é
  pessoal" is not one), a private key's END line or its body without the BEGIN line (three lines
  of 64 base64 characters, PEM's width), OpenAI's project, service-account and admin keys, and
  detect-secrets' Artifactory rule with a digit required (its own takes all-caps words such as
  "APARTAMENTO" for a key).
Returns: as _secret_rules.
Errors: none (a pure function).
Example: select name from hipocampo_private._own_credential_rules()
  where 'A senha do wifi é Portaria#2024' ~* pattern; -- password in a sentence
*/
create or replace function hipocampo_private._own_credential_rules()
returns table (name text, pattern text, ignore_case boolean)
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
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
$$;

/*
_credential_rule_literals() -> table (name text, literal text, folded boolean)

Purpose: for each credential rule's name (_secret_rules, _own_credential_rules), strings one of
  which every match of each of its rules contains: the rule's fixed prefix ("ghp_", "AKIA",
  "glpat-"), or for a rule whose value follows a name, the words of that name ("key", "pass",
  "token"); folded: the literal is lower case and looked for in the text with A-Z lowered (the
  rule ignores case; a case-insensitive expression matches an ASCII letter only by its two
  cases). _credential_found builds its expressions, for a text its screen lets through, from the
  rules whose literal the text holds, so a text compiles the rules it could match, not all 48 (a
  backend caches 32 compiled expressions; the three of all rules cost ~30 ms to compile).
  tests/sql/test_forbidden_rewrites.py checks that every rule's name has literals and that
  matches generated from each detect-secrets rule are still found.
Returns: one row per literal.
Errors: none (a pure function).
Example: select literal from hipocampo_private._credential_rule_literals() where name = 'GitHubTokenDetector';
*/
create or replace function hipocampo_private._credential_rule_literals()
returns table (name text, literal text, folded boolean)
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
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
$$;

/*
_forbidden_views(content text) -> text[]

Purpose: the texts the credential check reads a file as (issue 57 §6: rewritten secrets got
  through): [1] the text through the PII normalizer (_pii_normalize: entities and
  percent-encoding decoded, NFKC, no format characters or combining marks, ASCII digits); [2]
  every run of token-like pieces of [1] (with a digit, a "_" or "-", or in capitals) split by
  spaces, line breaks or a hyphen that ends a line, joined, a line each (a key split across
  lines, in groups of 4 or 8, hyphenated at a line's end; prose between them is not read
  again); [3] every base64 token of [1] (16 to 4,096 characters) whose bytes are printable text,
  decoded, a line each.
Parameters: content - a file's text as loaded.
Returns: the three texts ([2] and [3] empty when there is no such run or token).
Errors: none (a pure function).
Example: select hipocampo_private._forbidden_views(E'AKIA IOSF\nODNN 7EXA MPLE'); -- {…,AKIAIOSFODNN7EXAMPLE,""}
*/
create or replace function hipocampo_private._forbidden_views(content text)
returns text[]
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
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
$$;

/*
_credential_found(content text, cfg jsonb) -> text

Purpose: the forbidden-sources check for credentials, in the database whoever writes (issue 57
  §6): detect-secrets' token rules (_secret_rules) and hipocampo's own (_own_credential_rules)
  over each of the file's views (_forbidden_views: normalized, token-like pieces joined, base64
  decoded), then forbidden_sources.credential_patterns (case-insensitive POSIX regexes, the
  tenant's) over the normalized text; the first that matches, without the secret. A view is
  first screened by small expressions one of which every rule's match satisfies: a run of 20
  token characters holding a capital, a digit or one of
  _+=\; a literal of the rules whose token can be shorter or all small letters ("://…@", "eyJ",
  "_authToken", "PRIVATE KEY", PuTTY's header, Artifactory's "AKC" / "AP" and a digit, eight
  digits and ":" (Telegram), a PEM line of small letters, Slack's "xox" and hooks URL, a password
  word and a space); or a run of 20 and a word of the rules whose value follows a name (aws, pw,
  key, pass, token, secret, softlayer, GitLab's and OpenAI's prefixes, Mailchimp's "-us" and a
  digit). A view that passes is tried with the rules whose literal it holds
  (_credential_rule_literals: a prefix such as "ghp_", or the words of the name before the value)
  as three expressions, and only one they match is read rule by rule. Most prose passes no
  screen, and a view that does compiles the few rules it could match, not all 48 (the three
  expressions of all of them take ~30 ms to compile, and the session's cache of 32 compiled
  expressions does not keep them through ingestion's other checks).
  tests/sql/test_forbidden_rewrites.py: every rule's matches, generated from detect-secrets' own
  expressions, are found past the screen and the literals.
Parameters: content - the text as loaded; cfg - the forbidden_sources config section.
Returns: the reason ("a credential (GitHubTokenDetector) on line 7", "a credential
  (AWSKeyDetector) written split or spaced", "… in base64", "a credential
  (forbidden_sources.credential_patterns[2]) on line 7"), or null.
Errors: none of its own.
Example: select hipocampo_private._credential_found('token ghp_…', cfg);
*/
create or replace function hipocampo_private._credential_found(content text, cfg jsonb)
returns text
language plpgsql
stable
security invoker
set search_path = ''
as $$
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
$$;

/*
_transcript_found(content text, cfg jsonb) -> text

Purpose: the forbidden-sources check for a conversation with an AI assistant: lines opened by a
  speaker label ("Usuário:", "Você:", "User:", "**ChatGPT:**", "> Assistente:"), at least
  forbidden_sources.transcript_min_turns of them, two or more an assistant's (assistente, IA, AI,
  A, bot, chatbot, ChatGPT, GPT-4, Claude, Gemini, Copilot, LLM) and one or more a user's (U,
  usuário, user, você, eu, humano). A FAQ's "P:" / "R:" or "Q:" / "A:" (no user's line) and minutes
  naming people ("Síndico:") are not transcripts.
Parameters: content - the text as loaded; cfg - the forbidden_sources config section.
Returns: the reason ("a conversation with an AI assistant: 12 turns"), or null.
Errors: none of its own.
*/
create or replace function hipocampo_private._transcript_found(content text, cfg jsonb)
returns text
language plpgsql
stable
security invoker
set search_path = ''
as $$
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
$$;

/*
_financial_statement_found(content text, cfg jsonb) -> text

Purpose: the forbidden-sources check for an individual's financial statement (bank statement,
  card bill, payslip, income report): a title word (extrato, fatura, holerite, contracheque,
  demonstrativo de pagamento, informe de rendimentos, bank/account statement, payslip) in its
  first 2,000 characters, and at least forbidden_sources.ledger_min_lines lines that end in an
  amount (1.234,56 or 1,234.56, optionally signed or marked C / D, then perhaps a currency code,
  BRL, R$, USD, EUR, or the last fields of a CSV row: "05/01;PIX;-1.234,56;BRL").
Parameters: content - the text as loaded; cfg - the forbidden_sources config section.
Returns: the reason ("an individual financial statement (extrato): 14 lines of amounts"), or null.
Errors: none of its own.
*/
create or replace function hipocampo_private._financial_statement_found(content text, cfg jsonb)
returns text
language plpgsql
stable
security invoker
set search_path = ''
as $$
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
$$;

/*
_biometric_found(content text, cfg jsonb) -> text

Purpose: the forbidden-sources check for a biometric record: a biometric word (biometria,
  impressão digital, template biométrico, minúcias, reconhecimento facial, íris, fingerprint,
  face template) and an encoded payload (a run of base64 or hex characters) of at least
  forbidden_sources.biometric_min_payload_chars characters. A policy saying that the gate opens
  by fingerprint has the word and no payload.
Parameters: content - the text as loaded; cfg - the forbidden_sources config section.
Returns: the reason ("a biometric record (impressao digital): an encoded template of 1024
  characters on line 4"), or null.
Errors: none of its own.
*/
create or replace function hipocampo_private._biometric_found(content text, cfg jsonb)
returns text
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    word text := pg_catalog.substring(pg_catalog.lower(extensions.unaccent(content)),
        '\m(biometri[a-z]*|impressao digital|impressoes digitais|template biometrico|minucias|reconhecimento facial|'
        || 'iris|fingerprint|face template|faceprint)\M');
    payload record;
begin
    if word is null then
        return null;
    end if;
    select t.run, pg_catalog.strpos(content, t.run) as pos into payload
    from pg_catalog.regexp_split_to_table(content, '[^A-Za-z0-9+/=_-]+') as t (run)
    where pg_catalog.char_length(t.run) >= (cfg ->> 'biometric_min_payload_chars')::integer
    limit 1;
    if payload.run is null then
        return null;
    end if;
    return pg_catalog.format('a biometric record (%s): an encoded template of %s characters on line %s',
        word, pg_catalog.char_length(payload.run), hipocampo_private._line_of(content, payload.pos));
end;
$$;

/*
_forbidden_kind(content text, cfg jsonb) -> text[]

Purpose: the first forbidden kind a text is of, in the order credentials
  (_credential_found, over the text's views), transcript, financial_statement, biometric (over
  the text through _pii_normalize), with its reason.
Parameters: content - a file's text as loaded; cfg - the forbidden_sources config section.
Returns: [kind, reason], or null when the text is null or of no forbidden kind.
Errors: none of its own.
Example: select hipocampo_private._forbidden_kind(E'Usuário: oi\nIA: olá\nUsuário: e?\nIA: sim', cfg);
*/
create or replace function hipocampo_private._forbidden_kind(content text, cfg jsonb)
returns text[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
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
$$;

/*
forbidden_content(texts text[], kb_id uuid) -> table (n integer, kind text, reason text)

Purpose: the database's part of the forbidden-sources check (issue 45 §4) of the files an
  ingestion is about to write, under the knowledge base's forbidden_sources config: credentials
  by forbidden_sources.credential_patterns (_credential_found), conversations with an AI
  (_transcript_found), individual financial statements (_financial_statement_found) and
  biometric records (_biometric_found), in that order. The Python client adds detect-secrets'
  rules and decides per kind and source type what to do (refuse, quarantine, allow). Reads
  nothing but the config (steps: _forbidden_kind).
Parameters: texts - the files' texts as loaded (before the PII scrub), in order; at most 64
  texts and 33,554,432 characters in all per call; kb_id - whose config applies (the caller's
  tenant's knowledge base).
Returns: one row per text found to be of a forbidden kind: n (1-based position in texts), kind
  (credentials | transcript | financial_statement | biometric) and the reason, which says what
  and where (a line number), never the secret itself. Texts of no forbidden kind give no row.
Errors: 42501 as _caller (before any other work); P0002 "unknown knowledge base"; 22023 "at most
  64 texts and 33554432 characters per call"; 55000 "forbidden_sources config is incomplete: …".
Example: select * from hipocampo.forbidden_content(array['Usuário: oi', 'Regimento interno…'], kb);
*/
create or replace function hipocampo.forbidden_content(texts text[], kb_id uuid)
returns table (n integer, kind text, reason text)
language plpgsql
stable
security invoker
set search_path = ''
set jit = off
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(forbidden_content.kb_id);
    cfg jsonb := hipocampo_private._require_config(
        hipocampo.effective_config(k.tenant_id, k.id) -> 'forbidden_sources', 'forbidden_sources',
        array['credential_patterns', 'transcript_min_turns', 'ledger_min_lines', 'biometric_min_payload_chars']
    );
begin
    if coalesce(pg_catalog.cardinality(texts), 0) > 64
        or (select coalesce(sum(pg_catalog.char_length(t)), 0) from unnest(texts) as t) > 33554432 then
        raise exception 'at most 64 texts and 33554432 characters per call' using errcode = '22023';
    end if;
    return query
    select f.n::integer, f.found[1], f.found[2]
    from (
        select t.n, hipocampo_private._forbidden_kind(t.content, cfg) as found
        from unnest(texts) with ordinality as t (content, n)
    ) as f
    where f.found is not null
    order by f.n;
end;
$$;

comment on function hipocampo.forbidden_content(text[], uuid) is
'Which of these texts are of a forbidden kind (credentials, transcript, financial statement, biometric), and why.';
