-- Function bodies may name objects of later schema files; they are checked when called (as in
-- pg_dump output), so the files apply in the order of [db.migrations] schema_paths.
set check_function_bodies = off;

-- hipocampo: schemas, extensions and default privileges.
--
-- hipocampo          exposed schema (add it to PostgREST's api.schemas): RPCs and views only.
-- hipocampo_private  tables and internals; never exposed over HTTP.
--
-- Extensions live in the `extensions` schema, as on Supabase.
create schema if not exists extensions;

create extension if not exists vector with schema extensions;

create extension if not exists pg_trgm with schema extensions;

create extension if not exists unaccent with schema extensions;

-- dblink: a read in a read-only transaction (a hot standby) records itself on the primary
-- (hipocampo_private._enqueue_read_on_primary). Available on Supabase (Database → Extensions).
create extension if not exists dblink with schema extensions;

-- No API role executes a dblink function (issue 57 §1): with one, a member could open a
-- connection as whatever the database's foreign servers map to, or reuse one a definer left open.
-- PostgreSQL grants new functions to PUBLIC and Supabase's default privileges grant the extensions
-- schema's to anon, authenticated and service_role: every grant of dblink's functions but the
-- owner's is taken back here. A role that cannot revoke them (a non-owner) is told so.
do $$
declare
    f regprocedure;
begin
    for f in
        select p.oid::regprocedure from pg_catalog.pg_proc as p
        inner join pg_catalog.pg_depend as d on d.classid = 'pg_catalog.pg_proc'::regclass and d.objid = p.oid
        inner join pg_catalog.pg_extension as e on e.oid = d.refobjid and d.deptype = 'e'
        where e.extname = 'dblink'
    loop
        execute format('revoke all on function %s from public', f);
        continue when not exists (select 1 from pg_catalog.pg_roles where rolname = 'anon');
        execute format('revoke all on function %s from anon, authenticated, service_role', f);
        if pg_catalog.has_function_privilege('anon', f, 'execute')
            or pg_catalog.has_function_privilege('authenticated', f, 'execute') then
            raise warning 'dblink function % is still executable by an API role: revoke it as its owner', f;
        end if;
    end loop;
end;
$$;

create schema if not exists hipocampo;

create schema if not exists hipocampo_private;

comment on schema hipocampo is
'hipocampo RPC surface (exposed through PostgREST). Tables live in hipocampo_private.';

comment on schema hipocampo_private is
'hipocampo tables and internal functions. Not exposed over HTTP; protected by RLS.';

alter default privileges in schema hipocampo revoke all on tables from anon, authenticated;

alter default privileges in schema hipocampo_private revoke all on tables from anon, authenticated;

-- Full-text configurations: the language stemmer plus unaccent, so "matrícula" matches
-- "matricula". A knowledge base picks one of these (default portuguese); a document of another
-- language (detected at ingestion, issue 59 §2) has its chunks in its own language's.
create text search configuration hipocampo_private.portuguese_unaccent (
    copy = pg_catalog.portuguese
);

alter text search configuration hipocampo_private.portuguese_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.portuguese_stem;

create text search configuration hipocampo_private.english_unaccent (
    copy = pg_catalog.english
);

alter text search configuration hipocampo_private.english_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.english_stem;

create text search configuration hipocampo_private.danish_unaccent (
    copy = pg_catalog.danish
);

alter text search configuration hipocampo_private.danish_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.danish_stem;

create text search configuration hipocampo_private.dutch_unaccent (
    copy = pg_catalog.dutch
);

alter text search configuration hipocampo_private.dutch_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.dutch_stem;

create text search configuration hipocampo_private.finnish_unaccent (
    copy = pg_catalog.finnish
);

alter text search configuration hipocampo_private.finnish_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.finnish_stem;

create text search configuration hipocampo_private.french_unaccent (
    copy = pg_catalog.french
);

alter text search configuration hipocampo_private.french_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.french_stem;

create text search configuration hipocampo_private.german_unaccent (
    copy = pg_catalog.german
);

alter text search configuration hipocampo_private.german_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.german_stem;

create text search configuration hipocampo_private.hungarian_unaccent (
    copy = pg_catalog.hungarian
);

alter text search configuration hipocampo_private.hungarian_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.hungarian_stem;

create text search configuration hipocampo_private.italian_unaccent (
    copy = pg_catalog.italian
);

alter text search configuration hipocampo_private.italian_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.italian_stem;

create text search configuration hipocampo_private.norwegian_unaccent (
    copy = pg_catalog.norwegian
);

alter text search configuration hipocampo_private.norwegian_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.norwegian_stem;

create text search configuration hipocampo_private.russian_unaccent (
    copy = pg_catalog.russian
);

alter text search configuration hipocampo_private.russian_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.russian_stem;

create text search configuration hipocampo_private.spanish_unaccent (
    copy = pg_catalog.spanish
);

alter text search configuration hipocampo_private.spanish_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.spanish_stem;

create text search configuration hipocampo_private.swedish_unaccent (
    copy = pg_catalog.swedish
);

alter text search configuration hipocampo_private.swedish_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.swedish_stem;

create text search configuration hipocampo_private.turkish_unaccent (
    copy = pg_catalog.turkish
);

alter text search configuration hipocampo_private.turkish_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.turkish_stem;

create text search configuration hipocampo_private.simple_unaccent (
    copy = pg_catalog.simple
);

alter text search configuration hipocampo_private.simple_unaccent
alter mapping for hword, hword_part, word
with extensions.unaccent, pg_catalog.simple;
