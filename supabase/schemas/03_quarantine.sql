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
    insert into hipocampo_private.documents as d (
        tenant_id, kb_id, source_type, title, source_uri, content_hash, status, chunk_count, quarantine
    )
    values (
        k.tenant_id, k.id, quarantine_document.source_type, quarantine_document.title,
        quarantine_document.source_uri, quarantine_document.content_hash, 'quarantined', 0,
        jsonb_build_object('kind', kind, 'reason', reason, 'at', now())
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

comment on function hipocampo.quarantine_document(uuid, text, text, text, text, text, text) is
'Keep a file out of a knowledge base with its reason (status quarantined, no text, no chunks).';

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
_credential_found(content text, cfg jsonb) -> text

Purpose: the forbidden-sources check for credentials written in a document that detect-secrets'
  rules (run by the Python client) do not know: the first match of any of
  forbidden_sources.credential_patterns (case-insensitive POSIX regexes), without the secret.
Parameters: content - the text as loaded; cfg - the forbidden_sources config section.
Returns: the reason ("a credential (forbidden_sources.credential_patterns[2]) on line 7"), or null.
Errors: none of its own.
*/
create or replace function hipocampo_private._credential_found(content text, cfg jsonb)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
    select pg_catalog.format('a credential (forbidden_sources.credential_patterns[%s]) on line %s',
        p.n, hipocampo_private._line_of(content, pg_catalog.regexp_instr(content, p.pattern, 1, 1, 0, 'i')))
    from pg_catalog.jsonb_array_elements_text(cfg -> 'credential_patterns') with ordinality as p (pattern, n)
    where content ~* p.pattern
    order by p.n
    limit 1
$$;

/*
_transcript_found(content text, cfg jsonb) -> text

Purpose: the forbidden-sources check for a conversation with an AI assistant: lines opened by a
  speaker label ("Usuário:", "Você:", "User:", "**ChatGPT:**", "> Assistente:"), at least
  forbidden_sources.transcript_min_turns of them, two or more an assistant's (assistente, IA, AI,
  bot, chatbot, ChatGPT, GPT-4, Claude, Gemini, Copilot, LLM) and one or more a user's. A FAQ's
  "P:" / "R:" and minutes naming people ("Síndico:") are not transcripts.
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
        || '(assistente( [a-z]+)?|assistant|ia|ai|bot|chatbot|chatgpt|gpt(-?[0-9][a-z0-9.]*)?|claude|gemini|copilot|llm)'
        || closing, 1, 'n');
    if assistant < 2 then
        return null;
    end if;
    users := pg_catalog.regexp_count(plain, opening || '(usuari[oa]|user|voce|you|eu|human[oa]?)' || closing, 1, 'n');
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
  amount (1.234,56 or 1,234.56, optionally signed or marked C / D).
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
        '([0-9]{1,3}(\.[0-9]{3})*,[0-9]{2}|[0-9]{1,3}(,[0-9]{3})*\.[0-9]{2})[ \t]*([cCdD+-])?[ \t]*$', 1, 'n');
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
  (_credential_found), transcript, financial_statement, biometric, with its reason.
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
