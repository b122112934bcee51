-- name: task/set_error
UPDATE tasks SET error = $2 WHERE id = $1
