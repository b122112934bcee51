-- name: queue/notify_ready
-- wake idle workers (delivered at commit)
SELECT pg_notify($1, '')
