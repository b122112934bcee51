-- Per-key max_running (fairness issue): `key_limits.max_running` caps the steps of one key's
-- tasks running at once, across every worker. A task records the pattern that governs its key
-- (the most specific, resolved at submit); while some pattern has a max_running, claims take
-- the checked path, which locks the candidates' patterns (SKIP LOCKED) and counts each key's
-- running steps with a later snapshot, as it does for a limited tool. With no max_running set
-- anywhere, nothing changes: the plain claim runs as before.
ALTER TABLE tasks ADD COLUMN key_pattern text;
COMMENT ON COLUMN tasks.key_pattern IS 'the key_limits pattern that governs concurrency_key (resolved at submit; none when no pattern matches)';

-- a change of the key limits is a change of the claim's registry: workers re-read whether
-- claims must take the checked path
CREATE TRIGGER key_limits_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON key_limits
    FOR EACH STATEMENT EXECUTE FUNCTION trellis_tools_changed();
