-- name: wait/rotate_token
-- an async call made again for the same attempt (its step was released and claimed again):
-- only the new token calls back
UPDATE waits SET token_hash = $2, expires_at = now() + make_interval(secs => $3)
WHERE id = $1 AND status = 'open'
