-- name: retention/rollup_attempts
INSERT INTO attempt_rollups AS r (day, tool, status, error_category, attempts)
SELECT date_trunc('day', finished_at)::date, tool, status, error_category, count(*)
FROM attempts WHERE task_id = ANY($1) GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
ON CONFLICT (day, tool, status, error_category)
DO UPDATE SET attempts = r.attempts + excluded.attempts
