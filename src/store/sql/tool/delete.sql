-- name: tool/delete
DELETE FROM tools WHERE id = $1 AND kind = 'http' RETURNING kind
