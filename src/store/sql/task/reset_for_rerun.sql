-- name: task/reset_for_rerun
UPDATE tasks SET error = NULL,
       deadline_at = deadline_at - created_at + now()
WHERE id = $1
