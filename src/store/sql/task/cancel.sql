-- name: task/cancel
-- move: TaskMove::Cancel
UPDATE tasks SET status = 'cancelled', updated_at = now(), state_version = state_version + 1,
       finished_at = now()
WHERE id = $1 AND (status IN ('pending', 'planning', 'running', 'reflecting', 'replanning', 'evaluating', 'needs_intervention')) IS NOT FALSE
