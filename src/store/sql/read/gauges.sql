-- name: read/gauges
-- $1: one tenant's tasks, steps and circuits (its tools' and the built-ins'); none: every
-- tenant's. Workers and the database are the fleet's.
SELECT 'tasks' AS family, status, '' AS tool, count(*) AS n, 0::float8 AS oldest_secs
FROM tasks
WHERE status IN ('pending', 'planning', 'running', 'reflecting', 'replanning',
                 'evaluating', 'needs_intervention')
  AND ($1::text IS NULL OR tenant = $1)
GROUP BY status
UNION ALL
-- ready steps belong to running tasks (read through the tasks' status index and each task's
-- steps, never the finished history); running steps are listed in running_steps
SELECT 'steps', 'ready', coalesce(s.tool_override, s.tool), count(*),
       coalesce(extract(epoch FROM max(now() - s.run_after)), 0)::float8
FROM tasks t JOIN steps s ON s.task_id = t.id
WHERE t.status = 'running' AND s.status = 'ready' AND ($1::text IS NULL OR t.tenant = $1)
GROUP BY 3
UNION ALL
SELECT 'steps', 'running', coalesce(s.tool_override, s.tool), count(*), 0
FROM running_steps r JOIN steps s ON s.id = r.step_id
WHERE s.status = 'running'
  AND ($1::text IS NULL OR EXISTS (SELECT 1 FROM tasks t WHERE t.id = r.task_id AND t.tenant = $1))
GROUP BY 3
UNION ALL
SELECT 'workers', '', '', count(*), coalesce(sum(in_flight), 0)::float8
FROM workers
WHERE stopped_at IS NULL AND last_heartbeat > now() - make_interval(secs => lease_secs)
UNION ALL
-- the oldest open transaction on this database, any session (one the role may see:
-- pg_read_all_stats shows every session's): what VACUUM must keep dead rows for
SELECT 'db', 'oldest_transaction', '', count(*),
       coalesce(extract(epoch FROM clock_timestamp() - min(xact_start)), 0)::float8
FROM pg_stat_activity
WHERE datname = current_database() AND xact_start IS NOT NULL
  AND pid <> pg_backend_pid()
UNION ALL
-- every tool with a circuit row: open or half open (1) or closed (0), and its
-- outages in a row
SELECT 'circuits', CASE WHEN open_until IS NULL THEN 'closed'
                        WHEN open_until > now() THEN 'open' ELSE 'half_open' END,
       tool_id, consecutive_failures, 0
FROM tool_circuits
WHERE $1::text IS NULL
   OR EXISTS (SELECT 1 FROM tools x WHERE x.id = tool_id AND (x.tenant = $1 OR x.kind = 'builtin'))
