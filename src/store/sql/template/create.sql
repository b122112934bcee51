-- name: template/create
INSERT INTO templates (id, description, input_schema, plan, concurrency_key, tenant, max_cost)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO NOTHING
RETURNING *
