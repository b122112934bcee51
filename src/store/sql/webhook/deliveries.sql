-- name: webhook/deliveries
SELECT id, webhook_id, task_id, seq, kind, url, status, attempts, next_attempt_at, log,
       created_at, delivered_at
FROM webhook_deliveries
WHERE webhook_id = $1
ORDER BY created_at DESC, seq DESC
LIMIT $2
