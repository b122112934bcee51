-- name: testing/history_plans
INSERT INTO plans (task_id, version, origin, steps)
SELECT id, 1, 'initial', '[]'::jsonb FROM tasks WHERE status = 'succeeded'
