-- How many steps of a limited tool may start now: its free slots under max_concurrency and the
-- whole tokens of its bucket (least() skips NULLs, hence the CASE: without a rate limit the
-- burst must not count). One definition for the claim's two statements that need it
-- (src/store/sql/step/claim_pick.sql and claim_checked.sql), which until now each carried a
-- copy. Read with the claim's snapshot; `now()` is the transaction's.
CREATE FUNCTION trellis_tool_room(t tools, b tool_buckets) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT least(
        coalesce(t.max_concurrency - (SELECT count(*) FROM steps r
                                      WHERE r.status = 'running'
                                        AND coalesce(r.tool_override, r.tool) = t.id),
                 2147483647),
        CASE WHEN t.rate_limit_per_sec IS NULL THEN 2147483647
             ELSE floor(least(t.rate_limit_burst::float8,
                  b.tokens + extract(epoch FROM now() - b.refilled_at) * t.rate_limit_per_sec))::bigint
        END)
$$;
