-- name: wait/children_ended
-- Open child waits whose child task has ended, or has stopped in needs_intervention at least
-- $2 seconds ago (the partial index of open child waits: empty, and free, when no step waits
-- for a child).
SELECT w.id, w.task_id
FROM waits w JOIN tasks c ON c.id = w.child_task_id
WHERE w.status = 'open' AND w.kind = 'child'
  AND (c.finished_at IS NOT NULL
       OR (c.status = 'needs_intervention' AND c.updated_at <= now() - make_interval(secs => $2)))
LIMIT $1
