-- four candidates per row asked.
-- Issue 60 §1: retrieval.candidate_multiplier 8 -> 4 (candidates per leg = max(match_count * 4,
-- min_candidates 40)): nDCG@10 on the nine sets of benchmarks/fusion_coverage.py within 0.004 of 8
-- for both offline models, the same lean chosen leave-one-dataset-out; a search asking 10 rows
-- fuses 40 candidates a leg instead of 80 (FaQuAD's hybrid_search p95 2.64 -> 2.35 ms).
-- Written by hand (data, which the schema files do not hold): the global row takes the new default
-- (hipocampo db migrate seeds it again from config.toml; a database upgraded by `supabase db push`
-- alone gets it here) where it still holds the value seeded before.
update hipocampo_private.settings
set config = jsonb_set(config, '{retrieval,candidate_multiplier}', '4'::jsonb)
where
    tenant_id is null
    and config #>> '{retrieval,candidate_multiplier}' = '8';
