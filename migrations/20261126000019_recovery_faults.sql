-- Recovery of real faults (recovery issue): a retry policy and a circuit breaker per tool, and
-- the breaker's fleet-wide state.

-- `retry`: {"max_attempts", "initial_interval_ms", "backoff_coefficient", "max_interval_ms",
-- "max_elapsed_secs"}; `circuit_breaker`: {"failure_threshold", "cool_down_secs"}. Each part
-- optional (the workers' `[worker]` defaults apply); null: the defaults.
ALTER TABLE tools
    ADD COLUMN retry jsonb CHECK (retry IS NULL OR jsonb_typeof(retry) = 'object'),
    ADD COLUMN circuit_breaker jsonb
        CHECK (circuit_breaker IS NULL OR jsonb_typeof(circuit_breaker) = 'object');

-- One row per tool that has failed with an outage or answered with `Retry-After`; a tool that
-- never did has none and costs nothing. Written in the failure's transaction (under the row's
-- lock, after the task and step locks), reset by the completion that records a success, and
-- read by a worker before it calls a tool whose circuit is not closed (`domain::circuit`).
CREATE TABLE tool_circuits (
    tool_id               text PRIMARY KEY REFERENCES tools (id) ON DELETE CASCADE,
    consecutive_failures  integer NOT NULL DEFAULT 0,
    -- open or half open: the end of the cool-down (null: closed)
    open_until            timestamptz,
    -- half open: the probe's lease
    probe_until           timestamptz,
    -- Retry-After: no call before this time
    held_until            timestamptz,
    updated_at            timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 50);

COMMENT ON TABLE tool_circuits IS
    'Fleet-wide circuit breaker and Retry-After hold per tool: closed (open_until null), open (open_until > now()), half open (open_until <= now(), one probe under probe_until); held_until from Retry-After.';

-- Workers learn that a tool must be asked before it is called from the tool registry's version
-- (their tool cache): bump it whenever a circuit starts or stops needing that.
CREATE FUNCTION trellis_circuit_gated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    was boolean := TG_OP <> 'INSERT' AND (OLD.open_until IS NOT NULL OR OLD.held_until IS NOT NULL);
    now_gated boolean := TG_OP <> 'DELETE' AND (NEW.open_until IS NOT NULL OR NEW.held_until IS NOT NULL);
BEGIN
    IF was IS DISTINCT FROM now_gated THEN
        UPDATE tool_registry SET version = version + 1;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tool_circuits_gated AFTER INSERT OR UPDATE OR DELETE ON tool_circuits
    FOR EACH ROW EXECUTE FUNCTION trellis_circuit_gated();
