-- name: decision/cancel_open
-- move: DecisionMove::Cancel
UPDATE decisions SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL,
       finished_at = now()
WHERE task_id = $1 AND status IN ('pending', 'running')
