-- Tool output checks (seeds issue): an optional JSON Schema the tool's output must match; a
-- mismatch fails the attempt with category `output_mismatch` (the seeds' lightweight step
-- evaluation). Inputs are checked against `input_schema` before every call.
ALTER TABLE tools ADD COLUMN output_schema jsonb;

COMMENT ON COLUMN tools.output_schema IS
    'JSON Schema a successful output must match (NULL: any output); a mismatch is an output_mismatch failure.';
