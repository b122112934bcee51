-- name: task/open_descendants
-- The unfinished descendants of a task, in id order (the lock order).
WITH RECURSIVE d AS (
    SELECT id FROM tasks WHERE parent_task_id = $1
    UNION
    SELECT t.id FROM tasks t JOIN d ON t.parent_task_id = d.id
)
SELECT t.id FROM d JOIN tasks t ON t.id = d.id
WHERE t.finished_at IS NULL
ORDER BY t.id
