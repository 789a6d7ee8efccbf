-- Conflicts about the same subject only (issue 22 §4): detect_conflicts compares two documents'
-- values only when the sentences holding them share at least rag.conflict_subject_overlap of their
-- words (two versions of a policy restate a sentence with another number; two FAQ entries on
-- different situations do not), and only those facts make the conflict, its documents and its
-- winner; rag_config requires the new key (config.toml, seeded by hipocampo db migrate).
-- Restated from supabase/schemas/02_config.sql and 10_answers.sql; re-runnable.
set local check_function_bodies = off;

/*
rag_config(kb_id uuid default null, agent text default null, tenant_id uuid default null) -> jsonb

Purpose: the effective rag section: global row <- tenant row <- knowledge base overrides <- agent
  binding overrides, plus "kb_ids" (the agent's knowledge bases, or [kb_id]) and "agent"; checked
  to hold every key of config.toml's [rag] that a reader uses.
Parameters: kb_id - optional knowledge base; agent - optional binding name; tenant_id only for
  service_role.
Returns: jsonb object (keys of config.toml [rag]).
Errors: 42501 as _resolve_tenant; P0002 "unknown agent binding: …"; 55000 "rag config is
  incomplete: seed it from config.toml (hipocampo db migrate)".
Example: select hipocampo.rag_config(null, 'portaria') ->> 'top_k';
*/
create or replace function hipocampo.rag_config(kb_id uuid default null, agent text default null, tenant_id uuid default null)
returns jsonb
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    t uuid := hipocampo_private._resolve_tenant(rag_config.tenant_id);
    b hipocampo_private.agent_bindings;
    kbs uuid[];
    cfg jsonb;
begin
    if agent is not null then
        select * into b from hipocampo_private.agent_bindings as x where x.tenant_id = t and x.name = agent;
        if b.id is null then
            raise exception 'unknown agent binding: %', agent using errcode = 'P0002';
        end if;
    end if;
    kbs := coalesce(b.kb_ids, case when kb_id is null then null else array[kb_id] end);
    -- Knowledge-base overrides apply when the call names one knowledge base.
    cfg := coalesce(hipocampo.effective_config(
        t, case when cardinality(kbs) = 1 then kbs[1] end
    ) -> 'rag', '{}'::jsonb);
    return hipocampo_private._require_config(
        cfg || coalesce(b.rag_overrides, '{}'::jsonb), 'rag', array[
            'enabled', 'provider', 'chat_model', 'azure_deployment', 'azure_api_version', 'api_key_secret',
            'endpoint_secret', 'base_url_secret', 'embedding_model', 'embedding_deployment',
            'embedding_api_version', 'embedding_dimensions', 'embedding_normalize', 'top_k', 'min_score',
            'evidence_token_budget', 'min_confidence', 'question_stopwords', 'cross_check_min_documents',
            'authoritative_trust', 'authoritative_source_types', 'conflict_trust_margin',
            'conflict_subject_overlap', 'cache_ttl_seconds',
            'rate_limit_per_minute', 'question_min_chars', 'question_max_chars', 'context_prompt',
            'refusal_message'
        ]
    ) || jsonb_build_object('kb_ids', to_jsonb(kbs), 'agent', agent);
end;
$$;

/*
detect_conflicts(query_text text, chunk_ids bigint[], trust_margin double precision default null,
  stopwords jsonb default null) -> jsonb

Purpose: conflicts between the documents of the given chunks: two active documents that state
  different deadlines (days), dd/mm/yyyy dates or R$ values, in sentences on the question's topic
  (sharing at least min(2, n) of its n terms), within one scope (nacional, internacional,
  geral), about the same subject: the two sentences share at least rag.conflict_subject_overlap
  of their words (Jaccard of their lexemes, numbers left out; two versions of a policy state the
  same sentence with another number, two FAQ entries on different situations do not). When the
  question names a scope, only that scope counts. Values that differ inside one document are not
  a conflict. A conflict is resolved when one document's trust exceeds every
  other's by trust_margin (default rag.conflict_trust_margin): its values win.
Parameters: query_text; chunk_ids visible to the caller; trust_margin 0..1; stopwords as
  evidence_support.
Returns: a json array of {"kind", "scope", "resolved", "winner_document_id", "document_ids",
  "values": [{"value", "document_id", "chunk_id", "title", "trust_score", "sentence"}]}; [] when none.
Errors: 42501 as _caller (before any other work).
Example: select hipocampo.detect_conflicts('Qual o prazo de reembolso internacional?', array[1, 2]);
*/
create or replace function hipocampo.detect_conflicts(
    query_text text, chunk_ids bigint[], trust_margin double precision default null, stopwords jsonb default null
)
returns jsonb
language sql
stable
security invoker
set search_path = ''
as $$
    select hipocampo_private._caller();
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
               hipocampo_private._scope_of(s.sentence) as scope, v.kind, v.value,
               array(
                   select l.lexeme
                   from pg_catalog.unnest(pg_catalog.tsvector_to_array(pg_catalog.to_tsvector(c.ts_config, s.sentence)))
                       as l (lexeme)
                   where l.lexeme !~ '^[0-9]'
               ) as words
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
              ), 1) >= ((select cfg.rag ->> 'conflict_subject_overlap' from cfg))::double precision
        )
    ),

    groups as (
        select g.kind, g.scope
        from conflicting as g
        group by g.kind, g.scope
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
