-- name: testing/history_attempts
INSERT INTO attempts (task_id, step_id, step_key, plan_version, attempt, tool, status,
                      output, started_at, finished_at)
SELECT task_id, id, step_key, 1, 1, 'echo', 'succeeded', '{}'::jsonb, finished_at, finished_at
FROM steps WHERE status = 'succeeded'
