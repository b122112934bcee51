-- name: secret/put
INSERT INTO secrets (name, sealed) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET sealed = excluded.sealed, updated_at = now()
