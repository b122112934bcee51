-- name: webhook/claim
-- due deliveries, each the oldest pending one of its task for its target (order per task),
-- leased to this worker; another worker's are skipped
WITH c AS (
    SELECT d.id FROM webhook_deliveries d
    WHERE d.status = 'pending' AND d.next_attempt_at <= now()
      AND (d.leased_until IS NULL OR d.leased_until < now())
      AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e
                      WHERE e.status = 'pending' AND e.task_id = d.task_id AND e.url = d.url
                        AND e.webhook_id IS NOT DISTINCT FROM d.webhook_id AND e.seq < d.seq)
    ORDER BY d.next_attempt_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE webhook_deliveries d
SET leased_until = now() + make_interval(secs => $2), attempts = d.attempts + 1
FROM c WHERE d.id = c.id
RETURNING d.id, d.webhook_id, d.task_id, d.seq, d.kind, d.payload, d.event_at, d.url, d.attempts,
          (SELECT w.secret FROM webhooks w WHERE w.id = d.webhook_id) AS secret
