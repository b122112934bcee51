-- name: cost/warn
-- The task's cost warning, once.
UPDATE tasks SET cost_warned_at = now() WHERE id = $1 AND cost_warned_at IS NULL
