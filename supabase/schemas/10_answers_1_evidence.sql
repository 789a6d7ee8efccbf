-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- Evidence for answers that cite or refuse: how much of a question a chunk covers (support), the
-- conflicts between documents (deadlines, dates, money per scope), and one RPC that retrieves,
-- scores, resolves conflicts, selects the evidence under a token budget and decides answer or
-- refuse. Generation (extractive or an LLM) and the post-validation of numbers happen in the client.
/*
_question_lexemes(query_text text, ts_config regconfig, stopwords jsonb) -> text[]

Purpose: the distinct stemmed, unaccented terms of a question, minus the question stopwords
  (rag.question_stopwords: interrogatives and auxiliaries).
Returns: text[] of lexemes (empty when none is left).
Errors: none of its own.
Example: select hipocampo_private._question_lexemes('Qual o prazo?', 'hipocampo_private.portuguese_unaccent', '[]');
*/
create or replace function hipocampo_private._question_lexemes(query_text text, ts_config regconfig, stopwords jsonb)
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
Returns: one row per sentence, in order.
Errors: none (a pure function).
*/
create or replace function hipocampo_private._sentences(content text)
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
Errors: 42501 as _caller (before any other work); otherwise none (chunks the caller cannot see are left out).
Example: select * from hipocampo.evidence_support('Qual o prazo de trancamento?', array[12, 15]);
*/
create or replace function hipocampo.evidence_support(query_text text, chunk_ids bigint[], stopwords jsonb default null)
returns table (
    chunk_id bigint, coverage double precision, window_coverage double precision,
    support double precision, best_window text
)
language sql
stable
security invoker
set search_path = ''
set jit = off
as $$
    select hipocampo_private._caller();
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
Returns: 'internacional' | 'nacional' | 'geral'.
Errors: none (a pure function).
*/
create or replace function hipocampo_private._scope_of(sentence text)
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
Returns: one row per value stated (none when the sentence states none).
Errors: none (a pure function).
Example: select * from hipocampo_private._sentence_values('Prazo de 30 dias, multa de R$ 1.200,50.');
*/
create or replace function hipocampo_private._sentence_values(sentence text)
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
_topic_facts(query_text text, chunk_ids bigint[], stopwords jsonb) -> table (chunk_id bigint,
  document_id uuid, title text, trust_score real, sentence text, scope text, kind text, value text,
  words text[])

Purpose: detect_conflicts' first step: the values (_sentence_values: deadlines, dates, R$) stated
  in the sentences of the given chunks of active documents that are on the question's topic (they
  share at least min(2, n) of the question's n terms), each with its sentence's scope (_scope_of)
  and words (its lexemes, numbers left out: what two sentences on one subject share).
Parameters: query_text; chunk_ids - visible to the caller (RLS); stopwords - as evidence_support.
Returns: one row per value stated.
Errors: none.
Example: select kind, value from hipocampo_private._topic_facts('Qual o prazo?', array[1, 2], null);
*/
create or replace function hipocampo_private._topic_facts(query_text text, chunk_ids bigint[], stopwords jsonb)
returns table (
    chunk_id bigint, document_id uuid, title text, trust_score real, sentence text, scope text, kind text,
    value text, words text[]
)
language sql
stable
security invoker
set search_path = ''
as $$
    with c as (
        select ch.id, ch.document_id, ch.ts_config, ch.content, d.title, d.trust_score
        from hipocampo_private.chunks as ch
        inner join hipocampo_private.documents as d on d.id = ch.document_id and d.tenant_id = ch.tenant_id
        where ch.id = any(_topic_facts.chunk_ids) and d.status = 'active'
    ),

    -- Every value _sentence_values reads has a digit (after unaccent, as it reads them): a sentence
    -- without one states no fact, and is neither parsed nor matched to the question.
    valued as (
        select c.id, c.document_id, c.title, c.trust_score, c.ts_config, s.sentence,
               pg_catalog.to_tsvector(c.ts_config, s.sentence) as tsv
        from c
        cross join lateral hipocampo_private._sentences(c.content) as s
        where extensions.unaccent(c.content) ~ '\d' and extensions.unaccent(s.sentence) ~ '\d'
    ),

    question as materialized (
        select x.ts_config,
               hipocampo_private._question_lexemes(
                   _topic_facts.query_text, x.ts_config, _topic_facts.stopwords
               ) as terms
        from (select distinct v.ts_config from valued as v) as x
    ),

    on_topic as materialized (
        select v.* from valued as v
        inner join question as q on q.ts_config = v.ts_config and cardinality(q.terms) > 0
        where (
            select count(*) from pg_catalog.unnest(q.terms) as t (lexeme)
            where t.lexeme = any(pg_catalog.tsvector_to_array(v.tsv))
        ) >= least(2, cardinality(q.terms))
    )

    select o.id, o.document_id, o.title, o.trust_score, o.sentence,
           hipocampo_private._scope_of(o.sentence), f.kind, f.value,
           array(
               select l.lexeme from pg_catalog.unnest(pg_catalog.tsvector_to_array(o.tsv)) as l (lexeme)
               where l.lexeme !~ '^[0-9]'
           )
    from on_topic as o
    cross join lateral hipocampo_private._sentence_values(o.sentence) as f
$$;

/*
detect_conflicts(query_text text, chunk_ids bigint[], trust_margin double precision default null,
  stopwords jsonb default null, subject_overlap double precision default null) -> jsonb

Purpose: conflicts between the documents of the given chunks: two active documents that state
  different deadlines (days), dd/mm/yyyy dates or R$ values, in sentences on the question's topic
  (sharing at least min(2, n) of its n terms), within one scope (nacional, internacional,
  geral), about the same subject: the two sentences share at least subject_overlap (default
  rag.conflict_subject_overlap) of their words (Jaccard of their lexemes, numbers left out; two
  versions of a policy state the same sentence with another number, two FAQ entries on
  different situations do not). When the question names a scope, only that scope counts. Values
  that differ inside one document are not a conflict. A conflict is resolved when one document's
  trust exceeds every other's by trust_margin (default rag.conflict_trust_margin): its values win.
Parameters: query_text; chunk_ids visible to the caller; trust_margin 0..1; stopwords as
  evidence_support; subject_overlap 0..1 (answer_evidence passes each from the caller's rag
  config, so tenant and knowledge-base overrides apply; null: the global row's).
Returns: a json array of {"kind", "scope", "resolved", "winner_document_id", "document_ids",
  "values": [{"value", "document_id", "chunk_id", "title", "trust_score", "sentence"}]}; [] when none.
Errors: 42501 as _caller (before any other work).
Example: select hipocampo.detect_conflicts('Qual o prazo de reembolso internacional?', array[1, 2]);
*/
create or replace function hipocampo.detect_conflicts(
    query_text text,
    chunk_ids bigint[],
    trust_margin double precision default null,
    stopwords jsonb default null,
    subject_overlap double precision default null
)
returns jsonb
language sql
stable
security invoker
set search_path = ''
set jit = off
as $$
    select hipocampo_private._caller();
    with cfg as (
        select s.config -> 'rag' as rag from hipocampo_private.settings as s where s.tenant_id is null
    ),

    question_scope as (
        select case
            when hipocampo_private._scope_of(detect_conflicts.query_text) = 'geral' then null
            else hipocampo_private._scope_of(detect_conflicts.query_text)
        end as scope
    ),

    facts as (
        select f.* from hipocampo_private._topic_facts(
            detect_conflicts.query_text, detect_conflicts.chunk_ids,
            coalesce(detect_conflicts.stopwords, (select cfg.rag -> 'question_stopwords' from cfg))
        ) as f
    ),

    scoped as (
        select f.* from facts as f, question_scope as qs
        where qs.scope is null or f.scope = qs.scope
    ),

    -- The facts another document contradicts about the same subject.
    conflicting as (
        select g.* from scoped as g
        where exists (
            select 1 from scoped as o
            where o.kind = g.kind and o.scope = g.scope
              and o.document_id <> g.document_id and o.value <> g.value
              and (
                  select count(*) from (select unnest(o.words) intersect select unnest(g.words)) as i
              )::double precision / greatest((
                  select count(*) from (select unnest(o.words) union select unnest(g.words)) as u
              ), 1) >= coalesce(
                  detect_conflicts.subject_overlap,
                  ((select cfg.rag ->> 'conflict_subject_overlap' from cfg))::double precision
              )
        )
    ),

    groups as (
        select g.kind, g.scope from conflicting as g group by g.kind, g.scope
    ),

    ranked as (
        select gr.kind, gr.scope, d.document_id, d.trust_score,
               row_number() over (partition by gr.kind, gr.scope order by d.trust_score desc, d.document_id) as rn
        from groups as gr
        cross join lateral (
            select distinct s.document_id, s.trust_score from conflicting as s
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
            select jsonb_agg(distinct s.document_id) from conflicting as s where s.kind = v.kind and s.scope = v.scope
        ),
        'values', (
            select jsonb_agg(jsonb_build_object(
                'value', s.value, 'document_id', s.document_id, 'chunk_id', s.chunk_id, 'title', s.title,
                'trust_score', s.trust_score, 'sentence', s.sentence
            ) order by s.trust_score desc, s.chunk_id)
            from conflicting as s where s.kind = v.kind and s.scope = v.scope
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
  support per chunk = its lexical support (evidence_support) + rag.sentence_weight *
  clip((c - rag.sentence_cosine_low) / (rag.sentence_cosine_high - rag.sentence_cosine_low), 0, 1),
  c the best cosine between the question and the chunk's sentences (chunks.sentence_embeddings,
  stored at ingestion; none: nothing added; the three keys are the embedding model's calibration,
  weight 0 = lexical support alone);
  evidence = chunks with support >= rag.min_score, in the order of the combined score, under
  rag.evidence_token_budget tokens (near-duplicates: _near_duplicates, HNSW on large scopes); conflicts (detect_conflicts): a resolved one drops the losing
  documents' chunks, an unresolved one refuses; confidence = the best support, refused below
  rag.min_confidence; cross-check: >= rag.cross_check_min_documents distinct documents with
  support >= rag.min_confidence, or one of rag.authoritative_source_types with trust >=
  rag.authoritative_trust. A candidate of a document whose text does not read as language
  (_reads_as_language: word salad, OCR garbage) has support 0: found, never evidence. With a chat
  model (rag.provider openai | azure) the gate refuses only what has no evidence at all (nothing
  retrieved: no_evidence; an unresolved conflict): every candidate under the token budget is
  evidence, and whether it answers is the model's to say (the caller refuses not_in_sources).
  Offline, a question the gate cannot confirm (low_confidence, cross_check_failed) whose
  candidates reach the model's on-topic floor (rag.passages_floor, the best dense similarity) is
  answered with passages (issue 61 §1: decision "passages"): the best units quoted and cited,
  led by rag.passages_message (_evidence_passages); below the floor it is refused.
  In named steps: _evidence_candidates (retrieval and twins), _candidate_support, detect_conflicts,
  _evidence_within_budget, _evidence_verdict, _evidence_passages.
Parameters: query_text 1..2,000 characters; query_embedding of the model search_model names for
  these knowledge bases (the active model, or during a switch the previous one until they are
  complete); kb_ids (default: the agent binding's); agent - binding name; tenant_id only for
  service_role.
Returns: {"decision": "answer" | "passages" | "refuse", "reason": null | "rag_disabled" | "no_evidence" (retrieval
  found no passage: none above the similarity floor, no matching word) | "low_confidence" (passages
  found, none supports the question enough) | "conflicting_sources" | "cross_check_failed",
  "closest" (the best-ranked passage, what a refusal shows: _closest_passage; null when retrieval
  found none), "confidence", "candidates",
  "filtered" (below min_score), "conflicts" (detect_conflicts), "evidence": [{"n", "chunk_id",
  "document_id", "kb_id", "title", "source_uri", "source_type", "trust_score", "published_at",
  "content", "best_window", "score", "dense_score", "lexical_score", "support", "lexical_support",
  "sentence_similarity" (c, null without sentence embeddings or with weight 0), "token_count"}],
  "top_similarity" (the best dense similarity of a candidate that reads as language, null without
  one), "passages" (decision passages: the quoted units, as answer_sources' items plus "article"
  and "section"; else []), "reply" (decision passages: the text to show; else null),
  "config": the rag config used}.
Errors: 22023 "no knowledge base: …" when neither kb_ids nor an agent names one; as hybrid_search
  (22023 query length, 22000 dimensions); 42501 no tenant; P0002 unknown agent binding.
Example: select hipocampo.answer_evidence('Qual o prazo?', '[…]'::extensions.vector, array[kb]);
*/
create or replace function hipocampo.answer_evidence(
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
set plan_cache_mode = force_generic_plan
set jit = off
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
    min_score double precision := (cfg ->> 'min_score')::double precision;
    -- With a chat model (rag.provider openai | azure) the model judges whether the evidence answers.
    judged_by_model boolean := cfg ->> 'provider' in ('openai', 'azure');
    candidates jsonb;
    support record;  -- _candidate_support: scored, babble
    conflicts jsonb;
    evidence jsonb;
    verdict record;  -- _evidence_verdict: reason, confidence
    passages jsonb;  -- _evidence_passages: top_similarity, passages, reply
begin
    if coalesce(cardinality(kbs), 0) = 0 then
        raise exception 'no knowledge base: pass kb_ids or an agent bound to knowledge bases'
            using errcode = '22023';
    end if;
    if not coalesce((cfg ->> 'enabled')::boolean, true) then
        return jsonb_build_object('decision', 'refuse', 'reason', 'rag_disabled', 'confidence', 0,
            'candidates', 0, 'filtered', 0, 'conflicts', '[]'::jsonb, 'evidence', '[]'::jsonb, 'config', cfg);
    end if;

    candidates := hipocampo_private._evidence_candidates(
        answer_evidence.query_text, answer_evidence.query_embedding, kbs, (cfg ->> 'top_k')::integer, t,
        (hipocampo_private._effective_section(t, null, 'retrieval') ->> 'dedupe_threshold')::double precision
    );
    support := hipocampo_private._candidate_support(
        candidates, answer_evidence.query_text, answer_evidence.query_embedding, cfg
    );
    conflicts := hipocampo.detect_conflicts(
        answer_evidence.query_text,
        array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(support.scored) as e
              where coalesce((e ->> 'support')::double precision, 0) >= min_score),
        (cfg ->> 'conflict_trust_margin')::double precision,
        cfg -> 'question_stopwords',
        (cfg ->> 'conflict_subject_overlap')::double precision
    );
    evidence := hipocampo_private._evidence_within_budget(
        support.scored, conflicts, support.babble, cfg, judged_by_model
    );
    verdict := hipocampo_private._evidence_verdict(
        jsonb_array_length(support.scored), evidence, conflicts, cfg, judged_by_model
    );
    passages := hipocampo_private._evidence_passages(support.scored, support.babble, cfg);
    if judged_by_model or verdict.reason is null or verdict.reason not in ('low_confidence', 'cross_check_failed') then
        passages := passages || jsonb_build_object('passages', '[]'::jsonb, 'reply', null);
    end if;
    return jsonb_build_object(
        'decision', case
            when verdict.reason is null then 'answer'
            when jsonb_array_length(passages -> 'passages') > 0 then 'passages'
            else 'refuse'
        end,
        'top_similarity', passages -> 'top_similarity',
        'passages', passages -> 'passages',
        'reply', passages -> 'reply',
        'reason', verdict.reason,
        'confidence', coalesce(verdict.confidence, 0),
        'candidates', jsonb_array_length(support.scored),
        'filtered', (
            select count(*) from jsonb_array_elements(support.scored) as e
            where coalesce((e ->> 'support')::double precision, 0) < min_score
        ),
        'conflicts', conflicts,
        'evidence', evidence,
        'closest', hipocampo_private._closest_passage(support.scored, support.babble),
        'config', cfg
    );
end;
$$;

/*
_evidence_candidates(query_text text, query_embedding vector, kb_ids uuid[], top_k integer,
  tenant uuid, dedupe double precision) -> jsonb

Purpose: answer_evidence's first step: hybrid_search's top_k rows as json, then up to 3
  near-duplicates of each hit (cosine above dedupe, other active documents: _near_duplicates)
  with their twin's scores and "near_duplicate_of": retrieval drops them as duplicates, but two
  versions of a policy that differ in one number are exactly the conflicts to see (and the newer
  version may be the twin that was dropped).
Parameters: as answer_evidence's; kb_ids non-empty; tenant from _resolve_tenant; dedupe =
  retrieval.dedupe_threshold.
Returns: a json array of hybrid_search rows (hits in rank order, then the twins by hit and
  distance).
Errors: as hybrid_search.
Example: select hipocampo_private._evidence_candidates('Qual o prazo?', '[…]', array[kb], 5, tenant, 0.945);
*/
create or replace function hipocampo_private._evidence_candidates(
    query_text text, query_embedding extensions.vector, kb_ids uuid[], top_k integer, tenant uuid,
    dedupe double precision
)
returns jsonb
language plpgsql
security invoker
set search_path = ''
as $$
declare
    candidates jsonb;
begin
    select coalesce(jsonb_agg(to_jsonb(h) order by h.rank), '[]'::jsonb) into candidates
    from hipocampo.hybrid_search(
        query_text => _evidence_candidates.query_text,
        query_embedding => _evidence_candidates.query_embedding,
        kb_ids => _evidence_candidates.kb_ids,
        match_count => top_k,
        tenant_id => tenant
    ) as h;
    -- The lookup runs once, materialized: as a function scan inside the join it ran again for
    -- every hit.
    with nd as materialized (
        select n.of_chunk_id, n.chunk_id, n.distance
        from hipocampo_private._near_duplicates(
            array(select (e ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as e),
            _evidence_candidates.kb_ids, tenant, dedupe, 3
        ) as n
    )
    select candidates || coalesce(jsonb_agg(h.e || jsonb_build_object(
               'chunk_id', x.id, 'document_id', x.document_id, 'kb_id', x.kb_id, 'content', x.content,
               'metadata', x.metadata, 'title', d.title, 'source_uri', d.source_uri,
               'source_type', d.source_type, 'trust_score', d.trust_score, 'published_at', d.published_at,
               'near_duplicate_of', h.id
           ) order by h.rank, nd.distance), '[]'::jsonb)
    into candidates
    from (
        select (e ->> 'chunk_id')::bigint as id, (e ->> 'rank')::integer as rank, e
        from jsonb_array_elements(candidates) as e
    ) as h
    inner join nd on nd.of_chunk_id = h.id
    inner join hipocampo_private.chunks as x on x.id = nd.chunk_id
    inner join hipocampo_private.documents as d on d.id = x.document_id and d.status = 'active';
    return candidates;
end;
$$;

/*
_candidate_support(candidates jsonb, query_text text, query_embedding vector, cfg jsonb,
  out scored jsonb, out babble uuid[])

Purpose: answer_evidence's second step: each candidate's support = its lexical support
  (evidence_support) + cfg.sentence_weight * clip((c - sentence_cosine_low) /
  (sentence_cosine_high - sentence_cosine_low), 0, 1), c the best cosine between the question and
  the chunk's sentences (none: nothing added); 0 for a document whose text does not read as
  language (_reads_as_language: word salad, OCR garbage): found, never evidence. Adds
  "support", "lexical_support", "sentence_similarity", "best_window" and "token_count".
Parameters: candidates from _evidence_candidates; cfg the rag config (rag_config).
Returns: scored (the candidates with those keys, by rank, a hit before its twins) and babble (the
  ids of the candidates' documents that do not read as language).
Errors: none.
Example: select * from hipocampo_private._candidate_support(candidates, 'Qual o prazo?', '[…]', cfg);
*/
create or replace function hipocampo_private._candidate_support(
    candidates jsonb, query_text text, query_embedding extensions.vector, cfg jsonb,
    out scored jsonb, out babble uuid[]
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    w_sentence double precision := (cfg ->> 'sentence_weight')::double precision;
    s_low double precision := (cfg ->> 'sentence_cosine_low')::double precision;
    -- (a step at s_low when the two cosines are equal)
    s_span double precision := greatest(
        (cfg ->> 'sentence_cosine_high')::double precision - (cfg ->> 'sentence_cosine_low')::double precision, 1e-6
    );
begin
    -- Each candidate's document by primary key (a lateral lookup the planner cannot flatten): as
    -- `d.id in (…)` the generic plan read every document of the tenant and measured each.
    select coalesce(array_agg(distinct d.id), '{}') into babble
    from jsonb_array_elements(candidates) as e
    cross join lateral (
        select x.id, x.text_measures from hipocampo_private.documents as x
        where x.id = (e ->> 'document_id')::uuid
        offset 0
    ) as d
    where not hipocampo_private._reads_as_language(d.text_measures, cfg);
    -- token_count and the sentence cosine by primary key per candidate (scalar subqueries): as a
    -- join the planner read every chunk of the tenant (RLS's tenant index) and hashed them.
    select coalesce(jsonb_agg(e || jsonb_build_object(
               'support', case when (e ->> 'document_id')::uuid = any(babble) then 0 else coalesce(s.support, 0) + coalesce(
                   w_sentence * least(1, greatest(0, (x.sim - s_low) / s_span)), 0
               ) end,
               'lexical_support', coalesce(s.support, 0), 'sentence_similarity', x.sim,
               'best_window', s.best_window,
               'token_count', (
                   select ch.token_count from hipocampo_private.chunks as ch
                   where ch.id = (e ->> 'chunk_id')::bigint
               )
           ) order by (e ->> 'rank')::integer, e ->> 'near_duplicate_of' nulls first), '[]'::jsonb)
    into scored
    from jsonb_array_elements(candidates) as e
    cross join lateral (
        select case when w_sentence > 0 then (
            -- (a zero vector's cosine is NaN, which would compare above every number: left out)
            select max(1 - d.d) filter (where d.d <> 'NaN'::double precision)
            from hipocampo_private.chunks as ch
            cross join lateral unnest(ch.sentence_embeddings) as v
            cross join lateral (select v operator(extensions.<=>) _candidate_support.query_embedding as d) as d
            where ch.id = (e ->> 'chunk_id')::bigint
        ) end as sim
    ) as x
    left join hipocampo.evidence_support(
        _candidate_support.query_text,
        array(select (y ->> 'chunk_id')::bigint from jsonb_array_elements(candidates) as y),
        cfg -> 'question_stopwords'
    ) as s on s.chunk_id = (e ->> 'chunk_id')::bigint;
end;
$$;

/*
_evidence_within_budget(scored jsonb, conflicts jsonb, babble uuid[], cfg jsonb,
  judged_by_model boolean) -> jsonb

Purpose: answer_evidence's evidence: the candidates with support >= cfg.min_score (judged_by_model,
  a chat model answers: every candidate that reads as language, whether it answers is the
  model's to say), less the chunks of the losing documents of resolved conflicts, by
  final score, under cfg.evidence_token_budget tokens; a single chunk over the budget is cut to it
  (4 characters per token).
Parameters: scored and babble from _candidate_support; conflicts from detect_conflicts; cfg the
  rag config; judged_by_model as answer_evidence decides it (rag.provider openai | azure).
Returns: a json array of evidence items {"n", "chunk_id", "document_id", "kb_id", "title",
  "source_uri", "source_type", "trust_score", "published_at", "metadata", "content",
  "best_window", "score", "dense_score", "lexical_score", "support", "lexical_support",
  "sentence_similarity", "token_count"}.
Errors: none.
Example: select hipocampo_private._evidence_within_budget(scored, '[]', '{}', cfg, false);
*/
create or replace function hipocampo_private._evidence_within_budget(
    scored jsonb, conflicts jsonb, babble uuid[], cfg jsonb, judged_by_model boolean
)
returns jsonb
language plpgsql
immutable
security invoker
set search_path = ''
as $$
declare
    min_score double precision := (cfg ->> 'min_score')::double precision;
    budget integer := (cfg ->> 'evidence_token_budget')::integer;
    losers jsonb;
    evidence jsonb := '[]'::jsonb;
    item jsonb;
    used integer := 0;
begin
    -- Resolved conflicts: the losing documents' chunks leave the evidence.
    select coalesce(jsonb_agg(distinct d), '[]'::jsonb) into losers
    from jsonb_array_elements(conflicts) as k, jsonb_array_elements(k -> 'document_ids') as d
    where (k ->> 'resolved')::boolean and d <> k -> 'winner_document_id';
    for item in
        select e from jsonb_array_elements(scored) as e
        where (
            coalesce((e ->> 'support')::double precision, 0) >= min_score
            or judged_by_model and (e ->> 'document_id')::uuid <> all(babble)
        )
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
            'content', case when used > budget then left(item ->> 'content', budget * 4) else item ->> 'content' end,
            'best_window', item -> 'best_window', 'score', item -> 'final_score',
            'dense_score', item -> 'dense_score', 'lexical_score', item -> 'lexical_score',
            'support', item -> 'support', 'lexical_support', item -> 'lexical_support',
            'sentence_similarity', item -> 'sentence_similarity',
            'token_count', least((item ->> 'token_count')::integer, budget)
        ));
    end loop;
    return evidence;
end;
$$;

/*
_evidence_verdict(n_candidates integer, evidence jsonb, conflicts jsonb, cfg jsonb,
  judged_by_model boolean, out reason text, out confidence double precision)

Purpose: answer_evidence's gate: confidence = the best support of the evidence; the reason to
  refuse, first that applies: no_evidence (retrieval found nothing: none above the similarity
  floor, no matching word), low_confidence (no evidence), conflicting_sources (an unresolved
  conflict); judged_by_model (a chat model answers) nothing more (whether the evidence answers
  is the model's to say: not_in_sources); else low_confidence (confidence below
  cfg.min_confidence) and cross_check_failed (fewer than cfg.cross_check_min_documents documents
  with support >= min_confidence and none of cfg.authoritative_source_types with trust >=
  cfg.authoritative_trust).
Parameters: n_candidates (answer_evidence's candidates); evidence from _evidence_within_budget;
  conflicts from detect_conflicts; cfg the rag config; judged_by_model as answer_evidence
  decides it.
Returns: reason (null: answer) and confidence (null without evidence).
Errors: none.
Example: select * from hipocampo_private._evidence_verdict(3, evidence, '[]', cfg, false);
*/
create or replace function hipocampo_private._evidence_verdict(
    n_candidates integer, evidence jsonb, conflicts jsonb, cfg jsonb, judged_by_model boolean,
    out reason text, out confidence double precision
)
language plpgsql
immutable
security invoker
set search_path = ''
as $$
declare
    min_confidence double precision := (cfg ->> 'min_confidence')::double precision;
    agreeing integer;
    authoritative boolean;
begin
    select max((e ->> 'support')::double precision),
           count(distinct e ->> 'document_id') filter (where (e ->> 'support')::double precision >= min_confidence),
           coalesce(bool_or(
               (e ->> 'support')::double precision >= min_confidence
               and (cfg -> 'authoritative_source_types') ? (e ->> 'source_type')
               and (e ->> 'trust_score')::double precision >= (cfg ->> 'authoritative_trust')::double precision
           ), false)
    into confidence, agreeing, authoritative
    from jsonb_array_elements(evidence) as e;
    reason := case
        when n_candidates = 0 then 'no_evidence'
        when jsonb_array_length(evidence) = 0 then 'low_confidence'
        when exists (select 1 from jsonb_array_elements(conflicts) as k where not (k ->> 'resolved')::boolean)
            then 'conflicting_sources'
        when judged_by_model then null
        when coalesce(confidence, 0) < min_confidence then 'low_confidence'
        when agreeing < (cfg ->> 'cross_check_min_documents')::integer and not authoritative
            then 'cross_check_failed'
    end;
end;
$$;

/*
_evidence_passages(scored jsonb, babble uuid[], cfg jsonb) -> jsonb

Purpose: answer_evidence's reply when the gate cannot confirm an answer (issue 61 §1): the
  candidates that read as language (not of a babble document, not a near-duplicate twin) whose
  dense similarity reaches cfg.passages_floor (the embedding model's on-topic floor), the best
  cfg.passages_max by rank; each quoted as its unit (document title, article, section or FAQ
  question) and an excerpt of at most cfg.passage_max_chars characters of plain text: its best
  two-sentence window (evidence_support's, the sentences that cover most of the question, in the
  chunk's own case), else its opening, cut at a word. The reply is cfg.passages_message, then one line per unit:
  "[n] <unit>: “<excerpt>”" (no markup).
Parameters: scored and babble from _candidate_support; cfg the rag config.
Returns: {"top_similarity": the best dense similarity of a candidate that reads as language (null
  without one), "passages": [{"n", "chunk_id", "document", "document_id", "source_uri",
  "excerpt", "score", "support", "article", "section"}] (empty below the floor), "reply": text or
  null}.
Errors: none.
Example: select hipocampo_private._evidence_passages(scored, '{}', cfg) -> 'reply';
*/
create or replace function hipocampo_private._evidence_passages(scored jsonb, babble uuid[], cfg jsonb)
returns jsonb
language sql
immutable
security invoker
set search_path = ''
as $$
    with
    readable as (
        select e, (e ->> 'rank')::integer as rank, (e ->> 'dense_score')::double precision as sim
        from jsonb_array_elements(case when jsonb_typeof(scored) = 'array' then scored else '[]' end) as e
        where e -> 'near_duplicate_of' is null and not coalesce((e ->> 'document_id')::uuid = any(babble), false)
    ),
    picked as (
        select r.e, row_number() over (order by r.rank, r.e ->> 'chunk_id') as n
        from readable as r
        where r.sim >= (cfg ->> 'passages_floor')::double precision
        order by r.rank, r.e ->> 'chunk_id'
        limit greatest(coalesce((cfg ->> 'passages_max')::integer, 3), 1)
    ),
    quoted as (
        select p.n, p.e, x.excerpt,
            concat_ws(', ', nullif(btrim(p.e ->> 'title'), ''),
                nullif(coalesce(p.e -> 'metadata' ->> 'question', p.e -> 'metadata' ->> 'section'), p.e ->> 'title'),
                case when position(coalesce(p.e -> 'metadata' ->> 'article', '') in
                        coalesce(p.e -> 'metadata' ->> 'section', '')) = 0
                    then p.e -> 'metadata' ->> 'article' end
            ) as unit
        from picked as p
        -- the window as the chunk writes it (evidence_support's is lowercased): found in the content
        cross join lateral (
            select nullif(btrim(p.e ->> 'best_window'), '') as window_text,
                strpos(lower(p.e ->> 'content'), lower(nullif(btrim(p.e ->> 'best_window'), ''))) as at
        ) as b
        cross join lateral (
            select btrim(regexp_replace(hipocampo.plain_text(coalesce(
                case when b.at > 0 then substr(p.e ->> 'content', b.at, char_length(b.window_text)) end,
                b.window_text, p.e ->> 'content'
            )), '\s+', ' ', 'g')) as whole
        ) as w
        cross join lateral (
            select case
                when char_length(w.whole) <= (cfg ->> 'passage_max_chars')::integer then w.whole
                else regexp_replace(left(w.whole, (cfg ->> 'passage_max_chars')::integer - 1), '\s+\S*$', '') || '…'
            end as excerpt
        ) as x
    )
    select jsonb_build_object(
        'top_similarity', (select max(r.sim) from readable as r),
        'passages', coalesce((
            select jsonb_agg(jsonb_build_object(
                'n', q.n, 'chunk_id', q.e -> 'chunk_id', 'document', q.e -> 'title',
                'document_id', q.e -> 'document_id', 'source_uri', q.e -> 'source_uri', 'excerpt', q.excerpt,
                'score', coalesce(q.e -> 'final_score', '0'::jsonb), 'support', coalesce(q.e -> 'support', '0'::jsonb),
                'article', q.e -> 'metadata' -> 'article', 'section', q.e -> 'metadata' -> 'section'
            ) order by q.n)
            from quoted as q
        ), '[]'::jsonb),
        'reply', (
            select cfg ->> 'passages_message' || string_agg(
                E'\n[' || q.n || '] ' || q.unit || ': “' || q.excerpt || '”', '' order by q.n
            )
            from quoted as q
        )
    )
$$;

/*
_closest_passage(candidates jsonb, babble uuid[]) -> jsonb

Purpose: what a refusal shows as "the closest passage I found": the best-ranked candidate of
  answer_evidence (near-duplicates left out, and the documents that do not read as language:
  word salad is never shown, issue 61 §5) with its document, article and heading path and a
  plain-text excerpt of at most 300 characters.
Parameters: candidates - answer_evidence's candidates (hybrid_search rows as json, with support);
  babble - _candidate_support's documents that do not read as language.
Returns: {"chunk_id", "document_id", "document", "source_uri", "article", "section", "excerpt",
  "score", "support"}, or null when there is none.
Errors: none.
Example: select hipocampo_private._closest_passage('[{"chunk_id": 1, "rank": 1, "content": "…"}]', '{}');
*/
create or replace function hipocampo_private._closest_passage(candidates jsonb, babble uuid[])
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    select jsonb_build_object(
        'chunk_id', e -> 'chunk_id', 'document_id', e -> 'document_id', 'document', e -> 'title',
        'source_uri', e -> 'source_uri', 'article', e -> 'metadata' -> 'article',
        'section', e -> 'metadata' -> 'section',
        'excerpt', left(btrim(regexp_replace(hipocampo.plain_text(e ->> 'content'), '\s+', ' ', 'g')), 300),
        'score', e -> 'final_score', 'support', e -> 'support'
    )
    from jsonb_array_elements(case when jsonb_typeof(candidates) = 'array' then candidates else '[]' end) as e
    where e -> 'near_duplicate_of' is null and not coalesce((e ->> 'document_id')::uuid = any(babble), false)
    order by (e ->> 'rank')::integer nulls last
    limit 1
$$;

comment on function hipocampo.evidence_support(text, bigint[], jsonb) is
'How much of a question each chunk covers: idf-weighted term coverage of the chunk and its best two-sentence window.';

comment on function hipocampo.detect_conflicts(text, bigint[], double precision, jsonb, double precision) is
'Deadlines, dates and R$ values that disagree between documents on the question''s topic, per scope and subject.';

comment on function hipocampo.answer_evidence(text, extensions.vector, uuid[], text, uuid) is
'Retrieval, support, conflicts, evidence under a token budget and the answer-or-refuse decision.';
