-- name: step/release
-- move: StepMove::Release
UPDATE steps SET status = 'ready', lease_owner = NULL, lease_expires_at = NULL,
       started_at = NULL, run_after = greatest(now(), coalesce($2, now())), updated_at = now()
WHERE id = $1 AND (status IN ('running')) IS NOT FALSE
