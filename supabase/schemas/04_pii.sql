-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

/*
cpf_is_valid(digits text) -> boolean / cnpj_is_valid(digits text) -> boolean

Purpose: the check digits of a CPF (11 digits) / CNPJ (14 digits); all-equal digits are invalid.
Returns: true when the check digits hold (false for null or a malformed string).
Errors: none (a pure function).
Example: select hipocampo_private.cpf_is_valid('52998224725'); -- true
*/
create or replace function hipocampo_private.cpf_is_valid(digits text)
returns boolean
language sql
immutable
security invoker
set search_path = ''
as $$
    select coalesce(digits ~ '^[0-9]{11}$' and digits !~ '^(.)\1*$'
        and (select (sum(substr(digits, i, 1)::integer * (11 - i)) * 10 % 11) % 10
             from generate_series(1, 9) as i) = substr(digits, 10, 1)::integer
        and (select (sum(substr(digits, i, 1)::integer * (12 - i)) * 10 % 11) % 10
             from generate_series(1, 10) as i) = substr(digits, 11, 1)::integer, false)
$$;

/*
cnpj_is_valid(digits text) -> boolean

Purpose: the check digits of a CNPJ: 14 characters, the first twelve digits or capital letters
  (the alphanumeric CNPJ the Receita Federal issues from July 2026, IN RFB 2.229/2024) and the
  last two digits; each character counts as its code minus 48 ('0' = 0, 'A' = 17), weighted
  modulo 11 as the numeric CNPJ always was. All-equal characters are invalid.
Returns: true when the check digits hold (false for null or a malformed string).
Errors: none (a pure function).
Example: select hipocampo_private.cnpj_is_valid('11222333000181'); -- true
  select hipocampo_private.cnpj_is_valid('12ABC34501DE35'); -- true
*/
create or replace function hipocampo_private.cnpj_is_valid(digits text)
returns boolean
language sql
immutable
security invoker
set search_path = ''
as $$
    select coalesce(digits ~ '^[0-9A-Z]{12}[0-9]{2}$' and digits !~ '^(.)\1*$'
        and (select case when r < 2 then 0 else 11 - r end
             from (select sum((ascii(substr(digits, i, 1)) - 48)
                 * ('{5,4,3,2,9,8,7,6,5,4,3,2}'::integer [])[i]) % 11 as r
                 from generate_series(1, 12) as i) as x) = substr(digits, 13, 1)::integer
        and (select case when r < 2 then 0 else 11 - r end
             from (select sum((ascii(substr(digits, i, 1)) - 48)
                 * ('{6,5,4,3,2,9,8,7,6,5,4,3,2}'::integer [])[i]) % 11 as r
                 from generate_series(1, 13) as i) as x) = substr(digits, 14, 1)::integer, false)
$$;

/*
_pii_kind(digits text, groups integer[], span text) -> text

Purpose: the kind of PII a stretch of digits is, or null.
Parameters: digits - the stretch's digits only; groups - the lengths of its digit groups as
  written; span - the stretch as written (separators included).
Returns: 'CPF' | 'CNPJ' | 'TELEFONE' | 'CARTAO' | null.
Errors: none (a pure function).
Example: select hipocampo_private._pii_kind('52998224725', '{3,3,3,2}', '529 982 247 25'); -- CPF
*/
create or replace function hipocampo_private._pii_kind(digits text, groups integer[], span text)
returns text
language sql
immutable
security invoker
set search_path = ''
as $$
    select case
        when char_length(digits) = 11 and hipocampo_private.cpf_is_valid(digits) then 'CPF'
        when char_length(digits) = 14 and hipocampo_private.cnpj_is_valid(digits) then 'CNPJ'
        -- Mobile: DDD (two digits 1-9) + 9 + 8 digits, bare or with 55 / a 0 trunk prefix.
        when digits ~ '^(55|0)?[1-9][1-9]9[0-9]{8}$' then 'TELEFONE'
        -- Landline: DDD + [2-5] + 7 digits, only as written with "(", a "+" or "-" (bare ten
        -- digits are too often other numbers).
        when digits ~ '^(55|0)?[1-9][1-9][2-5][0-9]{7}$' and span ~ '[(+]|[0-9]{4}-[0-9]{4}$' then 'TELEFONE'
        -- Mobile without DDD, only as written 9xxxx-xxxx.
        when digits ~ '^9[0-9]{8}$' and span ~ '^9[0-9]{4}[- ][0-9]{4}$' then 'TELEFONE'
        when char_length(digits) between 13 and 19 and hipocampo_private.luhn_is_valid(digits)
            and (cardinality(groups) = 1
                or array_to_string(groups, ',') ~ '^(4,)+[1-4]$'
                or array_to_string(groups, ',') = '4,6,5'
                or array_to_string(groups, ',') = '4,6,4'
                or array_to_string(groups, ',') ~ '^1(,1)*$') then 'CARTAO'
    end
$$;

/*
_pii_entities(input text) -> text

Purpose: a step of _pii_normalize: HTML character references decoded, numeric (&#52; &#x34;) and
  the named ones that write punctuation, spaces or invisible characters (&commat; &period;
  &hyphen; &nbsp; &zwj; …), twice, so "&amp;#52;" reads as "4" too. Other named references stay.
Parameters: input - any text.
Returns: the text with those references decoded (null for null).
Errors: none (a pure function; a reference to no character, such as &#0; or a surrogate, stays).
Example: select hipocampo_private._pii_entities('&#53;29&period;982'); -- '529.982'
*/
create or replace function hipocampo_private._pii_entities(input text)
returns text
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    named constant jsonb := '{"commat": "@", "period": ".", "hyphen": "-", "dash": "-", "ndash": "–",
        "mdash": "—", "lowbar": "_", "colon": ":", "semi": ";", "comma": ",", "sol": "/", "bsol": "\\",
        "verbar": "|", "vert": "|", "num": "#", "lpar": "(", "rpar": ")", "lsqb": "[", "rsqb": "]",
        "plus": "+", "ast": "*", "midast": "*", "middot": "·", "apos": "''", "quot": "\"", "amp": "&",
        "lt": "<", "gt": ">", "equals": "=", "excl": "!", "quest": "?", "percnt": "%", "nbsp": " ",
        "ensp": " ", "emsp": " ", "thinsp": " ", "hairsp": " ", "numsp": " ", "puncsp": " ",
        "zwj": "", "zwnj": "", "shy": "", "lrm": "", "rlm": "", "NoBreak": "", "InvisibleComma": "",
        "InvisibleTimes": "", "ic": "", "it": ""}';
    s text := input;
    ref text;
    code bigint;
begin
    for pass in 1 .. 2 loop
        exit when s is null or s !~ '&#?[0-9A-Za-z]+;';
        for ref in select distinct m[1] from regexp_matches(s, '(&#?[0-9A-Za-z]{1,32};)', 'g') as m loop
            code := case
                when ref ~* '^&#x[0-9a-f]{1,6};$' then ('x' || lpad(substr(ref, 4, char_length(ref) - 4), 8, '0'))::bit(32)::bigint
                when ref ~ '^&#[0-9]{1,7};$' then substr(ref, 3, char_length(ref) - 3)::bigint
            end;
            if code between 1 and 1114111 and code not between 55296 and 57343 then
                s := replace(s, ref, chr(code::integer));
            elsif named ? substr(ref, 2, char_length(ref) - 2) then
                s := replace(s, ref, named ->> substr(ref, 2, char_length(ref) - 2));
            end if;
        end loop;
    end loop;
    return s;
end;
$$;

/*
_pii_percent(input text) -> text

Purpose: a step of _pii_normalize: runs of percent-encoded bytes (%2E, %E2%80%8B) decoded when
  the run is well-formed UTF-8 without a NUL ("?cpf=455%2E567%2E756%2D05" reads as the CPF it
  carries; a zero-width space percent-encoded in a file name reads as one, and is then dropped).
  A run that is not UTF-8 stays as written.
Parameters: input - any text.
Returns: the text with those runs decoded (null for null).
Errors: none (a pure function).
Example: select hipocampo_private._pii_percent('ana%40x.com'); -- 'ana@x.com'
*/
create or replace function hipocampo_private._pii_percent(input text)
returns text
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    -- one UTF-8 character as hex pairs (RFC 3629's table: no overlongs, no surrogates, no NUL)
    cont constant text := '[89AB][0-9A-F]';
    utf8 constant text := '^(?:0[1-9A-F]|[1-7][0-9A-F]|(?:C[2-9A-F]|D[0-9A-F])' || cont
        || '|E0[AB][0-9A-F]' || cont || '|E[1-9A-CEF]' || cont || cont || '|ED[89][0-9A-F]' || cont
        || '|F0(?:9[0-9A-F]|[AB][0-9A-F])' || cont || cont || '|F[1-3]' || cont || cont || cont
        || '|F48[0-9A-F]' || cont || cont || ')+$';
    s text := input;
    run text;
    bytes text;
begin
    if s is null or s !~ '%[0-9A-Fa-f]{2}' then
        return s;
    end if;
    for run in select distinct m[1] from regexp_matches(s, '((?:%[0-9A-Fa-f]{2})+)', 'g') as m loop
        bytes := upper(replace(run, '%', ''));
        if bytes ~ utf8 then
            s := replace(s, run, convert_from(decode(bytes, 'hex'), 'UTF8'));
        end if;
    end loop;
    return s;
end;
$$;

/*
_pii_marks() -> text

Purpose: the regular-expression class of every Unicode combining mark (categories Mn, Mc and Me,
  Unicode 14 as Python's unicodedata has it when written), for _pii_normalize.
Returns: a bracket expression, "[\u0300-\u036f…]".
Errors: none (a pure function).
Example: select regexp_replace(E'5\u20e3', hipocampo_private._pii_marks(), '', 'g'); -- '5'
*/
create or replace function hipocampo_private._pii_marks()
returns text
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    select '[' || '\u0300-\u036f\u0483-\u0489\u0591-\u05bd\u05bf\u05c1-\u05c2\u05c4-\u05c5\u05c7\u0610-\u061a'
        || '\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7-\u06e8\u06ea-\u06ed\u0711\u0730-\u074a'
        || '\u07a6-\u07b0\u07eb-\u07f3\u07fd\u0816-\u0819\u081b-\u0823\u0825-\u0827\u0829-\u082d'
        || '\u0859-\u085b\u0898-\u089f\u08ca-\u08e1\u08e3-\u0903\u093a-\u093c\u093e-\u094f\u0951-\u0957'
        || '\u0962-\u0963\u0981-\u0983\u09bc\u09be-\u09c4\u09c7-\u09c8\u09cb-\u09cd\u09d7\u09e2-\u09e3\u09fe'
        || '\u0a01-\u0a03\u0a3c\u0a3e-\u0a42\u0a47-\u0a48\u0a4b-\u0a4d\u0a51\u0a70-\u0a71\u0a75\u0a81-\u0a83'
        || '\u0abc\u0abe-\u0ac5\u0ac7-\u0ac9\u0acb-\u0acd\u0ae2-\u0ae3\u0afa-\u0aff\u0b01-\u0b03\u0b3c'
        || '\u0b3e-\u0b44\u0b47-\u0b48\u0b4b-\u0b4d\u0b55-\u0b57\u0b62-\u0b63\u0b82\u0bbe-\u0bc2'
        || '\u0bc6-\u0bc8\u0bca-\u0bcd\u0bd7\u0c00-\u0c04\u0c3c\u0c3e-\u0c44\u0c46-\u0c48\u0c4a-\u0c4d'
        || '\u0c55-\u0c56\u0c62-\u0c63\u0c81-\u0c83\u0cbc\u0cbe-\u0cc4\u0cc6-\u0cc8\u0cca-\u0ccd'
        || '\u0cd5-\u0cd6\u0ce2-\u0ce3\u0d00-\u0d03\u0d3b-\u0d3c\u0d3e-\u0d44\u0d46-\u0d48\u0d4a-\u0d4d'
        || '\u0d57\u0d62-\u0d63\u0d81-\u0d83\u0dca\u0dcf-\u0dd4\u0dd6\u0dd8-\u0ddf\u0df2-\u0df3\u0e31'
        || '\u0e34-\u0e3a\u0e47-\u0e4e\u0eb1\u0eb4-\u0ebc\u0ec8-\u0ecd\u0f18-\u0f19\u0f35\u0f37\u0f39'
        || '\u0f3e-\u0f3f\u0f71-\u0f84\u0f86-\u0f87\u0f8d-\u0f97\u0f99-\u0fbc\u0fc6\u102b-\u103e'
        || '\u1056-\u1059\u105e-\u1060\u1062-\u1064\u1067-\u106d\u1071-\u1074\u1082-\u108d\u108f'
        || '\u109a-\u109d\u135d-\u135f\u1712-\u1715\u1732-\u1734\u1752-\u1753\u1772-\u1773\u17b4-\u17d3'
        || '\u17dd\u180b-\u180d\u180f\u1885-\u1886\u18a9\u1920-\u192b\u1930-\u193b\u1a17-\u1a1b\u1a55-\u1a5e'
        || '\u1a60-\u1a7c\u1a7f\u1ab0-\u1ace\u1b00-\u1b04\u1b34-\u1b44\u1b6b-\u1b73\u1b80-\u1b82'
        || '\u1ba1-\u1bad\u1be6-\u1bf3\u1c24-\u1c37\u1cd0-\u1cd2\u1cd4-\u1ce8\u1ced\u1cf4\u1cf7-\u1cf9'
        || '\u1dc0-\u1dff\u20d0-\u20f0\u2cef-\u2cf1\u2d7f\u2de0-\u2dff\u302a-\u302f\u3099-\u309a'
        || '\ua66f-\ua672\ua674-\ua67d\ua69e-\ua69f\ua6f0-\ua6f1\ua802\ua806\ua80b\ua823-\ua827\ua82c'
        || '\ua880-\ua881\ua8b4-\ua8c5\ua8e0-\ua8f1\ua8ff\ua926-\ua92d\ua947-\ua953\ua980-\ua983'
        || '\ua9b3-\ua9c0\ua9e5\uaa29-\uaa36\uaa43\uaa4c-\uaa4d\uaa7b-\uaa7d\uaab0\uaab2-\uaab4\uaab7-\uaab8'
        || '\uaabe-\uaabf\uaac1\uaaeb-\uaaef\uaaf5-\uaaf6\uabe3-\uabea\uabec-\uabed\ufb1e\ufe00-\ufe0f'
        || '\ufe20-\ufe2f\U000101fd\U000102e0\U00010376-\U0001037a\U00010a01-\U00010a03\U00010a05-\U00010a06'
        || '\U00010a0c-\U00010a0f\U00010a38-\U00010a3a\U00010a3f\U00010ae5-\U00010ae6\U00010d24-\U00010d27'
        || '\U00010eab-\U00010eac\U00010f46-\U00010f50\U00010f82-\U00010f85\U00011000-\U00011002'
        || '\U00011038-\U00011046\U00011070\U00011073-\U00011074\U0001107f-\U00011082\U000110b0-\U000110ba'
        || '\U000110c2\U00011100-\U00011102\U00011127-\U00011134\U00011145-\U00011146\U00011173'
        || '\U00011180-\U00011182\U000111b3-\U000111c0\U000111c9-\U000111cc\U000111ce-\U000111cf'
        || '\U0001122c-\U00011237\U0001123e\U000112df-\U000112ea\U00011300-\U00011303\U0001133b-\U0001133c'
        || '\U0001133e-\U00011344\U00011347-\U00011348\U0001134b-\U0001134d\U00011357\U00011362-\U00011363'
        || '\U00011366-\U0001136c\U00011370-\U00011374\U00011435-\U00011446\U0001145e\U000114b0-\U000114c3'
        || '\U000115af-\U000115b5\U000115b8-\U000115c0\U000115dc-\U000115dd\U00011630-\U00011640'
        || '\U000116ab-\U000116b7\U0001171d-\U0001172b\U0001182c-\U0001183a\U00011930-\U00011935'
        || '\U00011937-\U00011938\U0001193b-\U0001193e\U00011940\U00011942-\U00011943\U000119d1-\U000119d7'
        || '\U000119da-\U000119e0\U000119e4\U00011a01-\U00011a0a\U00011a33-\U00011a39\U00011a3b-\U00011a3e'
        || '\U00011a47\U00011a51-\U00011a5b\U00011a8a-\U00011a99\U00011c2f-\U00011c36\U00011c38-\U00011c3f'
        || '\U00011c92-\U00011ca7\U00011ca9-\U00011cb6\U00011d31-\U00011d36\U00011d3a\U00011d3c-\U00011d3d'
        || '\U00011d3f-\U00011d45\U00011d47\U00011d8a-\U00011d8e\U00011d90-\U00011d91\U00011d93-\U00011d97'
        || '\U00011ef3-\U00011ef6\U00016af0-\U00016af4\U00016b30-\U00016b36\U00016f4f\U00016f51-\U00016f87'
        || '\U00016f8f-\U00016f92\U00016fe4\U00016ff0-\U00016ff1\U0001bc9d-\U0001bc9e\U0001cf00-\U0001cf2d'
        || '\U0001cf30-\U0001cf46\U0001d165-\U0001d169\U0001d16d-\U0001d172\U0001d17b-\U0001d182'
        || '\U0001d185-\U0001d18b\U0001d1aa-\U0001d1ad\U0001d242-\U0001d244\U0001da00-\U0001da36'
        || '\U0001da3b-\U0001da6c\U0001da75\U0001da84\U0001da9b-\U0001da9f\U0001daa1-\U0001daaf'
        || '\U0001e000-\U0001e006\U0001e008-\U0001e018\U0001e01b-\U0001e021\U0001e023-\U0001e024'
        || '\U0001e026-\U0001e02a\U0001e130-\U0001e136\U0001e2ae\U0001e2ec-\U0001e2ef\U0001e8d0-\U0001e8d6'
        || '\U0001e944-\U0001e94a\U000e0100-\U000e01ef' || ']'
$$;

/*
_pii_normalize(input text) -> text

Purpose: the one normalizer the scrubber reads text through (issue 57 §5: PII found by a
  mechanism, not a list of encodings), in order: HTML character references (_pii_entities) and
  percent-encoding (_pii_percent) decoded; HTML comments removed; Unicode NFKC (full-width,
  superscript, subscript, circled and mathematical digits and letters, the compatibility spaces,
  "＠" and "﹫" become their plain forms; the ordinals º ª and a ² or ³ after a letter, "m²",
  stay as written); every format character (Unicode category Cf: soft
  hyphen, zero-width spaces and joiners, LRM/RLM and the bidi controls, U+2063, U+180E, tags) and
  every combining mark (Mn, Mc, Me: U+034F, variation selectors, the keycap U+20E3) dropped; every
  Unicode decimal digit (Nd: Bengali, Thai, Arabic-Indic, Devanagari, … 65 scripts) read as its
  ASCII value. The character tables are Unicode 14's (Python's unicodedata when written).
Parameters: input - any text.
Returns: the normalized text (null for null). Text already plain ASCII without "&", "%" or
  "<!--" comes back as it went in.
Errors: none (a pure function).
Example: select hipocampo_private._pii_normalize('৫২৯.⁹⁸²&#46;2​47–25'); -- '529.982.247–25'
*/
create or replace function hipocampo_private._pii_normalize(input text)
returns text
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
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
    -- (each regular expression behind a string test that must pass for it to match: a backend
    -- caches 32 compiled expressions and ingestion's checks use more, so an expression a document
    -- does not need would push out one it does, to be compiled again for the next document)
    if strpos(s, '&') > 0 and strpos(s, ';') > 0 then
        s := hipocampo_private._pii_entities(s);
    end if;
    if strpos(s, '%') > 0 then
        s := hipocampo_private._pii_percent(s);
    end if;
    if strpos(s, '<!--') > 0 then
        s := regexp_replace(s, '<!--.*?-->', '', 'g');
    end if;
    -- (outside ASCII: in UTF-8, the only encoding normalize() accepts, such a character takes
    -- more than one byte)
    if octet_length(s) > char_length(s) then
        -- (what Portuguese writes with compatibility characters and a text with PII keeps: the
        -- ordinals º ª, and ² ³ after a letter, as in m² and cm³, pass NFKC in private-use stand-ins)
        s := translate(s, 'ºª', U&'\E000\E001');
        if strpos(s, '²') > 0 then
            s := regexp_replace(s, '(?<=[[:alpha:]])²', U&'\E002', 'g');
        end if;
        if strpos(s, '³') > 0 then
            s := regexp_replace(s, '(?<=[[:alpha:]])³', U&'\E003', 'g');
        end if;
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
$$;

/*
_pii_add(a jsonb, b jsonb) -> jsonb

Purpose: two counts per kind ({"CPF": 1}) added key by key.
Returns: the sum ({} for two empty counts).
Errors: none (a pure function).
Example: select hipocampo_private._pii_add('{"CPF": 1}', '{"CPF": 2, "EMAIL": 1}'); -- {"CPF": 3, "EMAIL": 1}
*/
create or replace function hipocampo_private._pii_add(a jsonb, b jsonb)
returns jsonb
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    select coalesce(jsonb_object_agg(k, n), '{}'::jsonb)
    from (
        select e.key as k, sum(e.value::integer) as n
        from (select * from jsonb_each_text(coalesce(a, '{}')) union all select * from jsonb_each_text(coalesce(b, '{}'))) as e
        group by e.key
    ) as s
$$;

/*
_pii_stretch_kind(groups text[], seps text[], i integer, j integer) -> text

Purpose: the kind of PII that groups i..j of a run of digits are, read as one number (_pii_kind),
  or null. A stretch of several groups neither starts with nor holds two one-digit groups (a list
  of small numbers is not a phone number), except one digit per line or a whole run of single
  digits (a CPF, CNPJ or card written "5 2 9 9 8 …", whose check digits a list fails 99 times in
  100). Two writings count only as a number whose shape and check digits leave no doubt
  (issue 44 §3): groups joined by commas (a CPF 3,3,3,2, a CNPJ 2,3,3,4,2, a card 4,4,4,4 or a
  mobile with its DDD 2,5,4, and no "." among the separators, so an amount such as
  123.456.789,09 stays), and one digit per line. A phone number, which has no check digit, counts
  only with the separators phone numbers are written with (spaces, . , - ( ) / _ | + and dashes,
  markup, line breaks): "30−60 mg" or "12:30 … 98" is not one.
Parameters: groups - the run's digit groups; seps - the run's separators (seps[1] before the first
  group, seps[x + 1] after group x); i, j - the stretch (1 <= i <= j <= cardinality(groups)).
Returns: 'CPF' | 'CNPJ' | 'TELEFONE' | 'CARTAO' | null.
Errors: none (a pure function).
Example: select hipocampo_private._pii_stretch_kind('{529,982,247,25}', '{"",",",",","-",""}', 1, 4); -- CPF
*/
create or replace function hipocampo_private._pii_stretch_kind(groups text[], seps text[], i integer, j integer)
returns text
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    lengths integer [] := array(select char_length(x) from unnest(groups[i:j]) as x);
    shape text := array_to_string(lengths, ',');
    between_groups text := coalesce(array_to_string(seps[i + 1:j], ''), '');
    one_per_line boolean := j > i and shape ~ '^1(,1)*$'
        and (select bool_and(strpos(x, E'\n') > 0) from unnest(seps[i + 1:j]) as x);
    single_digits boolean := j > i and i = 1 and j = cardinality(groups) and shape ~ '^1(,1)*$';
    kind text;
begin
    if not (i = j or one_per_line or single_digits
        or (lengths[1] > 1 and (select count(*) from unnest(lengths) as x where x = 1) < 2)) then
        return null;
    end if;
    -- (what _pii_kind reads of the separators: any dash is "-", markup is nothing)
    -- (one digit per line, or single digits, is read as one group: the digits of one number)
    kind := hipocampo_private._pii_kind(array_to_string(groups[i:j], ''),
        case when one_per_line or single_digits then array[j - i + 1] else lengths end,
        regexp_replace(translate((case when i = 1 then seps[1] else '' end)
            || (select string_agg(groups[x] || case when x < j then seps[x + 1] else '' end, '' order by x)
                from generate_series(i, j) as x),
            '‐‑‒–—―', '------'), '</?[A-Za-z][A-Za-z0-9]*>', '', 'g'));
    if between_groups ~ ',' and (between_groups ~ '[.]' or not (kind, shape) in (
        ('CPF', '3,3,3,2'), ('CNPJ', '2,3,3,4,2'), ('CARTAO', '4,4,4,4'), ('TELEFONE', '2,5,4')
    )) then
        return null;
    end if;
    if (one_per_line or single_digits) and kind not in ('CPF', 'CNPJ', 'CARTAO') then
        return null;
    end if;
    if kind = 'TELEFONE' and regexp_replace(between_groups, '</?[A-Za-z][A-Za-z0-9]*>', '', 'g')
        !~ '^[ \t\r\n.,()/_|\\+\u2010-\u2015-]*$' then
        return null;
    end if;
    return kind;
end;
$$;

/*
_pii_scrub_numbers(input text) -> (text text, counts jsonb)

Purpose: the scrubber's number step: runs of digits joined by separators (at most five
  characters that are neither ASCII letters and digits, Latin letters nor a comma: spaces, any
  punctuation or symbol, dashes, apostrophes, colons, middle dots, asterisks, other scripts'
  letters; or an HTML tag such as </b>; or a line break with its indentation; or one comma
  directly between digits, not a comma and a space, which join page ranges, dates and amounts in
  prose) are read group by group, and from each group the longest stretch (at most seven groups,
  or nineteen one digit per line or as a whole run of single digits; 9..19 digits) that
  _pii_stretch_kind names is replaced by its placeholder ([CPF] [CNPJ] [TELEFONE] [CARTAO]): a
  new separator or script needs no new rule, the check digits decide. A phone number, which has
  no check digit, in a run glued to an ASCII letter is part of an identifier and stays (a code
  like "AB11-2345-6789"; a UUID never reaches this step: _pii_scrub sets it aside). The pieces are joined once at the end (a string grown
  at every number was quadratic: 37 s for 4 MB).
Parameters: input - normalized text (_pii_normalize).
Returns: text - the text with numbers replaced; counts - {"CPF": n, …}.
Errors: none (a pure function).
Example: select * from hipocampo_private._pii_scrub_numbers('CPF 529:982*247''25'); -- ('CPF [CPF]', {"CPF": 1})
*/
create or replace function hipocampo_private._pii_scrub_numbers(input text, out text text, out counts jsonb)
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    sep constant text := '(?:[^0-9A-Za-z\u00c0-\u024f,\r\n]|</?[A-Za-z][A-Za-z0-9]*>|[ \t]*\r?\n[ \t]*)';
    number_run constant text := '[0-9](?:' || sep || '{1,5}[0-9]|,[0-9]|[0-9])*';
    runs text [] := array(select m[1] from regexp_matches(input, '(' || number_run || ')', 'g') as m);
    gaps text [];
    parts text [];
    run text;
    groups text [];
    seps text [];
    g integer;
    i integer;
    j integer;
    best integer;
    kind text;
    piece text;
    singles boolean;
    c jsonb := '{}'::jsonb;
begin
    text := input;
    counts := c;
    if cardinality(runs) = 0 then
        return;
    end if;
    gaps := regexp_split_to_array(input, number_run);
    parts := array[gaps[1]];
    for r in 1 .. cardinality(runs) loop
        run := runs[r];
        -- (its digits counted by translate, not a regular expression: a backend caches 32 compiled
        -- expressions and ingestion's checks use more, so each one would be compiled per document)
        if char_length(run) - char_length(translate(run, '0123456789', '')) < 9 then
            parts[r + 1] := run || gaps[r + 1];
            continue;
        end if;
        -- the "+" / "(" written before the number goes with it
        if right(gaps[r], 1) in ('+', '(') then
            run := right(gaps[r], 1) || run;
            parts[r] := left(parts[r], -1);
        end if;
        groups := array(select m[1] from regexp_matches(run, '([0-9]+)', 'g') as m);
        seps := regexp_split_to_array(run, '[0-9]+');  -- seps[1] prefix, seps[i + 1] after group i
        g := cardinality(groups);
        singles := g between 9 and 19 and (select bool_and(char_length(x) = 1) from unnest(groups) as x);
        piece := seps[1];
        i := 1;
        while i <= g loop
            best := null;
            kind := null;
            -- at most seven groups, or nineteen written one digit per line or as single digits
            j := least(g, i + case when char_length(groups[i]) = 1 and (singles or strpos(seps[i + 1], E'\n') > 0) then 18 else 6 end);
            while j >= i and best is null loop
                if char_length(array_to_string(groups[i:j], '')) between 9 and 19 then
                    kind := hipocampo_private._pii_stretch_kind(groups, seps, i, j);
                    -- A phone number (no check digit) in a run glued to a letter is part of an
                    -- identifier (a code like "AB11-2345-6789"), not a number a person wrote.
                    if kind = 'TELEFONE' and (right(gaps[r], 1) ~ '[A-Za-z]' or left(gaps[r + 1], 1) ~ '[A-Za-z]') then
                        kind := null;
                    end if;
                    if kind is not null then
                        best := j;
                    end if;
                end if;
                j := j - 1;
            end loop;
            if best is null then
                piece := piece || groups[i] || seps[i + 1];
                i := i + 1;
            else
                if i = 1 then
                    piece := '';
                end if;
                piece := piece || '[' || kind || ']' || seps[best + 1];
                c := c || jsonb_build_object(kind, coalesce((c ->> kind)::integer, 0) + 1);
                i := best + 1;
            end if;
        end loop;
        parts[r + 1] := piece || gaps[r + 1];
    end loop;
    text := array_to_string(parts, '');
    counts := c;
end;
$$;

/*
_pii_scrub_alphanumeric_cnpj(input text) -> (text text, counts jsonb)

Purpose: the scrubber's step for the alphanumeric CNPJ (issued from July 2026: twelve digits or
  capital letters, then two check digits): groups 2, 3, 3, 4 and 2 characters, bare or joined by
  at most three characters that are not letters or digits ("10.MMQ.004/0BCL-40",
  "81RZX8450QUY84"), with at least one letter (an all-digit CNPJ is the number step's) and at
  least one digit among the first twelve, whose check digits hold (cnpj_is_valid), become [CNPJ].
  Letters are read in capitals; written in lower case they count bare or joined by . / - only
  (prose such as "in the DBP, rs4588" has that shape).
Parameters: input - normalized text (_pii_normalize).
Returns: text - the text with those CNPJs replaced; counts - {"CNPJ": n} or {}.
Errors: none (a pure function).
Example: select * from hipocampo_private._pii_scrub_alphanumeric_cnpj('CNPJ 12.ABC.345/01DE-35'); -- ('CNPJ [CNPJ]', {"CNPJ": 1})
*/
create or replace function hipocampo_private._pii_scrub_alphanumeric_cnpj(input text, out text text, out counts jsonb)
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    s constant text := '[^0-9A-Za-z\u00c0-\u024f\r\n]{0,3}';
    -- (a digit among the first twelve is looked ahead for, so "disse: Empresa 12.ABC…" does not
    -- take the place of the CNPJ after it)
    shape constant text := '(?<![0-9A-Za-z])(?=(?:[A-Za-z]' || s || '){0,11}[0-9])[0-9A-Za-z]{2}' || s || '[0-9A-Za-z]{3}' || s || '[0-9A-Za-z]{3}'
        || s || '[0-9A-Za-z]{4}' || s || '[0-9]{2}(?![0-9A-Za-z])';
    candidate text;
    chars text;
    n integer := 0;
begin
    text := input;
    counts := '{}'::jsonb;
    if input is null or input !~ shape then
        return;
    end if;
    for candidate in select distinct m[1] from regexp_matches(input, '(' || shape || ')', 'g') as m loop
        chars := upper(regexp_replace(candidate, '[^0-9A-Za-z]', '', 'g'));
        -- (lower-case letters only bare or with the CNPJ's own . / -: "in the DBP, rs4588" is prose)
        if chars ~ '[A-Z]' and left(chars, 12) ~ '[0-9]' and hipocampo_private.cnpj_is_valid(chars)
            and (candidate !~ '[a-z]' or candidate ~ '^[0-9A-Za-z./-]+$') then
            n := n + (char_length(text) - char_length(replace(text, candidate, ''))) / char_length(candidate);
            text := replace(text, candidate, '[CNPJ]');
        end if;
    end loop;
    if n > 0 then
        counts := jsonb_build_object('CNPJ', n);
    end if;
end;
$$;

/*
_pii_scrub_spelled(input text) -> (text text, counts jsonb)

Purpose: the scrubber's step for numbers spelled out digit by digit in Portuguese or English
  ("cinco dois nove nove oito …", "meia" for six, "one one nine …"): a run of nine to nineteen
  digit words joined by spaces or punctuation is read as its digits, and a CPF, CNPJ, card or
  mobile number (_pii_kind) becomes its placeholder. Numbers spelled as whole numbers
  ("quinhentos e vinte e nove") are not read (SECURITY.md).
Parameters: input - normalized text (_pii_normalize).
Returns: text - the text with those runs replaced; counts - {"CPF": n, …} or {}.
Errors: none (a pure function).
Example: select * from hipocampo_private._pii_scrub_spelled('cpf cinco dois nove nove oito dois dois quatro sete dois cinco');
  -- ('cpf [CPF]', {"CPF": 1})
*/
create or replace function hipocampo_private._pii_scrub_spelled(input text, out text text, out counts jsonb)
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    value constant jsonb := '{"zero": 0, "um": 1, "uma": 1, "dois": 2, "duas": 2, "tres": 3, "três": 3,
        "quatro": 4, "cinco": 5, "seis": 6, "meia": 6, "sete": 7, "oito": 8, "nove": 9, "oh": 0,
        "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9}';
    word constant text := '(?:zero|uma?|dois|duas|tr[eê]s|quatro|cinco|seis|meia|sete|oito|nove|oh'
        || '|one|two|three|four|five|six|seven|eight|nine)';
    spelled constant text := '\m' || word || '(?:[^0-9A-Za-z\u00c0-\u024f]{1,3}' || word || '){8,18}\M';
    run text;
    digits text;
    kind text;
    c jsonb := '{}'::jsonb;
begin
    text := input;
    counts := c;
    -- (three digit words in a row first: the whole run's regex costs more)
    if input is null or input !~* ('\m' || word || '[^0-9A-Za-z]{1,3}' || word || '[^0-9A-Za-z]{1,3}' || word || '\M')
        or input !~* spelled then
        return;
    end if;
    for run in select distinct m[1] from regexp_matches(input, '(' || spelled || ')', 'gi') as m loop
        digits := (select string_agg(value ->> lower(w), '' order by n)
            from regexp_split_to_table(run, '[^A-Za-zê]+') with ordinality as t (w, n) where w <> '');
        kind := hipocampo_private._pii_kind(digits, array[char_length(digits)], digits);
        if kind is not null then
            c := hipocampo_private._pii_add(c, jsonb_build_object(kind,
                (char_length(text) - char_length(replace(text, run, ''))) / char_length(run)));
            text := replace(text, run, '[' || kind || ']');
        end if;
    end loop;
    counts := c;
end;
$$;

/*
_pii_scrub_encoded(input text) -> (text text, counts jsonb)

Purpose: the scrubber's step for PII written in base64 or hex: a base64 token (12 to 120
  characters of A-Z a-z 0-9 + /, "=" padding) or a hex token (18 to 120 hex digits,
  an even number) whose bytes are printable ASCII and hold PII (_pii_find) becomes the placeholder
  of the first kind found. Other encodings (rot13, URL-safe base64, gzip) are not read
  (SECURITY.md).
Parameters: input - normalized text (_pii_normalize).
Returns: text - the text with those tokens replaced; counts - {"CPF": n, …} or {}.
Errors: none (a pure function).
Example: select * from hipocampo_private._pii_scrub_encoded('id NTI5OTgyMjQ3MjU='); -- ('id [CPF]', {"CPF": 1})
*/
create or replace function hipocampo_private._pii_scrub_encoded(input text, out text text, out counts jsonb)
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    -- (printable ASCII's bytes start each base64 quartet with I..Z or a..f)
    b64 constant text := '(?:[I-Za-f][0-9A-Za-z+/]{3}){3,30}(?:[I-Za-f][0-9A-Za-z+/]{1,2})?={0,2}';
    hex_digits constant text := '0123456789ABCDEFabcdef';
    token text;
    bare text;
    bytes bytea;
    found record;
    kind text;
    c jsonb := '{}'::jsonb;
begin
    text := input;
    counts := c;
    if input is null or input !~ '[0-9A-Za-z+/]{12}' then
        return;
    end if;
    -- (the whole runs of the alphabet first, cheaply; the rules on the few with a digit)
    for token in
        select distinct m[1] from regexp_matches(input, '([0-9A-Za-z+/]{12,}={0,2})', 'g') as m
        where char_length(m[1]) <= 122
            and (m[1] ~ ('^' || b64 || '$') or (char_length(m[1]) between 18 and 120 and translate(m[1], hex_digits, '') = ''))
    loop
        bytes := null;
        if char_length(token) >= 18 and char_length(token) % 2 = 0 and translate(token, hex_digits, '') = '' then
            bytes := decode(token, 'hex');
        end if;
        if bytes is null or encode(bytes, 'hex') !~ '^([2-6][0-9a-f]|7[0-9a-e])+$' then
            bare := rtrim(token, '=');
            bytes := case char_length(bare) % 4
                when 0 then decode(bare, 'base64')
                when 2 then decode(bare || '==', 'base64')
                when 3 then decode(bare || '=', 'base64')
            end;
        end if;
        continue when bytes is null or encode(bytes, 'hex') !~ '^([2-6][0-9a-f]|7[0-9a-e])+$';
        found := hipocampo_private._pii_find(convert_from(bytes, 'UTF8'));
        if found.counts <> '{}'::jsonb then
            kind := (select k from jsonb_object_keys(found.counts) as k order by k limit 1);
            c := hipocampo_private._pii_add(c, jsonb_build_object(kind,
                (char_length(text) - char_length(replace(text, token, ''))) / char_length(token)));
            text := replace(text, token, '[' || kind || ']');
        end if;
    end loop;
    counts := c;
end;
$$;

/*
_pii_letters_as_digits(input text) -> text

Purpose: the letters O/o and l/I written for 0 and 1 read as those digits, for a second reading of
  a text (_pii_scrub keeps it only when it finds more): in a word of digits and those letters
  with at least one digit ("O12", "4lll"), and in a word of those letters alone written within
  three separators of a digit ("ll.222", "4111 llll"), repeated along the number.
Parameters: input - normalized text.
Returns: the text with those letters replaced (null for null).
Errors: none (a pure function).
Example: select hipocampo_private._pii_letters_as_digits('ll.222.333/OOOl-8l H2O'); -- '11.222.333/0001-81 H20'
*/
create or replace function hipocampo_private._pii_letters_as_digits(input text)
returns text
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    s text := input;
    before text;
    m text [];
begin
    for pass in 1 .. 19 loop
        before := s;
        for m in select distinct x from regexp_matches(s, '(?<![0-9A-Za-z])([0-9OolI]*[0-9][0-9OolI]*)(?![0-9A-Za-z])', 'g') as x
            where x[1] ~ '[OolI]' loop
            s := replace(s, m[1], translate(m[1], 'OolI', '0011'));
        end loop;
        for m in select distinct x from regexp_matches(s, '([0-9][^0-9A-Za-z]{1,3})([OolI]{1,4})(?![0-9A-Za-z])', 'g') as x loop
            s := replace(s, m[1] || m[2], m[1] || translate(m[2], 'OolI', '0011'));
        end loop;
        for m in select distinct x from regexp_matches(s, '(?<![0-9A-Za-z])([OolI]{1,4})([^0-9A-Za-z]{1,3}[0-9])', 'g') as x loop
            s := replace(s, m[1] || m[2], translate(m[1], 'OolI', '0011') || m[2]);
        end loop;
        exit when s is not distinct from before;
    end loop;
    return s;
end;
$$;

/*
_pii_find(input text) -> (text text, counts jsonb)

Purpose: the scrubber's shapes on normalized text: e-mails (also "[at]" / "(arroba)" / "[dot]"
  spelled out, "@" with spaces around it, "user@[ip]", broken across a line; "nome at exemplo dot
  com" and "nome @ exemplo . com" when the address ends in a common top-level domain); the
  alphanumeric CNPJ (_pii_scrub_alphanumeric_cnpj); numbers (_pii_scrub_numbers: CPF, CNPJ,
  phone and card numbers with any separators between their groups); and RG (formatted, after
  "RG", or with a state prefix such as "MG-12.345.678"). Each is replaced by its typed
  placeholder [EMAIL] [CPF] [CNPJ] [TELEFONE] [CARTAO] [RG].
Parameters: input - normalized text (_pii_normalize).
Returns: text - the text with what it found replaced; counts - {"CPF": n, …}.
Errors: none (a pure function).
Example: select * from hipocampo_private._pii_find('CPF 529 982 247 25, joao[at]x[dot]com');
  -- ('CPF [CPF], [EMAIL]', {"CPF": 1, "EMAIL": 1})
*/
create or replace function hipocampo_private._pii_find(input text, out text text, out counts jsonb)
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    -- An @ (a line break beside it, spaces on both sides, %40 percent-encoded: "@fulano" after a
    -- space is a handle, not an e-mail), or one spelled out:
    -- [at] (arroba) " arroba ".
    at_sign constant text := '(?:@|%40|[ \t]*\r?\n[ \t]*@[ \t]*|@[ \t]*\r?\n[ \t]*|[ \t]+@[ \t]+'
        || '|[ \t]*[[({<][ \t]*(?:at|arroba)[ \t]*[])}>][ \t]*|[ \t]+arroba[ \t]+)';
    -- A dot (a line break may follow it), or one spelled out: [dot] (ponto) " ponto ".
    dot constant text := '(?:\.(?:[ \t]*\r?\n[ \t]*)?'
        || '|[ \t]*[[({<][ \t]*(?:dot|ponto)[ \t]*[])}>][ \t]*|[ \t]+ponto[ \t]+)';
    loc constant text := '[[:alnum:]_%+-]+';
    -- A domain label; a word hyphenated across a line ("exem-\nplo") is one label.
    dom constant text := '[[:alnum:]_-]+(?:-[ \t]*\r?\n[ \t]*[[:alnum:]_-]+)*';
    email constant text := loc || '(?:\.(?:[ \t]*\r?\n[ \t]*)?' || loc || ')*' || at_sign
        || '(?:\[[0-9a-f.:]+\]|' || dom || '(?:' || dot || dom || ')+)';
    -- Spaced or spelled out without brackets ("nome at exemplo dot com", "nome @ exemplo . com"),
    -- only when the address ends in a common top-level domain: prose has "at" and "dot" too.
    -- (both marks written the same way: "registered at clinicaltrials.gov" is prose)
    tld constant text := '(?:com|br|org|net|gov|edu|io|info|biz|co|me|app|dev|pt|us|uk|de|es|fr|it)\M';
    spaced_email constant text := '\m' || loc || '[ \t]*@[ \t]*[[:alnum:]_-]+(?:[ \t]*\.[ \t]*[[:alnum:]_-]+)*'
        || '[ \t]*\.[ \t]*' || tld
        || '|\m' || loc || '[ \t]+(?:at|arroba)[ \t]+[[:alnum:]_-]+(?:[ \t]+(?:dot|ponto)[ \t]+[[:alnum:]_-]+)*'
        || '[ \t]+(?:dot|ponto)[ \t]+' || tld;
    rg constant text := '(?<![0-9.])[0-9]{1,2}\.[0-9]{3}\.[0-9]{3}-[0-9Xx](?![0-9])'
        || '|\m[Rr][Gg]\M[ \t]*(?:n[º°o.]*[ \t]*)?[:-]?[ \t]*[0-9Xx][0-9.Xx-]{4,13}[0-9Xx]'
        || '|\m(?:AC|AL|AP|AM|BA|CE|DF|ES|GO|MA|MT|MS|MG|PA|PB|PR|PE|PI|RJ|RN|RS|RO|RR|SC|SP|SE|TO)'
        || '[ -]?[0-9]{1,2}\.?[0-9]{3}\.?[0-9]{3}(?:-?[0-9Xx])?(?![0-9])';
    step record;
    n integer;
    c jsonb := '{}'::jsonb;
begin
    text := input;
    if input is null then
        counts := c;
        return;
    end if;
    n := coalesce(regexp_count(text, email, 1, 'i'), 0);
    if n > 0 then
        text := regexp_replace(text, email, '[EMAIL]', 'gi');
        c := c || jsonb_build_object('EMAIL', n);
    end if;
    n := case when text ~* '[ \t]@|@[ \t]|[ \t](dot|ponto)[ \t]' then coalesce(regexp_count(text, spaced_email, 1, 'i'), 0) else 0 end;
    if n > 0 then
        text := regexp_replace(text, spaced_email, '[EMAIL]', 'gi');
        c := hipocampo_private._pii_add(c, jsonb_build_object('EMAIL', n));
    end if;
    step := hipocampo_private._pii_scrub_alphanumeric_cnpj(text);
    text := step.text;
    c := hipocampo_private._pii_add(c, step.counts);
    step := hipocampo_private._pii_scrub_numbers(text);
    text := step.text;
    c := hipocampo_private._pii_add(c, step.counts);
    n := coalesce(regexp_count(text, rg), 0);
    if n > 0 then
        text := regexp_replace(text, rg, '[RG]', 'g');
        c := c || jsonb_build_object('RG', n);
    end if;
    counts := c;
end;
$$;

/*
_pii_scrub(input text) -> (text text, counts jsonb)

Purpose: the one PII scrubber: the text read through _pii_normalize, then numbers spelled out
  (_pii_scrub_spelled), base64 and hex tokens (_pii_scrub_encoded) and the shapes (_pii_find:
  e-mail, alphanumeric CNPJ, CPF, CNPJ, phone, card, RG); a second reading with O/l beside digits
  taken as 0/1 (_pii_letters_as_digits) is kept when it finds more. A text where nothing is found
  comes back exactly as it went in; a text where something is found comes back normalized, with
  each finding replaced by its typed placeholder [EMAIL] [CPF] [CNPJ] [TELEFONE] [CARTAO] [RG].
  A UUID is an identifier, never personal data: its digits can read as a phone number or as a
  card with a valid check digit (about 1 % of random UUIDs, more of those made mostly of digits),
  so each is set aside while the shapes are looked for and put back whole.
  Idempotent. Linear in the text's size.
Parameters: input - any text (null gives null and {}).
Returns: text - the scrubbed text; counts - {"CPF": n, …} of the kinds replaced.
Errors: none (a pure function).
Example: select * from hipocampo_private._pii_scrub('CPF 529 982 247 25, joao[at]x[dot]com');
  -- ('CPF [CPF], [EMAIL]', {"CPF": 1, "EMAIL": 1})
*/
create or replace function hipocampo_private._pii_scrub(input text, out text text, out counts jsonb)
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    uuid_shape constant text := '(?<![0-9A-Za-z])' || hipocampo_private._uuid_shape() || '(?![0-9A-Za-z])';
    aside constant text := 'uuidzqzuuid';  -- letters no step reads (no digit, no O o l I)
    normal text := hipocampo_private._pii_normalize(input);
    ids text [] := '{}';
    pieces text [];
    step record;
    other record;
begin
    if input is null then
        counts := '{}'::jsonb;
        return;
    end if;
    if strpos(normal, aside) = 0 then
        ids := array(select m[1] from regexp_matches(normal, '(' || uuid_shape || ')', 'g') as m);
        normal := regexp_replace(normal, uuid_shape, aside, 'g');
    end if;
    step := hipocampo_private._pii_scrub_spelled(normal);
    text := step.text;
    counts := step.counts;
    step := hipocampo_private._pii_scrub_encoded(text);
    text := step.text;
    counts := hipocampo_private._pii_add(counts, step.counts);
    step := hipocampo_private._pii_find(text);
    -- (only where nine digits or such letters run together, one of them a digit and one a letter)
    if exists (select from regexp_matches(text, '((?<![A-Za-z])[0-9OolI](?:[^0-9A-Za-z\n]{0,3}[0-9OolI]){8,}(?![A-Za-z]))', 'g') as m
        where m[1] ~ '[OolI]' and m[1] ~ '[0-9]') then
        other := hipocampo_private._pii_find(hipocampo_private._pii_letters_as_digits(text));
        if (select coalesce(sum(v::integer), 0) from jsonb_each_text(other.counts) as e (k, v))
            > (select coalesce(sum(v::integer), 0) from jsonb_each_text(step.counts) as e (k, v)) then
            step := other;
        end if;
    end if;
    text := step.text;
    counts := hipocampo_private._pii_add(counts, step.counts);
    if counts = '{}'::jsonb then
        text := input;
        return;
    end if;
    pieces := string_to_array(text, aside);
    if cardinality(ids) > 0 and cardinality(pieces) = cardinality(ids) + 1 then
        text := pieces[1] || (select coalesce(string_agg(u.id || pieces[u.n + 1], '' order by u.n), '')
            from unnest(ids) with ordinality as u (id, n));
    end if;
end;
$$;

/*
_pii_scrub_jsonb(value jsonb) -> jsonb

Purpose: value with every string leaf scrubbed by _pii_scrub (keys kept; numbers, booleans and
  nulls unchanged; a UUID comes back whole, as in any text). Used on chunk and message metadata.
Returns: jsonb of the same shape.
Errors: none (a pure function).
Example: select hipocampo_private._pii_scrub_jsonb('{"title": "contrato 529.982.247-25"}');
  -- {"title": "contrato [CPF]"}
*/
create or replace function hipocampo_private._pii_scrub_jsonb(value jsonb)
returns jsonb
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
begin
    return case jsonb_typeof(value)
        when 'string' then to_jsonb((hipocampo_private._pii_scrub(value #>> '{}')).text)
        when 'object' then coalesce((select jsonb_object_agg(e.key, hipocampo_private._pii_scrub_jsonb(e.value))
            from jsonb_each(value) as e), '{}'::jsonb)
        when 'array' then coalesce((select jsonb_agg(hipocampo_private._pii_scrub_jsonb(e.value) order by e.n)
            from jsonb_array_elements(value) with ordinality as e (value, n)), '[]'::jsonb)
        else value
    end;
end;
$$;

/*
scrub_pii(texts text[]) -> table (text text, counts jsonb)

Purpose: the database's PII scrubber (_pii_scrub) for clients that must scrub before they hash,
  chunk or embed (the Python ingestion scrubs each document's text, title and source_uri through
  it; the guardrails refuse a question whose counts name a CPF or a card). Pure: reads and
  writes nothing.
Parameters: texts - the texts, in order (nulls give null and {}).
Returns: one row per text, in the order given: the scrubbed text and the counts per kind
  ({"CPF": 1, "EMAIL": 2}; kinds CPF, CNPJ, RG, EMAIL, TELEFONE, CARTAO).
Errors: none of its own.
Example: select * from hipocampo.scrub_pii(array['CPF 529 982 247 25', 'ok']);
*/
create or replace function hipocampo.scrub_pii(texts text[])
returns table (text text, counts jsonb)
language sql
immutable
parallel safe
security invoker
set search_path = ''
set jit = off
as $$
    select s.text, s.counts
    from unnest(texts) with ordinality as t (value, n)
    cross join lateral hipocampo_private._pii_scrub(t.value) as s
    order by t.n
$$;

/*
_scrub_document() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of documents: title, source_uri and author scrubbed of
  PII (_pii_scrub), whoever writes the row.
Returns: NEW, scrubbed.
Errors: none of its own.
*/
create or replace function hipocampo_private._scrub_document()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    new.title := (hipocampo_private._pii_scrub(new.title)).text;
    new.source_uri := (hipocampo_private._pii_scrub(new.source_uri)).text;
    new.author := (hipocampo_private._pii_scrub(new.author)).text;
    return new;
end;
$$;

/*
_scrub_chunk() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of chunks: content and every string of metadata scrubbed
  of PII, before the tsvector is computed and the BM25 statistics triggers read it.
Returns: NEW, scrubbed.
Errors: none of its own.
*/
create or replace function hipocampo_private._scrub_chunk()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    new.content := (hipocampo_private._pii_scrub(new.content)).text;
    new.metadata := hipocampo_private._pii_scrub_jsonb(new.metadata);
    return new;
end;
$$;

/*
_scrub_job_errors() -> trigger

Purpose: BEFORE INSERT / UPDATE trigger of ingestion_jobs: every string of errors scrubbed of PII
  (error lines name files).
Returns: NEW, scrubbed.
Errors: none of its own.
*/
create or replace function hipocampo_private._scrub_job_errors()
returns trigger
language plpgsql
security invoker
set search_path = ''
as $$
begin
    new.errors := hipocampo_private._pii_scrub_jsonb(new.errors);  -- error lines name files
    return new;
end;
$$;

create trigger documents_scrub_pii
before insert or update of title, source_uri, author on hipocampo_private.documents
for each row execute function hipocampo_private._scrub_document();

create trigger chunks_scrub_pii
before insert or update of content, metadata on hipocampo_private.chunks
for each row execute function hipocampo_private._scrub_chunk();

create trigger ingestion_jobs_scrub_pii
before insert or update of errors on hipocampo_private.ingestion_jobs
for each row execute function hipocampo_private._scrub_job_errors();

comment on function hipocampo.scrub_pii(text[]) is
'The PII scrubber: each text with CPF, CNPJ, RG, e-mail, phone and card numbers replaced by typed placeholders, and the counts per kind.';
