-- name: task/children
-- A task's children, oldest first, with the key of the step that started each.
SELECT c.id AS task_id, coalesce(s.step_key, '') AS step_key, c.status
FROM tasks c LEFT JOIN steps s ON s.id = c.parent_step_id
WHERE c.parent_task_id = $1
ORDER BY c.created_at, c.id
