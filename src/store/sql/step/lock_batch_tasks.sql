-- name: step/lock_batch_tasks
-- a completion batch's tasks, locked in id order (concurrent batches cannot deadlock)
SELECT id, status, plan_version, consecutive_failures FROM tasks
WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE
