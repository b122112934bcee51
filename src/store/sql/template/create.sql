-- name: template/create
INSERT INTO templates (id, description, input_schema, plan, concurrency_key)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (id) DO NOTHING
RETURNING *
