-- name: map/expand
-- move: StepMove::Expand
UPDATE steps SET status = 'waiting', lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
WHERE id = $1 AND (status IN ('running')) IS NOT FALSE
RETURNING plan_version
