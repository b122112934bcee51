-- name: worker/stop
UPDATE workers SET stopped_at = now() WHERE id = $1
