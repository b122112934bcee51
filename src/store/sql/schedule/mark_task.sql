-- name: schedule/mark_task
UPDATE tasks SET schedule_id = $2 WHERE id = $1 AND schedule_id IS NULL
