-- name: wait/resolve
-- move: WaitMove::Resolve
UPDATE waits SET status = 'resolved', resolved_at = now(), resolution = $2, resolved_by = $3
WHERE id = $1 AND (status IN ('open')) IS NOT FALSE
RETURNING *
