-- name: circuit/retry_context
WITH streak AS (
    SELECT count(*)::int AS failures,
           coalesce((extract(epoch FROM now() - min(a.started_at)) * 1000)::bigint, 0) AS elapsed_ms
    FROM attempts a
    WHERE a.task_id = $1 AND a.step_key = $2 AND a.status = 'failed'
      AND a.error_category IS DISTINCT FROM 'worker_lost'
      AND a.id > coalesce((SELECT max(s.id) FROM attempts s
                           WHERE s.task_id = $1 AND s.step_key = $2 AND s.status = 'succeeded'), 0)
)
SELECT streak.failures, streak.elapsed_ms, t.retry, t.circuit_breaker, t.kind = 'http' AS http,
       cardinality(t.alternatives) > 0 AS alternative
FROM streak LEFT JOIN tools t ON t.id = $3
