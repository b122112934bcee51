-- name: plan/move_live_steps
UPDATE steps SET plan_version = $3
WHERE task_id = $1 AND plan_version = $2 AND status <> 'superseded'
