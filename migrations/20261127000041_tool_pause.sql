-- Pausing a tool (operations issue, part 3): `POST /tools/{id}/pause` holds every step of the
-- tool in the queue (no claim, so no attempt and no retry spent) until `resume`. A paused tool
-- is a limited tool whose room is 0: it has a bucket row, its entries live in its own lane,
-- and the checked claim starts none of them; the plain claim never reads that lane. Running
-- calls finish.
ALTER TABLE tools ADD COLUMN paused boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN tools.paused IS 'held: the claim starts none of its steps (POST /api/v1/tools/{id}/pause, /resume)';

CREATE OR REPLACE FUNCTION trellis_tool_bucket() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.max_concurrency IS NULL AND NEW.rate_limit_per_sec IS NULL AND NOT NEW.paused THEN
        DELETE FROM tool_buckets WHERE tool_id = NEW.id;
    ELSE
        INSERT INTO tool_buckets (tool_id, tokens) VALUES (NEW.id, NEW.rate_limit_burst)
        ON CONFLICT (tool_id) DO UPDATE SET tokens = least(tool_buckets.tokens, NEW.rate_limit_burst);
    END IF;
    RETURN NULL;
END;
$$;

-- A tool that gains or loses its limits (a pause is one) moves its entries to its own lane or
-- back to ''.
CREATE OR REPLACE FUNCTION trellis_claim_lanes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    was boolean := TG_OP <> 'INSERT'
                   AND (OLD.max_concurrency IS NOT NULL OR OLD.rate_limit_per_sec IS NOT NULL
                        OR OLD.paused);
    now_limited boolean := TG_OP <> 'DELETE'
                   AND (NEW.max_concurrency IS NOT NULL OR NEW.rate_limit_per_sec IS NOT NULL
                        OR NEW.paused);
    t text := CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END;
BEGIN
    IF was IS DISTINCT FROM now_limited THEN
        UPDATE claim_queue SET lane = CASE WHEN now_limited THEN t ELSE '' END WHERE tool = t;
    END IF;
    RETURN NULL;
END;
$$;

-- A paused tool has no room.
CREATE OR REPLACE FUNCTION trellis_tool_room(t tools, b tool_buckets) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN t.paused THEN 0 ELSE least(
        coalesce(t.max_concurrency - (SELECT count(*) FROM steps r
                                      WHERE r.status = 'running'
                                        AND coalesce(r.tool_override, r.tool) = t.id),
                 2147483647),
        CASE WHEN t.rate_limit_per_sec IS NULL THEN 2147483647
             ELSE floor(least(t.rate_limit_burst::float8,
                  b.tokens + extract(epoch FROM now() - b.refilled_at) * t.rate_limit_per_sec))::bigint
        END) END
$$;
