-- name: testing/history_steps
INSERT INTO steps (id, task_id, plan_version, step_key, position, tool, status, attempts,
                   output, finished_at, created_at, updated_at)
SELECT gen_random_uuid(), t.id, 1, 's' || k, k, 'echo', 'succeeded', 1, '{}'::jsonb,
       t.finished_at, t.created_at, t.finished_at
FROM tasks t CROSS JOIN generate_series(1, $1) AS k
WHERE t.status = 'succeeded'
