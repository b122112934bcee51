-- name: task/start_planning
-- move: TaskMove::StartPlanning
UPDATE tasks SET status = 'planning', updated_at = now(), state_version = state_version + 1,
       finished_at = NULL
WHERE id = $1 AND (status IN ('pending')) IS NOT FALSE
