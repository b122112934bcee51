-- name: task/rerun
-- move: TaskMove::Rerun
UPDATE tasks SET status = 'replanning', updated_at = now(), state_version = state_version + 1,
       finished_at = NULL
WHERE id = $1 AND (status IN ('succeeded', 'failed', 'cancelled', 'needs_intervention')) IS NOT FALSE
