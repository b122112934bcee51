-- name: task/succeed_many
-- move: TaskMove::Succeed
UPDATE tasks SET status = 'succeeded', updated_at = now(), state_version = state_version + 1,
       finished_at = now()
WHERE id = ANY($1) AND (status IN ('evaluating')) IS NOT FALSE
RETURNING *
