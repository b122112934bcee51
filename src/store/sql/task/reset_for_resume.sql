-- name: task/reset_for_resume
UPDATE tasks SET consecutive_failures = 0, stop_reason = NULL WHERE id = $1
