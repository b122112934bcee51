-- name: wait/earlier_event
-- an event that came before its wait was registered: the first one since the task was
-- submitted whose payload matches
SELECT e.payload FROM inbound_events e
WHERE e.key = $1 AND e.received_at >= (SELECT created_at FROM tasks WHERE id = $2)
  AND e.tenant = (SELECT tenant FROM tasks WHERE id = $2)
  AND e.payload @> coalesce($3::jsonb, '{}'::jsonb)
ORDER BY e.received_at, e.id
LIMIT 1
