-- name: step/rerun_all_failed
-- move: StepMove::Rerun
WITH r AS (
    UPDATE steps SET status = 'ready', retry_count = 0, run_after = now(),
           finished_at = NULL, updated_at = now()
    WHERE task_id = $1 AND plan_version = $2 AND status IN ('failed')
    RETURNING 1)
SELECT (SELECT count(*) FROM r),
       (SELECT count(*) FROM steps WHERE task_id = $1 AND plan_version = $2
          AND status IN ('blocked', 'ready', 'running', 'waiting'))
