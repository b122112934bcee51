-- name: decision/claim
-- move: DecisionMove::Claim
WITH c AS (
    SELECT id FROM decisions
    WHERE status IN ('pending') AND run_after <= now()
    ORDER BY created_at LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE decisions d
SET status = 'running', lease_owner = $2, lease_token = d.lease_token + 1,
    lease_expires_at = now() + make_interval(secs => $3)
FROM c WHERE d.id = c.id
RETURNING d.id, d.task_id, d.kind, d.step_id, d.input, d.lease_token, d.rescue_count
