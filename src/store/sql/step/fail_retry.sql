-- name: step/fail_retry
-- move: StepMove::RetryAfterFailure
UPDATE steps SET status = 'ready', error = $2, attempts = $3, retry_count = $4, rescue_count = $5,
       lease_owner = NULL, lease_expires_at = NULL, started_at = NULL, updated_at = now(),
       run_after = now() + make_interval(secs => $6 / 1000.0), finished_at = NULL
WHERE id = $1 AND (status IN ('running')) IS NOT FALSE
