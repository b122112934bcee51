-- name: template/delete
DELETE FROM templates WHERE id = $1
