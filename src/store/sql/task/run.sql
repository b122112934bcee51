-- name: task/run
-- move: TaskMove::Run
UPDATE tasks SET status = 'running', updated_at = now(), state_version = state_version + 1,
       finished_at = NULL
WHERE id = $1 AND (status IN ('planning', 'replanning', 'needs_intervention')) IS NOT FALSE
