-- name: task/first_plan_version
UPDATE tasks SET plan_version = 1, updated_at = now() WHERE id = $1
