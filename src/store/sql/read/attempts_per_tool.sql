-- name: read/attempts_per_tool
-- The last $1 minutes, per tool (the window as in read/attempts_per_minute).
SELECT tool, count(*) AS attempts,
       count(*) FILTER (WHERE status = 'failed') AS failed,
       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms), 0)::float8 AS median_ms,
       coalesce(avg(duration_ms), 0)::float8 AS mean_ms
FROM attempts
WHERE id > coalesce((SELECT id FROM attempts
                     WHERE finished_at <= now() - make_interval(mins => $1)
                     ORDER BY id DESC LIMIT 1), 0)
  AND finished_at > now() - make_interval(mins => $1)
  AND ($2::text IS NULL
       OR EXISTS (SELECT 1 FROM tasks t WHERE t.id = attempts.task_id AND t.tenant = $2))
GROUP BY tool ORDER BY tool
