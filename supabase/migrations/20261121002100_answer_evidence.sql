-- Evidence for answers that cite or refuse: how much of a question a chunk covers (support), the
-- conflicts between documents (deadlines, dates, money per scope), and one RPC that retrieves,
-- scores, resolves conflicts, selects the evidence under a token budget and decides answer or
-- refuse. Generation (extractive or an LLM) and the post-validation of numbers happen in the client.

/*
_question_lexemes(query_text text, ts_config regconfig, stopwords jsonb) -> text[]

Purpose: the distinct stemmed, unaccented terms of a question, minus the question stopwords
  (rag.question_stopwords: interrogatives and auxiliaries).
Example: select hipocampo_private._question_lexemes('Qual o prazo?', 'hipocampo_private.portuguese_unaccent', '[]');
*/
create function hipocampo_private._question_lexemes(query_text text, ts_config regconfig, stopwords jsonb)
returns text[]
language sql
stable
security invoker
set search_path = ''
as $$
    select coalesce(array_agg(distinct l.lexeme), '{}')
    from pg_catalog.unnest(pg_catalog.tsvector_to_array(pg_catalog.to_tsvector(ts_config, coalesce(query_text, ''))))
        as l (lexeme)
    where not coalesce(stopwords, '[]'::jsonb) ? l.lexeme
$$;

/*
_sentences(content text) -> table (ord integer, sentence text)

Purpose: a text split into sentences (after . ! ? ; : before a capital letter, or at line breaks),
  empty ones left out.
*/
create function hipocampo_private._sentences(content text)
returns table (ord integer, sentence text)
language sql
immutable
security invoker
set search_path = ''
as $$
    select row_number() over (order by s.n)::integer, btrim(s.part)
    from pg_catalog.regexp_split_to_table(content, '(?<=[.!?;:])\s+(?=[A-ZÀ-Ý"«(])|\n+') with ordinality as s (part, n)
    where btrim(s.part) <> ''
$$;

/*
evidence_support(query_text text, chunk_ids bigint[], stopwords jsonb default null) -> setof record

Purpose: how well each chunk covers a question. coverage = idf-weighted share of the question's
  terms (BM25 idf of the chunk's knowledge base) present in the chunk (title included);
  window_coverage = the same over the chunk's best window of two consecutive sentences;
  support = (coverage + window_coverage) / 2, in [0, 1] (docs/design.md §answers).
Parameters: query_text 1..2,000 characters; chunk_ids visible to the caller (RLS);
  stopwords - json array of stems (default rag.question_stopwords).
Returns: chunk_id, coverage, window_coverage, support, best_window (text of the best window).
Errors: none (chunks the caller cannot see are left out).
Example: select * from hipocampo.evidence_support('Qual o prazo de trancamento?', array[12, 15]);
*/
create function hipocampo.evidence_support(query_text text, chunk_ids bigint[], stopwords jsonb default null)
returns table (
    chunk_id bigint, coverage double precision, window_coverage double precision,
    support double precision, best_window text
)
language sql
stable
security invoker
set search_path = ''
as $$
    with c as (
        select ch.id, ch.kb_id, ch.embedding_model, ch.ts_config, ch.fts, ch.content
        from hipocampo_private.chunks as ch
        where ch.id = any(evidence_support.chunk_ids)
    ),

    q as (
        select
            c.id,
            l.lexeme,
            pg_catalog.ln(
                1 + (coalesce(st.chunk_count, 0) - coalesce(ts.doc_freq, 0) + 0.5)
                / (coalesce(ts.doc_freq, 0) + 0.5)
            ) as idf
        from c
        cross join lateral pg_catalog.unnest(hipocampo_private._question_lexemes(
            evidence_support.query_text, c.ts_config,
            coalesce(evidence_support.stopwords,
                     (select s.config -> 'rag' -> 'question_stopwords'
                      from hipocampo_private.settings as s where s.tenant_id is null))
        )) as l (lexeme)
        left join hipocampo_private.kb_text_stats as st
            on st.kb_id = c.kb_id and st.embedding_model = c.embedding_model
        left join hipocampo_private.kb_term_stats as ts
            on ts.kb_id = c.kb_id and ts.embedding_model = c.embedding_model and ts.lexeme = l.lexeme
    ),

    totals as (
        select q.id, sum(q.idf) as total, sum(q.idf) filter (
            where q.lexeme = any(pg_catalog.tsvector_to_array((select c.fts from c where c.id = q.id)))
        ) as found
        from q group by q.id
    ),

    sentences as (
        select c.id, s.ord, s.sentence,
               pg_catalog.tsvector_to_array(pg_catalog.to_tsvector(c.ts_config, s.sentence)) as lexemes
        from c cross join lateral hipocampo_private._sentences(c.content) as s
    ),

    windows as (
        select a.id, a.ord,
               a.sentence || coalesce(' ' || b.sentence, '') as text,
               a.lexemes || coalesce(b.lexemes, '{}') as lexemes
        from sentences as a
        left join sentences as b on b.id = a.id and b.ord = a.ord + 1
    ),

    scored as (
        select distinct on (w.id) w.id, w.text,
               coalesce((select sum(q.idf) from q where q.id = w.id and q.lexeme = any(w.lexemes)), 0) as found
        from windows as w
        order by w.id, 3 desc, w.ord
    )

    select
        c.id,
        coalesce(t.found / nullif(t.total, 0), 0),
        coalesce(s.found / nullif(t.total, 0), 0),
        (coalesce(t.found / nullif(t.total, 0), 0) + coalesce(s.found / nullif(t.total, 0), 0)) / 2,
        s.text
    from c
    left join totals as t on t.id = c.id
    left join scored as s on s.id = c.id
$$;

/*
_scope_of(text text) -> text

Purpose: the scope a sentence or question speaks of: 'internacional', 'nacional' or 'geral'.
*/
create function hipocampo_private._scope_of(sentence text)
returns text
language sql
stable
security invoker
set search_path = ''
as $$
    select case
        when lower(extensions.unaccent(sentence)) ~ '\minternaciona' then 'internacional'
        when lower(extensions.unaccent(sentence)) ~ '\mnaciona' then 'nacional'
        else 'geral'
    end
$$;

/*
_sentence_values(sentence text) -> table (kind text, value text)

Purpose: the comparable values a sentence states: deadlines in days ("30 dias", "2 meses" = 60),
  dd/mm/yyyy dates (as yyyy-mm-dd) and monetary values in R$ (as a plain decimal).
Example: select * from hipocampo_private._sentence_values('Prazo de 30 dias, multa de R$ 1.200,50.');
*/
create function hipocampo_private._sentence_values(sentence text)
returns table (kind text, value text)
language sql
stable
security invoker
set search_path = ''
as $$
    with plain as (select lower(extensions.unaccent(sentence)) as t)

    select 'deadline_days', ((m[1])::integer * case when m[2] like 'mes%' then 30 else 1 end)::text
    from plain cross join lateral pg_catalog.regexp_matches(
        plain.t, '\m(\d{1,4})\s*(?:\([^)]{1,40}\)\s*)?(dias?|meses|mes)\M', 'g'
    ) as m
    union all
    select 'date', m[3] || '-' || lpad(m[2], 2, '0') || '-' || lpad(m[1], 2, '0')
    from plain cross join lateral pg_catalog.regexp_matches(plain.t, '\m(\d{1,2})/(\d{1,2})/(\d{4})\M', 'g') as m
    union all
    select 'money', (replace(m[1], '.', '') || '.' || rpad(coalesce(m[2], '00'), 2, '0'))::numeric::text
    from plain cross join lateral pg_catalog.regexp_matches(
        plain.t, 'r\$\s*(\d{1,3}(?:\.\d{3})+|\d+)(?:,(\d{1,2}))?', 'g'
    ) as m
$$;

/*
detect_conflicts(query_text text, chunk_ids bigint[], trust_margin double precision default null,
  stopwords jsonb default null) -> jsonb

Purpose: conflicts between the documents of the given chunks: two active documents that state
  different deadlines (days), dd/mm/yyyy dates or R$ values, in sentences on the question's topic
  (sharing at least min(2, n) of its n terms), within one scope (nacional, internacional,
  geral). When the question names a scope, only that scope counts. Values that differ inside one
  document are not a conflict. A conflict is resolved when one document's trust exceeds every
  other's by trust_margin (default rag.conflict_trust_margin): its values win.
Parameters: query_text; chunk_ids visible to the caller; trust_margin 0..1; stopwords as
  evidence_support.
Returns: a json array of {"kind", "scope", "resolved", "winner_document_id", "document_ids",
  "values": [{"value", "document_id", "chunk_id", "title", "trust_score", "sentence"}]}; [] when none.
Errors: none.
Example: select hipocampo.detect_conflicts('Qual o prazo de reembolso internacional?', array[1, 2]);
*/
create function hipocampo.detect_conflicts(
    query_text text, chunk_ids bigint[], trust_margin double precision default null, stopwords jsonb default null
)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    with cfg as (
        select s.config -> 'rag' as rag from hipocampo_private.settings as s where s.tenant_id is null
    ),

    c as (
        select ch.id, ch.document_id, ch.ts_config, ch.content, d.title, d.trust_score
        from hipocampo_private.chunks as ch
        inner join hipocampo_private.documents as d on d.id = ch.document_id and d.tenant_id = ch.tenant_id
        where ch.id = any(detect_conflicts.chunk_ids) and d.status = 'active'
    ),

    question_scope as (
        select case
            when hipocampo_private._scope_of(detect_conflicts.query_text) = 'geral' then null
            else hipocampo_private._scope_of(detect_conflicts.query_text)
        end as scope
    ),

    facts as (
        select c.id as chunk_id, c.document_id, c.title, c.trust_score, s.sentence,
               hipocampo_private._scope_of(s.sentence) as scope, v.kind, v.value
        from c
        cross join lateral hipocampo_private._sentences(c.content) as s
        cross join lateral hipocampo_private._sentence_values(s.sentence) as v
        cross join lateral (
            select hipocampo_private._question_lexemes(
                detect_conflicts.query_text, c.ts_config,
                coalesce(detect_conflicts.stopwords, (select cfg.rag -> 'question_stopwords' from cfg))
            ) as terms
        ) as q
        where cardinality(q.terms) > 0
          and (
              select count(*) from pg_catalog.unnest(q.terms) as t (lexeme)
              where t.lexeme = any(pg_catalog.tsvector_to_array(pg_catalog.to_tsvector(c.ts_config, s.sentence)))
          ) >= least(2, cardinality(q.terms))
    ),

    scoped as (
        select f.* from facts as f, question_scope as qs
        where qs.scope is null or f.scope = qs.scope
    ),

    groups as (
        select g.kind, g.scope
        from scoped as g
        where exists (
            select 1 from scoped as o
            where o.kind = g.kind and o.scope = g.scope
              and o.document_id <> g.document_id and o.value <> g.value
        )
        group by g.kind, g.scope
    ),

    ranked as (
        select gr.kind, gr.scope, d.document_id, d.trust_score,
               row_number() over (partition by gr.kind, gr.scope order by d.trust_score desc, d.document_id) as rn
        from groups as gr
        cross join lateral (
            select distinct s.document_id, s.trust_score from scoped as s
            where s.kind = gr.kind and s.scope = gr.scope
        ) as d
    ),

    verdicts as (
        select r1.kind, r1.scope,
               r1.trust_score - coalesce(r2.trust_score, 0)
               >= coalesce(detect_conflicts.trust_margin, ((select cfg.rag ->> 'conflict_trust_margin' from cfg))::double precision)
               as resolved,
               r1.document_id as top_document
        from ranked as r1
        left join ranked as r2 on r2.kind = r1.kind and r2.scope = r1.scope and r2.rn = 2
        where r1.rn = 1
    )

    select coalesce(jsonb_agg(jsonb_build_object(
        'kind', v.kind,
        'scope', v.scope,
        'resolved', v.resolved,
        'winner_document_id', case when v.resolved then v.top_document end,
        'document_ids', (
            select jsonb_agg(distinct s.document_id) from scoped as s where s.kind = v.kind and s.scope = v.scope
        ),
        'values', (
            select jsonb_agg(jsonb_build_object(
                'value', s.value, 'document_id', s.document_id, 'chunk_id', s.chunk_id, 'title', s.title,
                'trust_score', s.trust_score, 'sentence', s.sentence
            ) order by s.trust_score desc, s.chunk_id)
            from scoped as s where s.kind = v.kind and s.scope = v.scope
        )
    ) order by v.kind, v.scope), '[]'::jsonb)
    from verdicts as v
$$;

/*
answer_evidence(query_text text, query_embedding vector, kb_ids uuid[] default null,
  agent text default null, tenant_id uuid default null) -> jsonb

Purpose: everything an answer needs from the database in one call, with the rules of the rag
  config (rag_config): hybrid retrieval of rag.top_k chunks, plus up to 3 near-duplicates of each
  from other documents (retrieval drops those; two versions of a policy are such twins);
  support per chunk (evidence_support);
  evidence = chunks with support >= rag.min_score, in the order of the combined score, under
  rag.evidence_token_budget tokens; conflicts (detect_conflicts): a resolved one drops the losing
  documents' chunks, an unresolved one refuses; confidence = the best support, refused below
  rag.min_confidence; cross-check: >= rag.cross_check_min_documents distinct documents with
  support >= rag.min_confidence, or one of rag.authoritative_source_types with trust >=
  rag.authoritative_trust.
Parameters: query_text 1..2,000 characters; query_embedding of the active model; kb_ids (default:
  the agent binding's); agent - binding name; tenant_id only for service_role.
Returns: {"decision": "answer" | "refuse", "reason": null | "rag_disabled" | "no_evidence" |
  "low_confidence" | "conflicting_sources" | "cross_check_failed", "confidence", "candidates",
  "filtered" (below min_score), "conflicts" (detect_conflicts), "evidence": [{"n", "chunk_id",
  "document_id", "kb_id", "title", "source_uri", "source_type", "trust_score", "published_at",
  "content", "best_window", "score", "dense_score", "lexical_score", "support", "token_count"}],
  "config": the rag config used}.
Errors: 22023 "no knowledge base: …" when neither kb_ids nor an agent names one; as hybrid_search
  (22023 query length, 22000 dimensions); 42501 no tenant; P0002 unknown agent binding.
Example: select hipocampo.answer_evidence('Qual o prazo?', '[…]'::extensions.vector, array[kb]);
*/
create function hipocampo.answer_evidence(
    query_text text,
    query_embedding extensions.vector,
    kb_ids uuid[] default null,
    agent text default null,
    tenant_id uuid default null
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(answer_evidence.tenant_id);
    cfg jsonb := hipocampo.rag_config(
        case when cardinality(answer_evidence.kb_ids) = 1 then answer_evidence.kb_ids[1] end,
        answer_evidence.agent, t
    );
    kbs uuid[] := coalesce(answer_evidence.kb_ids,
        (select array_agg(x::uuid) from jsonb_array_elements_text(
            case when jsonb_typeof(cfg -> 'kb_ids') = 'array' then cfg -> 'kb_ids' else '[]'::jsonb end
        ) as x));
    top_k integer := (cfg ->> 'top_k')::integer;
    min_score double precision := (cfg ->> 'min_score')::double precision;
    min_confidence double precision := (cfg ->> 'min_confidence')::double precision;
    budget integer := (cfg ->> 'evidence_token_budget')::integer;
    dedupe double precision := (hipocampo.effective_config(t) -> 'retrieval' ->> 'dedupe_threshold')::double precision;
    candidates jsonb;
    evidence jsonb := '[]'::jsonb;
    conflicts jsonb := '[]'::jsonb;
    losers jsonb := '[]'::jsonb;
    item jsonb;
    used integer := 0;
    n_candidates integer;
    n_filtered integer;
    confidence double precision;
    agreeing integer;
    authoritative boolean;
    reason text;
begin
    if coalesce(cardinality(kbs), 0) = 0 then
        raise exception 'no knowledge base: pass kb_ids or an agent bound to knowledge bases'
            using errcode = '22023';
    end if;
    if not coalesce((cfg ->> 'enabled')::boolean, true) then
        return jsonb_build_object('decision', 'refuse', 'reason', 'rag_disabled', 'confidence', 0,
            'candidates', 0, 'filtered', 0, 'conflicts', '[]'::jsonb, 'evidence', '[]'::jsonb, 'config', cfg);
    end if;

    select coalesce(jsonb_agg(to_jsonb(h) order by h.rank), '[]'::jsonb) into candidates
    from hipocampo.hybrid_search(
        query_text => answer_evidence.query_text,
        query_embedding => answer_evidence.query_embedding,
        kb_ids => kbs,
        match_count => top_k,
        tenant_id => t
    ) as h;
    -- Near-duplicates of the hits (cosine above retrieval.dedupe_threshold, other active
    -- documents) re-enter as candidates with their twin's scores: retrieval drops them as
    -- duplicates, but two versions of a policy that differ in one number are exactly the
    -- conflicts to see (and the newer version may be the twin that was dropped).
    select candidates || coalesce(jsonb_agg(h.e || jsonb_build_object(
               'chunk_id', x.id, 'document_id', x.document_id, 'kb_id', x.kb_id, 'content', x.content,
               'metadata', x.metadata, 'title', d.title, 'source_uri', d.source_uri,
               'source_type', d.source_type, 'trust_score', d.trust_score, 'published_at', d.published_at,
               'near_duplicate_of', h.id
           ) order by h.rank, x.distance), '[]'::jsonb)
    into candidates
    from (
        select (e ->> 'chunk_id')::bigint as id, (e ->> 'rank')::integer as rank, e
        from jsonb_array_elements(candidates) as e
    ) as h
    inner join hipocampo_private.chunks as c1 on c1.id = h.id
    cross join lateral (
        select c2.id, c2.document_id, c2.kb_id, c2.content, c2.metadata,
               c2.embedding operator(extensions.<=>) c1.embedding as distance
        from hipocampo_private.chunks as c2
        where c2.tenant_id = t and c2.kb_id = any(kbs) and c2.embedding_model = c1.embedding_model
          and c2.document_id <> c1.document_id
          and c2.embedding operator(extensions.<=>) c1.embedding
          < 1 - dedupe
          and not exists (
              select 1 from jsonb_array_elements(candidates) as k where (k ->> 'chunk_id')::bigint = c2.id
          )
        order by c2.embedding operator(extensions.<=>) c1.embedding
        limit 3
    ) as x
    inner join hipocampo_private.documents as d on d.id = x.document_id and d.status = 'active';
    select coalesce(jsonb_agg(e || jsonb_build_object(
               'support', coalesce(s.support, 0), 'best_window', s.best_window, 'token_count', ch.token_count
           ) order by (e ->> 'rank')::integer, e ->> 'near_duplicate_of' nulls first), '[]'::jsonb)
    into candidates
    from jsonb_array_elements(candidates) as e
    left join hipocampo.evidence_support(
        answer_evidence.query_text,
        array(select (x ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as x),
        cfg -> 'question_stopwords'
    ) as s on s.chunk_id = (e ->> 'chunk_id')::bigint
    left join hipocampo_private.chunks as ch on ch.id = (e ->> 'chunk_id')::bigint;

    n_candidates := jsonb_array_length(candidates);
    select count(*) into n_filtered from jsonb_array_elements(candidates) as e
    where coalesce((e ->> 'support')::double precision, 0) < min_score;

    conflicts := hipocampo.detect_conflicts(
        answer_evidence.query_text,
        array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as e
              where coalesce((e ->> 'support')::double precision, 0) >= min_score),
        (cfg ->> 'conflict_trust_margin')::double precision,
        cfg -> 'question_stopwords'
    );
    -- Resolved conflicts: the losing documents' chunks leave the evidence.
    select coalesce(jsonb_agg(distinct d), '[]'::jsonb) into losers
    from jsonb_array_elements(conflicts) as k, jsonb_array_elements(k -> 'document_ids') as d
    where (k ->> 'resolved')::boolean and d <> k -> 'winner_document_id';

    for item in
        select e from jsonb_array_elements(candidates) as e
        where coalesce((e ->> 'support')::double precision, 0) >= min_score
          and not losers @> jsonb_build_array(e -> 'document_id')
        order by (e ->> 'final_score')::double precision desc, (e ->> 'rank')::integer
    loop
        exit when used > 0 and used + (item ->> 'token_count')::integer > budget;
        used := used + (item ->> 'token_count')::integer;
        evidence := evidence || jsonb_build_array(jsonb_build_object(
            'n', jsonb_array_length(evidence) + 1,
            'chunk_id', item -> 'chunk_id', 'document_id', item -> 'document_id', 'kb_id', item -> 'kb_id',
            'title', item -> 'title', 'source_uri', item -> 'source_uri', 'source_type', item -> 'source_type',
            'trust_score', item -> 'trust_score', 'published_at', item -> 'published_at',
            'metadata', item -> 'metadata',
            -- A single chunk over the budget is cut to it (4 characters per token).
            'content', case when used > budget then left(item ->> 'content', budget * 4) else item ->> 'content' end,
            'best_window', item -> 'best_window', 'score', item -> 'final_score',
            'dense_score', item -> 'dense_score', 'lexical_score', item -> 'lexical_score',
            'support', item -> 'support', 'token_count', least((item ->> 'token_count')::integer, budget)
        ));
    end loop;

    select max((e ->> 'support')::double precision) into confidence from jsonb_array_elements(evidence) as e;
    select count(distinct e ->> 'document_id') filter (
               where (e ->> 'support')::double precision >= min_confidence
           ),
           coalesce(bool_or(
               (e ->> 'support')::double precision >= min_confidence
               and (cfg -> 'authoritative_source_types') ? (e ->> 'source_type')
               and (e ->> 'trust_score')::double precision >= (cfg ->> 'authoritative_trust')::double precision
           ), false)
    into agreeing, authoritative
    from jsonb_array_elements(evidence) as e;

    reason := case
        when jsonb_array_length(evidence) = 0 then 'no_evidence'
        when exists (select 1 from jsonb_array_elements(conflicts) as k where not (k ->> 'resolved')::boolean)
            then 'conflicting_sources'
        when coalesce(confidence, 0) < min_confidence then 'low_confidence'
        when agreeing < (cfg ->> 'cross_check_min_documents')::integer and not authoritative
            then 'cross_check_failed'
    end;
    return jsonb_build_object(
        'decision', case when reason is null then 'answer' else 'refuse' end,
        'reason', reason,
        'confidence', coalesce(confidence, 0),
        'candidates', n_candidates,
        'filtered', n_filtered,
        'conflicts', conflicts,
        'evidence', evidence,
        'config', cfg
    );
end;
$$;

grant execute on function hipocampo_private._question_lexemes(text, regconfig, jsonb) to authenticated, service_role;
grant execute on function hipocampo_private._sentences(text) to authenticated, service_role;
grant execute on function hipocampo_private._scope_of(text) to authenticated, service_role;
grant execute on function hipocampo_private._sentence_values(text) to authenticated, service_role;
grant execute on function hipocampo.evidence_support(text, bigint[], jsonb) to authenticated, service_role;
grant execute on function hipocampo.detect_conflicts(text, bigint[], double precision, jsonb)
to authenticated, service_role;
grant execute on function hipocampo.answer_evidence(text, extensions.vector, uuid[], text, uuid)
to authenticated, service_role;

comment on function hipocampo.evidence_support(text, bigint[], jsonb) is
'How much of a question each chunk covers: idf-weighted term coverage of the chunk and its best two-sentence window.';
comment on function hipocampo.detect_conflicts(text, bigint[], double precision, jsonb) is
'Deadlines, dates and R$ values that disagree between documents on the question''s topic, per scope.';
comment on function hipocampo.answer_evidence(text, extensions.vector, uuid[], text, uuid) is
'Retrieval, support, conflicts, evidence under a token budget and the answer-or-refuse decision.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
