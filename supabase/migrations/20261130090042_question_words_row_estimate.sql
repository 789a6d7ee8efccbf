-- question words row estimate.
-- the lexical leg's term lookup probes kb_term_stats by key: _question_words says it returns a handful of rows (rows 8), so the planner no longer hashes every tenant's terms (200 to 7 ms for a member of one of 50 tenants, benchmarks/tenants.py)
-- Written by `make migration` (migra + tools/make_migration.py) from supabase/schemas/.

alter function hipocampo_private._question_words(language text, document_languages text[], query_text text) rows 8;
