-- documents in their own language.
-- knowledge bases and documents in any language PostgreSQL stems (issue 59 §2): twelve more unaccented text-search configurations, documents.language (detected at ingestion) chooses their chunks' configuration, and the lexical leg reads a question in each language of a knowledge base's documents (its coverage in the knowledge base's own)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

create text search configuration hipocampo_private.danish_unaccent (copy = pg_catalog.simple);
alter text search configuration hipocampo_private.danish_unaccent alter mapping for asciiword, hword_asciipart, asciihword with danish_stem;
alter text search configuration hipocampo_private.danish_unaccent alter mapping for word, hword_part, hword with extensions.unaccent, danish_stem;
alter text search configuration hipocampo_private.danish_unaccent alter mapping for numword, email, url, host, sfloat, version, hword_numpart, numhword, url_path, file, float, int, uint with simple;
alter text search configuration hipocampo_private.danish_unaccent drop mapping if exists for blank, tag, protocol, entity;
create text search configuration hipocampo_private.dutch_unaccent (copy = pg_catalog.simple);
alter text search configuration hipocampo_private.dutch_unaccent alter mapping for asciiword, hword_asciipart, asciihword with dutch_stem;
alter text search configuration hipocampo_private.dutch_unaccent alter mapping for word, hword_part, hword with extensions.unaccent, dutch_stem;
alter text search configuration hipocampo_private.dutch_unaccent alter mapping for numword, email, url, host, sfloat, version, hword_numpart, numhword, url_path, file, float, int, uint with simple;
alter text search configuration hipocampo_private.dutch_unaccent drop mapping if exists for blank, tag, protocol, entity;
create text search configuration hipocampo_private.finnish_unaccent (copy = pg_catalog.simple);
alter text search configuration hipocampo_private.finnish_unaccent alter mapping for asciiword, hword_asciipart, asciihword with finnish_stem;
alter text search configuration hipocampo_private.finnish_unaccent alter mapping for word, hword_part, hword with extensions.unaccent, finnish_stem;
alter text search configuration hipocampo_private.finnish_unaccent alter mapping for numword, email, url, host, sfloat, version, hword_numpart, numhword, url_path, file, float, int, uint with simple;
alter text search configuration hipocampo_private.finnish_unaccent drop mapping if exists for blank, tag, protocol, entity;
create text search configuration hipocampo_private.french_unaccent (copy = pg_catalog.simple);
alter text search configuration hipocampo_private.french_unaccent alter mapping for asciiword, hword_asciipart, asciihword with french_stem;
alter text search configuration hipocampo_private.french_unaccent alter mapping for word, hword_part, hword with extensions.unaccent, french_stem;
alter text search configuration hipocampo_private.french_unaccent alter mapping for numword, email, url, host, sfloat, version, hword_numpart, numhword, url_path, file, float, int, uint with simple;
alter text search configuration hipocampo_private.french_unaccent drop mapping if exists for blank, tag, protocol, entity;
create text search configuration hipocampo_private.german_unaccent (copy = pg_catalog.simple);
alter text search configuration hipocampo_private.german_unaccent alter mapping for asciiword, hword_asciipart, asciihword with german_stem;
alter text search configuration hipocampo_private.german_unaccent alter mapping for word, hword_part, hword with extensions.unaccent, german_stem;
alter text search configuration hipocampo_private.german_unaccent alter mapping for numword, email, url, host, sfloat, version, hword_numpart, numhword, url_path, file, float, int, uint with simple;
alter text search configuration hipocampo_private.german_unaccent drop mapping if exists for blank, tag, protocol, entity;
create text search configuration hipocampo_private.hungarian_unaccent (copy = pg_catalog.simple);
alter text search configuration hipocampo_private.hungarian_unaccent alter mapping for asciiword, hword_asciipart, asciihword with hungarian_stem;
alter text search configuration hipocampo_private.hungarian_unaccent alter mapping for word, hword_part, hword with extensions.unaccent, hungarian_stem;
alter text search configuration hipocampo_private.hungarian_unaccent alter mapping for numword, email, url, host, sfloat, version, hword_numpart, numhword, url_path, file, float, int, uint with simple;
alter text search configuration hipocampo_private.hungarian_unaccent drop mapping if exists for blank, tag, protocol, entity;
create text search configuration hipocampo_private.italian_unaccent (copy = pg_catalog.simple);
alter text search configuration hipocampo_private.italian_unaccent alter mapping for asciiword, hword_asciipart, asciihword with italian_stem;
alter text search configuration hipocampo_private.italian_unaccent alter mapping for word, hword_part, hword with extensions.unaccent, italian_stem;
alter text search configuration hipocampo_private.italian_unaccent alter mapping for numword, email, url, host, sfloat, version, hword_numpart, numhword, url_path, file, float, int, uint with simple;
alter text search configuration hipocampo_private.italian_unaccent drop mapping if exists for blank, tag, protocol, entity;
create text search configuration hipocampo_private.norwegian_unaccent (copy = pg_catalog.simple);
alter text search configuration hipocampo_private.norwegian_unaccent alter mapping for asciiword, hword_asciipart, asciihword with norwegian_stem;
alter text search configuration hipocampo_private.norwegian_unaccent alter mapping for word, hword_part, hword with extensions.unaccent, norwegian_stem;
alter text search configuration hipocampo_private.norwegian_unaccent alter mapping for numword, email, url, host, sfloat, version, hword_numpart, numhword, url_path, file, float, int, uint with simple;
alter text search configuration hipocampo_private.norwegian_unaccent drop mapping if exists for blank, tag, protocol, entity;
create text search configuration hipocampo_private.russian_unaccent (copy = pg_catalog.simple);
alter text search configuration hipocampo_private.russian_unaccent alter mapping for asciiword, hword_asciipart, asciihword with english_stem;
alter text search configuration hipocampo_private.russian_unaccent alter mapping for word, hword_part, hword with extensions.unaccent, russian_stem;
alter text search configuration hipocampo_private.russian_unaccent alter mapping for numword, email, url, host, sfloat, version, hword_numpart, numhword, url_path, file, float, int, uint with simple;
alter text search configuration hipocampo_private.russian_unaccent drop mapping if exists for blank, tag, protocol, entity;
create text search configuration hipocampo_private.spanish_unaccent (copy = pg_catalog.simple);
alter text search configuration hipocampo_private.spanish_unaccent alter mapping for asciiword, hword_asciipart, asciihword with spanish_stem;
alter text search configuration hipocampo_private.spanish_unaccent alter mapping for word, hword_part, hword with extensions.unaccent, spanish_stem;
alter text search configuration hipocampo_private.spanish_unaccent alter mapping for numword, email, url, host, sfloat, version, hword_numpart, numhword, url_path, file, float, int, uint with simple;
alter text search configuration hipocampo_private.spanish_unaccent drop mapping if exists for blank, tag, protocol, entity;
create text search configuration hipocampo_private.swedish_unaccent (copy = pg_catalog.simple);
alter text search configuration hipocampo_private.swedish_unaccent alter mapping for asciiword, hword_asciipart, asciihword with swedish_stem;
alter text search configuration hipocampo_private.swedish_unaccent alter mapping for word, hword_part, hword with extensions.unaccent, swedish_stem;
alter text search configuration hipocampo_private.swedish_unaccent alter mapping for numword, email, url, host, sfloat, version, hword_numpart, numhword, url_path, file, float, int, uint with simple;
alter text search configuration hipocampo_private.swedish_unaccent drop mapping if exists for blank, tag, protocol, entity;
create text search configuration hipocampo_private.turkish_unaccent (copy = pg_catalog.simple);
alter text search configuration hipocampo_private.turkish_unaccent alter mapping for asciiword, hword_asciipart, asciihword with turkish_stem;
alter text search configuration hipocampo_private.turkish_unaccent alter mapping for word, hword_part, hword with extensions.unaccent, turkish_stem;
alter text search configuration hipocampo_private.turkish_unaccent alter mapping for numword, email, url, host, sfloat, version, hword_numpart, numhword, url_path, file, float, int, uint with simple;
alter text search configuration hipocampo_private.turkish_unaccent drop mapping if exists for blank, tag, protocol, entity;

alter table hipocampo_private.knowledge_bases drop constraint "knowledge_bases_language_check";

alter table hipocampo_private.documents add column language text;

alter table hipocampo_private.knowledge_bases add column document_languages text[] not null default '{}'::text[];

alter table hipocampo_private.documents add constraint documents_language_check check ((language = any(array['portuguese'::text, 'english'::text, 'spanish'::text, 'french'::text, 'german'::text, 'italian'::text, 'dutch'::text, 'danish'::text, 'finnish'::text, 'hungarian'::text, 'norwegian'::text, 'russian'::text, 'swedish'::text, 'turkish'::text, 'simple'::text]))) not valid;

alter table hipocampo_private.documents validate constraint "documents_language_check";

alter table hipocampo_private.knowledge_bases add constraint knowledge_bases_language_check check ((language = any(array['portuguese'::text, 'english'::text, 'spanish'::text, 'french'::text, 'german'::text, 'italian'::text, 'dutch'::text, 'danish'::text, 'finnish'::text, 'hungarian'::text, 'norwegian'::text, 'russian'::text, 'swedish'::text, 'turkish'::text, 'simple'::text]))) not valid;

alter table hipocampo_private.knowledge_bases validate constraint "knowledge_bases_language_check";

set check_function_bodies = off;

create or replace function hipocampo_private._note_document_languages(k hipocampo_private.knowledge_bases, items jsonb)
returns void
language plpgsql
set search_path to ''
as $function$
declare
    fresh text[];
begin
    select array_agg(distinct e.v -> 'document' ->> 'language') into fresh
    from jsonb_array_elements(items) as e (v)
    where e.v -> 'document' ->> 'language' is not null
      and e.v -> 'document' ->> 'language' <> k.language
      and not (e.v -> 'document' ->> 'language') = any(k.document_languages);
    if fresh is not null then
        update hipocampo_private.knowledge_bases as kb
        set document_languages = array(
            select distinct x.l from unnest(kb.document_languages || fresh) as x (l) order by x.l
        )
        where kb.id = k.id;
    end if;
end;
$function$;

create or replace function hipocampo_private._question_words(language text, document_languages text[], query_text text)
returns table (lexeme text, own boolean)
language sql
immutable
set search_path to ''
as $function$
    select w.lexeme, bool_or(l.ord = 1)
    from pg_catalog.unnest(
        array[_question_words.language] || _question_words.document_languages
    ) with ordinality as l (name, ord)
    cross join lateral pg_catalog.unnest(
        pg_catalog.to_tsvector(hipocampo_private.text_search_config(l.name), _question_words.query_text)
    ) as w
    group by w.lexeme
$function$;

create or replace function hipocampo_private._insert_chunks(k hipocampo_private.knowledge_bases, items jsonb, state jsonb, embedding_model text)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    result jsonb;
begin
    with written as (
        insert into hipocampo_private.chunks (
            tenant_id, kb_id, document_id, chunk_index, content, token_count, metadata,
            content_hash, ts_config, embedding, embedding_model, expires_at, sentence_embeddings
        )
        select
            k.tenant_id, k.id, s.doc_id, (c.value ->> 'chunk_index')::integer, c.value ->> 'content',
            coalesce((c.value ->> 'token_count')::integer, 0), coalesce(c.value -> 'metadata', '{}'::jsonb),
            c.value ->> 'content_hash',
            hipocampo_private.text_search_config(coalesce(
                (select d.language from hipocampo_private.documents as d where d.id = s.doc_id), k.language
            )),
            (c.value ->> 'embedding')::extensions.vector, _insert_chunks.embedding_model,
            (items -> s.i -> 'document' ->> 'expires_at')::timestamptz,
            case when jsonb_typeof(c.value -> 'sentence_embeddings') = 'array' then array(
                select (x.v #>> '{}')::extensions.vector
                from jsonb_array_elements(c.value -> 'sentence_embeddings') with ordinality as x (v, n)
                order by x.n
            ) end
        from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        cross join lateral jsonb_array_elements(items -> s.i -> 'chunks') with ordinality as c
        where s.status <> 'unchanged'
        order by s.i, c.ordinality
        on conflict on constraint chunks_tenant_hash_model_key do nothing
        returning document_id
    )

    select jsonb_agg(jsonb_build_object(
        'document_id', s.doc_id, 'status', s.status, 'chunks', coalesce(w.n, 0),
        'skipped', case
            when s.status = 'unchanged' then 0
            else jsonb_array_length(items -> s.i -> 'chunks') - coalesce(w.n, 0)
        end) order by s.i)
    into result
    from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
    left join (
        select w.document_id, count(*)::integer as n from written as w group by w.document_id
    ) as w on w.document_id = s.doc_id;

    update hipocampo_private.documents as d set chunk_count = (r.value ->> 'chunks')::integer
    from jsonb_array_elements(result) as r
    where d.id = (r.value ->> 'document_id')::uuid and r.value ->> 'status' <> 'unchanged';
    return result;
end;
$function$;

create or replace function hipocampo_private._insert_documents(k hipocampo_private.knowledge_bases, items jsonb, state jsonb)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    trust jsonb := hipocampo.effective_config(k.tenant_id, k.id) -> 'retrieval' -> 'default_trust';
    written jsonb;
begin
    with inserted as (
        insert into hipocampo_private.documents (
            tenant_id, kb_id, source_type, doc_type, title, source_uri, author, published_at,
            version, trust_score, data_classification, content_hash, status, expires_at, pii_replacements,
            language
        )
        select
            k.tenant_id, k.id, coalesce(n.doc ->> 'source_type', 'other'),
            n.doc ->> 'doc_type', n.doc ->> 'title', n.doc ->> 'source_uri',
            n.doc ->> 'author', (n.doc ->> 'published_at')::timestamptz,
            n.doc ->> 'version',
            -- the source type's default trust (retrieval.default_trust; 0.5 when it has none)
            coalesce((n.doc ->> 'trust_score')::real,
                (trust ->> coalesce(n.doc ->> 'source_type', 'other'))::real, 0.5),
            coalesce(n.doc ->> 'data_classification', 'internal'), n.doc ->> 'content_hash',
            coalesce(n.doc ->> 'status', 'active'), (n.doc ->> 'expires_at')::timestamptz,
            coalesce((n.doc ->> 'pii_replacements')::integer, 0), n.doc ->> 'language'
        from (
            select s.i, items -> s.i -> 'document' as doc
            from jsonb_to_recordset(state) as s (i integer, status text)
            where s.status = 'inserted'
        ) as n
        order by n.i
        returning id, source_uri
    )

    select jsonb_agg(jsonb_build_object(
        'i', s.i, 'doc_id', coalesce(s.doc_id, ins.id), 'status', s.status) order by s.i)
    into written
    from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
    left join inserted as ins
        on s.status = 'inserted' and ins.source_uri = items -> s.i -> 'document' ->> 'source_uri';
    return written;
end;
$function$;

create or replace function hipocampo_private._lexical_leg(tenant uuid, scope uuid[], model text, query_text text, source_types text[], metadata_filter jsonb, settings jsonb, dense_ids bigint[], out ids bigint[], out scores double precision[], out dense_scores double precision[], out coverage double precision)
returns record
language plpgsql
stable
set search_path to ''
as $function$
declare
    n_cand integer := (settings ->> 'candidates')::integer;
    k1 double precision := (settings ->> 'bm25_k1')::double precision;
    b double precision := (settings ->> 'bm25_b')::double precision;
    t_kb uuid [];
    t_lex text [];
    t_idf double precision [];
    t_avg double precision [];
    t_counted boolean [];  -- counts toward coverage: of the KB's own language, not a question_stopwords one
    scored_ids bigint [];  -- every chunk of the scope holding a query term, best first (unfiltered)
    scored_scores double precision [];
    lim integer;
begin
    -- One term list per knowledge base: every lexeme of the question with its BM25 idf (a lexeme
    -- the knowledge base lacks at df 0: no postings to score, but part of the question's whole).
    select
        coalesce(array_agg(q.kb_id), '{}'),
        coalesce(array_agg(q.lexeme), '{}'),
        coalesce(array_agg(ln(1 + (st.chunk_count - q.df + 0.5) / (q.df + 0.5))), '{}'),
        coalesce(array_agg(st.token_total::double precision / greatest(st.chunk_count, 1)), '{}'),
        coalesce(array_agg(q.counted), '{}')
    into t_kb, t_lex, t_idf, t_avg, t_counted
    from (
        select kb.id as kb_id, u.lexeme, coalesce(ts.doc_freq, 0) as df,
            u.own and not coalesce(settings -> 'question_stopwords', '[]'::jsonb) ? u.lexeme as counted
        from hipocampo_private.knowledge_bases as kb
        cross join lateral hipocampo_private._question_words(kb.language, kb.document_languages, query_text) as u
        left join hipocampo_private.kb_term_stats as ts
            on ts.kb_id = kb.id and ts.embedding_model = model and ts.lexeme = u.lexeme
        where kb.id = any(scope)
    ) as q
    inner join hipocampo_private.kb_text_stats as st
        on st.kb_id = q.kb_id and st.embedding_model = model;

    select
        coalesce(array_agg(x.chunk_id order by x.score desc, x.chunk_id), '{}'),
        coalesce(array_agg(x.score order by x.score desc, x.chunk_id), '{}'),
        (array_agg(x.matched / nullif(x.total, 0) order by x.score desc, x.chunk_id))[1]
    into scored_ids, scored_scores, coverage
    from (
        select p.chunk_id,
            sum(tm.idf * p.tf * (k1 + 1) / (p.tf + k1 * (1 - b + b * p.chunk_length / tm.avg_len))) as score,
            coalesce(sum(tm.idf) filter (where tm.counted), 0) as matched,
            max(tt.total) as total
        from unnest(t_kb, t_lex, t_idf, t_avg, t_counted) as tm (kb_id, lexeme, idf, avg_len, counted)
        -- Coverage (issue 61 §3): the share of its knowledge base's question idf a chunk holds.
        inner join (
            select w.kb_id, sum(w.idf) filter (where w.counted) as total
            from unnest(t_kb, t_idf, t_counted) as w (kb_id, idf, counted)
            group by w.kb_id
        ) as tt on tt.kb_id = tm.kb_id
        -- One primary-key range per term: "offset 0" keeps the planner from flattening the
        -- lateral subquery into a join it may run as a scan of all the tenant's postings.
        cross join lateral (
            select ps.chunk_id, ps.tf, ps.chunk_length
            from hipocampo_private.kb_postings as ps
            where ps.tenant_id = tenant and ps.kb_id = tm.kb_id and ps.lexeme = tm.lexeme
            offset 0
        ) as p
        group by p.chunk_id
    ) as x;

    for pass in 1..2 loop
        lim := case when pass = 1 then n_cand * 4 else cardinality(scored_ids) end;
        select coalesce(array_agg(f.id order by f.ord), '{}'), coalesce(array_agg(f.score order by f.ord), '{}')
        into ids, scores
        from (
            select u.id, u.score, u.ord
            from unnest(scored_ids[1:lim], scored_scores[1:lim]) with ordinality as u (id, score, ord)
            inner join hipocampo_private.chunks as c on c.id = u.id
            inner join hipocampo_private.documents as d on d.id = c.document_id
            where c.embedding_model = model
              and (_lexical_leg.source_types is null or d.source_type = any(_lexical_leg.source_types))
              and (_lexical_leg.metadata_filter is null or c.metadata @> _lexical_leg.metadata_filter)
              and d.status = 'active'
              and (c.expires_at is null or c.expires_at > now())
            order by u.ord
            limit n_cand
        ) as f;
        exit when cardinality(ids) >= n_cand or cardinality(scored_ids) <= n_cand * 4;
    end loop;
    select coalesce(array_agg(coalesce(sc.score, 0) order by dl.ord), '{}') into dense_scores
    from unnest(dense_ids) with ordinality as dl (id, ord)
    left join unnest(scored_ids, scored_scores) as sc (id, score) on sc.id = dl.id;
end;
$function$;

create or replace function hipocampo_private._replace_documents(items jsonb, state jsonb, embedding_model text)
returns void
language plpgsql
set search_path to ''
as $function$
begin
    -- A changed text replaces every model's chunks (no model keeps serving the old text); the
    -- same text for a model without chunks (a model switch) replaces only that model's.
    delete from hipocampo_private.chunks as c
    using jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
    where s.status in ('embedded', 'replaced') and c.document_id = s.doc_id
      and (c.embedding_model = _replace_documents.embedding_model or s.status = 'replaced');

    update hipocampo_private.documents as d set
        source_type = coalesce(u.doc ->> 'source_type', d.source_type),
        doc_type = coalesce(u.doc ->> 'doc_type', d.doc_type),
        title = u.doc ->> 'title',
        author = coalesce(u.doc ->> 'author', d.author),
        published_at = coalesce((u.doc ->> 'published_at')::timestamptz, d.published_at),
        version = coalesce(u.doc ->> 'version', d.version),
        trust_score = coalesce((u.doc ->> 'trust_score')::real, d.trust_score),
        data_classification = coalesce(u.doc ->> 'data_classification', d.data_classification),
        content_hash = u.doc ->> 'content_hash',
        status = coalesce(u.doc ->> 'status', d.status),
        expires_at = (u.doc ->> 'expires_at')::timestamptz,
        pii_replacements = coalesce((u.doc ->> 'pii_replacements')::integer, d.pii_replacements),
        -- a new text is in the language detected now (null: the knowledge base's); the same text
        -- keeps its language unless one is sent
        language = case when u.status = 'replaced' then u.doc ->> 'language'
            else coalesce(u.doc ->> 'language', d.language) end,
        updated_at = now()
    from (
        select s.doc_id, s.status, items -> s.i -> 'document' as doc
        from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        where s.status in ('embedded', 'replaced')
    ) as u
    where d.id = u.doc_id;
end;
$function$;

create or replace function hipocampo_private._write_checked_documents(k hipocampo_private.knowledge_bases, items jsonb, embedding_model text)
returns jsonb
language plpgsql
set search_path to ''
as $function$
declare
    state jsonb;  -- [{i, doc_id, old_hash, status}]: one element per item, in order
begin
    state := hipocampo_private._document_states(k, items, _write_checked_documents.embedding_model);
    if not jsonb_path_exists(state, '$[*] ? (@.status != "unchanged")') then
        -- Nothing to write: every document is stored with this model's chunks.
        return (
            select jsonb_agg(jsonb_build_object(
                'document_id', s.doc_id, 'status', s.status, 'chunks', 0, 'skipped', 0) order by s.i)
            from jsonb_to_recordset(state) as s (i integer, doc_id uuid, status text)
        );
    end if;
    if jsonb_path_exists(state, '$[*] ? (@.status == "embedded" || @.status == "replaced")') then
        perform hipocampo_private._replace_documents(items, state, _write_checked_documents.embedding_model);
    end if;
    state := hipocampo_private._insert_documents(k, items, state);
    perform hipocampo_private._note_document_languages(k, items);
    return hipocampo_private._insert_chunks(k, items, state, _write_checked_documents.embedding_model);
exception
    when insufficient_privilege then
        raise exception 'only tenant admins can ingest documents' using errcode = '42501';
    when check_violation then
        raise exception 'invalid document: %', sqlerrm using errcode = '23514';
    when invalid_text_representation or invalid_datetime_format or datetime_field_overflow
        or numeric_value_out_of_range then
        raise exception 'invalid document field: %', sqlerrm using errcode = '22023';
end;
$function$;

create or replace function hipocampo_private.text_search_config(language text)
returns regconfig
language plpgsql
immutable
set search_path to ''
as $function$
begin
    return case language
        when 'portuguese' then 'hipocampo_private.portuguese_unaccent'::regconfig
        when 'english' then 'hipocampo_private.english_unaccent'::regconfig
        when 'spanish' then 'hipocampo_private.spanish_unaccent'::regconfig
        when 'french' then 'hipocampo_private.french_unaccent'::regconfig
        when 'german' then 'hipocampo_private.german_unaccent'::regconfig
        when 'italian' then 'hipocampo_private.italian_unaccent'::regconfig
        when 'dutch' then 'hipocampo_private.dutch_unaccent'::regconfig
        when 'danish' then 'hipocampo_private.danish_unaccent'::regconfig
        when 'finnish' then 'hipocampo_private.finnish_unaccent'::regconfig
        when 'hungarian' then 'hipocampo_private.hungarian_unaccent'::regconfig
        when 'norwegian' then 'hipocampo_private.norwegian_unaccent'::regconfig
        when 'russian' then 'hipocampo_private.russian_unaccent'::regconfig
        when 'swedish' then 'hipocampo_private.swedish_unaccent'::regconfig
        when 'turkish' then 'hipocampo_private.turkish_unaccent'::regconfig
        when 'simple' then 'hipocampo_private.simple_unaccent'::regconfig
        else null
    end;
end;
$function$;

revoke execute on function hipocampo_private._note_document_languages(k hipocampo_private.knowledge_bases, items jsonb) from public;
revoke execute on function hipocampo_private._question_words(language text, document_languages text[], query_text text) from public;
grant execute on function hipocampo_private._note_document_languages(k hipocampo_private.knowledge_bases, items jsonb) to authenticated;
grant execute on function hipocampo_private._note_document_languages(k hipocampo_private.knowledge_bases, items jsonb) to service_role;
grant execute on function hipocampo_private._question_words(language text, document_languages text[], query_text text) to authenticated;
grant execute on function hipocampo_private._question_words(language text, document_languages text[], query_text text) to service_role;
