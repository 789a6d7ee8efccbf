-- Words of any script count as words when texts are compared (normalize_question, the answer
-- cache's key; the memory gate's noise check and copy check). The memory gate kept only ASCII
-- letters and digits, so a description in Japanese, Cyrillic or Arabic was refused as noise;
-- normalize_question used [[:alnum:]], which is ASCII only under a C LC_CTYPE, where two questions
-- in Japanese shared one cache key. One function, hipocampo_private._plain_words, now does both,
-- by Unicode code-point ranges (independent of the locale). Restated from
-- supabase/schemas/06_memory.sql and 10_answers.sql; re-runnable.
set local check_function_bodies = off;

/*
_plain_words(body text) -> text

Purpose: a text reduced to its words, for comparing texts (the answer cache's key,
  normalize_question; the memory gate's noise list and copy check): lower case, unaccented,
  every run of other characters one space, trimmed. Letters and digits of any script are kept:
  ASCII letters and digits and the Unicode blocks that hold letters (U+00C0-U+1FFF: Latin,
  Greek, Cyrillic, Hebrew, Arabic, Indic and the other scripts up to Greek extended; U+2C00-
  U+2DFF; CJK, kana, Hangul; Arabic presentation forms; fullwidth letters and digits; the
  supplementary planes' scripts and CJK). Punctuation, symbols and emoji are not (U+0080-
  U+00BF, U+2000-U+2BFF, U+3000-U+303F, U+FE00-U+FE6F, U+1F000 onwards …). The ranges are
  code points, not [[:alnum:]], so which characters are words does not depend on the
  database's LC_CTYPE (under C, [[:alnum:]] is ASCII only: two questions in Japanese were one
  cache key, and a memory in Cyrillic was refused as noise); lower() does (under C only ASCII
  letters are lowered).
Returns: the words separated by single spaces; '' for null or a text without a word.
Errors: none.
Example: select hipocampo_private._plain_words('  Qual é o PRAZO? 👍'); -- 'qual e o prazo'
*/
create or replace function hipocampo_private._plain_words(body text)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
    select pg_catalog.btrim(pg_catalog.regexp_replace(
        pg_catalog.lower(extensions.unaccent(coalesce(body, ''))),
        '[^a-z0-9\u00c0-\u1fff\u2c00-\u2dff\u2e80-\u2fff\u3040-\ud7ff\uf900-\ufdff\ufe70-\ufeff'
        '\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\uff66-\uffdc\U00010000-\U0001efff\U00020000-\U0003ffff]+',
        ' ', 'g'
    ))
$$;

/*
_memory_text_problem(description text, token_count integer, cfg jsonb) -> text[]

Purpose: the gate's checks of a memory's description: length (memory.min_chars characters,
  memory.max_tokens tokens estimated as ceil(characters / 4) unless the client reports more),
  noise (memory.noise), then personal and sensitive data (_pii_problem).
Returns: null, or [reason, message] with reason too_short | too_long | noise | personal_data |
  sensitive_data.
Errors: none of its own (55000 from a config missing its keys is raised by _memory_config).
*/
create or replace function hipocampo_private._memory_text_problem(description text, token_count integer, cfg jsonb)
returns text[]
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    normalized text := hipocampo_private._plain_words(description);
begin
    if char_length(btrim(coalesce(description, ''))) < (cfg ->> 'min_chars')::integer then
        return array['too_short', format('memory text must have at least %s characters',
            (cfg ->> 'min_chars')::integer)];
    end if;
    if greatest(coalesce(token_count, 0), ceil(char_length(description) / 4.0)::integer)
        > (cfg ->> 'max_tokens')::integer then
        return array['too_long', format('memory text exceeds %s tokens',
            (cfg ->> 'max_tokens')::integer)];
    end if;
    if normalized = '' or normalized in (
        select jsonb_array_elements_text(cfg -> 'noise')
    ) then
        return array['noise', format('"%s" is conversational noise, not a memory', btrim(description))];
    end if;
    return hipocampo_private._pii_problem(description, cfg, 'memory text');
end;
$$;

/*
normalize_question(question text) -> text

Purpose: the cache key of a question: its words (_plain_words: lower case, unaccented,
  punctuation, symbols and emoji removed, whitespace collapsed; letters of any script kept), so
  "Qual é o prazo?" and "qual e o  prazo" share one key and two questions in Japanese do not.
Returns: the normalised text ('' for null).
Errors: none (a pure function).
Example: select hipocampo.normalize_question('  Qual é o PRAZO? '); -- 'qual e o prazo'
*/
create or replace function hipocampo.normalize_question(question text)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
    select hipocampo_private._plain_words(question)
$$;

revoke execute on function hipocampo_private._plain_words(text) from public;
grant execute on function hipocampo_private._plain_words(body text) to authenticated, service_role;
