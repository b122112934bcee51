-- name: step/restart_wait_clocks
-- A person resumed or reran the task: its open steps' time waiting on a tool counts from now.
UPDATE steps SET waiting_since = now()
WHERE task_id = $1 AND status IN ('ready', 'blocked')
