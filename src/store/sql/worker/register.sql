-- name: worker/register
-- and the deployment's secret every call's idempotency key is derived with
INSERT INTO workers (id, host, pid, concurrency, lease_secs) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (id) DO UPDATE SET host = $2, pid = $3, concurrency = $4, lease_secs = $5,
    started_at = now(), last_heartbeat = now(), stopped_at = NULL, in_flight = 0
RETURNING (SELECT call_key_secret FROM deployment)
