-- name: task/reflect
-- move: TaskMove::Reflect
UPDATE tasks SET status = 'reflecting', updated_at = now(), state_version = state_version + 1,
       finished_at = NULL
WHERE id = $1 AND (status IN ('running', 'evaluating')) IS NOT FALSE
