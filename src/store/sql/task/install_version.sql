-- name: task/install_version
UPDATE tasks SET plan_version = $2, consecutive_failures = 0, stop_reason = NULL,
       runtime_metadata = CASE WHEN $3 THEN '{}'::jsonb ELSE runtime_metadata END,
       updated_at = now()
WHERE id = $1
