-- name: step/promote
-- move: StepMove::Promote
WITH a AS (
    SELECT * FROM unnest($1::uuid[], $2::int[]) AS a(task_id, plan_version)
), promoted AS (
    UPDATE steps d SET status = 'ready', run_after = now(), updated_at = now()
    FROM a
    WHERE d.task_id = a.task_id AND d.plan_version = a.plan_version AND d.status IN ('blocked')
      AND NOT EXISTS (
          SELECT 1 FROM steps p
          WHERE p.task_id = d.task_id AND p.plan_version = d.plan_version
            AND p.step_key = ANY(d.dependencies)
            AND p.status NOT IN ('succeeded', 'skipped', 'superseded'))
    RETURNING d.task_id, d.step_key, d.position
), counts AS (
    SELECT s.task_id,
           count(*) FILTER (WHERE s.status IN ('blocked', 'ready', 'running', 'failed', 'waiting')) AS open,
           count(*) FILTER (WHERE s.status = 'ready') AS ready
    FROM steps s JOIN a ON s.task_id = a.task_id AND s.plan_version = a.plan_version
    GROUP BY s.task_id
)
SELECT c.task_id, c.open,
       c.ready + (SELECT count(*) FROM promoted p WHERE p.task_id = c.task_id) AS ready,
       coalesce((SELECT array_agg(p.step_key ORDER BY p.position) FROM promoted p
                 WHERE p.task_id = c.task_id), '{}') AS promoted
FROM counts c
