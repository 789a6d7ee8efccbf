-- identifiers are not phone numbers.
-- A phone number in a run of digits glued to a letter is part of an identifier (1 % of random UUIDs held a digit run the phone rule read: a message's cited document id came back as 3fd33a[TELEFONE]-…); UUID leaves of jsonb are never scrubbed.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._pii_scrub_jsonb(value jsonb)
returns jsonb
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
begin
    return case jsonb_typeof(value)
        -- an identifier (a UUID: a message's cited document ids) is never personal data
        when 'string' then case when value #>> '{}' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
            then value else to_jsonb((hipocampo_private._pii_scrub(value #>> '{}')).text) end
        when 'object' then coalesce((select jsonb_object_agg(e.key, hipocampo_private._pii_scrub_jsonb(e.value))
            from jsonb_each(value) as e), '{}'::jsonb)
        when 'array' then coalesce((select jsonb_agg(hipocampo_private._pii_scrub_jsonb(e.value) order by e.n)
            from jsonb_array_elements(value) with ordinality as e (value, n)), '[]'::jsonb)
        else value
    end;
end;
$function$;

create or replace function hipocampo_private._pii_scrub_numbers(input text, out text text, out counts jsonb)
returns record
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
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
        if char_length(regexp_replace(run, '[^0-9]', '', 'g')) < 9 then
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
            j := least(g, i + case when char_length(groups[i]) = 1 and (singles or seps[i + 1] ~ '\n') then 18 else 6 end);
            while j >= i and best is null loop
                if char_length(array_to_string(groups[i:j], '')) between 9 and 19 then
                    kind := hipocampo_private._pii_stretch_kind(groups, seps, i, j);
                    -- A phone number (no check digit) in a run glued to a letter is part of an
                    -- identifier (a UUID's "…2e82-3945-4353…" or "07994315-6851-4b03…", a code
                    -- like "AB11-2345-6789"), not a number a person wrote.
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
$function$;
