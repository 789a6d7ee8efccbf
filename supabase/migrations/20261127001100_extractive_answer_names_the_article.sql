-- The extractive answer names the article it quotes (issue 48 §1): a regulation is stored an
-- article a chunk, and the quote of one is introduced by the article's number and heading path
-- ("Art. 23 (Capítulo IX – Das infrações e penalidades): O condômino pode recorrer …"), so an
-- answer that starts mid-article still says which article answers. Functions restated from
-- supabase/schemas/10_answers.sql (their docblocks live there); re-runnable.

create or replace function hipocampo_private._article_quote(quote text, metadata jsonb)
returns text
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    select case
        when coalesce(metadata ->> 'article', '') = '' or quote = '' then quote
        else (metadata ->> 'article')
            || coalesce(' (' || nullif(metadata ->> 'section', '') || ')', '') || ': '
            || btrim(case when starts_with(quote, metadata ->> 'article')
                then substr(quote, char_length(metadata ->> 'article') + 1) else quote end)
    end
$$;

create or replace function hipocampo.extractive_answer(
    evidence jsonb,
    min_support double precision,
    max_quotes integer default 2
)
returns text
language sql
immutable
parallel safe
security invoker
set search_path = ''
as $$
    with items as (
        select e.item, e.pos
        from jsonb_array_elements(
            case when jsonb_typeof(evidence) = 'array' then evidence else '[]' end
        ) with ordinality as e (item, pos)
    ),
    chosen as (
        select i.item, i.pos from items as i
        where case when jsonb_typeof(i.item -> 'support') = 'number' then (i.item ->> 'support')::double precision
            else 0 end >= min_support
        order by i.pos
        limit greatest(max_quotes, 1)
    ),
    picked as (
        select c.item, c.pos from chosen as c
        union all
        select i.item, i.pos from items as i where i.pos = 1 and not exists (select 1 from chosen)
    ),
    quoted as (
        select p.pos, p.item ->> 'n' as n,
            hipocampo_private._article_quote(btrim(regexp_replace(hipocampo.plain_text(coalesce(
                nullif(p.item ->> 'best_window', ''), p.item ->> 'content', ''
            )), '\s+', ' ', 'g')), p.item -> 'metadata') as quote
        from picked as p
    ),
    firsts as (
        select distinct on (q.quote) q.pos, q.n, q.quote from quoted as q
        where q.quote <> ''
        order by q.quote, q.pos
    )
    select nullif(string_agg(f.quote || ' [' || f.n || ']', ' ' order by f.pos), '')
    from firsts as f
$$;

revoke execute on function hipocampo_private._article_quote(text, jsonb) from public;
grant execute on function hipocampo_private._article_quote(quote text, metadata jsonb) to authenticated, service_role;
