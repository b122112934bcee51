-- part: step/_claim_spend (of step/claim_checked)
), spent AS (
    -- one token per step started, from buckets refilled up to now
    UPDATE tool_buckets b
    SET tokens = least(t.rate_limit_burst::float8,
                       b.tokens + extract(epoch FROM now() - b.refilled_at) * t.rate_limit_per_sec) - n.n,
        refilled_at = now()
    FROM (SELECT tool, count(*) AS n FROM claimed GROUP BY tool) n, tools t
    WHERE b.tool_id = n.tool AND t.id = b.tool_id AND t.rate_limit_per_sec IS NOT NULL
