-- name: wait/matching
-- the open event waits an event resolves (the caller holds the key's advisory lock)
SELECT id, task_id FROM waits
WHERE kind = 'event' AND status = 'open' AND event_key = $1 AND tenant = $3
  AND $2::jsonb @> coalesce(match, '{}'::jsonb)
ORDER BY task_id, id
