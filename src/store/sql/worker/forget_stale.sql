-- name: worker/forget_stale
DELETE FROM workers
WHERE coalesce(stopped_at, last_heartbeat) < now() - interval '1 day'
