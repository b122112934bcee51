-- name: step/next_due
SELECT least(
(SELECT (extract(epoch FROM min(run_after) - now()) * 1000)::float8 FROM claim_queue
 WHERE delayed AND run_after > now()),
(SELECT min((1 - b.tokens - extract(epoch FROM now() - b.refilled_at) * t.rate_limit_per_sec)
            / t.rate_limit_per_sec * 1000)::float8
 FROM tool_buckets b JOIN tools t ON t.id = b.tool_id
 WHERE t.rate_limit_per_sec IS NOT NULL AND NOT t.paused
   AND b.tokens + extract(epoch FROM now() - b.refilled_at) * t.rate_limit_per_sec < 1)),
(SELECT version FROM tool_registry)
