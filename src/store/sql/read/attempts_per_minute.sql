-- name: read/attempts_per_minute
-- The last $1 minutes: attempts are inserted as they finish, so their ids follow finished_at;
-- the window starts after the newest attempt older than it, found by walking the primary key
-- back from the newest (the cost follows the window, never the history).
SELECT date_trunc('minute', finished_at) AS minute,
       count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
       count(*) FILTER (WHERE status = 'failed') AS failed
FROM attempts
WHERE id > coalesce((SELECT id FROM attempts
                     WHERE finished_at <= now() - make_interval(mins => $1)
                     ORDER BY id DESC LIMIT 1), 0)
  AND finished_at > now() - make_interval(mins => $1)
  -- one tenant's ($2; none: every tenant's)
  AND ($2::text IS NULL
       OR EXISTS (SELECT 1 FROM tasks t WHERE t.id = attempts.task_id AND t.tenant = $2))
GROUP BY 1 ORDER BY 1
