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
), r AS MATERIALIZED (
    -- whether any step is ready: an index probe, not a count of the task's steps (a map's task
    -- gains a row per item; a plan can have thousands)
    SELECT a.task_id, a.plan_version,
           EXISTS (SELECT 1 FROM promoted p WHERE p.task_id = a.task_id)
           OR EXISTS (SELECT 1 FROM steps s
                      WHERE s.task_id = a.task_id AND s.plan_version = a.plan_version
                        AND s.status = 'ready') AS ready
    FROM a
)
-- open: a step still blocked, ready, running, failed or waiting. Evaluated left to right, so the
-- indexed probes (ready, running) answer a busy task; the scan of the rest runs only for a task
-- with nothing ready or running
SELECT r.task_id, r.ready,
       r.ready
       OR EXISTS (SELECT 1 FROM steps s
                  WHERE s.task_id = r.task_id AND s.plan_version = r.plan_version
                    AND s.status = 'running')
       OR EXISTS (SELECT 1 FROM steps s
                  WHERE s.task_id = r.task_id AND s.plan_version = r.plan_version
                    AND s.status IN ('blocked', 'failed', 'waiting')) AS open,
       coalesce((SELECT array_agg(p.step_key ORDER BY p.position) FROM promoted p
                 WHERE p.task_id = r.task_id), '{}') AS promoted
FROM r
