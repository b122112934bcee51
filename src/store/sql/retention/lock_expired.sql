-- name: retention/lock_expired
SELECT id FROM tasks
WHERE status IN ('succeeded', 'failed', 'cancelled')
  AND finished_at < now() - make_interval(secs => $1)
ORDER BY finished_at LIMIT $2
FOR UPDATE SKIP LOCKED
