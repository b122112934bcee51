-- name: fair/delete_limit
DELETE FROM key_limits WHERE pattern = $1
