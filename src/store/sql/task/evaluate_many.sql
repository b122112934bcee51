-- name: task/evaluate_many
-- move: TaskMove::Evaluate
UPDATE tasks SET status = 'evaluating', updated_at = now(), state_version = state_version + 1,
       finished_at = NULL
WHERE id = ANY($1) AND (status IN ('running', 'planning', 'replanning', 'needs_intervention')) IS NOT FALSE
RETURNING *
