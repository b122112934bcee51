-- name: webhook/create
INSERT INTO webhooks (id, url, events, template, secret, tenant) VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *
