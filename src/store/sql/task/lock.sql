-- name: task/lock
-- the lock every transaction that changes a task takes first
SELECT * FROM tasks WHERE id = $1 FOR NO KEY UPDATE
