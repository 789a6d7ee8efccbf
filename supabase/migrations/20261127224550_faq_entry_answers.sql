-- faq entry answers.
-- Issue 48 §1: a FAQ entry ranked first is the answer unit, quoted alone without its question.
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._faq_quote(content text, metadata jsonb)
returns text
language sql
immutable parallel safe
set search_path to ''
as $function$
    select case when coalesce(metadata ->> 'question', '') <> '' and starts_with(content, metadata ->> 'question') then (
        select nullif(string_agg(s.sentence, ' ' order by s.ord), '')
        from hipocampo_private._sentences(btrim(substr(content, char_length(metadata ->> 'question') + 1))) as s
        where s.ord <= 3
    ) end
$function$;

create or replace function hipocampo.extractive_answer(evidence jsonb, min_support double precision, max_quotes integer default 2)
returns text
language sql
immutable parallel safe
set search_path to ''
as $function$
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
        -- a FAQ entry ranked first answers alone
        limit case when exists (
            select 1 from items as f
            where f.pos = 1 and jsonb_typeof(f.item -> 'metadata') = 'object' and f.item -> 'metadata' ? 'question'
        ) then 1 else greatest(max_quotes, 1) end
    ),
    picked as (
        select c.item, c.pos from chosen as c
        union all
        select i.item, i.pos from items as i where i.pos = 1 and not exists (select 1 from chosen)
    ),
    quoted as (
        select p.pos, p.item ->> 'n' as n,
            coalesce(
                hipocampo_private._faq_quote(
                    btrim(regexp_replace(hipocampo.plain_text(coalesce(p.item ->> 'content', '')), '\s+', ' ', 'g')),
                    case when jsonb_typeof(p.item -> 'metadata') = 'object' then p.item -> 'metadata' end
                ),
                hipocampo_private._article_quote(btrim(regexp_replace(hipocampo.plain_text(coalesce(
                    nullif(p.item ->> 'best_window', ''), p.item ->> 'content', ''
                )), '\s+', ' ', 'g')), p.item -> 'metadata')
            ) as quote
        from picked as p
    ),
    firsts as (
        select distinct on (q.quote) q.pos, q.n, q.quote from quoted as q
        where q.quote <> ''
        order by q.quote, q.pos
    )
    select nullif(string_agg(f.quote || ' [' || f.n || ']', ' ' order by f.pos), '')
    from firsts as f
$function$;

revoke execute on function hipocampo_private._faq_quote(content text, metadata jsonb) from public;
grant execute on function hipocampo_private._faq_quote(content text, metadata jsonb) to authenticated;
grant execute on function hipocampo_private._faq_quote(content text, metadata jsonb) to service_role;
