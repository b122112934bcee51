-- name: step/insert_failed_attempt
INSERT INTO attempts (task_id, step_id, step_key, plan_version, attempt, tool, parameters,
                      status, output, error, error_category, worker_id, started_at, finished_at,
                      idempotency_key)
VALUES ($1, $2, $3, $4, $5, $6, $7, 'failed', NULL, $8, $9, $10, coalesce($11, now()), clock_timestamp(),
        $12)
RETURNING id
