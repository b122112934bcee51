-- A tool whose calls fail and then pass on their own retry is up (per-call flakiness), not
-- down: a success that resets its count of outages in a row says when (`step/complete`), and
-- a map's items go on lending their places while that is recent (`map/lend`), whatever the
-- failures in a row since. A healthy tool's successes write nothing (its count is 0).
ALTER TABLE tool_circuits ADD COLUMN healed_at timestamptz;

COMMENT ON COLUMN tool_circuits.healed_at IS
    'When a success last reset a count of outages in a row (the service answered between failures).';
