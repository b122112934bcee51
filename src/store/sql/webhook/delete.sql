-- name: webhook/delete
DELETE FROM webhooks WHERE id = $1
