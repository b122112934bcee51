-- name: wait/child_ended
-- The child task $1 if it has ended: its status, its outputs (its current plan's succeeded
-- steps, a map's items in their join) and its error.
SELECT t.status,
       coalesce((SELECT jsonb_object_agg(s.step_key, coalesce(s.output, 'null'::jsonb))
                 FROM steps s
                 WHERE s.task_id = t.id AND s.plan_version = t.plan_version
                   AND s.status = 'succeeded' AND s.map_step_id IS NULL), '{}'::jsonb) AS outputs,
       coalesce(t.error, '{}'::jsonb) AS error
FROM tasks t
WHERE t.id = $1 AND t.finished_at IS NOT NULL
