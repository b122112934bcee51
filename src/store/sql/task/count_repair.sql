-- name: task/count_repair
UPDATE tasks SET single_step_repair_count = single_step_repair_count + 1, updated_at = now()
WHERE id = $1
