-- name: task/reschedule
-- a task nothing of which has started gets a new start: its deadline moves with it, and so do
-- its ready steps and its pending plan decision (the claim queue is synced after)
WITH t AS (
    UPDATE tasks SET run_at = $2, updated_at = now(),
           deadline_at = deadline_at + ($2 - coalesce(run_at, created_at))
    WHERE id = $1
    RETURNING id
), s AS (
    UPDATE steps SET run_after = $2, updated_at = now()
    WHERE task_id = $1 AND status = 'ready'
), d AS (
    UPDATE decisions SET run_after = $2
    WHERE task_id = $1 AND status = 'pending' AND kind = 'plan'
)
SELECT count(*) FROM t
