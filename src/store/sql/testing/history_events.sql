-- name: testing/history_events
INSERT INTO events (task_id, seq, kind, payload, at)
SELECT id, s, CASE s WHEN 1 THEN 'task_submitted' ELSE 'task_succeeded' END, '{}'::jsonb, finished_at
FROM tasks CROSS JOIN generate_series(1, 2) AS s WHERE status = 'succeeded'
