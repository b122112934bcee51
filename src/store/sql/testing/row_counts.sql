-- name: testing/row_counts
SELECT 'tasks', count(*) FROM tasks UNION ALL SELECT 'plans', count(*) FROM plans
UNION ALL SELECT 'steps', count(*) FROM steps UNION ALL SELECT 'attempts', count(*) FROM attempts
UNION ALL SELECT 'events', count(*) FROM events UNION ALL SELECT 'tools', count(*) FROM tools
UNION ALL SELECT 'workers', count(*) FROM workers
