-- The per-project HMAC key of audit pseudonyms (hipocampo_private._pseudonym): 32 random bytes,
-- the sha256 of two gen_random_uuid() values (pg_strong_random, 244 bits). Idempotent: an
-- existing key is kept (changing it would orphan every pseudonym written with it).
-- Run after the schema by `hipocampo db migrate`; a database set up otherwise (e.g. `supabase db
-- push`) must run it once, or _pseudonym raises 55000.
insert into hipocampo_private.project_secrets (name, value)
values ('user_ref_key', sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')))
on conflict (name) do nothing;
