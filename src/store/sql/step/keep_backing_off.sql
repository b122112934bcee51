-- name: step/keep_backing_off
UPDATE steps SET run_after = now() + make_interval(secs => $5 / 1000.0)
WHERE task_id = $1 AND plan_version = $2 AND step_key = $3
  AND coalesce(tool_override, tool) = $4 AND status = 'ready'
