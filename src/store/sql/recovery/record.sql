-- name: recovery/record
INSERT INTO recoveries (task_id, step_key, plan_version, failed_attempt_id, tier, action, tool, category)
SELECT task_id, step_key, plan_version, id, $2, $3, tool,
       coalesce($4, error_category, 'unknown_error')
FROM attempts WHERE id = $1
