-- name: schedule/advance
-- past the tick fired (or none): the next tick after now
UPDATE schedules SET next_fire_at = $2, last_tick = coalesce($3, last_tick),
       last_task_id = coalesce($4, last_task_id), last_error = $5, updated_at = now()
WHERE tenant = $6 AND id = $1
