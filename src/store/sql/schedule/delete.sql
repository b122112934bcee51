-- name: schedule/delete
DELETE FROM schedules WHERE tenant = $2 AND id = $1
