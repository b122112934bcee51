-- name: step/skip_open
-- move: StepMove::Skip
-- (and the task's open waits: WaitMove::Cancel, in wait/cancel_open)
UPDATE steps SET status = 'skipped', updated_at = now(), finished_at = now()
WHERE task_id = $1 AND status IN ('blocked', 'ready', 'waiting')
