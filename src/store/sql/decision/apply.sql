-- name: decision/apply
-- move: DecisionMove::Apply
UPDATE decisions SET status = 'done', lease_owner = NULL, lease_expires_at = NULL, finished_at = now()
WHERE id = $1 AND (status IN ('running')) IS NOT FALSE
