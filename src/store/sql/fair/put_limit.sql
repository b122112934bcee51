-- name: fair/put_limit
-- A key pattern's limits, inserted or replaced ($2: the pattern as a LIKE pattern).
INSERT INTO key_limits (pattern, like_pattern, weight, max_running) VALUES ($1, $2, $3, $4)
ON CONFLICT (pattern) DO UPDATE
SET weight = excluded.weight, max_running = excluded.max_running, updated_at = now()
RETURNING pattern, weight, max_running, updated_at
