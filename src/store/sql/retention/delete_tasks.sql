-- name: retention/delete_tasks
DELETE FROM tasks WHERE id = ANY($1)
