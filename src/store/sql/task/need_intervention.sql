-- name: task/need_intervention
-- move: TaskMove::NeedIntervention
UPDATE tasks SET status = 'needs_intervention', updated_at = now(), state_version = state_version + 1,
       finished_at = NULL
WHERE id = $1 AND (status IN ('reflecting')) IS NOT FALSE
