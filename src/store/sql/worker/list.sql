-- name: worker/list
SELECT id, host, pid, concurrency, in_flight, started_at, last_heartbeat
FROM workers
WHERE stopped_at IS NULL
  AND last_heartbeat > now() - make_interval(secs => lease_secs)
ORDER BY started_at, id
