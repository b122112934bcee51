-- name: wait/insert
-- A step's wait for one attempt (one per kind): a retry of the park finds the row it wrote.
WITH ins AS (
    INSERT INTO waits (id, task_id, step_id, step_key, attempt, kind, prompt, form, role,
                       on_timeout, gated_tool, parameters, event_key, match, token_hash,
                       expires_at, child_task_id, tenant)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
            coalesce($16, now() + make_interval(secs => $17)), $18,
            (SELECT tenant FROM tasks WHERE id = $2))
    ON CONFLICT (step_id, attempt, kind) DO NOTHING
    RETURNING *
)
SELECT * FROM ins
UNION ALL
SELECT * FROM waits WHERE step_id = $3 AND attempt = $5 AND kind = $6 AND NOT EXISTS (SELECT 1 FROM ins)
