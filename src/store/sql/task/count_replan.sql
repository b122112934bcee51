-- name: task/count_replan
UPDATE tasks SET task_replan_count = task_replan_count + 1 WHERE id = $1
