-- name: task/set_plan_version
UPDATE tasks SET plan_version = $2, updated_at = now() WHERE id = $1
