-- name: retention/rollup_attempts
INSERT INTO attempt_rollups AS r (day, tool, status, error_category, tenant, attempts)
SELECT date_trunc('day', a.finished_at)::date, a.tool, a.status, a.error_category, t.tenant,
       count(*)
FROM attempts a JOIN tasks t ON t.id = a.task_id
WHERE a.task_id = ANY($1) GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
ON CONFLICT (day, tool, status, error_category, tenant)
DO UPDATE SET attempts = r.attempts + excluded.attempts
