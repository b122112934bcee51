-- Per-tool concurrency and rate limits (seeds issue), enforced fleet-wide when steps are claimed.
--
-- `max_concurrency`: at most this many steps of the tool run at once. `rate_limit_per_sec` with
-- `rate_limit_burst`: a token bucket shared by the fleet; a claim takes one token per step.
ALTER TABLE tools
    ADD COLUMN max_concurrency integer CHECK (max_concurrency IS NULL OR max_concurrency >= 1),
    ADD COLUMN rate_limit_per_sec double precision
        CHECK (rate_limit_per_sec IS NULL OR rate_limit_per_sec > 0),
    ADD COLUMN rate_limit_burst integer NOT NULL DEFAULT 1 CHECK (rate_limit_burst >= 1);

-- One row per limited tool: the row a claim locks (FOR UPDATE SKIP LOCKED) before it counts the
-- tool's running steps, and the token bucket's state. Kept by the trigger below, so a tool
-- without limits costs the claim nothing.
CREATE TABLE tool_buckets (
    tool_id      text PRIMARY KEY REFERENCES tools (id) ON DELETE CASCADE,
    tokens       double precision NOT NULL,
    refilled_at  timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE tool_buckets IS
    'Claim-time limits of tools with max_concurrency or a rate limit: the row claims lock, and the token bucket (tokens as of refilled_at).';

CREATE FUNCTION trellis_tool_bucket() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.max_concurrency IS NULL AND NEW.rate_limit_per_sec IS NULL THEN
        DELETE FROM tool_buckets WHERE tool_id = NEW.id;
    ELSE
        INSERT INTO tool_buckets (tool_id, tokens) VALUES (NEW.id, NEW.rate_limit_burst)
        ON CONFLICT (tool_id) DO UPDATE SET tokens = least(tool_buckets.tokens, NEW.rate_limit_burst);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tools_bucket AFTER INSERT OR UPDATE ON tools
    FOR EACH ROW EXECUTE FUNCTION trellis_tool_bucket();
