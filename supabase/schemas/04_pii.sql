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

Purpose: the check digits of a CNPJ (14 digits); all-equal digits are invalid.
Returns: true when the check digits hold (false for null or a malformed string).
Errors: none (a pure function).
Example: select hipocampo_private.cnpj_is_valid('11222333000181'); -- true
*/
create or replace function hipocampo_private.cnpj_is_valid(digits text)
returns boolean
language sql
immutable
security invoker
set search_path = ''
as $$
    select coalesce(digits ~ '^[0-9]{14}$' and digits !~ '^(.)\1*$'
        and (select case when r < 2 then 0 else 11 - r end
             from (select sum(substr(digits, i, 1)::integer
                 * ('{5,4,3,2,9,8,7,6,5,4,3,2}'::integer [])[i]) % 11 as r
                 from generate_series(1, 12) as i) as x) = substr(digits, 13, 1)::integer
        and (select case when r < 2 then 0 else 11 - r end
             from (select sum(substr(digits, i, 1)::integer
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
                or array_to_string(groups, ',') = '4,6,4') then 'CARTAO'
    end
$$;

/*
_pii_fold(input text) -> text

Purpose: the scrubber's first step (issue 44 §3: PII written in other encodings got through): NBSP
  and other unicode spaces become plain spaces; soft hyphens and zero-width characters are
  removed; digits of other scripts (full-width, Arabic-Indic, Eastern Arabic-Indic, Devanagari,
  the mathematical bold / double-struck / sans-serif / monospace digits) become ASCII digits;
  the full-width and small at signs and the HTML entities of "@" (&#64; &#x40; &commat;) become
  "@". Nothing else of the text changes (dashes, markup and separators are read as separators
  where numbers are matched, _pii_scrub_numbers).
Parameters: input - any text.
Returns: the folded text (null for null).
Errors: none (a pure function).
Example: select hipocampo_private._pii_fold('５２９.９８２ ana＠x.com'); -- '529.982 ana@x.com'
*/
create or replace function hipocampo_private._pii_fold(input text)
returns text
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    -- (the translation and the entities only where the text has such characters: translate over a
    -- 92-character table costs ten times the rest on plain prose)
    select case when t ~ '&(#|commat)' then regexp_replace(t, '&#0*64;|&#x0*40;|&commat;', '@', 'gi') else t end
    from (
        select case when s ~ '[０-９٠-٩۰-۹०-९𝟎-𝟿＠﹫]' then translate(s,
            '０１２３４５６７８９٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹०१२३४५६७८९'
            || '𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗𝟘𝟙𝟚𝟛𝟜𝟝𝟞𝟟𝟠𝟡𝟢𝟣𝟤𝟥𝟦𝟧𝟨𝟩𝟪𝟫𝟬𝟭𝟮𝟯𝟰𝟱𝟲𝟳𝟴𝟵𝟶𝟷𝟸𝟹𝟺𝟻𝟼𝟽𝟾𝟿＠﹫',
            repeat('0123456789', 9) || '@@'
        ) else s end as t
        from (
            select regexp_replace(
                regexp_replace(input, '[\u00a0\u2007\u2009\u202f\u3000]', ' ', 'g'),
                '[\u00ad\u200b\u200c\u200d\u2060\ufeff]', '', 'g'
            ) as s
        ) as spaced
    ) as folded
$$;

/*
_pii_stretch_kind(groups text[], seps text[], i integer, j integer) -> text

Purpose: the kind of PII that groups i..j of a run of digits are, read as one number (_pii_kind),
  or null. A stretch of several groups neither starts with nor holds two one-digit groups (a list
  of small numbers is not a phone number), except one digit per line. Two writings count only as
  a number whose shape and check digits leave no doubt (issue 44 §3): groups joined by commas
  (a CPF 3,3,3,2, a CNPJ 2,3,3,4,2, a card 4,4,4,4 or a mobile with its DDD 2,5,4, and no "." among
  the separators, so an amount such as 123.456.789,09 stays), and one digit per line (a CPF, CNPJ
  or card, whose check digits a list of small numbers fails 99 times in 100).
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
        and (select bool_and(x ~ '\n') from unnest(seps[i + 1:j]) as x);
    kind text;
begin
    if not (i = j or one_per_line or (lengths[1] > 1 and (select count(*) from unnest(lengths) as x where x = 1) < 2)) then
        return null;
    end if;
    -- (what _pii_kind reads of the separators: any dash is "-", markup is nothing)
    -- (one digit per line is read as one group: the digits of one number)
    kind := hipocampo_private._pii_kind(array_to_string(groups[i:j], ''),
        case when one_per_line then array[j - i + 1] else lengths end,
        regexp_replace(translate((case when i = 1 then seps[1] else '' end)
            || (select string_agg(groups[x] || case when x < j then seps[x + 1] else '' end, '' order by x)
                from generate_series(i, j) as x),
            '‐‑‒–—―', '------'), '</?[A-Za-z][A-Za-z0-9]*>', '', 'g'));
    if between_groups ~ ',' and (between_groups ~ '[.]' or not (kind, shape) in (
        ('CPF', '3,3,3,2'), ('CNPJ', '2,3,3,4,2'), ('CARTAO', '4,4,4,4'), ('TELEFONE', '2,5,4')
    )) then
        return null;
    end if;
    if one_per_line and kind not in ('CPF', 'CNPJ', 'CARTAO') then
        return null;
    end if;
    return kind;
end;
$$;

/*
_pii_scrub_numbers(input text) -> (text text, counts jsonb)

Purpose: the scrubber's number step: runs of digits joined by separators (at most five of
  . ( ) / _ | \ space, a hyphen or dash (U+2010..2015), an HTML tag such as </b>, or a line
  break with its indentation; or one comma directly between digits; not a comma and a space,
  which join page ranges, dates and amounts in prose, nor the minus sign of ranges such as 30−60)
  are read group by group, and from each group the longest stretch (at most seven groups, or
  nineteen one digit per line; 9..19 digits) that _pii_stretch_kind names is replaced by its placeholder ([CPF] [CNPJ] [TELEFONE]
  [CARTAO]). The pieces are joined once at the end (a
  string grown at every number was quadratic: 37 s for 4 MB).
Parameters: input - folded text (_pii_fold).
Returns: text - the text with numbers replaced; counts - {"CPF": n, …}.
Errors: none (a pure function).
Example: select * from hipocampo_private._pii_scrub_numbers('CPF 529–982–247–25'); -- ('CPF [CPF]', {"CPF": 1})
*/
create or replace function hipocampo_private._pii_scrub_numbers(input text, out text text, out counts jsonb)
language plpgsql
immutable
parallel safe
security invoker
set search_path = ''
as $$
declare
    sep constant text := '(?:[ .()/_|\\\u2010-\u2015-]|</?[A-Za-z][A-Za-z0-9]*>|[ \t]*\r?\n[ \t]*)';
    number_run constant text := '\+?\(?[0-9](?:' || sep || '{1,5}[0-9]|,[0-9]|[0-9])*';
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
        if char_length(regexp_replace(run, '[^0-9]', '', 'g')) < 9 then
            parts[r + 1] := run || gaps[r + 1];
            continue;
        end if;
        groups := array(select m[1] from regexp_matches(run, '([0-9]+)', 'g') as m);
        seps := regexp_split_to_array(run, '[0-9]+');  -- seps[1] prefix, seps[i + 1] after group i
        g := cardinality(groups);
        piece := seps[1];
        i := 1;
        while i <= g loop
            best := null;
            kind := null;
            -- at most seven groups, or nineteen written one digit per line
            j := least(g, i + case when char_length(groups[i]) = 1 and seps[i + 1] ~ '\n' then 18 else 6 end);
            while j >= i and best is null loop
                if char_length(array_to_string(groups[i:j], '')) between 9 and 19 then
                    kind := hipocampo_private._pii_stretch_kind(groups, seps, i, j);
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
                    piece := '';  -- the "+" / "(" written before the number goes with it
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
_pii_scrub(input text) -> (text text, counts jsonb)

Purpose: the one PII scrubber, in three steps: _pii_fold (other scripts' digits, full-width
  characters and entities read as ASCII); e-mails (also "[at]" / "(arroba)" / "[dot]" spelled
  out, "@" with spaces around it or percent-encoded as in "mailto:ana%40x.com", "user@[ip]",
  broken across a line); numbers (_pii_scrub_numbers: CPF, CNPJ, phone and card numbers with
  separators, dashes, markup or line breaks between their groups); and RG (formatted, after "RG",
  or with a state prefix such as "MG-12.345.678"). Each is replaced by its typed placeholder
  [EMAIL] [CPF] [CNPJ] [TELEFONE] [CARTAO] [RG]. Idempotent. Linear in the text's size.
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
    email text := loc || '(?:\.(?:[ \t]*\r?\n[ \t]*)?' || loc || ')*' || at_sign
        || '(?:\[[0-9a-f.:]+\]|' || dom || '(?:' || dot || dom || ')+)';
    rg constant text := '(?<![0-9.])[0-9]{1,2}\.[0-9]{3}\.[0-9]{3}-[0-9Xx](?![0-9])'
        || '|\m[Rr][Gg]\M[ \t]*(?:n[º°o.]*[ \t]*)?[:-]?[ \t]*[0-9Xx][0-9.Xx-]{4,13}[0-9Xx]'
        || '|\m(?:AC|AL|AP|AM|BA|CE|DF|ES|GO|MA|MT|MS|MG|PA|PB|PR|PE|PI|RJ|RN|RS|RO|RR|SC|SP|SE|TO)'
        || '[ -]?[0-9]{1,2}\.?[0-9]{3}\.?[0-9]{3}(?:-?[0-9Xx])?(?![0-9])';
    numbers record;
    n integer;
    c jsonb := '{}'::jsonb;
begin
    if input is null then
        counts := '{}'::jsonb;
        return;
    end if;
    text := hipocampo_private._pii_fold(input);
    n := coalesce(regexp_count(text, email, 1, 'i'), 0);
    if n > 0 then
        text := regexp_replace(text, email, '[EMAIL]', 'gi');
        c := c || jsonb_build_object('EMAIL', n);
    end if;
    numbers := hipocampo_private._pii_scrub_numbers(text);
    text := numbers.text;
    c := c || numbers.counts;
    n := coalesce(regexp_count(text, rg), 0);
    if n > 0 then
        text := regexp_replace(text, rg, '[RG]', 'g');
        c := c || jsonb_build_object('RG', n);
    end if;
    counts := c;
end;
$$;

/*
_pii_scrub_jsonb(value jsonb) -> jsonb

Purpose: value with every string leaf scrubbed by _pii_scrub (keys kept; numbers, booleans and
  nulls unchanged). Used on chunk metadata.
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
