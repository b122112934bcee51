-- name: queue/notify_decisions
-- wake idle workers for a pending decision (delivered at commit)
SELECT pg_notify($1, $2)
