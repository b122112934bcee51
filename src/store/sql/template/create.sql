-- name: template/create
INSERT INTO templates (id, description, input_schema, plan) VALUES ($1, $2, $3, $4)
ON CONFLICT (id) DO NOTHING
RETURNING *
