-- linear pii scrub.
-- Issue 44 §3: the scrubber joins its pieces once instead of growing one string at every number (quadratic: 6.6 s for 1 MB).
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._pii_scrub(input text, out text text, out counts jsonb)
returns record
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
declare
    -- An @ (a line break may sit beside it), or one spelled out: [at] (arroba) " arroba ".
    at_sign constant text := '(?:@|[ \t]*\r?\n[ \t]*@[ \t]*|@[ \t]*\r?\n[ \t]*'
        || '|[ \t]*[[({<][ \t]*(?:at|arroba)[ \t]*[])}>][ \t]*|[ \t]+arroba[ \t]+)';
    -- A dot (a line break may follow it), or one spelled out: [dot] (ponto) " ponto ".
    dot constant text := '(?:\.(?:[ \t]*\r?\n[ \t]*)?'
        || '|[ \t]*[[({<][ \t]*(?:dot|ponto)[ \t]*[])}>][ \t]*|[ \t]+ponto[ \t]+)';
    loc constant text := '[[:alnum:]_%+-]+';
    -- A domain label; a word hyphenated across a line ("exem-\nplo") is one label.
    dom constant text := '[[:alnum:]_-]+(?:-[ \t]*\r?\n[ \t]*[[:alnum:]_-]+)*';
    number_run constant text
        := '\+?\(?[0-9](?:(?:[ .()/-]{1,3}|[ .()/-]{0,2}[ \t]*\r?\n[ \t]*)[0-9]|[0-9])*';
    email text;
    rg text;
    runs text [];
    gaps text [];
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
    -- The scrubbed text in pieces, joined once at the end: appending to one growing string copied
    -- it at every number, quadratic in the text's size (issue 44 §3: 37 s for 4 MB).
    parts text [];
    n integer;
    c jsonb := '{}'::jsonb;
begin
    if input is null then
        counts := '{}'::jsonb;
        return;
    end if;
    text := regexp_replace(input, '[\u00a0\u2007\u2009\u202f\u3000]', ' ', 'g');
    text := regexp_replace(text, '[\u00ad\u200b\u200c\u200d\u2060\ufeff]', '', 'g');

    -- E-mails: local part, an @ (or spelled out), a domain of two or more labels (or [ip]).
    email := loc || '(?:\.(?:[ \t]*\r?\n[ \t]*)?' || loc || ')*' || at_sign
        || '(?:\[[0-9a-f.:]+\]|' || dom || '(?:' || dot || dom || ')+)';
    n := coalesce(regexp_count(text, email, 1, 'i'), 0);
    if n > 0 then
        text := regexp_replace(text, email, '[EMAIL]', 'gi');
        c := c || jsonb_build_object('EMAIL', n);
    end if;

    -- Numbers: runs of digits joined by short separators, read group by group.
    runs := array(select m[1] from regexp_matches(text, '(' || number_run || ')', 'g') as m);
    if cardinality(runs) > 0 then
        gaps := regexp_split_to_array(text, number_run);
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
                        kind := hipocampo_private._pii_kind(digits,
                            array(select char_length(x) from unnest(groups[i:j]) as x),
                            (case when i = 1 then seps[1] else '' end)
                            || (select string_agg(groups[x] || case when x < j then seps[x + 1] else '' end, ''
                                order by x) from generate_series(i, j) as x));
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
    end if;

    -- RG: formatted (12.345.678-9), after "RG" (RG nº 1234567), or with a state prefix.
    rg := '(?<![0-9.])[0-9]{1,2}\.[0-9]{3}\.[0-9]{3}-[0-9Xx](?![0-9])'
        || '|\m[Rr][Gg]\M[ \t]*(?:n[º°o.]*[ \t]*)?[:-]?[ \t]*[0-9Xx][0-9.Xx-]{4,13}[0-9Xx]'
        || '|\m(?:AC|AL|AP|AM|BA|CE|DF|ES|GO|MA|MT|MS|MG|PA|PB|PR|PE|PI|RJ|RN|RS|RO|RR|SC|SP|SE|TO)'
        || '[ -]?[0-9]{1,2}\.?[0-9]{3}\.?[0-9]{3}(?:-?[0-9Xx])?(?![0-9])';
    n := coalesce(regexp_count(text, rg), 0);
    if n > 0 then
        text := regexp_replace(text, rg, '[RG]', 'g');
        c := c || jsonb_build_object('RG', n);
    end if;
    counts := c;
end;
$function$;
