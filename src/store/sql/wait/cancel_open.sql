-- name: wait/cancel_open
-- move: WaitMove::Cancel
UPDATE waits SET status = 'cancelled', resolved_at = now()
WHERE task_id = $1 AND status IN ('open')
