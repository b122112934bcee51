-- name: key/create
INSERT INTO api_keys (id, name, role, key_hash, key_prefix, tenant)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id, name, role, key_prefix, created_at, revoked_at, tenant
