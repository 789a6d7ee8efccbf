-- fewer regular expressions per document.
-- Ingestion's checks used more distinct regular expressions per document than a backend's cache of 32 compiled ones holds, so each document compiled about 26 again: the trivial ones (digits only, a hex token, a digit count, a newline, the word split) become string functions and the rest wait behind a string test that must pass for them to match (about 4 compiles a document).
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._ingest_item(document jsonb, chunks jsonb, embedding_model text, dims integer)
returns jsonb
language plpgsql
stable
set search_path to ''
as $function$
declare
    bad record;
begin
    if document is null or jsonb_typeof(document) <> 'object'
        or coalesce(document ->> 'title', '') = ''
        or coalesce(document ->> 'source_uri', '') = ''
        or coalesce(document ->> 'content_hash', '') = '' then
        raise exception 'document must be an object with title, source_uri and content_hash'
            using errcode = '22023';
    end if;
    -- What is stored is scrubbed (the documents trigger); look the document up by the same.
    document := document || jsonb_build_object(
        'title', (hipocampo_private._pii_scrub(document ->> 'title')).text,
        'source_uri', (hipocampo_private._pii_scrub(document ->> 'source_uri')).text);
    if char_length(document ->> 'title') > 500 then
        raise exception 'document.title is % characters; the limit is 500', char_length(document ->> 'title')
            using errcode = '22001';
    end if;
    if octet_length(document ->> 'source_uri') > 2048 then
        raise exception 'document.source_uri is % bytes; the limit is 2048', octet_length(document ->> 'source_uri')
            using errcode = '22001';
    end if;
    if chunks is null or jsonb_typeof(chunks) <> 'array' or jsonb_array_length(chunks) = 0 then
        raise exception 'chunks must be a non-empty json array' using errcode = '22023';
    end if;
    perform hipocampo_private._check_chunk_count(jsonb_array_length(chunks));
    if dims is null then
        raise exception 'unknown embedding model: %', embedding_model using errcode = 'P0002';
    end if;
    -- An embedding is a json array of numbers or pgvector's text form '[0.1,0.2,…]' (parsed
    -- once, by the insert; here its elements are counted by its commas).
    select c.i, c.n into bad
    from (
        select x.ordinality - 1 as i, x.value as chunk,
            case jsonb_typeof(x.value -> 'embedding')
                when 'array' then jsonb_array_length(x.value -> 'embedding')
                when 'string' then
                    pg_catalog.length(x.value ->> 'embedding')
                    - pg_catalog.length(pg_catalog.replace(x.value ->> 'embedding', ',', '')) + 1
            end as n
        from jsonb_array_elements(chunks) with ordinality as x
    ) as c
    where c.n is distinct from dims
       or coalesce(c.chunk ->> 'content', '') = ''
       or coalesce(c.chunk ->> 'content_hash', '') = ''
       or char_length(coalesce(c.chunk ->> 'chunk_index', '')) not between 1 and 9
       or translate(c.chunk ->> 'chunk_index', '0123456789', '') <> ''
    limit 1;
    if found then
        if bad.n is distinct from dims then
            raise exception 'embedding of chunk % has % dimensions; model % expects %',
                bad.i, coalesce(bad.n, 0), embedding_model, dims
                using errcode = '22000';
        end if;
        raise exception 'chunk % needs content, content_hash and chunk_index (an integer >= 0)', bad.i
            using errcode = '22023';
    end if;
    -- Sentence embeddings (optional): 1..64 per chunk, each with the model's dimensions.
    select x.ordinality - 1 as i into bad
    from jsonb_array_elements(chunks) with ordinality as x
    where jsonb_typeof(x.value -> 'sentence_embeddings') <> 'null'
      and (jsonb_typeof(x.value -> 'sentence_embeddings') <> 'array'
          or jsonb_array_length(x.value -> 'sentence_embeddings') not between 1 and 64)
    limit 1;
    if found then
        raise exception 'sentence_embeddings of chunk % must be a json array of 1 to 64 embeddings', bad.i
            using errcode = '22023';
    end if;
    select x.ordinality - 1 as i, y.n into bad
    from jsonb_array_elements(chunks) with ordinality as x
    cross join lateral (
        select case jsonb_typeof(v.value)
                when 'array' then jsonb_array_length(v.value)
                when 'string' then
                    pg_catalog.length(v.value #>> '{}')
                    - pg_catalog.length(pg_catalog.replace(v.value #>> '{}', ',', '')) + 1
            end as n
        from jsonb_array_elements(
            case when jsonb_typeof(x.value -> 'sentence_embeddings') = 'array' then x.value -> 'sentence_embeddings' end
        ) as v
    ) as y
    where y.n is distinct from dims
    limit 1;
    if found then
        raise exception 'a sentence embedding of chunk % has % dimensions; model % expects %',
            bad.i, coalesce(bad.n, 0), embedding_model, dims
            using errcode = '22000';
    end if;
    return document;
end;
$function$;

create or replace function hipocampo_private._pii_normalize(input text)
returns text
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
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
$function$;

create or replace function hipocampo_private._pii_scrub_encoded(input text, out text text, out counts jsonb)
returns record
language plpgsql
immutable parallel safe
set search_path to ''
as $function$
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
$function$;

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
$function$;

create or replace function hipocampo_private._text_measures(content text)
returns jsonb
language sql
stable parallel safe
set search_path to ''
as $function$
    with w as (
        -- Words as _plain_words reads them (lower case, unaccented, any script), numbers left out;
        -- rows, not an array: subscripting a long text array walks it (quadratic in the words).
        -- (string functions, not regular expressions: a backend caches 32 compiled expressions and
        -- ingestion's checks use more, so each one here would be compiled again per document)
        select x.word, x.n
        from string_to_table(hipocampo_private._plain_words(content), ' ') with ordinality as x (word, n)
        where translate(x.word, '0123456789', '') <> ''
    ),
    counts as (
        -- n words; S2 and S3, the sums of each distinct word's count squared and cubed.
        select coalesce(sum(k.n), 0)::double precision as n, coalesce(sum(k.n ^ 2), 0)::double precision as s2,
            coalesce(sum(k.n ^ 3), 0)::double precision as s3
        from (select count(*)::double precision as n from w group by w.word) as k
    ),
    adjacent as (
        select a.word, a.next
        from (select w.word, lead(w.word) over (order by w.n) as next from w) as a
        where a.next is not null
    ),
    pairs as (
        -- o: the sum over the distinct adjacent pairs of k * (k - 1).
        select coalesce(sum(p.k * (p.k - 1)), 0)::double precision as o
        from (select count(*)::double precision as k from adjacent as j group by j.word, j.next) as p
    ),
    lengths as (
        select coalesce(corr(char_length(j.word), char_length(j.next)), 0) as rho from adjacent as j
    ),
    z as (
        select c.n,
            (p.o - (c.s2 / c.n) ^ 2 * ((c.n - 1) / c.n) ^ 2) / sqrt(
                4 * c.s3 ^ 2 / c.n ^ 3 * ((c.n - 1) / c.n) ^ 3 + 2 * (c.s2 / c.n) ^ 2 * ((c.n - 1) / c.n) ^ 2
            ) as pairs,
            -l.rho * sqrt(c.n) as alternation
        from counts as c cross join pairs as p cross join lengths as l
        where c.n >= 3
    )
    select jsonb_build_object(
        'words', c.n::bigint,
        'word_order', round((z.pairs + z.alternation)::numeric, 3),
        'repeated_pairs', round(z.pairs::numeric, 3),
        'length_alternation', round(z.alternation::numeric, 3)
    )
    from counts as c left join z on true
$function$;
