-- name: step/attempts_of_finished
SELECT a.task_id, a.step_id, a.step_key, a.plan_version, a.attempt, a.tool, a.parameters,
       a.status, a.output, a.error, a.error_category, a.worker_id, a.started_at,
       a.finished_at, a.duration_ms
FROM unnest($1::uuid[]) AS t(id)
CROSS JOIN LATERAL (SELECT * FROM attempts a WHERE a.task_id = t.id ORDER BY a.id) a
