-- name: tool/pause
-- hold (true) or release (false) every step of the tool: its triggers move its queue entries
-- to its own lane, where the claim finds no room, or back
UPDATE tools SET paused = $2, updated_at = now() WHERE id = $1
RETURNING *
