-- name: step/live_steps_of_finished
-- the live steps of each finished plan, in plan order (an inline evaluation reads them)
SELECT s.* FROM steps s JOIN unnest($1::uuid[], $2::int[]) AS a(task_id, plan_version)
  ON s.task_id = a.task_id AND s.plan_version = a.plan_version
WHERE s.status <> 'superseded' ORDER BY s.task_id, s.position
