-- name: task/set_consecutive_failures
UPDATE tasks SET consecutive_failures = $2, updated_at = now() WHERE id = $1
