-- name: task/set_stop_reason
UPDATE tasks SET stop_reason = $2 WHERE id = $1
