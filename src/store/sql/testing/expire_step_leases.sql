-- name: testing/expire_step_leases
UPDATE steps SET lease_expires_at = now() - interval '1 second'
WHERE id = $1 AND status = 'running'
