-- name: step/fence_running
-- move: StepMove::Fail
WITH held AS (
    SELECT id, lease_owner, started_at FROM steps
    WHERE task_id = $1 AND status IN ('running') FOR UPDATE
), failed AS (
    UPDATE steps s SET status = 'failed', error = $2, attempts = s.attempts + 1,
           lease_token = s.lease_token + 1, lease_owner = NULL, lease_expires_at = NULL,
           updated_at = now(), finished_at = now()
    FROM held WHERE s.id = held.id
    RETURNING s.id, s.task_id, s.step_key, s.plan_version, s.attempts,
              coalesce(s.tool_override, s.tool) AS tool,
              s.parameters || s.param_overrides AS parameters
), recorded AS (
    INSERT INTO attempts (task_id, step_id, step_key, plan_version, attempt, tool, parameters,
                          status, error, error_category, worker_id, started_at, finished_at)
    SELECT f.task_id, f.id, f.step_key, f.plan_version, f.attempts, f.tool, f.parameters,
           'failed', $2, $3, held.lease_owner, coalesce(held.started_at, now()), clock_timestamp()
    FROM failed f JOIN held ON held.id = f.id
    RETURNING step_key
)
SELECT coalesce(array_agg(step_key ORDER BY step_key), '{}') FROM recorded
