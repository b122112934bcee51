-- name: key/revoke
UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
WHERE id = $1 RETURNING id
