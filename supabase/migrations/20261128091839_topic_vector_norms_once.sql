-- topic vector norms once.
-- review: _topic_vector computed each norm once per dimension (384 times); once each now, same vector
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

set check_function_bodies = off;

create or replace function hipocampo_private._topic_vector(query_vector extensions.vector, chunk_ids bigint[], weight double precision)
returns extensions.vector
language plpgsql
stable
set search_path to ''
as $function$
declare
    q real[] := query_vector::real[];
    topic real[];
    q_norm double precision := hipocampo_private._norm(q);
    topic_norm double precision;
    mixed double precision[];
    mixed_norm double precision;
begin
    if query_vector is null or coalesce(weight, 0) = 0 then
        return query_vector;
    end if;
    topic := (
        select extensions.avg(ch.embedding)::real[] from hipocampo_private.chunks as ch
        where ch.id = any(chunk_ids) and extensions.vector_dims(ch.embedding) = extensions.vector_dims(query_vector)
    );
    if topic is null then
        return query_vector;
    end if;
    topic_norm := hipocampo_private._norm(topic);  -- each norm once, not once per dimension
    select pg_catalog.array_agg(q[i] / q_norm + weight * topic[i] / topic_norm order by i) into mixed
    from pg_catalog.generate_series(1, pg_catalog.cardinality(q)) as i;
    mixed_norm := hipocampo_private._norm(mixed::real[]);
    return (
        select pg_catalog.array_agg(x / mixed_norm order by i)::real[]::extensions.vector
        from pg_catalog.unnest(mixed) with ordinality as t (x, i)
    );
end;
$function$;
