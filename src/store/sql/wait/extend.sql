-- name: wait/extend
-- a callback's heartbeat: the wait lasts `extend_secs` more from now (never less than before)
UPDATE waits SET expires_at = greatest(expires_at, now() + make_interval(secs => $2))
WHERE token_hash = $1 AND status = 'open'
RETURNING expires_at
