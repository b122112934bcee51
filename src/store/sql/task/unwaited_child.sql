-- name: task/unwaited_child
-- The child that an earlier attempt of the step $2's call started (its idempotency key begins
-- with $3: `child:<call key>:`) and that no attempt waited on: its worker was lost before it
-- parked, so the call's next attempt takes it over instead of starting another.
SELECT c.id
FROM tasks c
WHERE c.parent_step_id = $2 AND c.parent_task_id = $1 AND starts_with(c.idempotency_key, $3)
  AND NOT EXISTS (SELECT 1 FROM waits w WHERE w.step_id = $2 AND w.child_task_id = c.id)
ORDER BY c.id DESC
LIMIT 1
