-- name: task/next_round
UPDATE tasks SET round = round + 1 WHERE id = $1
