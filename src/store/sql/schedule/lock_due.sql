-- name: schedule/lock_due
-- due schedules, oldest tick first; another worker's are skipped
SELECT * FROM schedules
WHERE enabled AND next_fire_at <= now()
ORDER BY next_fire_at
LIMIT $1
FOR UPDATE SKIP LOCKED
