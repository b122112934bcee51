-- name: decision/requeue_expired
-- move: DecisionMove::Requeue
UPDATE decisions SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL,
       rescue_count = rescue_count + 1
WHERE id IN (SELECT id FROM decisions WHERE status IN ('running') AND lease_expires_at < now()
             ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
