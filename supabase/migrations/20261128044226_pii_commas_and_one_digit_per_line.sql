-- pii commas and one digit per line.
-- digits joined by commas (in a CPF, CNPJ, card or mobile's shape, no dots) and one digit per line (a CPF, CNPJ or card: check digits) are scrubbed (issue 44 §3)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._pii_stretch_kind(groups text[], seps text[], i integer, j integer)
returns text
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._pii_scrub_numbers(input text, out text text, out counts jsonb)
returns record
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
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
$function$;

revoke execute on function hipocampo_private._pii_stretch_kind(groups text[], seps text[], i integer, j integer) from public;
grant execute on function hipocampo_private._pii_stretch_kind(groups text[], seps text[], i integer, j integer) to authenticated;
grant execute on function hipocampo_private._pii_stretch_kind(groups text[], seps text[], i integer, j integer) to service_role;
