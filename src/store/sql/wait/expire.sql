-- name: wait/expire
-- move: WaitMove::Expire
UPDATE waits SET status = 'expired', resolved_at = now(), resolution = $2, resolved_by = $3
WHERE id = $1 AND (status IN ('open')) IS NOT FALSE
RETURNING *
