-- name: schedule/replace
UPDATE schedules SET cron = $2, timezone = $3, description = $4, template = $5, input = $6,
       plan = $7, priority = $8, limits = $9, enabled = $10, overlap = $11, next_fire_at = $12,
       last_error = NULL, updated_at = now()
WHERE tenant = $13 AND id = $1
RETURNING *
