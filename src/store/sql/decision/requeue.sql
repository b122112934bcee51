-- name: decision/requeue
-- move: DecisionMove::Requeue
UPDATE decisions SET status = 'pending', lease_owner = NULL, lease_expires_at = NULL
WHERE id = $1 AND lease_token = $2 AND (status IN ('running')) IS NOT FALSE
