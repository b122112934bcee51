-- name: plan/feedback
-- A replan from an earlier step than the failed one tells that step why ($4: the failed step,
-- the strategy's reason, the failure).
UPDATE steps SET feedback = $4
WHERE task_id = $1 AND plan_version = $2 AND step_key = $3 AND status IN ('ready', 'blocked')
