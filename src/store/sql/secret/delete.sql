-- name: secret/delete
DELETE FROM secrets WHERE name = $1
