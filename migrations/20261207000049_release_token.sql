-- A paced release as a token, not only a time (recovery, fifth step): `last_release` is when
-- the release's last call was let through, and no other goes before `pace_ms` after it, even
-- when claims come late under load (`domain::circuit::Circuit::gate_for`).
ALTER TABLE tool_circuits ADD COLUMN last_release timestamptz;

COMMENT ON COLUMN tool_circuits.last_release IS
    'While a release goes on: when its last call was let through (none closer than pace_ms).';
