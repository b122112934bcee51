-- name: step/lock_running
SELECT step_key, plan_version, attempts, retry_count, rescue_count, started_at, lease_owner,
       coalesce(tool_override, tool) AS tool, parameters || param_overrides AS parameters,
       (map_step_id IS NOT NULL AND optional) AS tolerated_item,
       map_step_id IS NOT NULL AS item
FROM steps
WHERE id = $1 AND task_id = $2 AND lease_token = $3 AND (status = 'running') IS NOT FALSE
  AND (NOT $4 OR lease_expires_at < now())
FOR UPDATE
