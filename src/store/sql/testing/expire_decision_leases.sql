-- name: testing/expire_decision_leases
UPDATE decisions SET lease_expires_at = now() - interval '1 second'
WHERE task_id = $1 AND status = 'running'
