-- name: task/orphans
-- Up to $1 unfinished child tasks whose parent ended failed or cancelled: a parent that failed
-- while its children ran, or a child submitted by a step whose worker died before it
-- announced the child, after its parent's cancel. Reads the partial index of unfinished
-- children only.
SELECT c.id
FROM tasks c JOIN tasks p ON p.id = c.parent_task_id
WHERE c.parent_task_id IS NOT NULL AND c.finished_at IS NULL
  AND p.status IN ('failed', 'cancelled')
ORDER BY c.id
LIMIT $1
