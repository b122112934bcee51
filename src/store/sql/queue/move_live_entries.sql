-- name: queue/move_live_entries
-- A drained slot's live entries move to the ring's current slot (the column's default) before
-- the slot is truncated; the caller holds the slot's ACCESS EXCLUSIVE lock.
INSERT INTO claim_queue (step_id, task_id, priority, pass, task_created_at, position, tool, lane,
                         run_after, delayed)
SELECT step_id, task_id, priority, pass, task_created_at, position, tool, lane, run_after, delayed
FROM claim_queue WHERE slot = $1
