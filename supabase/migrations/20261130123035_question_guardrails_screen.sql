-- question guardrails screen.
-- question_refusal screens each set of patterns with LIKE on the words they start with: the regular expressions no longer compile on every question (6 ms a call)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo.question_refusal(question text, min_chars integer, max_chars integer)
returns text
language plpgsql
stable parallel safe
set search_path to ''
set jit to 'off'
as $function$
declare
    q text := regexp_replace(coalesce(question, ''), '^\s+|\s+$', '', 'g');
    plain text;
    words text;
    counts jsonb;
begin
    if char_length(q) < min_chars or char_length(q) > max_chars
        or coalesce(question, '') ~ '[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]' then
        return 'invalid_question';
    end if;
    plain := lower(extensions.unaccent(q));
    -- Each pattern below starts with one of these words (\y: between a word character, [[:alnum:]_],
    -- and another): the screen, over the words with single spaces between, keeps a question that has
    -- none from running (and compiling) them. PostgreSQL caches 32 compiled regular expressions a
    -- session and one ask uses more, so each was compiled on every question (6 ms a call).
    words := ' ' || regexp_replace(plain, '\W+', ' ', 'g') || ' ';
    -- (?n): "." does not cross a line, as in the patterns' first version (Python re).
    if words like any (array[
        '% ignore %', '% disregard %', '% forget %', '% override %', '% ignora %', '% ignorar %', '% esqueca %',
        '% esquecer %', '% desconsidere %', '% desconsiderar %', '% reveal %', '% show %', '% print %',
        '% display %', '% repeat %', '% leak %', '% tell me %', '% revele %', '% revelar %', '% mostre %',
        '% mostrar %', '% exiba %', '% imprima %', '% repita %', '% diga %', '% prompt d_ sistema %',
        '% instrucoes d_ sistema %', '% jailbreak %', '% do anything now %', '% dan mode %', '% developer mode %',
        '% modo %', '% act %', '% pretend %', '% finja %', '% aja %', '% you are now %', '% voce agora e %'
    ]) and plain ~ any (array[
        '(?n)\y(ignore|disregard|forget|override)\y.{0,30}\y(previous|prior|above|earlier|all|your)\y.{0,20}'
        '\y(instructions?|rules|prompts?|directions)\y',
        '(?n)\y(ignore|ignora|esqueca|desconsidere|desconsiderar|ignorar|esquecer)\y.{0,30}\y(as |todas as |suas )?'
        '(instrucoes|regras|ordens|diretrizes)\y',
        '(?n)\y(reveal|show|print|display|repeat|leak|tell me)\y.{0,30}\y(system|hidden|initial|developer)\s+'
        '(prompt|instructions?|message)',
        '(?n)\y(revele|mostre|exiba|imprima|repita|diga|mostrar|revelar)\y.{0,30}\y(prompt|instrucoes)\y.{0,20}'
        '\y(sistema|ocultas?|iniciais|secretas?)\y',
        '\y(prompt|instrucoes) (do|de) sistema\y',
        '\yjailbreak\y|\ydo anything now\y|\ydan mode\y|\ydeveloper mode\y',
        '\ymodo (dan|desenvolvedor|sem restricoes)\y',
        '(?n)\y(act|pretend|finja|aja)\y.{0,40}\y(without|no|sem)\y.{0,15}\y(restrictions|rules|filters|limits|'
        'restricoes|regras|filtros|limites)\y',
        '(?n)\yyou are now\y|\yvoce agora e\y.{0,30}\y(sem|livre)\y'
    ]) then
        return 'prompt_injection';
    end if;
    -- The same screen for secrets: a key's prefix, or a ':' / '=' after a secret's name.
    if q like any (array['%sk-%', '%AKIA%', '%eyJ%', '%-----BEGIN %']) and q ~ any (array[
        '\ysk-[A-Za-z0-9_-]{16,}',
        '\yAKIA[0-9A-Z]{16}\y',
        '\yeyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.',
        '-----BEGIN [A-Z ]*PRIVATE KEY-----'
    ]) or (strpos(q, ':') > 0 or strpos(q, '=') > 0)
        and q ~* '\y(senha|password|passwd|api[_ -]?key|secret|token)\s*[:=]\s*\S{4,}' then
        return 'secret';
    end if;
    select s.counts into counts from hipocampo_private._pii_scrub(q) as s;
    if coalesce((counts ->> 'CPF')::integer, 0) > 0 or coalesce((counts ->> 'CARTAO')::integer, 0) > 0 then
        return 'sensitive_data';
    end if;
    return null;
end;
$function$;
