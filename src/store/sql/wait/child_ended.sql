-- name: wait/child_ended
-- The child task $1 if it has ended, or (with $2 not null) has stopped in needs_intervention at
-- least $2 seconds ago: its status, its outputs (its current plan's succeeded steps, a map's
-- items in their join) and its error (or why it stopped).
SELECT t.status,
       coalesce((SELECT jsonb_object_agg(s.step_key, coalesce(s.output, 'null'::jsonb))
                 FROM steps s
                 WHERE s.task_id = t.id AND s.plan_version = t.plan_version
                   AND s.status = 'succeeded' AND s.map_step_id IS NULL), '{}'::jsonb) AS outputs,
       coalesce(t.error, jsonb_strip_nulls(jsonb_build_object('reason', t.stop_reason)),
                '{}'::jsonb) AS error
FROM tasks t
WHERE t.id = $1
  AND (t.finished_at IS NOT NULL
       OR (t.status = 'needs_intervention' AND t.updated_at <= now() - make_interval(secs => $2)))
