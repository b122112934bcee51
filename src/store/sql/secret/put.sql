-- name: secret/put
INSERT INTO secrets (name, sealed, tenant) VALUES ($1, $2, $3)
ON CONFLICT (name) DO UPDATE SET sealed = excluded.sealed, updated_at = now()
