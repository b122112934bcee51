-- name: step/refused_releases
-- A step's releases after a hold refused again without an attempt (by the task's key; a
-- task's events, not the hot path: asked only when a released call answered 429)
SELECT count(*) FROM events
WHERE task_id = $1 AND kind = 'step_deferred'
  AND payload ->> 'reason' = 'release_refused' AND payload ->> 'step_key' = $2
