-- pii through encodings.
-- Issue 44 §3: the scrubber reads PII through other encodings (digits of other scripts and full-width characters folded, entities of @, dashes, markup, underscores, pipes and escapes between digit groups, spaced or percent-encoded @) and the memory gate reads numbers and the leaves of a value together; the scrubber is split into named steps.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._pii_fold(input text)
returns text
language sql
immutable parallel safe
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._pii_scrub_numbers(input text, out text text, out counts jsonb)
returns record
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
declare
    sep constant text := '(?:[ .()/_|\\\u2010-\u2015-]|</?[A-Za-z][A-Za-z0-9]*>|[ \t]*\r?\n[ \t]*)';
    number_run constant text := '\+?\(?[0-9](?:' || sep || '{1,5}[0-9]|[0-9])*';
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
    digits text;
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
            j := least(g, i + 6);
            while j >= i and best is null loop
                digits := array_to_string(groups[i:j], '');
                -- A stretch of several groups neither starts with nor holds two one-digit
                -- groups (a list of small numbers is not a phone number).
                if char_length(digits) between 9 and 19 and (i = j or (char_length(groups[i]) > 1
                    and (select count(*) from unnest(groups[i:j]) as x where char_length(x) = 1) < 2))
                then
                    -- (what _pii_kind reads of the separators: any dash is "-", markup is nothing)
                    kind := hipocampo_private._pii_kind(digits,
                        array(select char_length(x) from unnest(groups[i:j]) as x),
                        regexp_replace(translate((case when i = 1 then seps[1] else '' end)
                            || (select string_agg(groups[x] || case when x < j then seps[x + 1] else '' end, ''
                                order by x) from generate_series(i, j) as x),
                            '‐‑‒–—―', '------'), '</?[A-Za-z][A-Za-z0-9]*>', '', 'g'));
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
$function$;

create or replace function hipocampo_private._memory_value_problem(value jsonb, cfg jsonb)
returns text[]
language plpgsql
stable
set search_path to ''
as $function$
declare
    max_bytes integer := (cfg ->> 'value_max_bytes')::integer;
    max_depth integer := (cfg ->> 'value_max_depth')::integer;
    size integer;
    strings text;
begin
    if value is null then
        return array['invalid_value', 'a memory needs a value'];
    end if;
    size := octet_length(value::text);
    if size > max_bytes then
        return array['too_long', format('memory value is %s bytes; the limit is %s (memory.value_max_bytes)',
            size, max_bytes)];
    end if;
    if jsonb_path_exists(value, format('strict $.**{%s}', max_depth + 1)::jsonpath) then
        return array['invalid_value', format('memory value nests deeper than %s levels (memory.value_max_depth)',
            max_depth)];
    end if;
    -- Leaves (numbers read as digit strings) and keys joined by a separator no number or e-mail
    -- runs across, then the leaves again read together (issue 44 §3: a CPF as a JSON number,
    -- split across fields or as an array of digits).
    select string_agg(s, ' ; ') || ' ; ' || coalesce(string_agg(s, '') filter (where leaf), '') into strings from (
        select x #>> '{}' as s, true as leaf
        from jsonb_path_query(value, 'strict $.** ? (@.type() == "string" || @.type() == "number")') as x
        union all
        select x #>> '{}', false
        from jsonb_path_query(value, 'strict $.** ? (@.type() == "object").keyvalue().key') as x
    ) as leaves;
    if strings is null then
        return null;
    end if;
    return hipocampo_private._pii_problem(strings, cfg, 'memory value');
end;
$function$;

create or replace function hipocampo_private._pii_scrub(input text, out text text, out counts jsonb)
returns record
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
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
$function$;

revoke execute on function hipocampo_private._pii_fold(input text) from public;
revoke execute on function hipocampo_private._pii_scrub_numbers(input text, out text text, out counts jsonb) from public;
grant execute on function hipocampo_private._pii_fold(input text) to authenticated;
grant execute on function hipocampo_private._pii_fold(input text) to service_role;
grant execute on function hipocampo_private._pii_scrub_numbers(input text, out text text, out counts jsonb) to authenticated;
grant execute on function hipocampo_private._pii_scrub_numbers(input text, out text text, out counts jsonb) to service_role;
