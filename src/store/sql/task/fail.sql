-- name: task/fail
-- move: TaskMove::Fail
UPDATE tasks SET status = 'failed', updated_at = now(), state_version = state_version + 1,
       finished_at = now()
WHERE id = $1 AND (status IN ('pending', 'planning', 'running', 'reflecting', 'replanning', 'evaluating')) IS NOT FALSE
