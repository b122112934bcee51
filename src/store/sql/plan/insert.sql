-- name: plan/insert
INSERT INTO plans (task_id, version, origin, reasoning, estimated_duration, steps)
VALUES ($1, $2, $3, $4, $5, $6)
