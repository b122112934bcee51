-- name: step/supersede_version
-- move: StepMove::Supersede
UPDATE steps SET status = 'superseded', updated_at = now(), finished_at = coalesce(finished_at, now())
WHERE task_id = $1 AND plan_version = $2 AND status IN ('blocked', 'ready', 'failed', 'waiting')
