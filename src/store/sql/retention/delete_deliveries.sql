-- name: retention/delete_deliveries
-- delivered or given-up webhook deliveries older than $1 seconds, oldest first, at most $2
DELETE FROM webhook_deliveries WHERE id IN (
    SELECT id FROM webhook_deliveries
    WHERE status <> 'pending' AND created_at < now() - make_interval(secs => $1)
    ORDER BY created_at LIMIT $2
    FOR UPDATE SKIP LOCKED)
