-- Paced release (recovery, fifth step): when a `Retry-After` hold ends, or a probe's success
-- closes an open circuit, the steps that waited go one per `pace_ms` (the rate the service
-- announced, else `domain::circuit::DEFAULT_PACE_MS`), each in a release slot of its own
-- (`held_until` + k × `pace_ms`), never as one burst. `held_until` stays set (the tool stays
-- gated) until a whole pace passes with no one waiting (`domain::circuit::Circuit::gate_for`).
ALTER TABLE tool_circuits
    ADD COLUMN pace_ms   integer NOT NULL DEFAULT 0 CHECK (pace_ms >= 0),
    ADD COLUMN next_slot timestamptz;

COMMENT ON COLUMN tool_circuits.pace_ms IS
    'After held_until, one call per this many ms (0: all at once).';
COMMENT ON COLUMN tool_circuits.next_slot IS
    'The next release slot not yet given to a waiting step (null: held_until).';
