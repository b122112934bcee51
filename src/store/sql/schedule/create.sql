-- name: schedule/create
INSERT INTO schedules (id, cron, timezone, description, template, input, plan, priority, limits,
                       enabled, overlap, next_fire_at, tenant)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (tenant, id) DO NOTHING
RETURNING *
