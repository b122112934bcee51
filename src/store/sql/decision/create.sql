-- name: decision/create
INSERT INTO decisions (id, task_id, kind, step_id, task_version, input, status,
                       lease_owner, lease_token, lease_expires_at)
VALUES ($1, $2, $3, $4, (SELECT state_version FROM tasks WHERE id = $2), $5,
        CASE WHEN $6::uuid IS NULL THEN 'pending' ELSE 'running' END,
        $6, CASE WHEN $6::uuid IS NULL THEN 0 ELSE 1 END,
        CASE WHEN $6::uuid IS NULL THEN NULL ELSE now() + make_interval(secs => $7) END)
RETURNING id, task_id, kind, step_id, input, lease_token, rescue_count
