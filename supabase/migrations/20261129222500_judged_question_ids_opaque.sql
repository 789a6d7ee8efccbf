-- judged question ids opaque.
-- judged questions' ids are opaque (_opaque_id), as every id a user can see, not a shared sequence's
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

alter table hipocampo_private.judged_questions alter column id drop identity;

alter table hipocampo_private.judged_questions alter column id set default hipocampo_private._opaque_id();
