-- name: task/lock_past_deadline
-- from: TaskMove::Fail
SELECT id FROM tasks
WHERE deadline_at < now() AND status IN ('pending', 'planning', 'running', 'reflecting', 'replanning', 'evaluating')
ORDER BY deadline_at LIMIT $1
FOR NO KEY UPDATE SKIP LOCKED
